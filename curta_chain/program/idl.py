"""The program's Anchor IDL, loaded once through anchorpy (the builds are in ``builds.py``)."""

from functools import cache
from pathlib import Path

from anchorpy import Idl
from anchorpy.coder.accounts import AccountsCoder
from anchorpy.coder.instruction import InstructionCoder
from anchorpy.coder.types import TypesCoder

IDL_PATH: Path = Path(__file__).with_name("curta.json")
"""The program's interface in the legacy Anchor IDL format that anchorpy 0.21 parses."""


@cache
def load_idl() -> Idl:
    """Parse the shipped IDL (once per process).

    Returns:
        The anchorpy ``Idl`` of the curta program.
    """
    return Idl.from_json(IDL_PATH.read_text(encoding="utf-8"))


@cache
def instruction_coder() -> InstructionCoder:
    """The IDL's instruction coder (Anchor sighash + Borsh arguments)."""
    return InstructionCoder(load_idl())


@cache
def accounts_coder() -> AccountsCoder:
    """The IDL's account coder (Anchor account discriminator + Borsh layout)."""
    return AccountsCoder(load_idl())


@cache
def types_coder() -> TypesCoder:
    """The IDL's coder for its own types (SectionSlot, ModelState)."""
    return TypesCoder(load_idl())

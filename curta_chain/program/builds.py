"""The program builds that ship in this package: the only bytes a curta program id may hold.

Every chain command checks that the program it talks to holds one of these builds, byte for
byte (or a hash the user names), and ``deploy`` puts one of them on a cluster. The list is
in order of preference; a build for another SBPF version is added here.
"""

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from curta_chain.program.idl import PROGRAM_BINARY


@dataclass(frozen=True)
class ShippedProgram:
    """One build of the curta program in this package."""

    name: str
    """A short name for messages: ``sbpf-v0``."""
    path: Path

    @property
    def elf(self) -> bytes:
        """The ELF's bytes."""
        return _read(self.path)

    @property
    def sha256(self) -> str:
        """The SHA-256 of the ELF, hex: what ``sha256sum`` prints for the file."""
        return hashlib.sha256(self.elf).hexdigest()


@cache
def _read(path: Path) -> bytes:
    return path.read_bytes()


def shipped_programs() -> tuple[ShippedProgram, ...]:
    """Every build in this package, in order of preference (deploy takes the first)."""
    return (ShippedProgram("sbpf-v0", PROGRAM_BINARY),)

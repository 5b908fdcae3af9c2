"""Keypair files in the Solana CLI's JSON format: an array of 64 byte values.

A keypair file holds a secret: it is written readable by its owner only, from the moment
it exists (never world-readable, not even until a chmod).
"""

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from curta_chain.errors import KeypairError
from curta_chain.fsutil import atomic_write

if TYPE_CHECKING:  # solders is imported when a keypair is read: `--help` stays fast.
    from solders.keypair import Keypair

_KEYPAIR_JSON_MAX = 1024
"""A keypair file's largest size looked for: 64 numbers of up to three digits take ~320 bytes."""


def load_keypair(path: Path) -> "Keypair":
    """Load a keypair in the Solana CLI's JSON format: an array of 64 byte values.

    Raises:
        KeypairError: the file is missing, unreadable or not such an array, or its public
            half does not match its secret half.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise KeypairError(missing_keypair(path)) from exc
    except OSError as exc:
        raise KeypairError(f"{path}: cannot read the keypair: {exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KeypairError(
            f"{path}: not a keypair: expected a JSON array of 64 bytes, found binary data "
            f"(byte {exc.start:,} is {data[exc.start]:#04x})"
        ) from exc
    return keypair_from_json(text, str(path))


def missing_keypair(path: Path, here: Sequence[str] = ()) -> str:
    """Why ``path`` cannot sign, and the commands that mend it, pasted as they are.

    ``here``: names of keypair files in the current folder (``-k`` would take them).
    """
    message = (
        f"{path}: no such keypair file; make one with "
        f"`curta-chain keygen new -o {shlex.quote(str(path))}`"
    )
    if here:
        which = "the one" if len(here) == 1 else "one of those"
        named = ", ".join(f"-k {shlex.quote(name)}" for name in here)
        message += f", or pass {which} in this folder: {named}"
    return message


def keypair_files(folder: Path) -> list[str]:
    """The names of the keypair files in ``folder`` (JSON files that hold a keypair)."""
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            if path.is_file() and path.stat().st_size <= _KEYPAIR_JSON_MAX:
                keypair_from_json(path.read_text(encoding="utf-8"), path.name)
                found.append(path.name)
        except (OSError, UnicodeDecodeError, KeypairError):
            continue
    return found


def keypair_from_json(text: str, what: str) -> "Keypair":
    """Parse the Solana CLI's keypair JSON (an array of 64 bytes); ``what`` names the source.

    Raises:
        KeypairError: ``text`` is not such an array, or its halves do not match.
    """
    from solders.keypair import Keypair

    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KeypairError(f"{what}: not a keypair: expected a JSON array of 64 bytes") from exc
    if (
        not isinstance(values, list)
        or len(values) != 64
        or not all(isinstance(v, int) and 0 <= v <= 255 for v in values)
    ):
        raise KeypairError(f"{what}: not a keypair: expected a JSON array of 64 bytes")
    try:
        return Keypair.from_bytes(bytes(values))
    except ValueError as exc:
        raise KeypairError(
            f"{what}: not a keypair: its public key does not match its secret"
        ) from exc


def write_keypair(keypair: "Keypair", path: Path) -> None:
    """Write ``keypair`` in the Solana CLI's JSON format, readable by its owner only."""
    atomic_write(path, json.dumps(list(bytes(keypair))).encode(), mode=0o600)

"""The program's Anchor IDL and the coder it drives (the builds are in ``builds.py``).

The IDL is in Anchor's current format (spec 0.1.0, what Anchor 0.30 and later emit): its
instructions and accounts carry their discriminators and the instructions their accounts'
``writable``/``signer`` flags. It is read once per process and compiled into one
``IdlCoder``, whose every encode has its decode (instructions, accounts, types); the
instruction builders (``instructions.py``) take account order and flags from it too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from curta_chain.program.borsh import (
    Codec,
    CodecError,
    EnumCodec,
    StructCodec,
    compile_fields,
)

IDL_PATH: Path = Path(__file__).with_name("curta.json")
"""The program's interface, an Anchor IDL (also reachable as ``programs_idl/curta.json``)."""

DISCRIMINATOR_SIZE = 8
"""Anchor's discriminators: the first 8 bytes of an instruction's data or an account's."""

IDL_SPEC = "0.1.0"
"""The IDL format version (``metadata.spec``) this coder reads."""


def instruction_discriminator(name: str) -> bytes:
    """Anchor's instruction discriminator: ``sha256("global:<snake_case name>")[:8]``."""
    return hashlib.sha256(f"global:{name}".encode()).digest()[:DISCRIMINATOR_SIZE]


def account_discriminator(name: str) -> bytes:
    """Anchor's account discriminator: ``sha256("account:<Name>")[:8]``."""
    return hashlib.sha256(f"account:{name}".encode()).digest()[:DISCRIMINATOR_SIZE]


@dataclass(frozen=True)
class IdlAccountItem:
    """One account an instruction takes, in order, with its flags."""

    name: str
    writable: bool
    signer: bool


@dataclass(frozen=True)
class IdlInstruction:
    """One instruction of the IDL."""

    name: str
    discriminator: bytes
    accounts: tuple[IdlAccountItem, ...]
    args: tuple[Mapping[str, Any], ...]
    """Each argument as the JSON writes it (``{"name": ..., "type": ...}``)."""


@dataclass(frozen=True)
class IdlAccount:
    """One account type: its discriminator; its layout is the ``types`` entry of its name."""

    name: str
    discriminator: bytes


@dataclass(frozen=True)
class IdlErrorCode:
    """One entry of the IDL's error table."""

    code: int
    name: str
    msg: str


@dataclass(frozen=True)
class Idl:
    """The parsed IDL: what the coder and the builders read, and the JSON it came from."""

    address: str
    name: str
    version: str
    instructions: tuple[IdlInstruction, ...]
    accounts: tuple[IdlAccount, ...]
    errors: tuple[IdlErrorCode, ...]
    types: Mapping[str, Mapping[str, Any]]
    """Each named type's definition as the JSON writes it (``{"kind": "struct", ...}``)."""

    def instruction(self, name: str) -> IdlInstruction:
        """The instruction ``name`` (snake_case, as the IDL writes it)."""
        for ix in self.instructions:
            if ix.name == name:
                return ix
        raise CodecError(f"no instruction {name!r} in the IDL")


def _discriminator(entry: Mapping[str, Any], expected: bytes) -> bytes:
    """The entry's own ``discriminator`` array, which must be Anchor's for its name."""
    given = entry.get("discriminator")
    if not (isinstance(given, list) and all(isinstance(b, int) and 0 <= b < 256 for b in given)):
        raise CodecError(f"discriminator {given!r}, expected an array of bytes")
    if bytes(given) != expected:
        raise CodecError(f"discriminator {bytes(given).hex()}, expected {expected.hex()}")
    return bytes(given)


def _items(raw: Mapping[str, Any], key: str) -> list[Any]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise CodecError(f"{key}: {type(value).__name__}, expected a list")
    return value


def _parse(raw: Any) -> Idl:
    """Check the JSON is a current-format Anchor IDL and read it."""
    if not isinstance(raw, dict):
        raise CodecError("not a JSON object")
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict) or "address" in metadata or "isMut" in json.dumps(raw):
        raise CodecError("the legacy Anchor IDL format (before 0.30); expected spec 0.1.0")
    if metadata.get("spec") != IDL_SPEC:
        raise CodecError(f"metadata.spec {metadata.get('spec')!r}, expected {IDL_SPEC!r}")
    instructions = []
    for index, ix in enumerate(_items(raw, "instructions")):
        try:
            accounts = tuple(
                IdlAccountItem(a["name"], bool(a.get("writable")), bool(a.get("signer")))
                for a in ix["accounts"]
            )
            instructions.append(
                IdlInstruction(
                    ix["name"],
                    _discriminator(ix, instruction_discriminator(ix["name"])),
                    accounts,
                    tuple(ix["args"]),
                )
            )
        except (CodecError, KeyError, TypeError) as exc:
            raise CodecError(f"instructions[{index}]: {exc}") from exc
    account_types = []
    for index, account in enumerate(_items(raw, "accounts")):
        try:
            name = account["name"]
            expected = account_discriminator(name)
            account_types.append(IdlAccount(name, _discriminator(account, expected)))
        except (CodecError, KeyError, TypeError) as exc:
            raise CodecError(f"accounts[{index}]: {exc}") from exc
    try:
        errors = tuple(
            IdlErrorCode(e["code"], e["name"], e.get("msg") or e["name"])
            for e in _items(raw, "errors")
        )
        types = {t["name"]: t["type"] for t in _items(raw, "types")}
        return Idl(
            raw["address"],
            metadata["name"],
            metadata["version"],
            tuple(instructions),
            tuple(account_types),
            errors,
            types,
        )
    except (KeyError, TypeError) as exc:
        raise CodecError(f"missing or malformed field {exc}") from exc


class IdlCoder:
    """Bytes to values and back for everything the IDL describes, compiled once.

    Every ``encode_*`` has its ``decode_*``; an encoding error names the field and what it
    expected, and a decoding error the offset (``CodecError``).
    """

    def __init__(self, idl: Idl) -> None:
        self.idl = idl
        self._types: dict[str, Codec] = {}
        self._compiling: set[str] = set()
        for name in idl.types:
            self._type(name)
        self._instructions: dict[str, tuple[bytes, StructCodec]] = {}
        self._by_discriminator: dict[bytes, str] = {}
        for ix in idl.instructions:
            try:
                args = compile_fields(ix.args, self._type)
            except CodecError as exc:
                exc.path.insert(0, ix.name)
                raise
            self._instructions[ix.name] = (ix.discriminator, args)
            self._by_discriminator[ix.discriminator] = ix.name
        self._accounts: dict[str, tuple[bytes, Codec]] = {}
        for account in idl.accounts:
            self._accounts[account.name] = (account.discriminator, self._type(account.name))

    def _type(self, name: str) -> Codec:
        """The codec of the named type (compiled at first use)."""
        if name in self._types:
            return self._types[name]
        spec = self.idl.types.get(name)
        if spec is None:
            raise CodecError(f"type {name!r} is not defined in the IDL")
        if name in self._compiling:
            raise CodecError(f"type {name!r} contains itself (recursive types are not read)")
        self._compiling.add(name)
        try:
            codec: Codec
            if spec.get("kind") == "struct":
                codec = compile_fields(spec.get("fields", []), self._type)
            elif spec.get("kind") == "enum":
                variants = []
                for variant in spec["variants"]:
                    fields = variant.get("fields", [])
                    if not all(isinstance(f, dict) for f in fields):
                        raise CodecError(f"variant {variant['name']}: tuple fields")
                    variants.append((variant["name"], compile_fields(fields, self._type)))
                codec = EnumCodec(name, variants)
            else:
                raise CodecError(f"kind {spec.get('kind')!r}, expected struct or enum")
        except CodecError as exc:
            exc.path.insert(0, name)
            raise
        finally:
            self._compiling.discard(name)
        self._types[name] = codec
        return codec

    def enum(self, name: str) -> EnumCodec:
        """The codec of the enum ``name``, whose ``value()`` builds its values."""
        codec = self._type(name)
        if not isinstance(codec, EnumCodec):
            raise CodecError(f"type {name!r} is not an enum")
        return codec

    def instruction_discriminator(self, name: str) -> bytes:
        """The discriminator of instruction ``name``."""
        return self._instruction(name)[0]

    def _instruction(self, name: str) -> tuple[bytes, StructCodec]:
        found = self._instructions.get(name)
        if found is None:
            raise CodecError(f"no instruction {name!r} in the IDL")
        return found

    def encode_instruction(self, name: str, args: Mapping[str, Any]) -> bytes:
        """Instruction data: the discriminator, then the Borsh arguments.

        Raises:
            CodecError: an argument is missing, unknown, or does not fit its type.
        """
        discriminator, codec = self._instruction(name)
        out = bytearray(discriminator)
        codec.encode(args, out)
        return bytes(out)

    def decode_instruction(self, data: bytes) -> tuple[str, dict[str, Any]]:
        """The instruction's name and arguments from its data (all of it must decode).

        Raises:
            CodecError: an unknown discriminator, or arguments that do not decode.
        """
        head = bytes(data[:DISCRIMINATOR_SIZE])
        name = self._by_discriminator.get(head)
        if name is None:
            raise CodecError(f"discriminator {head.hex()} at offset 0 is no instruction's")
        args, end = self._instruction(name)[1].decode(bytes(data), DISCRIMINATOR_SIZE)
        if end != len(data):
            raise CodecError(f"{name}: {len(data) - end} bytes left after the arguments")
        return name, args

    def _account(self, name: str) -> tuple[bytes, Codec]:
        found = self._accounts.get(name)
        if found is None:
            raise CodecError(f"no account {name!r} in the IDL")
        return found

    def account_discriminator(self, name: str) -> bytes:
        """The discriminator of account type ``name``."""
        return self._account(name)[0]

    def account_size(self, name: str) -> int | None:
        """The size of an account of type ``name``, discriminator included (None if it varies)."""
        size = self._account(name)[1].size
        return None if size is None else DISCRIMINATOR_SIZE + size

    def encode_account(self, name: str, fields: Mapping[str, Any]) -> bytes:
        """An account's data: the discriminator, then the Borsh fields."""
        discriminator, codec = self._account(name)
        out = bytearray(discriminator)
        codec.encode(fields, out)
        return bytes(out)

    def decode_account(self, name: str, data: bytes) -> dict[str, Any]:
        """An account's fields from its data (bytes after its layout are not read).

        Raises:
            CodecError: another discriminator, or fields that do not decode.
        """
        discriminator, codec = self._account(name)
        if data[:DISCRIMINATOR_SIZE] != discriminator:
            raise CodecError(
                f"discriminator {bytes(data[:DISCRIMINATOR_SIZE]).hex()} at offset 0, "
                f"expected {discriminator.hex()} ({name})"
            )
        return codec.decode(bytes(data), DISCRIMINATOR_SIZE)[0]

    def encode_type(self, name: str, value: Any) -> bytes:
        """A value of the named type, in Borsh."""
        out = bytearray()
        self._type(name).encode(value, out)
        return bytes(out)

    def decode_type(self, name: str, data: bytes) -> Any:
        """A value of the named type from its Borsh bytes (all of them)."""
        value, end = self._type(name).decode(bytes(data), 0)
        if end != len(data):
            raise CodecError(f"{name}: {len(data) - end} bytes left after the value")
        return value


def parse_idl(text: str, source: str = "IDL") -> tuple[Idl, IdlCoder]:
    """Parse an IDL's JSON text and compile its coder.

    Args:
        text: the JSON.
        source: names the file in errors.

    Raises:
        CodecError: not a current-format Anchor IDL this coder reads, naming the field.
    """
    try:
        raw = json.loads(text)
        idl = _parse(raw)
        return idl, IdlCoder(idl)
    except json.JSONDecodeError as exc:
        raise CodecError(f"{source}: not JSON ({exc})") from exc
    except CodecError as exc:
        raise CodecError(f"{source}: {exc}") from exc


@cache
def _shipped() -> tuple[Idl, IdlCoder]:
    return parse_idl(IDL_PATH.read_text(encoding="utf-8"), str(IDL_PATH))


def load_idl() -> Idl:
    """The shipped IDL, parsed once per process."""
    return _shipped()[0]


def coder() -> IdlCoder:
    """The shipped IDL's coder, compiled once per process."""
    return _shipped()[1]


def instruction_accounts(name: str) -> Sequence[IdlAccountItem]:
    """The accounts instruction ``name`` takes, in order, with their flags."""
    return load_idl().instruction(name).accounts

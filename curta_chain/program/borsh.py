"""Borsh as Anchor's IDL types describe it: each IDL type compiled once into a codec.

Values in Python: integers are ``int``, ``bool`` is ``bool``, ``pubkey`` is a solders
``Pubkey``, ``bytes`` and ``[u8; N]`` arrays are ``bytes``, ``string`` is ``str``, other
arrays and vecs are lists, an ``option`` is None or its value, a struct is a dict keyed by
the IDL's field names, an enum is an ``EnumValue``. Each codec encodes into a bytearray and
decodes from an offset, so that a struct is one pass over its fields with no copies.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from solders.pubkey import Pubkey


class CodecError(ValueError):
    """A value does not fit its IDL type, or bytes do not decode as one.

    ``path`` names where, outermost first (``sections[3].length``); the message says what.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []

    def __str__(self) -> str:
        where = "".join(p if p.startswith("[") else f".{p}" for p in self.path).lstrip(".")
        return f"{where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class EnumValue:
    """A value of an IDL enum: its variant's index and name, and its fields (none for most)."""

    index: int
    name: str
    fields: Mapping[str, Any] = field(default_factory=dict)


class Codec:
    """Encodes a value of one IDL type into a bytearray, and decodes it from an offset."""

    size: int | None = None
    """The encoded size when every value has the same one (None when it varies)."""

    def encode(self, value: Any, out: bytearray) -> None:
        """Append ``value``'s bytes to ``out``."""
        raise NotImplementedError

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        """Read one value at ``offset``; return it and the offset after it."""
        raise NotImplementedError


def _short(data: bytes, offset: int, need: int) -> CodecError:
    return CodecError(f"{need} bytes at offset {offset}, past the data's {len(data)}")


class _Int(Codec):
    def __init__(self, name: str, fmt: str, signed: bool, size: int) -> None:
        self.name, self.size = name, size
        self.packer = struct.Struct(fmt) if fmt else None
        bits = 8 * size
        self.low = -(1 << (bits - 1)) if signed else 0
        self.high = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        self.signed = signed

    def encode(self, value: Any, out: bytearray) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise CodecError(f"{value!r} is not an integer ({self.name})")
        if not self.low <= value <= self.high:
            raise CodecError(f"{value} does not fit {self.name}")
        if self.packer is not None:
            out += self.packer.pack(value)
        else:
            out += value.to_bytes(self.size or 0, "little", signed=self.signed)

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        end = offset + (self.size or 0)
        if end > len(data):
            raise _short(data, offset, self.size or 0)
        if self.packer is not None:
            return self.packer.unpack_from(data, offset)[0], end
        return int.from_bytes(data[offset:end], "little", signed=self.signed), end


class _Float(Codec):
    def __init__(self, name: str, fmt: str) -> None:
        self.name, self.packer = name, struct.Struct(fmt)
        self.size = self.packer.size

    def encode(self, value: Any, out: bytearray) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CodecError(f"{value!r} is not a number ({self.name})")
        out += self.packer.pack(value)

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        if offset + self.packer.size > len(data):
            raise _short(data, offset, self.packer.size)
        return self.packer.unpack_from(data, offset)[0], offset + self.packer.size


class _Bool(Codec):
    size = 1

    def encode(self, value: Any, out: bytearray) -> None:
        if not isinstance(value, bool):
            raise CodecError(f"{value!r} is not a bool")
        out.append(1 if value else 0)

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        if offset >= len(data):
            raise _short(data, offset, 1)
        byte = data[offset]
        if byte > 1:
            raise CodecError(f"bool byte {byte} at offset {offset}, expected 0 or 1")
        return byte == 1, offset + 1


class _Pubkey(Codec):
    size = 32

    def encode(self, value: Any, out: bytearray) -> None:
        if not isinstance(value, Pubkey):
            raise CodecError(f"{value!r} is not a Pubkey")
        out += bytes(value)

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        if offset + 32 > len(data):
            raise _short(data, offset, 32)
        return Pubkey.from_bytes(data[offset : offset + 32]), offset + 32


_U32 = struct.Struct("<I")


def _length(data: bytes, offset: int) -> tuple[int, int]:
    """A Borsh length prefix (u32) at ``offset``."""
    if offset + 4 > len(data):
        raise _short(data, offset, 4)
    return _U32.unpack_from(data, offset)[0], offset + 4


def _put_length(count: int, out: bytearray) -> None:
    if count > 0xFFFF_FFFF:
        raise CodecError(f"{count} items: a Borsh length is a u32")
    out += _U32.pack(count)


class _Bytes(Codec):
    """``bytes``: a u32 length, then the bytes."""

    def encode(self, value: Any, out: bytearray) -> None:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise CodecError(f"{type(value).__name__} is not bytes")
        _put_length(len(value), out)
        out += value

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        count, offset = _length(data, offset)
        if offset + count > len(data):
            raise _short(data, offset, count)
        return bytes(data[offset : offset + count]), offset + count


class _String(Codec):
    """``string``: UTF-8 bytes with a u32 length."""

    def encode(self, value: Any, out: bytearray) -> None:
        if not isinstance(value, str):
            raise CodecError(f"{value!r} is not a str")
        _Bytes().encode(value.encode(), out)

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        raw, end = _Bytes().decode(data, offset)
        try:
            return raw.decode(), end
        except UnicodeDecodeError as exc:
            raise CodecError(f"string at offset {offset} is not UTF-8") from exc


class _ByteArray(Codec):
    """``[u8; N]``: N bytes, no length."""

    def __init__(self, count: int) -> None:
        self.size = count

    def encode(self, value: Any, out: bytearray) -> None:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise CodecError(f"{type(value).__name__} is not bytes")
        if len(value) != self.size:
            raise CodecError(f"{len(value)} bytes, expected {self.size}")
        out += value

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        end = offset + (self.size or 0)
        if end > len(data):
            raise _short(data, offset, self.size or 0)
        return bytes(data[offset:end]), end


def _items(value: Any) -> Sequence[Any]:
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Sequence):
        raise CodecError(f"{type(value).__name__} is not a list")
    return value


def _encode_items(codec: Codec, items: Sequence[Any], out: bytearray) -> None:
    for index, item in enumerate(items):
        try:
            codec.encode(item, out)
        except CodecError as exc:
            exc.path.insert(0, f"[{index}]")
            raise


def _decode_items(codec: Codec, count: int, data: bytes, offset: int) -> tuple[list[Any], int]:
    items = []
    for index in range(count):
        try:
            item, offset = codec.decode(data, offset)
        except CodecError as exc:
            exc.path.insert(0, f"[{index}]")
            raise
        items.append(item)
    return items, offset


class _Array(Codec):
    """``[T; N]``: N values, no length."""

    def __init__(self, inner: Codec, count: int) -> None:
        self.inner, self.count = inner, count
        self.size = None if inner.size is None else inner.size * count

    def encode(self, value: Any, out: bytearray) -> None:
        items = _items(value)
        if len(items) != self.count:
            raise CodecError(f"{len(items)} items, expected {self.count}")
        _encode_items(self.inner, items, out)

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        return _decode_items(self.inner, self.count, data, offset)


class _Vec(Codec):
    """``Vec<T>``: a u32 count, then the values."""

    def __init__(self, inner: Codec) -> None:
        self.inner = inner

    def encode(self, value: Any, out: bytearray) -> None:
        items = _items(value)
        _put_length(len(items), out)
        _encode_items(self.inner, items, out)

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        count, offset = _length(data, offset)
        # Each item takes a byte at least: a count past the data is refused before a loop.
        if count > len(data) - offset:
            raise CodecError(f"vec of {count} items at offset {offset - 4}, past the data")
        return _decode_items(self.inner, count, data, offset)


class _Option(Codec):
    """``Option<T>``: a 0 byte, or a 1 byte and the value."""

    def __init__(self, inner: Codec) -> None:
        self.inner = inner

    def encode(self, value: Any, out: bytearray) -> None:
        if value is None:
            out.append(0)
        else:
            out.append(1)
            self.inner.encode(value, out)

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        tag, offset = _Bool().decode(data, offset)
        return self.inner.decode(data, offset) if tag else (None, offset)


class StructCodec(Codec):
    """A struct (an instruction's arguments, an enum variant's fields): its fields in order."""

    def __init__(self, fields: Sequence[tuple[str, Codec]]) -> None:
        self.fields = tuple(fields)
        self.names = frozenset(name for name, _ in self.fields)
        sizes = [codec.size for _, codec in self.fields]
        self.size = None if None in sizes else sum(s or 0 for s in sizes)

    def encode(self, value: Any, out: bytearray) -> None:
        """Append each field of the mapping ``value`` (exactly the struct's), in order."""
        if not isinstance(value, Mapping):
            raise CodecError(f"{type(value).__name__} is not a mapping of fields")
        if value.keys() != self.names:
            missing = sorted(self.names - value.keys())
            extra = sorted(set(value.keys()) - self.names)
            raise CodecError(f"fields missing {missing}, unknown {extra}")
        for name, codec in self.fields:
            try:
                codec.encode(value[name], out)
            except CodecError as exc:
                exc.path.insert(0, name)
                raise

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        """Read the fields into a dict keyed by their names."""
        values = {}
        for name, codec in self.fields:
            try:
                values[name], offset = codec.decode(data, offset)
            except CodecError as exc:
                exc.path.insert(0, name)
                raise
        return values, offset


class EnumCodec(Codec):
    """An enum: a u8 variant index, then the variant's fields (named ones only, in our IDL)."""

    def __init__(self, name: str, variants: Sequence[tuple[str, StructCodec]]) -> None:
        self.name, self.variants = name, tuple(variants)
        self.index = {variant: i for i, (variant, _) in enumerate(self.variants)}
        if all(codec.size == 0 for _, codec in self.variants):
            self.size = 1

    def value(self, variant: int | str, fields: Mapping[str, Any] | None = None) -> EnumValue:
        """The ``EnumValue`` of a variant given by index or name."""
        index = variant if isinstance(variant, int) else self.index.get(variant, -1)
        if not 0 <= index < len(self.variants):
            raise CodecError(f"{variant!r} is no variant of {self.name}")
        return EnumValue(index, self.variants[index][0], dict(fields or {}))

    def encode(self, value: Any, out: bytearray) -> None:
        """Append the variant's index and fields; a fieldless one may be an index or name."""
        if isinstance(value, int | str) and not isinstance(value, bool):
            value = self.value(value)
        if not isinstance(value, EnumValue):
            raise CodecError(f"{value!r} is not a {self.name} (EnumValue)")
        if self.index.get(value.name) != value.index:
            raise CodecError(f"variant {value.index} {value.name!r} is not one of {self.name}")
        out.append(value.index)
        try:
            self.variants[value.index][1].encode(value.fields, out)
        except CodecError as exc:
            exc.path.insert(0, value.name)
            raise

    def decode(self, data: bytes, offset: int) -> tuple[Any, int]:
        """Read an ``EnumValue``."""
        if offset >= len(data):
            raise _short(data, offset, 1)
        index = data[offset]
        if index >= len(self.variants):
            raise CodecError(
                f"variant index {index} at offset {offset}, expected 0 to "
                f"{len(self.variants) - 1} ({self.name})"
            )
        name, codec = self.variants[index]
        try:
            fields, offset = codec.decode(data, offset + 1)
        except CodecError as exc:
            exc.path.insert(0, name)
            raise
        return EnumValue(index, name, fields), offset


_PRIMITIVES: dict[str, Codec] = {
    "bool": _Bool(),
    "u8": _Int("u8", "<B", False, 1),
    "i8": _Int("i8", "<b", True, 1),
    "u16": _Int("u16", "<H", False, 2),
    "i16": _Int("i16", "<h", True, 2),
    "u32": _Int("u32", "<I", False, 4),
    "i32": _Int("i32", "<i", True, 4),
    "u64": _Int("u64", "<Q", False, 8),
    "i64": _Int("i64", "<q", True, 8),
    "u128": _Int("u128", "", False, 16),
    "i128": _Int("i128", "", True, 16),
    "f32": _Float("f32", "<f"),
    "f64": _Float("f64", "<d"),
    "pubkey": _Pubkey(),
    "bytes": _Bytes(),
    "string": _String(),
}


def compile_type(idl_type: Any, resolve: Callable[[str], Codec]) -> Codec:
    """The codec of an IDL type (Anchor's current spec: ``pubkey``, ``{"defined": {"name"}}``).

    Args:
        idl_type: the type as the IDL writes it.
        resolve: gives the codec of a named type of the IDL's ``types``, compiling it first
            if need be.

    Raises:
        CodecError: a type this coder does not know (generics, ``coption``, legacy names).
    """
    if isinstance(idl_type, str) and idl_type in _PRIMITIVES:
        return _PRIMITIVES[idl_type]
    if isinstance(idl_type, dict) and len(idl_type) == 1:
        ((kind, inner),) = idl_type.items()
        if kind == "array" and isinstance(inner, list) and len(inner) == 2:
            element, count = inner
            if not isinstance(count, int):
                raise CodecError(f"array length {count!r} is not a number (generic arrays)")
            if element == "u8":
                return _ByteArray(count)
            return _Array(compile_type(element, resolve), count)
        if kind == "vec":
            return _Vec(compile_type(inner, resolve))
        if kind == "option":
            return _Option(compile_type(inner, resolve))
        if kind == "defined" and isinstance(inner, dict) and isinstance(inner.get("name"), str):
            return resolve(inner["name"])
    raise CodecError(f"IDL type {idl_type!r} is not one this coder reads")


def compile_fields(
    fields: Sequence[Mapping[str, Any]], resolve: Callable[[str], Codec]
) -> StructCodec:
    """The codec of named fields (a struct's, an instruction's arguments)."""
    compiled = []
    for spec in fields:
        try:
            compiled.append((spec["name"], compile_type(spec["type"], resolve)))
        except CodecError as exc:
            exc.path.insert(0, spec["name"])
            raise
    return StructCodec(compiled)

"""The program's model and weight accounts, decoded and encoded through the IDL's coder.

The C structs in ``programs/curta/curta.h`` and the IDL's Borsh layouts are the same bytes
(every field naturally aligned); ``tests/program`` checks that the program writes what these
classes read.

A decoded account is bounded by the spec before anything is sized from it: a model names at
most 18 sections, and no section (a model's slot, a weight header's length) is longer than
10,483,712 bytes, so a node that claims a 2^50-byte section is refused here, before a
single byte of it is asked for.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from solders.pubkey import Pubkey

from curta_chain.constants import (
    HASH_CHUNK_SIZE,
    MAX_SECTION_SIZE,
    MAX_SECTIONS,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.errors import AccountError
from curta_chain.program.borsh import CodecError
from curta_chain.program.idl import DISCRIMINATOR_SIZE, coder

MODEL_ACCOUNT_SIZE = 856
"""A model account's size: discriminator, fields, 18 section slots of 40 bytes, seal slot."""

MODEL_AUTHORITY_OFFSET = DISCRIMINATOR_SIZE
"""Where a model account's authority starts: right after the discriminator."""
MODEL_SECTIONS_OFFSET = 128
"""Where a model account's section slots start (40 bytes each: the weight account, then
the length as a u64)."""
SLOT_SIZE = 40
WEIGHT_SECTION_LENGTH_OFFSET = 80
"""Where a weight account's header holds its section length (a u64)."""


def model_discriminator() -> bytes:
    """The 8 bytes every model account starts with (Anchor's ``account:Model``)."""
    return coder().account_discriminator("Model")


class ModelState(enum.IntEnum):
    """Where a model is in its life: the IDL's ``ModelState`` enum, as its Borsh index."""

    UPLOADING = 0
    SEALING = 1
    SEALED = 2
    FAILED = 3
    CLOSING = 4


def decode_account(name: str, data: bytes, size: int, what: str) -> dict[str, Any]:
    """Decode ``data[:size]`` as the IDL account ``name``; ``what`` names it in errors."""
    if len(data) < size:
        raise AccountError(f"{what}: {len(data)} bytes, expected at least {size}")
    expected = coder().account_discriminator(name)
    if data[:DISCRIMINATOR_SIZE] != expected:
        raise AccountError(
            f"{what}: discriminator {data[:DISCRIMINATOR_SIZE].hex()} at offset 0, "
            f"expected {expected.hex()} ({name})"
        )
    try:
        return coder().decode_account(name, data[:size])
    except CodecError as exc:
        raise AccountError(f"{what}: does not decode as {name}: {exc}") from exc


def encode_account(name: str, fields: dict[str, Any]) -> bytes:
    """Encode ``fields`` as the IDL account ``name``, its discriminator first."""
    return coder().encode_account(name, fields)


@dataclass(frozen=True)
class SectionSlot:
    """One section of a model: its weight account (``Pubkey.default()`` while unbound)."""

    weight_account: Pubkey
    length: int

    def to_json(self) -> dict[str, Any]:
        """The slot as JSON-ready values (addresses in base58)."""
        return {"weight_account": str(self.weight_account), "length": self.length}


@dataclass(frozen=True)
class ModelAccount:
    """A decoded model account (856 bytes); ``sections`` holds only the model's slots.

    ``frozen_count`` counts the bound weight accounts whose header is frozen; ``seal_slot`` is
    the Clock slot at which the current seal began (0 when none has).
    """

    authority: Pubkey
    declared_hash: bytes
    running_hash: bytes
    state: ModelState
    section_count: int
    bound_count: int
    frozen_count: int
    cursor_section: int
    cursor_offset: int
    chunks_hashed: int
    sections: tuple[SectionSlot, ...]
    seal_slot: int

    @property
    def total_chunks(self) -> int:
        """The seal steps the model takes: each section in chunks of at most 64 KiB."""
        return sum(-(-slot.length // HASH_CHUNK_SIZE) for slot in self.sections)

    @classmethod
    def from_bytes(cls, data: bytes) -> ModelAccount:
        """Decode a model account's data.

        Args:
            data: the account data, exactly ``MODEL_ACCOUNT_SIZE`` bytes.

        Returns:
            The decoded model.

        Raises:
            AccountError: wrong size, wrong discriminator, undecodable fields, more than 18
                sections, or a section longer than the spec's largest.
        """
        if len(data) != MODEL_ACCOUNT_SIZE:
            raise AccountError(f"model account: {len(data)} bytes, expected {MODEL_ACCOUNT_SIZE}")
        raw = decode_account("Model", bytes(data), MODEL_ACCOUNT_SIZE, "model account")
        count = raw["section_count"]
        if not 0 <= count <= MAX_SECTIONS:
            raise AccountError(f"model account: sectionCount {count} at offset 105 > 18")
        for index, slot in enumerate(raw["sections"][:count]):
            if slot["length"] > MAX_SECTION_SIZE:
                at = MODEL_SECTIONS_OFFSET + index * SLOT_SIZE + 32
                raise AccountError(
                    f"model account: section {index} length {slot['length']:,} at offset {at} "
                    f"> {MAX_SECTION_SIZE:,} (the spec's largest section)"
                )
        return cls(
            authority=raw["authority"],
            declared_hash=raw["declared_hash"],
            running_hash=raw["running_hash"],
            state=ModelState(raw["state"].index),
            section_count=count,
            bound_count=raw["bound_count"],
            frozen_count=raw["frozen_count"],
            cursor_section=raw["cursor_section"],
            cursor_offset=raw["cursor_offset"],
            chunks_hashed=raw["chunks_hashed"],
            sections=tuple(
                SectionSlot(slot["weight_account"], slot["length"])
                for slot in raw["sections"][:count]
            ),
            seal_slot=raw["seal_slot"],
        )

    def to_bytes(self) -> bytes:
        """Encode the model as the program lays it out (856 bytes)."""
        empty = {"weight_account": Pubkey.default(), "length": 0}
        slots = [{"weight_account": s.weight_account, "length": s.length} for s in self.sections]
        return encode_account(
            "Model",
            {
                "authority": self.authority,
                "declared_hash": self.declared_hash,
                "running_hash": self.running_hash,
                "state": int(self.state),
                "section_count": self.section_count,
                "bound_count": self.bound_count,
                "frozen_count": self.frozen_count,
                "reserved0": bytes(4),
                "cursor_section": self.cursor_section,
                "chunks_hashed": self.chunks_hashed,
                "cursor_offset": self.cursor_offset,
                "sections": slots + [empty] * (MAX_SECTIONS - len(slots)),
                "seal_slot": self.seal_slot,
            },
        )

    def to_json(self) -> dict[str, Any]:
        """The model as JSON-ready values (addresses base58, hashes hex, state by name)."""
        return {
            "authority": str(self.authority),
            "declared_hash": self.declared_hash.hex(),
            "running_hash": self.running_hash.hex(),
            "state": self.state.name.lower(),
            "section_count": self.section_count,
            "bound_count": self.bound_count,
            "frozen_count": self.frozen_count,
            "cursor_section": self.cursor_section,
            "cursor_offset": self.cursor_offset,
            "chunks_hashed": self.chunks_hashed,
            "seal_slot": self.seal_slot,
            "sections": [slot.to_json() for slot in self.sections],
        }


@dataclass(frozen=True)
class WeightHeader:
    """The 2,048-byte header of a weight account; the section's bytes follow it."""

    model: Pubkey
    authority: Pubkey
    section_index: int
    frozen: bool
    section_length: int

    @classmethod
    def from_bytes(cls, data: bytes) -> WeightHeader:
        """Decode the header from a weight account's data (only its first 2,048 bytes are read).

        Args:
            data: the account data, or at least its first ``WEIGHT_HEADER_SIZE`` bytes.

        Returns:
            The decoded header.

        Raises:
            AccountError: too short, wrong discriminator, undecodable fields, or a section
                length over the spec's largest.
        """
        raw = decode_account(
            "WeightAccount", bytes(data[:WEIGHT_HEADER_SIZE]), WEIGHT_HEADER_SIZE, "weight account"
        )
        if raw["section_length"] > MAX_SECTION_SIZE:
            raise AccountError(
                f"weight account: section length {raw['section_length']:,} at offset "
                f"{WEIGHT_SECTION_LENGTH_OFFSET} > {MAX_SECTION_SIZE:,} (the spec's largest "
                "section)"
            )
        return cls(
            raw["model"],
            raw["authority"],
            raw["section_index"],
            raw["frozen"],
            raw["section_length"],
        )

    def to_bytes(self) -> bytes:
        """Encode the header as the program lays it out (2,048 bytes)."""
        return encode_account(
            "WeightAccount",
            {
                "model": self.model,
                "authority": self.authority,
                "section_index": self.section_index,
                "frozen": self.frozen,
                "reserved0": bytes(3),
                "section_length": self.section_length,
                "reserved": bytes(1960),
            },
        )

    def to_json(self) -> dict[str, Any]:
        """The header as JSON-ready values."""
        return {
            "model": str(self.model),
            "authority": str(self.authority),
            "section_index": self.section_index,
            "frozen": self.frozen,
            "section_length": self.section_length,
        }

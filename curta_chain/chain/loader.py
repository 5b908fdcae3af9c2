"""The BPF loaders, as the client sees them: account states decoded, upgradeable instructions.

The loaders' ids, layouts and tags are Solana's (``curta_chain.protocol.loader``); this
module is the client's codec for them: ``decode_state`` reads an upgradeable-loader
account's header, the builders encode the instructions ``deploy`` sends, and
``max_write_chunk`` says how many ELF bytes a Write transaction carries. The localnet writes
the same accounts with its own code, so a bug here is not mirrored by the cluster the tests
hold this client to.
"""

import struct
from dataclasses import dataclass
from functools import cache

from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID
from solders.sysvar import CLOCK, RENT

from curta_chain.errors import AccountError
from curta_chain.protocol import sizes
from curta_chain.protocol.loader import (
    BUFFER,
    BUFFER_METADATA_SIZE,
    DEPLOY_WITH_MAX_DATA_LEN,
    INITIALIZE_BUFFER,
    LOADER_V2,
    LOADER_V3,
    MAX_WRITE_DATA,
    PROGRAM,
    PROGRAM_ACCOUNT_SIZE,
    PROGRAM_DATA,
    PROGRAMDATA_METADATA_SIZE,
    SET_AUTHORITY,
    UNINITIALIZED,
    UPGRADE,
    WRITE,
    programdata_address,
)

__all__ = [
    "BUFFER_METADATA_SIZE",
    "LOADER_V2",
    "LOADER_V3",
    "MAX_WRITE_DATA",
    "PROGRAMDATA_METADATA_SIZE",
    "PROGRAM_ACCOUNT_SIZE",
    "BufferState",
    "LoaderState",
    "ProgramDataState",
    "ProgramState",
    "decode_state",
    "deploy_with_max_data_len",
    "initialize_buffer",
    "max_write_chunk",
    "programdata_address",
    "set_upgrade_authority",
    "upgrade",
    "write",
]

_TAG = struct.Struct("<I")


@dataclass(frozen=True)
class BufferState:
    """A buffer: who may write it (None: nobody, it is frozen)."""

    authority: Pubkey | None


@dataclass(frozen=True)
class ProgramState:
    """An upgradeable program account: where its program data lives."""

    programdata: Pubkey


@dataclass(frozen=True)
class ProgramDataState:
    """A program-data header: the slot of the last deploy and who may upgrade (None: final)."""

    slot: int
    upgrade_authority: Pubkey | None


LoaderState = BufferState | ProgramState | ProgramDataState | None
"""An upgradeable-loader account's state; None for Uninitialized."""


def decode_state(data: bytes, what: str) -> LoaderState:
    """Decode an upgradeable-loader account's state from the start of its data.

    Raises:
        AccountError: the data is too short for its tag, or the tag is unknown.
    """
    if len(data) < _TAG.size:
        raise AccountError(f"{what}: {len(data)} bytes, too short for a loader state")
    (tag,) = _TAG.unpack_from(data)
    needs = {
        UNINITIALIZED: 4,
        BUFFER: BUFFER_METADATA_SIZE,
        PROGRAM: PROGRAM_ACCOUNT_SIZE,
        PROGRAM_DATA: PROGRAMDATA_METADATA_SIZE,
    }
    if tag not in needs:
        raise AccountError(f"{what}: loader state tag {tag} is unknown")
    if len(data) < needs[tag]:
        raise AccountError(f"{what}: {len(data)} bytes, too short for loader state {tag}")
    if tag == UNINITIALIZED:
        return None
    if tag == BUFFER:
        return BufferState(_option_pubkey(data, 4))
    if tag == PROGRAM:
        return ProgramState(Pubkey.from_bytes(data[4:36]))
    (slot,) = struct.unpack_from("<Q", data, 4)
    return ProgramDataState(slot, _option_pubkey(data, 12))


def _option_pubkey(data: bytes, at: int) -> Pubkey | None:
    return Pubkey.from_bytes(data[at + 1 : at + 33]) if data[at] else None


def _meta(key: Pubkey, signer: bool = False, writable: bool = False) -> AccountMeta:
    return AccountMeta(key, is_signer=signer, is_writable=writable)


def initialize_buffer(buffer: Pubkey, authority: Pubkey) -> Instruction:
    """InitializeBuffer: ``buffer`` (already allocated, loader-owned) takes ``authority``."""
    return Instruction(
        LOADER_V3, _TAG.pack(INITIALIZE_BUFFER), [_meta(buffer, writable=True), _meta(authority)]
    )


def write(buffer: Pubkey, authority: Pubkey, offset: int, data: bytes) -> Instruction:
    """Write ``data`` into ``buffer``'s ELF area at ``offset`` (the authority signs)."""
    body = _TAG.pack(WRITE) + struct.pack("<IQ", offset, len(data)) + data
    return Instruction(
        LOADER_V3, body, [_meta(buffer, writable=True), _meta(authority, signer=True)]
    )


def deploy_with_max_data_len(
    payer: Pubkey, program_id: Pubkey, buffer: Pubkey, authority: Pubkey, max_data_len: int
) -> Instruction:
    """DeployWithMaxDataLen: move the buffer's ELF into the program's new program data.

    ``authority`` becomes the upgrade authority; the buffer's lamports go to ``payer``, who
    pays the program data's rent and the program data holds ``max_data_len`` ELF bytes.
    """
    accounts = [
        _meta(payer, signer=True, writable=True),
        _meta(programdata_address(program_id), writable=True),
        _meta(program_id, writable=True),
        _meta(buffer, writable=True),
        _meta(RENT),
        _meta(CLOCK),
        _meta(SYSTEM_PROGRAM_ID),
        _meta(authority, signer=True),
    ]
    return Instruction(
        LOADER_V3, _TAG.pack(DEPLOY_WITH_MAX_DATA_LEN) + struct.pack("<Q", max_data_len), accounts
    )


def upgrade(program_id: Pubkey, buffer: Pubkey, spill: Pubkey, authority: Pubkey) -> Instruction:
    """Upgrade: replace the program's ELF with the buffer's (the upgrade authority signs)."""
    accounts = [
        _meta(programdata_address(program_id), writable=True),
        _meta(program_id, writable=True),
        _meta(buffer, writable=True),
        _meta(spill, writable=True),
        _meta(RENT),
        _meta(CLOCK),
        _meta(authority, signer=True),
    ]
    return Instruction(LOADER_V3, _TAG.pack(UPGRADE), accounts)


def set_upgrade_authority(
    program_id: Pubkey, authority: Pubkey, new_authority: Pubkey | None
) -> Instruction:
    """SetAuthority on the program's data; ``new_authority=None`` makes the program final."""
    accounts = [
        _meta(programdata_address(program_id), writable=True),
        _meta(authority, signer=True),
    ]
    if new_authority is not None:
        accounts.append(_meta(new_authority))
    return Instruction(LOADER_V3, _TAG.pack(SET_AUTHORITY), accounts)


@cache
def max_write_chunk(with_compute_budget: bool = False) -> int:
    """The most ELF bytes one legacy (or v0) Write transaction carries; the payer writes.

    With ``with_compute_budget`` the transaction also carries SetComputeUnitLimit and
    SetComputeUnitPrice.
    """
    payer, buffer = Pubkey(bytes([1] * 32)), Pubkey(bytes([2] * 32))
    budget = [set_compute_unit_limit(1), set_compute_unit_price(1)] if with_compute_budget else []

    def legacy(data: bytes) -> Message:
        return Message([*budget, write(buffer, payer, 0, data)], payer)

    def v0(data: bytes) -> MessageV0:
        instructions = [*budget, write(buffer, payer, 0, data)]
        return MessageV0.try_compile(payer, instructions, [], Hash.default())

    return sizes.largest_payload(legacy, v0)

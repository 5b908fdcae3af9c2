"""The BPF loaders, as the client sees them: addresses, account states, upgradeable instructions.

Loader v2 (``BPFLoader2111...``) holds a program's ELF in the program account itself. The
upgradeable loader (v3, ``BPFLoaderUpgradeab1e...``), which localnets preload with, splits a
program in two: the program account (36 bytes: its state tag and the address of its program
data) and the program-data account at ``find_program_address([program_id], loader)``,
whose 45-byte header holds the slot of the last deploy and the upgrade authority, and
whose ELF follows, padded with zeros up to the maximum length chosen at deploy time.

States and instructions are bincode, as agave's ``UpgradeableLoaderState`` and
``UpgradeableLoaderInstruction`` encode them: a u32 tag, then the fields (an
``Option<Pubkey>`` is one byte, then 32 when present; a ``Vec<u8>`` a u64 length).
"""

import struct
from dataclasses import dataclass
from functools import cache

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID
from solders.sysvar import CLOCK, RENT

from curta_chain.errors import AccountError
from curta_chain.program.instructions import largest_payload

LOADER_V2 = Pubkey.from_string("BPFLoader2111111111111111111111111111111111")
LOADER_V3 = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")
BUFFER_METADATA_SIZE = 37
"""A buffer's header: tag (4) + Option<authority> (33); the ELF follows."""
PROGRAM_ACCOUNT_SIZE = 36
"""A program account: tag (4) + the program-data address (32)."""
PROGRAMDATA_METADATA_SIZE = 45
"""A program-data header: tag (4) + last deploy slot (8) + Option<upgrade authority> (33)."""

MAX_WRITE_DATA = 1_216
"""The most ELF bytes one Write instruction carries: the loader reads instruction data of at
most 1,232 bytes (PACKET_DATA_SIZE, agave's ``limited_deserialize``, whatever the
transaction's size: anza-xyz/agave#15356), less 16 of tag, offset and length."""

_UNINITIALIZED, _BUFFER, _PROGRAM, _PROGRAM_DATA = 0, 1, 2, 3
_INITIALIZE_BUFFER, _WRITE, _DEPLOY, _UPGRADE, _SET_AUTHORITY = 0, 1, 2, 3, 4
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
        _UNINITIALIZED: 4,
        _BUFFER: BUFFER_METADATA_SIZE,
        _PROGRAM: PROGRAM_ACCOUNT_SIZE,
        _PROGRAM_DATA: PROGRAMDATA_METADATA_SIZE,
    }
    if tag not in needs:
        raise AccountError(f"{what}: loader state tag {tag} is unknown")
    if len(data) < needs[tag]:
        raise AccountError(f"{what}: {len(data)} bytes, too short for loader state {tag}")
    if tag == _UNINITIALIZED:
        return None
    if tag == _BUFFER:
        return BufferState(_option_pubkey(data, 4))
    if tag == _PROGRAM:
        return ProgramState(Pubkey.from_bytes(data[4:36]))
    (slot,) = struct.unpack_from("<Q", data, 4)
    return ProgramDataState(slot, _option_pubkey(data, 12))


def _option_pubkey(data: bytes, at: int) -> Pubkey | None:
    return Pubkey.from_bytes(data[at + 1 : at + 33]) if data[at] else None


def encode_program_data(slot: int, authority: Pubkey | None, elf: bytes, max_len: int) -> bytes:
    """A program-data account's bytes: header, ELF, zeros up to ``max_len``."""
    option = b"\x01" + bytes(authority) if authority is not None else bytes(33)
    head = _TAG.pack(_PROGRAM_DATA) + struct.pack("<Q", slot) + option
    return head + elf + bytes(max_len - len(elf))


def programdata_address(program_id: Pubkey) -> Pubkey:
    """The program-data account of upgradeable program ``program_id``."""
    address, _ = Pubkey.find_program_address([bytes(program_id)], LOADER_V3)
    return address


def _meta(key: Pubkey, signer: bool = False, writable: bool = False) -> AccountMeta:
    return AccountMeta(key, is_signer=signer, is_writable=writable)


def initialize_buffer(buffer: Pubkey, authority: Pubkey) -> Instruction:
    """InitializeBuffer: ``buffer`` (already allocated, loader-owned) takes ``authority``."""
    return Instruction(
        LOADER_V3, _TAG.pack(_INITIALIZE_BUFFER), [_meta(buffer, writable=True), _meta(authority)]
    )


def write(buffer: Pubkey, authority: Pubkey, offset: int, data: bytes) -> Instruction:
    """Write ``data`` into ``buffer``'s ELF area at ``offset`` (the authority signs)."""
    body = _TAG.pack(_WRITE) + struct.pack("<IQ", offset, len(data)) + data
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
    return Instruction(LOADER_V3, _TAG.pack(_DEPLOY) + struct.pack("<Q", max_data_len), accounts)


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
    return Instruction(LOADER_V3, _TAG.pack(_UPGRADE), accounts)


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
    return Instruction(LOADER_V3, _TAG.pack(_SET_AUTHORITY), accounts)


@cache
def max_write_chunk(with_compute_budget: bool = False) -> int:
    """The most ELF bytes one Write transaction (the payer is the buffer authority) carries."""
    buffer = Pubkey(bytes([2] * 32))
    return largest_payload(lambda signer, data: write(buffer, signer, 0, data), with_compute_budget)

"""The upgradeable loader's accounts as the localnet writes them for a preloaded program.

solana-test-validator (agave 4.2) loads ``--bpf-program`` as an upgradeable program: a
36-byte program account naming its program data, and the program data (bincode
``UpgradeableLoaderState::ProgramData``: tag 3, the deploy slot as a u64, an
``Option<Pubkey>`` upgrade authority, then the ELF). The layout's facts are Solana's
(``curta_chain.protocol.loader``); the bytes are written here, by the localnet's own code, so
that the client's decoder (``curta_chain.chain.loader``) is tested against an encoder it
does not share.
"""

import struct

from solders.pubkey import Pubkey

from curta_chain.protocol.loader import PROGRAM_DATA, PROGRAMDATA_METADATA_SIZE

_HEADER = struct.Struct("<IQB32s")
"""Tag, deploy slot, the authority's Option tag and its 32 bytes (zeros when None)."""
assert _HEADER.size == PROGRAMDATA_METADATA_SIZE


def program_data(slot: int, authority: Pubkey | None, elf: bytes) -> bytes:
    """A program-data account's bytes: the header, then ``elf`` (no padding after it)."""
    key = bytes(authority) if authority is not None else bytes(32)
    return _HEADER.pack(PROGRAM_DATA, slot, authority is not None, key) + elf

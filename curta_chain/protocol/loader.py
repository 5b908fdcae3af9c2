"""The BPF loaders: their ids, their accounts' layouts, and where a program's data lives.

Loader v2 (``BPFLoader2111...``) holds a program's ELF in the program account itself. The
upgradeable loader (v3, ``BPFLoaderUpgradeab1e...``) splits a program in two: the program
account (36 bytes: its state tag and the address of its program data) and the program-data
account at ``find_program_address([program_id], loader)``, whose 45-byte header holds the
slot of the last deploy and the upgrade authority, and whose ELF follows, padded with zeros
up to the maximum length chosen at deploy time.

States and instructions are bincode, as agave's ``UpgradeableLoaderState`` and
``UpgradeableLoaderInstruction`` encode them: a u32 tag, then the fields (an
``Option<Pubkey>`` is one byte, then 32 when present; a ``Vec<u8>`` a u64 length). The tags
and sizes are here; the client decodes these accounts (``chain.loader``) and the localnet
writes them (``localnet.programs``), each with its own code.
"""

from typing import Final

from solders.pubkey import Pubkey

__all__ = [
    "BUFFER",
    "BUFFER_METADATA_SIZE",
    "DEPLOY_WITH_MAX_DATA_LEN",
    "INITIALIZE_BUFFER",
    "LOADER_V2",
    "LOADER_V3",
    "MAX_WRITE_DATA",
    "PROGRAM",
    "PROGRAMDATA_METADATA_SIZE",
    "PROGRAM_ACCOUNT_SIZE",
    "PROGRAM_DATA",
    "SET_AUTHORITY",
    "UNINITIALIZED",
    "UPGRADE",
    "WRITE",
    "programdata_address",
]

LOADER_V2: Final = Pubkey.from_string("BPFLoader2111111111111111111111111111111111")
LOADER_V3: Final = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")

# UpgradeableLoaderState's tags, and the size of each state's header.
UNINITIALIZED: Final = 0
BUFFER: Final = 1
PROGRAM: Final = 2
PROGRAM_DATA: Final = 3
BUFFER_METADATA_SIZE: Final = 37
"""A buffer's header: tag (4) + Option<authority> (33); the ELF follows."""
PROGRAM_ACCOUNT_SIZE: Final = 36
"""A program account: tag (4) + the program-data address (32)."""
PROGRAMDATA_METADATA_SIZE: Final = 45
"""A program-data header: tag (4) + last deploy slot (8) + Option<upgrade authority> (33)."""

# UpgradeableLoaderInstruction's tags.
INITIALIZE_BUFFER: Final = 0
WRITE: Final = 1
DEPLOY_WITH_MAX_DATA_LEN: Final = 2
UPGRADE: Final = 3
SET_AUTHORITY: Final = 4

MAX_WRITE_DATA: Final = 1_216
"""The most ELF bytes one Write instruction carries: the loader reads instruction data of at
most 1,232 bytes (PACKET_DATA_SIZE, agave's ``limited_deserialize``, whatever the
transaction's size: anza-xyz/agave#15356), less 16 of tag, offset and length."""


def programdata_address(program_id: Pubkey) -> Pubkey:
    """The program-data account of upgradeable program ``program_id``."""
    address, _ = Pubkey.find_program_address([bytes(program_id)], LOADER_V3)
    return address

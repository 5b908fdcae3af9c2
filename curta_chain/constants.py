"""The numbers the format, the program and the chain agree on: each is defined once.

curta's own numbers are defined here. Solana's (account and transaction sizes, compute,
rent, the JSON-RPC's limits, the scheduler's) are defined in ``curta_chain.protocol.limits``
and re-exported here, so that a module needing both kinds takes them from one place.
"""

from typing import Final

from curta_chain.protocol.limits import (
    ACCOUNT_CU_LIMIT,
    ACCOUNT_STORAGE_OVERHEAD,
    ACCOUNT_WRITE_LIMIT,
    BLOCK_CU_LIMIT,
    COMMITMENT_RANK,
    COMMITMENTS,
    FINALIZED_DEPTH,
    LAMPORTS_PER_SOL,
    MAX_ACCOUNT_SIZE,
    MAX_COMPUTE_UNITS,
    MAX_LOADED_ACCOUNTS_DATA_SIZE,
    MAX_PRIORITIZATION_ADDRESSES,
    MAX_SIGNATURE_STATUSES,
    MAX_TRANSACTION_SIZE,
    MAX_V1_TRANSACTION_SIZE,
    RENT_EXEMPTION_YEARS,
    RENT_LAMPORTS_PER_BYTE_YEAR,
    SEND_TRANSACTION_PREFLIGHT_FAILURE,
    SLOT_SECONDS,
)

__all__ = [
    "ACCOUNT_CU_LIMIT",
    "ACCOUNT_STORAGE_OVERHEAD",
    "ACCOUNT_WRITE_LIMIT",
    "BLOCK_CU_LIMIT",
    "COMMITMENTS",
    "COMMITMENT_RANK",
    "DEFAULT_STEPS",
    "FINALIZED_DEPTH",
    "GIVE_UP_AFTER",
    "HASH_CHUNK_SIZE",
    "LAMPORTS_PER_SOL",
    "LOCALNET_PORT",
    "LOCALNET_PROGRAM_ID",
    "MAX_ACCOUNT_SIZE",
    "MAX_COMPUTE_UNITS",
    "MAX_LOADED_ACCOUNTS_DATA_SIZE",
    "MAX_PRIORITIZATION_ADDRESSES",
    "MAX_SECTIONS",
    "MAX_SECTION_SIZE",
    "MAX_SIGNATURE_STATUSES",
    "MAX_TRANSACTION_SIZE",
    "MAX_V1_TRANSACTION_SIZE",
    "RENT_EXEMPTION_YEARS",
    "RENT_LAMPORTS_PER_BYTE_YEAR",
    "SEND_TRANSACTION_PREFLIGHT_FAILURE",
    "SLOT_SECONDS",
    "WEIGHT_HEADER_SIZE",
]

# The weight account: a header the program owns, then one artifact section's bytes.
WEIGHT_HEADER_SIZE: Final = 2_048
MAX_SECTION_SIZE: Final = MAX_ACCOUNT_SIZE - WEIGHT_HEADER_SIZE  # 10,483,712
MAX_SECTIONS: Final = 18

# The weights hash: one SHA-256 chain over chunks of at most 64 KiB, cut at each section's end.
HASH_CHUNK_SIZE: Final = 65_536

# The localnet. Its program id is an address off the ed25519 curve, so no keypair exists for
# it and nobody can deploy there on any cluster; the embedded localnet and `localnet
# --validator` preload the program at it. A local test cluster is known by the genesis hash it
# recorded when it started (``curta_chain.user_data``), never by a fixed one.
LOCALNET_PROGRAM_ID: Final = "CurtaLoca1netProgram111111111111111111111111"
LOCALNET_PORT: Final = 8899

# Talking to a node.
GIVE_UP_AFTER: Final = 60.0
"""Seconds of consecutive failures of a node that answered before, after which a call gives
up (``--rpc-timeout``'s default)."""

# Inference.
DEFAULT_STEPS: Final = 256
"""New tokens when the caller names no count (fewer if the context has less room)."""

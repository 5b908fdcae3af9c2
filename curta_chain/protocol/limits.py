"""Solana's sizes and limits, as the runtime and the JSON-RPC enforce them.

``curta_chain.constants`` re-exports these beside curta's own numbers, so that a module
needing both takes them from one place; each is defined here only.
"""

from typing import Final

# Accounts and transactions.
MAX_ACCOUNT_SIZE: Final = 10_485_760
"""MAX_PERMITTED_DATA_LENGTH: the largest account a top-level create_account can make."""
MAX_TRANSACTION_SIZE: Final = 1_232
"""A serialized legacy or v0 transaction: the 1,280-byte IPv6 MTU less 48 bytes of headers."""
MAX_V1_TRANSACTION_SIZE: Final = 4_096
"""A serialized v1 transaction (SIMD-0296, SIMD-0385), where the cluster accepts them."""
MAX_COMPUTE_UNITS: Final = 1_400_000
MAX_LOADED_ACCOUNTS_DATA_SIZE: Final = 64 * 1024 * 1024
"""The account data a transaction may load (SIMD-0186): the default, and the most it may ask."""
LAMPORTS_PER_SOL: Final = 1_000_000_000

# Rent, as the runtime computes it (agave's solana-rent defaults, the same on every cluster):
# an account of N bytes is rent-exempt with (N + 128) * 3,480 * 2 lamports.
RENT_LAMPORTS_PER_BYTE_YEAR: Final = 3_480
RENT_EXEMPTION_YEARS: Final = 2
"""The exemption threshold, 2.0 years, as a whole number of years."""
ACCOUNT_STORAGE_OVERHEAD: Final = 128
"""Bytes of bookkeeping the runtime charges every account for on top of its data."""

# Solana's JSON-RPC conventions.
COMMITMENTS: Final = ("processed", "confirmed", "finalized")
COMMITMENT_RANK: Final = {name: rank for rank, name in enumerate(COMMITMENTS)}
"""processed < confirmed < finalized: a status at a rank satisfies every rank below it."""
FINALIZED_DEPTH: Final = 32
"""Slots on top of a slot before it is rooted (finalized): MAX_LOCKOUT_HISTORY + 1."""
MAX_SIGNATURE_STATUSES: Final = 256
"""getSignatureStatuses answers at most this many signatures a call."""
MAX_PRIORITIZATION_ADDRESSES: Final = 128
"""getRecentPrioritizationFees takes at most this many addresses (agave's
MAX_TX_ACCOUNT_LOCKS)."""
SEND_TRANSACTION_PREFLIGHT_FAILURE: Final = -32002
"""The JSON-RPC error code of a sendTransaction refused by preflight simulation."""

# The scheduler's limits.
BLOCK_CU_LIMIT: Final = 100_000_000
"""Compute units a block may hold (SIMD-0286)."""
ACCOUNT_CU_LIMIT: Final = 40_000_000
"""Compute units the transactions writing one account may take in a block (SIMD-0306).
Every seal step writes the model account and every step its run account, so this bounds how
many are worth keeping in flight: more only wait in the leader."""
ACCOUNT_WRITE_LIMIT: Final = 100
"""Transactions writing one account per block: a 400 ms share of the ~250 writes a second
one account takes under write-lock serialisation."""
SLOT_SECONDS: Final = 0.4
"""A slot's target duration (agave's DEFAULT_MS_PER_SLOT, 400 ms)."""

"""The numbers the format, the program and the chain agree on: each is defined here only."""

from typing import Final

# Solana's limits.
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

# The weight account: a header the program owns, then one artifact section's bytes.
WEIGHT_HEADER_SIZE: Final = 2_048
MAX_SECTION_SIZE: Final = MAX_ACCOUNT_SIZE - WEIGHT_HEADER_SIZE  # 10,483,712
MAX_SECTIONS: Final = 18

# The weights hash: one SHA-256 chain over chunks of at most 64 KiB, cut at each section's end.
HASH_CHUNK_SIZE: Final = 65_536

# Rent, as the runtime computes it (agave's solana-rent defaults, the same on every cluster):
# an account of N bytes is rent-exempt with (N + 128) * 3,480 * 2 lamports.
RENT_LAMPORTS_PER_BYTE_YEAR: Final = 3_480
RENT_EXEMPTION_YEARS: Final = 2
"""The exemption threshold, 2.0 years, as a whole number of years."""
ACCOUNT_STORAGE_OVERHEAD: Final = 128
"""Bytes of bookkeeping the runtime charges every account for on top of its data."""

# The embedded localnet. Its program id is an address off the ed25519 curve, so no keypair
# exists for it and nobody can deploy there on any cluster; the localnet preloads the program
# at it (so does scripts/start-test-validator.sh). Its genesis hash is fixed: that is how
# curta-chain tells the embedded localnet from any other cluster, whatever its URL.
LOCALNET_PROGRAM_ID: Final = "CurtaLoca1netProgram111111111111111111111111"
LOCALNET_GENESIS_HASH: Final = "CurtaLoca1netGenesis111111111111111111111111"
LOCALNET_PORT: Final = 8899

# Solana's JSON-RPC conventions, shared by the client (chain/) and the localnet.
COMMITMENTS: Final = ("processed", "confirmed", "finalized")
COMMITMENT_RANK: Final = {name: rank for rank, name in enumerate(COMMITMENTS)}
"""processed < confirmed < finalized: a status at a rank satisfies every rank below it."""
FINALIZED_DEPTH: Final = 32
"""Slots on top of a slot before it is rooted (finalized): MAX_LOCKOUT_HISTORY + 1."""
MAX_SIGNATURE_STATUSES: Final = 256
"""getSignatureStatuses answers at most this many signatures a call."""
SEND_TRANSACTION_PREFLIGHT_FAILURE: Final = -32002
"""The JSON-RPC error code of a sendTransaction refused by preflight simulation."""

# Talking to a node.
GIVE_UP_AFTER: Final = 60.0
"""Seconds of consecutive failures of a node that answered before, after which a call gives
up (``--rpc-timeout``'s default)."""

# Busy clusters: the scheduler's limits (the localnet's busy mode plays them).
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

# Inference.
DEFAULT_STEPS: Final = 256
"""New tokens when the caller names no count (fewer if the context has less room)."""

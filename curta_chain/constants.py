"""The numbers the format, the program and the chain agree on: each is defined here only."""

from typing import Final

# Solana's limits.
MAX_ACCOUNT_SIZE: Final = 10_485_760
"""MAX_PERMITTED_DATA_LENGTH: the largest account a top-level create_account can make."""
MAX_TRANSACTION_SIZE: Final = 1_232
"""A serialized transaction: the 1,280-byte IPv6 MTU less 48 bytes of headers."""
MAX_COMPUTE_UNITS: Final = 1_400_000
LAMPORTS_PER_SOL: Final = 1_000_000_000

# The weight account: a header the program owns, then one artifact section's bytes.
WEIGHT_HEADER_SIZE: Final = 2_048
MAX_SECTION_SIZE: Final = MAX_ACCOUNT_SIZE - WEIGHT_HEADER_SIZE  # 10,483,712
MAX_SECTIONS: Final = 18

# The weights hash: a SHA-256 chain over chunks restarting at each section.
HASH_CHUNK_SIZE: Final = 65_536

# The program id every localnet preloads. It is the public key of a keypair derived from
# sha256(b"curta-chain localnet program id"); localnet/ regenerates that keypair when needed.
LOCALNET_PROGRAM_ID: Final = "47aWRwYktQEGajhc2eneN8pZvADyw5onEtYTtWMQuZKG"
LOCALNET_PROGRAM_SEED: Final = b"curta-chain localnet program id"
LOCALNET_PORT: Final = 8899

# Talking to a node.
GIVE_UP_AFTER: Final = 60.0
"""Seconds of consecutive failures of a node that answered before, after which a call gives
up (``--rpc-timeout``'s default)."""

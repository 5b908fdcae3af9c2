"""Which cluster a URL or a genesis hash is: the embedded localnet, this machine, or not.

A cluster is known by its genesis hash, never by its URL: the embedded localnet reports a
fixed one. A loopback URL says only that the node runs on this machine (no compute budget
is needed there, and a refused connection suggests starting a localnet).
"""

from urllib.parse import urlparse

from curta_chain.constants import LOCALNET_GENESIS_HASH

MAINNET_BETA_GENESIS_HASH = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"
"""mainnet-beta's genesis hash: real money, and no faucet."""


def is_mainnet(genesis_hash: str) -> bool:
    """Whether a cluster with this genesis hash is mainnet-beta (whatever its URL)."""
    return genesis_hash == MAINNET_BETA_GENESIS_HASH


def is_localnet(genesis_hash: str) -> bool:
    """Whether a cluster with this genesis hash is the embedded localnet."""
    return genesis_hash == LOCALNET_GENESIS_HASH


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (a localnet, not a cluster)."""
    host = urlparse(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")

"""Which cluster a node is: a local test cluster this user started, this machine, mainnet.

A cluster is known by its genesis hash. A loopback URL says only that the node runs on this
machine (no compute budget is needed there, and a refused connection suggests starting a
localnet): another user's process, or a tunnel to a real cluster, may listen there too. So a
node is a local test cluster (spending without a prompt, the built-in program id) only when
its URL is loopback and its genesis hash is one this user's own ``curta-chain localnet`` or
``localnet --validator`` recorded when it started (``user_data``).
"""

from urllib.parse import ParseResult, urlparse

from curta_chain.user_data import recorded_local_clusters

MAINNET_BETA_GENESIS_HASH = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"
"""mainnet-beta's genesis hash: real money, and no faucet."""


def is_mainnet(genesis_hash: str) -> bool:
    """Whether a cluster with this genesis hash is mainnet-beta (whatever its URL)."""
    return genesis_hash == MAINNET_BETA_GENESIS_HASH


def is_local_cluster(url: str, genesis_hash: str) -> bool:
    """Whether the node at ``url``, answering ``genesis_hash``, is a local test cluster.

    True only for a loopback URL and a genesis hash this user's localnet (or validator)
    recorded when it started: any other node is a real cluster, whatever it says.
    """
    if not is_loopback(url):
        return False
    return any(entry["genesis_hash"] == genesis_hash for entry in recorded_local_clusters())


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (a localnet, not a cluster)."""
    host = urlparse(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


_THIS_MACHINE = ("localhost", "127.0.0.1", "::1")
"""The names a person uses for this machine: one node, whichever names it."""


def same_node(url: str, other: str) -> bool:
    """Whether two URLs name the same node: scheme, host, port and path alike.

    ``localhost``, ``127.0.0.1`` and ``::1`` are one host; a trailing ``/`` and the
    scheme's default port change nothing.
    """
    a, b = urlparse(url.rstrip("/")), urlparse(other.rstrip("/"))

    def host(parsed: ParseResult) -> str:
        name = (parsed.hostname or "").lower()
        return "localhost" if name in _THIS_MACHINE else name

    def port(parsed: ParseResult) -> int | None:
        return parsed.port or {"http": 80, "https": 443}.get(parsed.scheme)

    return (a.scheme, host(a), port(a), a.path) == (b.scheme, host(b), port(b), b.path)

"""The options every chain command shares, after the Solana CLI's conventions."""

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from solders.keypair import Keypair

from curta_chain.chain import cluster
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.session import Connection, connect, parse_address, parse_program_hashes
from curta_chain.chain.transport import GIVE_UP_AFTER, HttpTransport
from curta_chain.errors import ConfigError

parse_pubkey = parse_address
"""Parse a base58 address, naming the option in the error (``parse_address``)."""


def add_cluster_options(
    parser: argparse.ArgumentParser, keypair: bool = True, program: bool = True
) -> None:
    """Add ``-u``, ``-k``, ``--commitment``, ``--program-id``/``--program-hash``, ``-C``, etc."""
    parser.add_argument(
        "-u", "--url", help="RPC URL or moniker: localhost, devnet, testnet, mainnet-beta"
    )
    if keypair:
        parser.add_argument("-k", "--keypair", help="keypair file (Solana CLI JSON format)")
    parser.add_argument("--commitment", choices=cluster.COMMITMENTS, help="default: confirmed")
    if program:
        add_program_options(parser)
    parser.add_argument(
        "-C",
        "--config",
        type=Path,
        help="Solana CLI config file (default: ~/.config/solana/cli/config.yml)",
    )
    parser.add_argument(
        "--rpc-timeout",
        type=float,
        default=GIVE_UP_AFTER,
        metavar="SECONDS",
        help=f"give up on a node with no usable answer for this long (default {GIVE_UP_AFTER:.0f})",
    )
    parser.add_argument("--output", choices=("text", "json"), default="text")


def add_program_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--program-id`` and ``--program-hash``."""
    parser.add_argument(
        "--program-id",
        help="the curta program's address (default: the one `curta-chain deploy` recorded "
        "for this cluster in the config, or the embedded localnet's)",
    )
    parser.add_argument(
        "--program-hash",
        action="append",
        default=[],
        metavar="SHA256",
        help="also trust a program whose deployed ELF has this SHA-256 (default: only the "
        "builds shipped with curta-chain)",
    )


def add_yes_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--yes``: spend on a cluster that is not a localnet without asking."""
    parser.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="off a localnet, spend without asking for confirmation on the terminal",
    )


@dataclass(frozen=True)
class Cluster:
    """What the shared options resolve to."""

    url: str
    commitment: str
    keypair_path: Path | None
    rpc_timeout: float = GIVE_UP_AFTER
    program_id: str | None = None
    """``--program-id`` as given (None: from the config or the localnet)."""
    program_hashes: tuple[str, ...] = ()
    config: cluster.CliConfig = field(default_factory=cluster.CliConfig)

    def client(self, url: str | None = None) -> RpcClient:
        """A fresh RPC client for this cluster, or for another node (``--cross-check``).

        Create it inside the running event loop.
        """
        transport = HttpTransport(url or self.url, give_up_after=self.rpc_timeout)
        return RpcClient(transport, self.commitment)

    def keypair(self) -> Keypair:
        """Load the keypair the options name."""
        assert self.keypair_path is not None
        return cluster.load_keypair(self.keypair_path)

    async def connect(self, client: RpcClient) -> Connection:
        """Find and check the curta program on this cluster (see ``session.connect``)."""
        return await connect(client, self.config, self.program_id, self.program_hashes)


def resolve(args: argparse.Namespace) -> Cluster:
    """Resolve the shared options against the Solana CLI config."""
    config = cluster.read_cli_config(args.config)
    keypair_arg = getattr(args, "keypair", None)
    program_id = getattr(args, "program_id", None)
    if program_id is not None:
        parse_address(program_id, "--program-id")
    return Cluster(
        url=cluster.resolve_url(args.url, config),
        commitment=cluster.resolve_commitment(args.commitment, config),
        keypair_path=cluster.keypair_path(keypair_arg, config)
        if hasattr(args, "keypair")
        else None,
        rpc_timeout=_positive(args.rpc_timeout, "--rpc-timeout"),
        program_id=program_id,
        program_hashes=parse_program_hashes(getattr(args, "program_hash", [])),
        config=config,
    )


def _positive(value: float, what: str) -> float:
    if not value > 0:
        raise ConfigError(f"{what} {value}: expected a positive number of seconds")
    return value

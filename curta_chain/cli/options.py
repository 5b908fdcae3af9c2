"""The options every chain command shares, after the Solana CLI's conventions."""

import argparse
from dataclasses import dataclass
from pathlib import Path

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.chain import cluster
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.transport import GIVE_UP_AFTER, HttpTransport
from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.errors import ConfigError


def add_cluster_options(parser: argparse.ArgumentParser, keypair: bool = True) -> None:
    """Add ``-u``, ``-k``, ``--commitment``, ``--program-id``, ``--config`` and ``--output``."""
    parser.add_argument(
        "-u", "--url", help="RPC URL or moniker: localhost, devnet, testnet, mainnet-beta"
    )
    if keypair:
        parser.add_argument("-k", "--keypair", help="keypair file (Solana CLI JSON format)")
    parser.add_argument("--commitment", choices=cluster.COMMITMENTS, help="default: confirmed")
    parser.add_argument(
        "--program-id", default=LOCALNET_PROGRAM_ID, help="the curta program's address"
    )
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


@dataclass(frozen=True)
class Cluster:
    """What the shared options resolve to."""

    url: str
    commitment: str
    program_id: Pubkey
    keypair_path: Path | None
    rpc_timeout: float = GIVE_UP_AFTER

    def client(self) -> RpcClient:
        """A fresh RPC client for this cluster (create it inside the running event loop)."""
        return RpcClient(HttpTransport(self.url, give_up_after=self.rpc_timeout), self.commitment)

    def keypair(self) -> Keypair:
        """Load the keypair the options name."""
        assert self.keypair_path is not None
        return cluster.load_keypair(self.keypair_path)


def resolve(args: argparse.Namespace) -> Cluster:
    """Resolve the shared options against the Solana CLI config."""
    config = cluster.read_cli_config(args.config)
    keypair_arg = getattr(args, "keypair", None)
    return Cluster(
        url=cluster.resolve_url(args.url, config),
        commitment=cluster.resolve_commitment(args.commitment, config),
        program_id=parse_pubkey(args.program_id, "--program-id"),
        keypair_path=cluster.keypair_path(keypair_arg, config)
        if hasattr(args, "keypair")
        else None,
        rpc_timeout=_positive(args.rpc_timeout, "--rpc-timeout"),
    )


def _positive(value: float, what: str) -> float:
    if not value > 0:
        raise ConfigError(f"{what} {value}: expected a positive number of seconds")
    return value


def parse_pubkey(text: str, what: str) -> Pubkey:
    """Parse a base58 address, naming ``what`` in the error.

    Raises:
        ConfigError: ``text`` is not a 32-byte base58 address.
    """
    try:
        return Pubkey.from_string(text)
    except ValueError as exc:
        raise ConfigError(f"{what} {text!r}: not a base58 Solana address") from exc

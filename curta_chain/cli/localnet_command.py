"""``curta-chain localnet``: serve the embedded localnet (or solana-test-validator)."""

import argparse
import json
from pathlib import Path

from curta_chain.cli.console import ConsoleReporter
from curta_chain.cli.options import add_output_option, is_json
from curta_chain.constants import LOCALNET_PORT
from curta_chain.reporting import NullReporter


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``localnet`` subcommand."""
    parser = subparsers.add_parser(
        "localnet",
        help="serve a Solana JSON-RPC localnet with the curta program preloaded",
        description="Serve Solana's JSON-RPC on 127.0.0.1 from LiteSVM, the curta program "
        "preloaded at its fixed id and a faucet (requestAirdrop). Ctrl-C stops it.",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=LOCALNET_PORT,
        help="RPC port (default 8899; 0 picks a free one)",
    )
    parser.add_argument(
        "--ledger", type=Path, help="folder that keeps the chain across restarts (default: none)"
    )
    parser.add_argument(
        "--reset", action="store_true", help="start a new chain in --ledger, deleting the old one"
    )
    parser.add_argument(
        "--validator",
        action="store_true",
        help="run solana-test-validator with the same program instead, if it is installed",
    )
    add_output_option(parser)
    parser.set_defaults(run=_run)


class _JsonLines(NullReporter):
    """For ``--output json``: each message the localnet says is one JSON object per line."""

    def line(self, text: str) -> None:
        """Print ``{"message": text}``."""
        print(json.dumps({"message": text}), flush=True)


def _port(text: str) -> int:
    """Parse a TCP port for argparse (0 picks a free one)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65_535:
        raise argparse.ArgumentTypeError(f"{text}: expected a port 0 to 65535")
    return port


def _run(args: argparse.Namespace) -> int:
    # Imported here so other commands do not pay for LiteSVM and aiohttp at start-up.
    from curta_chain.localnet import serve
    from curta_chain.localnet.validator import run_validator

    if args.validator:
        return run_validator(args.port, args.ledger or Path("test-ledger"), args.reset)
    reporter = _JsonLines() if is_json(args) else ConsoleReporter()
    serve(port=args.port, ledger=args.ledger, reset=args.reset, reporter=reporter)
    return 0

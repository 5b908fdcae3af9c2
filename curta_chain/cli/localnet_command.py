"""``curta-chain localnet``: serve the embedded localnet (or solana-test-validator)."""

import argparse
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from curta_chain.cli.console import ConsoleReporter
from curta_chain.cli.options import add_output_option, is_json
from curta_chain.constants import (
    ACCOUNT_CU_LIMIT,
    ACCOUNT_WRITE_LIMIT,
    BLOCK_CU_LIMIT,
    LOCALNET_PORT,
    SLOT_SECONDS,
)
from curta_chain.errors import InputError
from curta_chain.reporting import NullReporter

if TYPE_CHECKING:
    from solders.pubkey import Pubkey

    from curta_chain.localnet.busy import BusyOptions


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
        help="run solana-test-validator (bash scripts/install-test-validator.sh builds it) "
        "with the same program, its faucet and free ports instead; --port 0 picks the RPC "
        "port too; --ledger defaults to ./test-ledger",
    )
    parser.add_argument(
        "--deactivate-feature",
        action="append",
        type=_pubkey,
        default=[],
        metavar="FEATURE_PUBKEY",
        help="deactivate this feature in genesis (repeatable), as solana-test-validator does; "
        "every other feature is active from slot 0 (docs/localnet.md)",
    )
    busy = parser.add_argument_group(
        "busy cluster",
        "behave like a busy cluster (all off by default; docs/localnet.md describes each)",
    )
    busy.add_argument(
        "--profile",
        choices=["busy"],
        help="busy: blocks, the leader's order and limits, 10%% loss, background load filling "
        "half of each block, 50 requests a second, batches of at most 100",
    )
    busy.add_argument(
        "--blocks",
        action="store_true",
        default=None,
        help="run transactions in the block of the next slot, by compute-unit price",
    )
    busy.add_argument(
        "--slot-ms",
        type=_positive(float),
        help="milliseconds a slot lasts (default 400); the per-slot compute-unit limits and "
        "the background load scale with it, as SIMD-0525 scales them",
    )
    busy.add_argument(
        "--seed", type=_at_least(0), help="seed of the loss, the shuffle and the load (default 0)"
    )
    busy.add_argument(
        "--drop-rate",
        type=_fraction,
        help="share of accepted transactions that never reach the leader (default 0)",
    )
    busy.add_argument(
        "--block-cu-limit",
        type=_at_least(1),
        help=f"compute units per block "
        f"(default {BLOCK_CU_LIMIT:,} at 400 ms slots; needs --blocks)",
    )
    busy.add_argument(
        "--account-cu-limit",
        type=_at_least(1),
        help="compute units per writable account per block "
        f"(default {ACCOUNT_CU_LIMIT:,} at 400 ms slots; needs --blocks)",
    )
    busy.add_argument(
        "--account-write-limit",
        type=_at_least(1),
        help="transactions writing one account per block "
        f"(default {ACCOUNT_WRITE_LIMIT}; needs --blocks)",
    )
    busy.add_argument(
        "--background-load",
        type=_at_least(0),
        metavar="CU",
        help="compute units of other users' transactions per block (default 0; needs --blocks)",
    )
    busy.add_argument(
        "--rps",
        type=_at_least(1),
        help="JSON-RPC calls a second before HTTP 429 (default: no limit)",
    )
    busy.add_argument(
        "--max-batch",
        type=_at_least(1),
        help="longest JSON-RPC batch served (default: no limit)",
    )
    add_output_option(parser)
    parser.set_defaults(run=_run)


_BUSY_FIELDS = (
    "blocks",
    "seed",
    "drop_rate",
    "block_cu_limit",
    "account_cu_limit",
    "account_write_limit",
    "background_load",
    "rps",
    "max_batch",
)
_NEEDS_BLOCKS = ("block_cu_limit", "account_cu_limit", "account_write_limit", "background_load")


def busy_options(args: argparse.Namespace) -> "BusyOptions":
    """Return the busy-cluster settings the flags ask for.

    The profile, its per-slot limits scaled to ``--slot-ms`` (SIMD-0525), then each flag.

    Raises:
        InputError: a flag that needs ``--blocks`` without it.
    """
    from curta_chain.localnet.busy import NOT_BUSY, BusyOptions

    options = BusyOptions.busy() if args.profile == "busy" else NOT_BUSY
    if args.slot_ms is not None:
        options = options.at_slot_ms(args.slot_ms)
    given = {name: getattr(args, name) for name in _BUSY_FIELDS if getattr(args, name) is not None}
    options = replace(options, **given)
    if not options.blocks:
        for name in _NEEDS_BLOCKS:
            if name in given:
                raise InputError(f"--{name.replace('_', '-')} needs --blocks (or --profile busy)")
    return options


class _JsonLines(NullReporter):
    """For ``--output json``: each message the localnet says is one JSON object per line."""

    def line(self, text: str) -> None:
        """Print ``{"message": text}``."""
        print(json.dumps({"message": text}), flush=True)


def _at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", "").replace(",", ""))
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"{text}: expected a whole number of at least {low}")
        return value

    return parse


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text}: expected a number above 0")
        return value

    return parse


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text}: expected a fraction from 0 to 1")
    return value


def _pubkey(text: str) -> "Pubkey":
    """Parse a base58 public key for argparse (``--deactivate-feature``)."""
    from solders.pubkey import Pubkey

    try:
        return Pubkey.from_string(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: expected a base58 public key") from None


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
    from curta_chain.localnet.busy import NOT_BUSY, describe

    busy = busy_options(args)
    slot_duration = args.slot_ms / 1000 if args.slot_ms is not None else SLOT_SECONDS
    reporter = _JsonLines() if is_json(args) else ConsoleReporter()
    if args.validator:
        from curta_chain.validator import run_validator

        if busy != NOT_BUSY or args.slot_ms is not None:
            raise InputError("the busy-cluster flags work with the embedded localnet only")
        ledger = args.ledger or Path("test-ledger")
        return run_validator(args.port, ledger, args.reset, reporter, args.deactivate_feature)
    if busy != NOT_BUSY:
        reporter.line(f"Busy cluster: {describe(busy)}")
    serve(
        port=args.port,
        ledger=args.ledger,
        reset=args.reset,
        reporter=reporter,
        slot_duration=slot_duration,
        busy=busy,
        deactivate_features=tuple(args.deactivate_feature),
    )
    return 0

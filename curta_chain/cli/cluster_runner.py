"""Running a command against a cluster: the event loop, the program check, the budget.

- ``run_on_cluster(args, body, resume_hint)``: connect (find the curta program and check
  it is a shipped build) before anything else, then ``body(cluster, connection)``;
  ``run_with_client`` is the same without the program (airdrop, deploy).
- A failure to reach the node, or Ctrl-C, after at least one transaction was sent says
  ``resume_hint``: those transactions may have landed, and a rerun picks up from them.
  Before anything was sent there is nothing to resume, and no hint.
- ``add_price_option`` and ``budget_for``: ``--with-compute-unit-price`` and the
  compute-budget instructions off loopback; ``with_price`` reads an ``auto`` price (every
  command that sends reads it before its cost is shown); ``add_tx_version_option``:
  ``--tx-version``.

Like ``options``, this module imports the library only inside its functions.
"""

import argparse
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from curta_chain.cli.options import Cluster, Interrupted, resolve

if TYPE_CHECKING:
    from solders.pubkey import Pubkey

    from curta_chain.chain import specs
    from curta_chain.chain.context import ChainContext
    from curta_chain.chain.features import TxVersionChoice
    from curta_chain.chain.rpc import RpcClient
    from curta_chain.chain.session import Connection

T = TypeVar("T")

U64_MAX = 2**64 - 1
"""Lamports and micro-lamport prices travel as u64."""


AUTO_PERCENTILE = 75
"""``--with-compute-unit-price auto`` pays the 75th percentile of recent prices."""
DEFAULT_MAX_COMPUTE_UNIT_PRICE = 1_000_000
"""``chain.fees.DEFAULT_MAX_COMPUTE_UNIT_PRICE``, for the help (this module imports the
library only inside its functions); a test holds the two equal."""


def add_price_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--with-compute-unit-price`` and ``--max-compute-unit-price``."""
    parser.add_argument(
        "--with-compute-unit-price",
        metavar="auto|MICROLAMPORTS",
        help="priority fee per compute unit (adds a tight compute-unit limit too); auto: "
        f"the {AUTO_PERCENTILE}th percentile of what recent blocks paid to write the "
        "command's accounts (getRecentPrioritizationFees), shown in the plan's cost",
    )
    parser.add_argument(
        "--max-compute-unit-price",
        type=int,
        metavar="MICROLAMPORTS",
        help="the most a compute unit may cost: auto pays at most this; a price above it is "
        "refused (default for auto: refuse recent prices above "
        f"{DEFAULT_MAX_COMPUTE_UNIT_PRICE:,}, which only a congested cluster or a lying node "
        "reports)",
    )


TX_VERSIONS = ("auto", "v1", "legacy")
"""``--tx-version``'s choices: ``features.TxVersionChoice``'s values."""


def add_tx_version_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--tx-version``: the format of the transactions that gain from room (``what``)."""
    parser.add_argument(
        "--tx-version",
        choices=TX_VERSIONS,
        default="auto",
        help=f"the format of {what}: v1 (up to 4,096 bytes, SIMD-0385), legacy (1,232 "
        "bytes), or auto: v1 where the cluster has activated it (its enable_tx_v1 feature "
        "account), else legacy (default: auto)",
    )


def budget_for(args: argparse.Namespace, url: str) -> "specs.Budget":
    """Compute-budget instructions off loopback; the price ``--with-compute-unit-price``.

    ``auto`` carries the cap (``--max-compute-unit-price``, else the default ``fees.priced``
    holds it to); a price given outright must not exceed a cap given with it.

    Raises:
        ConfigError: a price that is neither ``auto`` nor a u64, a cap without a price, or
            a price above the cap.
    """
    from curta_chain.chain import specs
    from curta_chain.chain.cluster import is_loopback
    from curta_chain.errors import ConfigError

    text = args.with_compute_unit_price
    cap = getattr(args, "max_compute_unit_price", None)
    if cap is not None and not 0 <= cap <= U64_MAX:
        raise ConfigError(f"--max-compute-unit-price {cap}: expected a count 0 to {U64_MAX}")
    limit = not is_loopback(url)
    version: TxVersionChoice = args.tx_version if "tx_version" in vars(args) else "legacy"
    if text == "auto":
        auto = specs.AutoPrice(AUTO_PERCENTILE, cap)
        return specs.Budget(limit_compute=limit, auto_price=auto, tx_version=version)
    price = None if text is None else _price(str(text))
    if cap is not None and price is None:
        raise ConfigError(
            "--max-compute-unit-price caps --with-compute-unit-price (auto or a price): give one"
        )
    if cap is not None and price is not None and price > cap:
        raise ConfigError(
            f"--with-compute-unit-price {price:,} is above --max-compute-unit-price {cap:,}: "
            "nothing was sent"
        )
    return specs.Budget(limit_compute=limit, compute_unit_price=price, tx_version=version)


async def with_price(ctx: "ChainContext", writable: "Sequence[Pubkey]") -> "ChainContext":
    """``ctx`` with ``--with-compute-unit-price auto`` read as a price for writing ``writable``.

    Capped as ``fees.priced`` says; a budget with no automatic price comes back unchanged.
    """
    from dataclasses import replace

    from curta_chain.chain.fees import priced

    return replace(ctx, budget=await priced(ctx.client, ctx.budget, writable))


def describe_price(budget: "specs.Budget", auto: "specs.AutoPrice | None") -> str | None:
    """The plan's line for a priced budget ("compute-unit price 1,200 micro-lamports ...").

    ``auto``: how the price was found (None: it was given).
    """
    price = budget.compute_unit_price
    if price is None:
        return None
    how = ""
    if auto is not None:
        cap = DEFAULT_MAX_COMPUTE_UNIT_PRICE if auto.cap is None else auto.cap
        how = f" (auto: the {AUTO_PERCENTILE}th percentile of recent blocks', at most {cap:,})"
    return f"  compute-unit price {price:,} micro-lamports{how}, in the fees above"


def _price(text: str) -> int:
    from curta_chain.errors import ConfigError

    try:
        price = int(text)
    except ValueError:
        price = -1
    if not 0 <= price <= U64_MAX:
        raise ConfigError(
            f"--with-compute-unit-price {text}: expected a count 0 to {U64_MAX}, or auto"
        )
    return price


def run_on_cluster(
    args: argparse.Namespace,
    body: "Callable[[Cluster, Connection], Awaitable[T]]",
    resume_hint: str | None = None,
    target: Cluster | None = None,
) -> T:
    """Connect (find and check the program) before anything else, then run ``body``."""

    async def connected(target: Cluster, client: "RpcClient") -> T:
        return await body(target, await target.connect(client))

    return run_with_client(args, connected, resume_hint, target)


def run_with_client(
    args: argparse.Namespace,
    body: "Callable[[Cluster, RpcClient], Awaitable[T]]",
    resume_hint: str | None = None,
    target: Cluster | None = None,
) -> T:
    """Run ``body(cluster, client)``; return its exit code.

    Raises:
        SendGaveUpError: the node stopped answering after something was sent.
        Interrupted: Ctrl-C (``resume_hint`` set when something was sent).
    """
    import asyncio

    from curta_chain.errors import RpcCallError, RpcError, SendGaveUpError

    target = target or resolve(args)
    clients: list[RpcClient] = []

    async def main() -> T:
        client = target.client()
        clients.append(client)
        try:
            return await body(target, client)
        except RpcError as exc:
            # The sender's own give-ups already say how to resume; so must a read between
            # two sends that finds the node gone. A node that answered with an error is
            # another matter, and so is one that never took a transaction.
            if (
                resume_hint is None
                or not client.sends
                or isinstance(exc, SendGaveUpError | RpcCallError)
            ):
                raise
            raise SendGaveUpError(f"{exc}; {resume_hint}") from exc
        finally:
            await client.aclose()

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        sent = bool(clients and clients[0].sends)
        raise Interrupted(resume_hint if sent else None) from None


def resolve_url(text: str, option: str) -> str:
    """A second URL option (``--cross-check``): a moniker or URL, as ``-u`` takes."""
    from curta_chain.cli.solana_config import CliConfig
    from curta_chain.cli.solana_config import resolve_url as resolve_cluster_url
    from curta_chain.errors import ConfigError

    try:
        return resolve_cluster_url(text, CliConfig())
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("--url", option, 1)) from exc

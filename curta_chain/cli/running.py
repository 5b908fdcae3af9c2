"""What every chain command shares: running against a cluster, output, budget, options."""

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import urlparse

from curta_chain.chain import specs
from curta_chain.chain.cluster import CliConfig
from curta_chain.chain.cluster import resolve_url as resolve_cluster_url
from curta_chain.chain.rpc import RpcCallError, RpcClient
from curta_chain.chain.session import Connection
from curta_chain.cli.options import Cluster, resolve
from curta_chain.errors import ConfigError, RpcError, SendGaveUpError
from curta_chain.reporting import ConsoleReporter, NullReporter, Reporter

U64_MAX = 2**64 - 1
"""Lamports and micro-lamport prices travel as u64."""


T = TypeVar("T")


def add_price_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--with-compute-unit-price``."""
    parser.add_argument(
        "--with-compute-unit-price",
        type=int,
        metavar="MICROLAMPORTS",
        help="priority fee per compute unit (adds a tight compute-unit limit too)",
    )


def reporter_for(args: argparse.Namespace) -> Reporter:
    """Where the command's lines go: nowhere with ``--output json``."""
    return NullReporter() if args.output == "json" else ConsoleReporter()


def budget_for(args: argparse.Namespace, url: str) -> specs.Budget:
    """Compute-budget instructions off loopback; the price ``--with-compute-unit-price``."""
    price = args.with_compute_unit_price
    if price is not None and not 0 <= price <= U64_MAX:
        raise ConfigError(f"--with-compute-unit-price {price}: expected a count 0 to {U64_MAX}")
    return specs.Budget(limit_compute=not _is_loopback(url), compute_unit_price=price)


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def run_on_cluster(
    args: argparse.Namespace,
    body: Callable[[Cluster, Connection], Awaitable[T]],
    resume_hint: str | None = None,
) -> T:
    """Connect (find and check the program) before anything else, then run ``body``."""

    async def connected(target: Cluster, client: RpcClient) -> T:
        return await body(target, await target.connect(client))

    return run_with_client(args, connected, resume_hint)


def run_with_client(
    args: argparse.Namespace,
    body: Callable[[Cluster, RpcClient], Awaitable[T]],
    resume_hint: str | None = None,
) -> T:
    """Run ``body`` with a client for the cluster; a node lost between sends says how to resume."""
    target = resolve(args)

    async def main() -> T:
        client = target.client()
        try:
            return await body(target, client)
        except RpcError as exc:
            # The sender's give-ups say how to resume; so must a read between two sends
            # that finds the node gone. A node that answered with an error is another matter.
            if resume_hint is None or isinstance(exc, SendGaveUpError | RpcCallError):
                raise
            raise SendGaveUpError(f"{exc}; {resume_hint}") from exc
        finally:
            await client.aclose()

    return asyncio.run(main())


def emit(args: argparse.Namespace, value: dict[str, object]) -> None:
    """Print ``value`` as one JSON line, with ``--output json``."""
    if args.output == "json":
        print(json.dumps(value))


def resolve_url(text: str, option: str) -> str:
    """A second URL option (``--cross-check``): a moniker or URL, as ``-u`` takes."""
    try:
        return resolve_cluster_url(text, CliConfig())
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("--url", option, 1)) from exc

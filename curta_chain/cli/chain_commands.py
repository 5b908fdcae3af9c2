"""The chain commands: publish, seal, verify, status, close, airdrop."""

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

from curta_chain.artifact import read_artifact
from curta_chain.chain import specs
from curta_chain.chain.accounts import ZERO_KEY, require_model
from curta_chain.chain.close import close
from curta_chain.chain.close import resume_hint as close_resume_hint
from curta_chain.chain.publish import RESUME_HINT, check_funds, plan_publish, publish
from curta_chain.chain.rpc import RpcCallError, RpcClient
from curta_chain.chain.seal import resume_hint, seal
from curta_chain.chain.sender import wait_for_signature
from curta_chain.chain.verify import verify
from curta_chain.cli.options import Cluster, add_cluster_options, parse_pubkey, resolve
from curta_chain.constants import LAMPORTS_PER_SOL
from curta_chain.errors import ConfigError, RpcError, SendGaveUpError
from curta_chain.program import ModelState
from curta_chain.reporting import ConsoleReporter, NullReporter, Reporter


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the chain commands."""
    p = subparsers.add_parser("publish", help="upload an artifact; prints the model address")
    p.add_argument("artifact", type=Path)
    add_cluster_options(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan and cost, send nothing")
    _add_price_option(p)
    p.set_defaults(run=_publish)

    p = subparsers.add_parser("seal", help="hash the model on chain, chunk by chunk")
    p.add_argument("model")
    p.add_argument("artifact", type=Path, nargs="?", help="name the first bad chunk if it fails")
    add_cluster_options(p)
    _add_price_option(p)
    p.set_defaults(run=_seal)

    p = subparsers.add_parser("verify", help="prove a model on chain is exactly an artifact")
    p.add_argument("model")
    p.add_argument("artifact", type=Path)
    add_cluster_options(p, keypair=False)
    p.set_defaults(run=_verify)

    p = subparsers.add_parser("status", help="show a model account")
    p.add_argument("model")
    add_cluster_options(p, keypair=False)
    p.set_defaults(run=_status)

    p = subparsers.add_parser("close", help="close an unsealed model; rent back to its authority")
    p.add_argument("model")
    add_cluster_options(p)
    _add_price_option(p)
    p.set_defaults(run=_close)

    p = subparsers.add_parser("airdrop", help="ask a localnet or devnet faucet for SOL")
    p.add_argument("sol", type=float)
    add_cluster_options(p)
    p.set_defaults(run=_airdrop)


_U64_MAX = 2**64 - 1
"""Lamports and micro-lamport prices travel as u64."""


def _add_price_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--with-compute-unit-price",
        type=int,
        metavar="MICROLAMPORTS",
        help="priority fee per compute unit (adds a tight compute-unit limit too)",
    )


def _reporter(args: argparse.Namespace) -> Reporter:
    return NullReporter() if args.output == "json" else ConsoleReporter()


def _budget(args: argparse.Namespace, url: str) -> specs.Budget:
    price = args.with_compute_unit_price
    if price is not None and not 0 <= price <= _U64_MAX:
        raise ConfigError(f"--with-compute-unit-price {price}: expected a count 0 to {_U64_MAX}")
    return specs.Budget(limit_compute=not _is_loopback(url), compute_unit_price=price)


def _is_loopback(url: str) -> bool:
    from urllib.parse import urlparse

    host = urlparse(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _run(
    args: argparse.Namespace,
    body: Callable[[Cluster, RpcClient], Awaitable[int]],
    resume_hint: str | None = None,
) -> int:
    target = resolve(args)

    async def main() -> int:
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


def _emit(args: argparse.Namespace, value: dict[str, object]) -> None:
    if args.output == "json":
        print(json.dumps(value))


def _publish(args: argparse.Namespace) -> int:
    artifact = read_artifact(args.artifact)
    reporter = _reporter(args)

    async def body(target: Cluster, client: RpcClient) -> int:
        authority = target.keypair()
        budget = _budget(args, target.url)
        plan = await plan_publish(client, target.program_id, authority, artifact, budget)
        sol = plan.cost_lamports / LAMPORTS_PER_SOL
        reporter.line(
            f"model {plan.model} ({plan.state}): {len(plan.section_lengths)} sections, "
            f"{len(plan.create_sections)} accounts to create, {len(plan.writes):,} writes "
            f"({plan.write_bytes:,} bytes, {plan.payload_per_write} per write), "
            f"{plan.transactions:,} transactions"
        )
        reporter.line(
            f"cost: {sol:.9f} SOL (rent {plan.rent_lamports:,} + fees {plan.fee_lamports:,} "
            f"lamports) on {target.url}"
        )
        if args.dry_run:
            _emit(args, {"dry_run": True, "plan": plan.to_json()})
            return 0
        await check_funds(client, authority.pubkey(), plan)
        result = await publish(
            client, target.program_id, authority, artifact, plan, budget, reporter
        )
        reporter.line(f"published {result.transactions:,} transactions in {result.seconds:.1f} s")
        reporter.line(str(plan.model))
        _emit(args, result.to_json())
        return 0

    return _run(args, body, RESUME_HINT)


def _seal(args: argparse.Namespace) -> int:
    artifact = read_artifact(args.artifact) if args.artifact else None
    reporter = _reporter(args)

    async def body(target: Cluster, client: RpcClient) -> int:
        payer = target.keypair()
        address = parse_pubkey(args.model, "model")
        budget = _budget(args, target.url)
        result = await seal(client, target.program_id, payer, address, artifact, budget, reporter)
        reporter.line(result.describe())
        _emit(args, result.to_json())
        return 0 if result.state == ModelState.SEALED else 1

    return _run(args, body, resume_hint(parse_pubkey(args.model, "model")))


def _verify(args: argparse.Namespace) -> int:
    artifact = read_artifact(args.artifact)

    async def body(target: Cluster, client: RpcClient) -> int:
        address = parse_pubkey(args.model, "model")
        report = await verify(client, target.program_id, address, artifact)
        if args.output == "json":
            _emit(args, report.to_json())
        elif report.ok:
            print(
                f"verified {address}: sealed, every byte matches {args.artifact}, "
                f"hash {report.declared_hash.hex()}"
            )
        else:
            for difference in report.differences:
                print(difference)
            print(f"NOT verified: {len(report.differences)} differences")
        return 0 if report.ok else 1

    return _run(args, body)


def _status(args: argparse.Namespace) -> int:
    async def body(target: Cluster, client: RpcClient) -> int:
        address = parse_pubkey(args.model, "model")
        model = await require_model(client, target.program_id, address)
        if args.output == "json":
            _emit(args, {"model": str(address), **model.to_json()})
            return 0
        total = sum(-(-slot.length // 65_536) for slot in model.sections)
        print(f"model          {address}")
        print(f"state          {model.state.name.lower()}")
        print(f"authority      {model.authority}")
        print(f"declared hash  {model.declared_hash.hex()}")
        print(f"running hash   {model.running_hash.hex()}")
        print(f"sealed chunks  {model.chunks_hashed}/{total}")
        print(f"frozen         {model.frozen_count}/{model.section_count} weight accounts")
        print(f"seal slot      {model.seal_slot or '-'}")
        for i, slot in enumerate(model.sections):
            bound = "unbound" if slot.weight_account == ZERO_KEY else str(slot.weight_account)
            print(f"section {i:<6} {slot.length:>10,} bytes  {bound}")
        return 0

    return _run(args, body)


def _close(args: argparse.Namespace) -> int:
    reporter = _reporter(args)
    address = parse_pubkey(args.model, "model")

    async def body(target: Cluster, client: RpcClient) -> int:
        authority = target.keypair()
        budget = _budget(args, target.url)
        result = await close(client, target.program_id, authority, address, budget, reporter)
        reporter.line(
            f"closed {address} and {result.closed_accounts - 1} weight accounts: "
            f"{result.lamports_returned / LAMPORTS_PER_SOL:.9f} SOL back to {authority.pubkey()}"
        )
        _emit(args, result.to_json())
        return 0

    return _run(args, body, close_resume_hint(address))


def _airdrop(args: argparse.Namespace) -> int:
    if not 1 <= args.sol * LAMPORTS_PER_SOL <= _U64_MAX:  # false for nan, too
        raise ConfigError(
            f"airdrop {args.sol}: expected a positive amount of SOL, 1 to {_U64_MAX:,} lamports"
        )
    reporter = _reporter(args)

    async def body(target: Cluster, client: RpcClient) -> int:
        if "mainnet" in target.url:
            raise ConfigError(f"{target.url}: mainnet-beta has no faucet")
        owner = target.keypair().pubkey()
        lamports = round(args.sol * LAMPORTS_PER_SOL)
        signature = await client.request_airdrop(owner, lamports)
        await wait_for_signature(client, signature)
        balance = await client.balance(owner)
        reporter.line(f"{owner}: {balance / LAMPORTS_PER_SOL:.9f} SOL")
        _emit(args, {"pubkey": str(owner), "signature": signature, "balance": balance})
        return 0

    return _run(args, body)

"""The chain commands: deploy, publish, seal, verify, status, close, airdrop.

Each one (but airdrop) first connects: it finds the curta program for the cluster and
checks that it is a shipped build, before anything is sent. Off the embedded localnet, a
command that spends asks for confirmation on the terminal first (``--yes`` skips it).
"""

import argparse
from pathlib import Path

from curta_chain.artifact import read_artifact
from curta_chain.chain.accounts import ZERO_KEY, require_model
from curta_chain.chain.close import close
from curta_chain.chain.close import resume_hint as close_resume_hint
from curta_chain.chain.publish import RESUME_HINT, check_funds, plan_publish, publish
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.seal import resume_hint, seal, seal_cost
from curta_chain.chain.sender import wait_for_signature
from curta_chain.chain.session import Connection
from curta_chain.chain.verify import verify
from curta_chain.cli.confirm import confirm_spend
from curta_chain.cli.options import (
    Cluster,
    add_cluster_options,
    add_yes_option,
    parse_pubkey,
)
from curta_chain.cli.running import (
    U64_MAX,
    add_price_option,
    budget_for,
    emit,
    reporter_for,
    resolve_url,
    run_on_cluster,
    run_with_client,
)
from curta_chain.constants import HASH_CHUNK_SIZE, LAMPORTS_PER_SOL
from curta_chain.errors import ConfigError
from curta_chain.program import ModelState


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the chain commands."""
    p = subparsers.add_parser("publish", help="upload an artifact; prints the model address")
    p.add_argument("artifact", type=Path)
    add_cluster_options(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan and cost, send nothing")
    add_price_option(p)
    add_yes_option(p)
    p.set_defaults(run=_publish)

    p = subparsers.add_parser("seal", help="hash the model on chain, chunk by chunk")
    p.add_argument("model")
    p.add_argument("artifact", type=Path, nargs="?", help="name the first bad chunk if it fails")
    add_cluster_options(p)
    add_price_option(p)
    add_yes_option(p)
    p.set_defaults(run=_seal)

    p = subparsers.add_parser("verify", help="prove a model on chain is exactly an artifact")
    p.add_argument("model")
    p.add_argument("artifact", type=Path)
    add_cluster_options(p, keypair=False)
    p.add_argument(
        "--require-final",
        action="store_true",
        help="fail when the program can still be upgraded (by anyone)",
    )
    p.add_argument(
        "--cross-check",
        metavar="URL",
        help="read every account again from this second node, at the same slot or later, "
        "and fail on any difference (without it, verify trusts the one node it reads)",
    )
    p.set_defaults(run=_verify)

    p = subparsers.add_parser("status", help="show a model account")
    p.add_argument("model")
    add_cluster_options(p, keypair=False)
    p.set_defaults(run=_status)

    p = subparsers.add_parser("close", help="close an unsealed model; rent back to its authority")
    p.add_argument("model")
    add_cluster_options(p)
    add_price_option(p)
    add_yes_option(p)
    p.set_defaults(run=_close)

    p = subparsers.add_parser("airdrop", help="ask a localnet or devnet faucet for SOL")
    p.add_argument("sol", type=float)
    add_cluster_options(p, program=False)
    p.set_defaults(run=_airdrop)


def _publish(args: argparse.Namespace) -> int:
    artifact = read_artifact(args.artifact)
    reporter = reporter_for(args)

    async def body(target: Cluster, chain: Connection) -> int:
        client, program_id = chain.client, chain.program_id
        authority = target.keypair()
        budget = budget_for(args, target.url)
        plan = await plan_publish(client, program_id, authority, artifact, budget)
        sol = plan.cost_lamports / LAMPORTS_PER_SOL
        reporter.line(
            f"model {plan.model} ({plan.state}): {len(plan.section_lengths)} sections, "
            f"{len(plan.create_sections)} accounts to create, {len(plan.writes):,} writes "
            f"({plan.write_bytes:,} bytes, {plan.payload_per_write} per write), "
            f"{plan.transactions:,} transactions"
        )
        for account in plan.prefunded:
            reporter.line(
                f"{account.address} already holds {account.existing:,} lamports someone sent: "
                f"it will be allocated and assigned with its own signature, topped up by "
                f"{account.transfer:,}"
            )
        reporter.line(
            f"cost: {sol:.9f} SOL (rent {plan.rent_lamports:,} + fees {plan.fee_lamports:,} "
            f"lamports) on {target.url}"
        )
        if args.dry_run:
            emit(args, {"dry_run": True, "plan": plan.to_json()})
            return 0
        await check_funds(client, authority.pubkey(), plan)
        if plan.transactions:
            confirm_spend(
                args, client.url, chain.genesis_hash, plan.cost_lamports, f"publishing {plan.model}"
            )
        result = await publish(client, program_id, authority, artifact, plan, budget, reporter)
        reporter.line(f"published {result.transactions:,} transactions in {result.seconds:.1f} s")
        reporter.line(str(plan.model))
        emit(args, result.to_json())
        return 0

    return run_on_cluster(args, body, RESUME_HINT)


def _seal(args: argparse.Namespace) -> int:
    artifact = read_artifact(args.artifact) if args.artifact else None
    reporter = reporter_for(args)
    address = parse_pubkey(args.model, "model")

    async def body(target: Cluster, chain: Connection) -> int:
        client, program_id = chain.client, chain.program_id
        payer = target.keypair()
        budget = budget_for(args, target.url)
        transactions, fee = await seal_cost(client, program_id, payer, address, budget)
        if transactions and not chain.localnet:
            reporter.line(
                f"sealing {address}: {transactions:,} transactions, "
                f"fees {fee / LAMPORTS_PER_SOL:.9f} SOL on {target.url}"
            )
            confirm_spend(args, client.url, chain.genesis_hash, fee, f"sealing {address}")
        result = await seal(client, program_id, payer, address, artifact, budget, reporter)
        reporter.line(result.describe())
        emit(args, result.to_json())
        return 0 if result.state == ModelState.SEALED else 1

    return run_on_cluster(args, body, resume_hint(address))


def _verify(args: argparse.Namespace) -> int:
    artifact = read_artifact(args.artifact)
    address = parse_pubkey(args.model, "model")
    cross_check = resolve_url(args.cross_check, "--cross-check") if args.cross_check else None

    async def body(target: Cluster, chain: Connection) -> int:
        second = target.client(url=cross_check) if cross_check else None
        try:
            report = await verify(
                chain.client,
                chain.program_id,
                address,
                artifact,
                target.program_hashes,
                args.require_final,
                second,
            )
        finally:
            if second is not None:
                await second.aclose()
        if args.output == "json":
            emit(args, report.to_json())
            return 0 if report.ok else 1
        for line in report.program.describe():
            print(line)
        if report.cross_checked:
            print(f"cross-checked  every account read again from {report.cross_checked}")
        else:
            print(f"trusted node   {chain.client.url} (one node: --cross-check URL adds another)")
        if report.ok:
            print(
                f"verified {address}: sealed, every byte matches {args.artifact}, "
                f"hash {report.declared_hash.hex()}"
            )
        else:
            for difference in report.differences:
                print(difference)
            print(f"NOT verified: {len(report.differences)} differences")
        return 0 if report.ok else 1

    return run_on_cluster(args, body)


def _status(args: argparse.Namespace) -> int:
    address = parse_pubkey(args.model, "model")

    async def body(target: Cluster, chain: Connection) -> int:
        model = await require_model(chain.client, chain.program_id, address)
        if args.output == "json":
            emit(args, {"model": str(address), **model.to_json()})
            return 0
        total = sum(-(-slot.length // HASH_CHUNK_SIZE) for slot in model.sections)
        print(f"model          {address}")
        print(f"program        {chain.program_id}")
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

    return run_on_cluster(args, body)


def _close(args: argparse.Namespace) -> int:
    reporter = reporter_for(args)
    address = parse_pubkey(args.model, "model")

    async def body(target: Cluster, chain: Connection) -> int:
        client, program_id = chain.client, chain.program_id
        authority = target.keypair()
        budget = budget_for(args, target.url)

        def confirm(fee: int) -> None:
            what = f"closing {address} (its rent comes back)"
            confirm_spend(args, client.url, chain.genesis_hash, fee, what)

        result = await close(
            client, program_id, authority, address, budget, reporter, confirm=confirm
        )
        reporter.line(
            f"closed {address} and {result.closed_accounts - 1} weight accounts: "
            f"{result.lamports_returned / LAMPORTS_PER_SOL:.9f} SOL back to {authority.pubkey()}"
        )
        emit(args, result.to_json())
        return 0

    return run_on_cluster(args, body, close_resume_hint(address))


def _airdrop(args: argparse.Namespace) -> int:
    if not 1 <= args.sol * LAMPORTS_PER_SOL <= U64_MAX:  # false for nan, too
        raise ConfigError(
            f"airdrop {args.sol}: expected a positive amount of SOL, 1 to {U64_MAX:,} lamports"
        )
    reporter = reporter_for(args)

    async def body(target: Cluster, client: RpcClient) -> int:
        if "mainnet" in target.url:
            raise ConfigError(f"{target.url}: mainnet-beta has no faucet")
        owner = target.keypair().pubkey()
        lamports = round(args.sol * LAMPORTS_PER_SOL)
        signature = await client.request_airdrop(owner, lamports)
        await wait_for_signature(client, signature)
        balance = await client.balance(owner)
        reporter.line(f"{owner}: {balance / LAMPORTS_PER_SOL:.9f} SOL")
        emit(args, {"pubkey": str(owner), "signature": signature, "balance": balance})
        return 0

    return run_with_client(args, body)

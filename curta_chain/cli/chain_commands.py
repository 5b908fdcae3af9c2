"""The chain commands that spend: publish, seal, close, and airdrop.

Each one (but airdrop) first connects: it finds the curta program for the cluster and
checks that it is a shipped build, before anything is sent. Off the embedded localnet, a
command that spends asks for confirmation on the terminal first (``--yes`` skips it).
Each run function imports the library when it runs (``curta-chain --help`` stays fast);
the shared options and the reporter come from ``options``, the event loop from ``running``.
The commands that only read (verify, status, models) are in ``read_commands``.
"""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from curta_chain.cli.cluster_runner import (
    U64_MAX,
    add_price_option,
    add_tx_version_option,
    budget_for,
    describe_price,
    run_on_cluster,
    run_with_client,
    with_price,
)
from curta_chain.cli.options import (
    ARTIFACT_HELP,
    MODEL_HELP,
    Cluster,
    add_cluster_options,
    add_model_and_artifact,
    add_yes_option,
    emit,
    make_reporter,
    next_command,
    parse_pubkey,
    read_artifact_file,
    resolve,
    resume_hint,
)
from curta_chain.reporting import counted, sol

if TYPE_CHECKING:
    from curta_chain.artifact import Artifact
    from curta_chain.chain.context import ChainContext
    from curta_chain.chain.plan import PublishPlan
    from curta_chain.chain.rpc import RpcClient
    from curta_chain.chain.session import Connection


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the chain commands."""
    p = subparsers.add_parser(
        "publish",
        help="upload an artifact; prints the model address and the next command",
        description="Create the model and its weight accounts and upload the artifact's "
        "bytes. Rerunning it resumes from what the chain holds. Prints the plan and its "
        "cost first; --dry-run stops there.",
    )
    p.add_argument("artifact", type=Path, metavar="ARTIFACT", help=ARTIFACT_HELP)
    add_cluster_options(p, fee_payer=True)
    p.add_argument("--dry-run", action="store_true", help="print the plan and cost, send nothing")
    add_price_option(p)
    add_tx_version_option(p, "the write transactions")
    add_yes_option(p)
    p.set_defaults(run=_publish)

    p = subparsers.add_parser(
        "seal",
        help="hash the model on chain, chunk by chunk",
        description="Begin sealing (freezes the weight accounts) and crank the on-chain hash "
        "one 64 KiB chunk per transaction, each step checked by a local mirror. Given the "
        "artifact, it first checks the chain holds exactly its bytes, and names the first "
        "bad chunk if the seal fails.",
    )
    add_model_and_artifact(
        p, "check the upload before sealing, and name the first bad chunk if it fails"
    )
    add_cluster_options(p, fee_payer=True)
    add_price_option(p)
    add_yes_option(p)
    p.set_defaults(run=_seal)

    p = subparsers.add_parser(
        "close",
        help="close an unsealed model; rent back to its authority or --recipient",
        description="Close an unsealed model and every weight account bound to it: one "
        "transaction per weight account (sent together), then one for the model, so a "
        "2-section model takes three. Their lamports go to the authority, or to --recipient. "
        "Rerun it to finish an interrupted close.",
    )
    p.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    p.add_argument(
        "--recipient",
        metavar="ADDRESS_OR_SIGNER",
        help="who receives the lamports (default: the authority, -k)",
    )
    add_cluster_options(p, fee_payer=True)
    add_price_option(p)
    add_yes_option(p)
    p.set_defaults(run=_close)

    p = subparsers.add_parser(
        "airdrop",
        help="ask a localnet, devnet or testnet faucet for SOL",
        description="Request SOL from the cluster's faucet (not on mainnet-beta) and wait "
        "for it to be confirmed.",
    )
    p.add_argument("sol", type=float, metavar="AMOUNT", help="SOL to request")
    p.add_argument(
        "recipient",
        nargs="?",
        metavar="RECIPIENT",
        help="address or signer to fund (default: the -k keypair's address)",
    )
    add_cluster_options(p, program=False)
    p.set_defaults(run=_airdrop)


def _context(
    args: argparse.Namespace, target: Cluster, chain: "Connection", resume: str
) -> "ChainContext":
    """What publish, seal and close run with: the checked program and the signers.

    The authority is ``-k``, the fee payer ``--fee-payer`` (else ``-k``); then the budget,
    the reporter and ``resume``, what a give-up says to resume.
    """
    from curta_chain.chain.context import ChainContext

    return ChainContext(
        chain.client,
        chain.program_id,
        target.keypair(),
        fee_payer=target.fee_payer(),
        budget=budget_for(args, target.url),
        reporter=target.reporter,
        resume_hint=resume,
    )


def _publish(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from curta_chain.chain.publish import check_funds, plan_publish, publish
    from curta_chain.reporting import NullReporter

    artifact = read_artifact_file(args.artifact)
    reporter = make_reporter(args)
    target = resolve(args, reporter)
    hint = resume_hint(args, "publish", args.artifact)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.cli.options import confirm_spend

        ctx = _context(args, target, chain, hint)
        client, payer = ctx.client, ctx.payer
        with reporter.waiting(f"{target.url} to show what it holds of this model"):
            auto = ctx.budget.auto_price
            if auto is not None:
                # The accounts to write, then their price, then the plan's cost at that price
                # (its notes, a fee cross-check's, said once: of the plan shown).
                draft = await plan_publish(replace(ctx, reporter=NullReporter()), artifact)
                writable = [draft.model, *draft.weight_accounts]
                ctx = await with_price(ctx, writable)
            plan = await plan_publish(ctx, artifact)
        reporter.line(f"Plan for model {plan.model} ({plan.state}):")
        reporter.line(
            f"  {counted(len(plan.section_lengths), 'section')}, "
            f"{counted(len(plan.create_sections), 'account')} to create, "
            f"{counted(len(plan.writes), 'write')} ({plan.write_bytes:,} bytes)"
        )
        reporter.line(
            f"  {counted(plan.transactions, 'transaction')}, {plan.payload_per_write:,} bytes a "
            f"write ({plan.tx_version} transactions)"
        )
        reporter.line(
            f"  cost {sol(plan.cost_lamports)}: rent {plan.rent_lamports:,} + fees "
            f"{plan.fee_lamports:,} lamports"
        )
        if plan.rent_lamports:
            reporter.line(
                f"  the rent ({sol(plan.rent_lamports)}) comes back on `curta-chain close`, "
                "until the model is sealed: sealing locks it for good"
            )
        if (price_line := describe_price(ctx.budget, auto)) is not None:
            reporter.line(price_line)
        reporter.line(f"  paid by {payer.pubkey()} on {target.url}")
        for account in plan.prefunded:
            reporter.line(
                f"  {account.address} already holds {account.existing:,} lamports someone "
                f"sent: it will be allocated and assigned with its own signature, topped up "
                f"by {account.transfer:,}"
            )
        if plan.transactions:
            # Dry runs too: a plan the payer cannot pay is refused with its shortfall.
            await check_funds(ctx, plan)
        if args.dry_run:
            emit(args, {"dry_run": True, "plan": plan.to_json()})
            return 0
        if plan.transactions == 0:
            why, after = await _nothing_to_publish(args, client, plan, artifact)
            if not emit(
                args,
                {"model": str(plan.model), "state": plan.state, "transactions": 0, "next": after},
            ):
                reporter.line(f"nothing to send: model {plan.model} is {plan.state}: {why}")
                reporter.line(f"Model: {plan.model}")
                reporter.line(f"Next: {after}")
            return 0
        confirm_spend(
            args, client.url, chain.genesis_hash, plan.cost_lamports, f"publishing {plan.model}"
        )
        result = await publish(ctx, artifact, plan)
        after = next_command(args, "seal", plan.model, args.artifact)
        if not emit(args, {**result.to_json(), "next": after}):
            reporter.line(
                f"published {counted(result.transactions, 'transaction')} in {result.seconds:.1f} s"
            )
            for line in result.signatures.lines():
                reporter.line(line)
            reporter.line(f"Model: {plan.model}")
            reporter.line(f"Next: {after}")
        return 0

    return run_on_cluster(args, body, hint, target)


async def _nothing_to_publish(
    args: argparse.Namespace, client: "RpcClient", plan: "PublishPlan", artifact: "Artifact"
) -> tuple[str, str]:
    """Why a plan with no transactions is done, and the command to run next.

    Raises:
        AccountError: the model is sealing with bytes that are not the artifact's: its
            seal will fail, and nothing can be written until then.
    """
    from curta_chain.chain.publish import frozen_differences
    from curta_chain.errors import AccountError

    if plan.state == "sealed":
        return "it holds exactly this artifact", next_command(
            args, "verify", plan.model, args.artifact
        )
    if plan.state == "sealing":
        differing = await frozen_differences(client, plan, artifact)
        if differing:
            size = sum(piece.length for piece in differing)
            raise AccountError(
                f"model {plan.model} is sealing and its frozen bytes differ from "
                f"{args.artifact} in {len(differing):,} pieces ({size:,} bytes): the seal will "
                f"end failed. Finish it with `{next_command(args, 'seal', plan.model)}`, then "
                f"publish again to reopen and rewrite them; nothing was sent"
            )
        why = "its bytes are all on chain and frozen, and sealing has begun"
    else:
        why = "every byte is on chain already"
    return why, next_command(args, "seal", plan.model, args.artifact)


def _seal(args: argparse.Namespace) -> int:
    from curta_chain.chain.seal import seal, seal_cost
    from curta_chain.program import ModelState

    artifact = read_artifact_file(args.artifact) if args.artifact else None
    artifact_words = [args.artifact] if args.artifact else []
    reporter = make_reporter(args)
    target = resolve(args, reporter)
    address = parse_pubkey(args.model, "model")
    hint = resume_hint(args, "seal", address)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.chain.accounts import require_model
        from curta_chain.chain.model_status import read_status
        from curta_chain.chain.rent import require_funds
        from curta_chain.cli.options import confirm_spend

        chain = await target.follow_owner(chain, address)
        ctx = _context(args, target, chain, hint)
        auto = ctx.budget.auto_price
        ctx = await with_price(ctx, [address])
        client = ctx.client
        held = await require_model(client, chain.program_id, address)
        if held.state == ModelState.SEALED:
            after = next_command(args, "verify", address, *(artifact_words or ["--chain-only"]))
            if not emit(
                args,
                {"model": str(address), "state": "sealed", "transactions": 0, "next": after},
            ):
                reporter.line(
                    f"model {address} is already sealed (weights hash "
                    f"{held.running_hash.hex()}): nothing to send"
                )
                reporter.line(f"Next: {after}")
            return 0
        transactions, fee = await seal_cost(ctx, address)

        async def before_sending() -> None:
            # Said once the checks have passed: sealing is final, and what it locks.
            held = await read_status(client, chain.program_id, address)
            reporter.line(
                f"sealing {address}: {counted(transactions, 'transaction')}, "
                f"fees {sol(fee)} on {target.url}"
            )
            reporter.line(
                f"sealing is final: a sealed model can never be closed, so its "
                f"{sol(held.lamports)} of rent (the model and "
                f"{counted(held.bound, 'weight account')}) is locked for good"
            )
            if (price_line := describe_price(ctx.budget, auto)) is not None:
                reporter.line(price_line)
            await require_funds(client, ctx.payer.pubkey(), fee, "sealing needs")
            confirm_spend(
                args,
                client.url,
                chain.genesis_hash,
                fee,
                f"sealing {address} (final: it can never be closed)",
            )

        result = await seal(ctx, address, artifact, before_sending=before_sending)
        sealed = result.state == ModelState.SEALED
        after = (
            next_command(args, "verify", address, *(artifact_words or ["--chain-only"]))
            if sealed
            else next_command(args, "publish", args.artifact or "ARTIFACT")
        )
        if not emit(args, {**result.to_json(), "next": after}):
            reporter.line(result.describe())
            for line in result.signature_lines():
                reporter.line(line)
            reporter.line(
                f"Next: {after}"
                + ("" if sealed else " (reopens the model and rewrites what differs)")
            )
        return 0 if sealed else 1

    return run_on_cluster(args, body, hint, target)


def _close(args: argparse.Namespace) -> int:
    reporter = make_reporter(args)
    target = resolve(args, reporter)
    address = parse_pubkey(args.model, "model")
    hint = resume_hint(args, "close", address)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.chain.close import close, close_cost
        from curta_chain.chain.model_status import read_status
        from curta_chain.chain.rent import require_funds
        from curta_chain.cli.options import confirm_spend

        chain = await target.follow_owner(chain, address)
        ctx = _context(args, target, chain, hint)
        auto = ctx.budget.auto_price
        ctx = await with_price(ctx, [address])
        recipient = (
            ctx.authority.pubkey()
            if args.recipient is None
            else target.signers.pubkey(args.recipient, "--recipient")
        )
        fee = await close_cost(ctx, address)
        held = await read_status(ctx.client, chain.program_id, address)
        reporter.line(
            f"closing {address} and {counted(held.bound, 'weight account')}: their "
            f"{sol(held.lamports)} of rent comes back to {recipient}; fees {sol(fee)}"
        )
        if (price_line := describe_price(ctx.budget, auto)) is not None:
            reporter.line(price_line)
        await require_funds(ctx.client, ctx.payer.pubkey(), fee, "closing needs")
        confirm_spend(
            args,
            ctx.client.url,
            chain.genesis_hash,
            fee,
            f"closing {address} (its rent comes back)",
        )
        result = await close(ctx, address, recipient)
        if not emit(args, result.to_json()):
            reporter.line(
                f"closed {address} and {counted(result.closed_accounts - 1, 'weight account')}: "
                f"{sol(result.lamports_closed)} to {recipient}"
            )
            if result.last_signature:
                reporter.line(f"Signature: {result.last_signature}")
        return 0

    return run_on_cluster(args, body, hint, target)


def _airdrop(args: argparse.Namespace) -> int:
    from curta_chain.constants import LAMPORTS_PER_SOL
    from curta_chain.errors import ConfigError

    if not 1 <= args.sol * LAMPORTS_PER_SOL <= U64_MAX:  # false for nan, too
        raise ConfigError(
            f"airdrop {args.sol}: expected a positive amount of SOL, 1 to {U64_MAX:,} lamports"
        )
    reporter = make_reporter(args)
    target = resolve(args, reporter)

    async def body(target: Cluster, client: "RpcClient") -> int:
        from curta_chain.chain.cluster import is_mainnet
        from curta_chain.chain.sender import wait_for_signature

        recipient = (
            target.keypair().pubkey()
            if args.recipient is None
            else target.signers.pubkey(args.recipient, "recipient")
        )
        if is_mainnet(await client.genesis_hash()):
            raise ConfigError(
                f"{target.url} is mainnet-beta (by its genesis hash): it has no faucet"
            )
        lamports = round(args.sol * LAMPORTS_PER_SOL)
        reporter.line(f"Requesting airdrop of {args.sol:g} SOL to {recipient}")
        signature = await client.request_airdrop(recipient, lamports)
        with reporter.waiting(f"the airdrop to be {client.commitment}"):
            await wait_for_signature(client, signature)
        balance = await client.balance(recipient)
        if not emit(args, {"pubkey": str(recipient), "signature": signature, "balance": balance}):
            reporter.line(f"Signature: {signature}")
            reporter.line(sol(balance, short=True))
        return 0

    return run_with_client(args, body, target=target)

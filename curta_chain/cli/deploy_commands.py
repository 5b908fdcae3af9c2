"""``curta-chain deploy``: put the shipped program on a cluster, and remember its id there."""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from curta_chain.cli.cluster_runner import (
    add_price_option,
    add_tx_version_option,
    budget_for,
    describe_price,
    run_with_client,
)
from curta_chain.cli.options import (
    Cluster,
    add_cluster_options,
    add_yes_option,
    emit,
    make_reporter,
    resolve,
    resume_hint,
)

if TYPE_CHECKING:  # the loader and the program load when deploy runs, not for --help
    from curta_chain.chain.rpc import RpcClient


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``deploy`` subcommand."""
    p = subparsers.add_parser(
        "deploy",
        help="deploy the shipped program (upgradeable loader); prints the program id last",
        description="Deploy the curta program shipped in this package through the BPF "
        "Upgradeable Loader, as `solana program deploy` does, and record its id for this "
        "cluster (by genesis hash) under curta_program_ids in the Solana CLI config. A rerun "
        "after an interruption resumes from the buffer on the chain.",
    )
    p.add_argument(
        "--program-keypair",
        type=Path,
        metavar="FILE",
        help="the program's keypair (default: one derived from the payer's keypair and the "
        "cluster, so a rerun deploys to the same address)",
    )
    p.add_argument(
        "--final",
        action="store_true",
        help="leave no upgrade authority: nobody can ever change the program",
    )
    add_cluster_options(p, program=False)
    p.add_argument("--dry-run", action="store_true", help="print the plan and cost, send nothing")
    add_price_option(p)
    add_tx_version_option(p, "the buffer's write transactions")
    add_yes_option(p)
    # deploy records the program id in the -C file, creating it if need be.
    p.set_defaults(run=_deploy, config_may_be_new=True)


def _deploy(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from curta_chain.chain.context import ChainContext
    from curta_chain.chain.deploy import check_deploy_funds, deploy, plan_deploy
    from curta_chain.chain.features import select_build
    from curta_chain.chain.fees import priced
    from curta_chain.chain.keys import default_program_keypair
    from curta_chain.cli.keypairs import load_keypair
    from curta_chain.cli.options import confirm_spend
    from curta_chain.cli.solana_config import default_config_path, record_program_id
    from curta_chain.errors import ConfigError, CurtaError

    reporter = make_reporter(args)
    target = resolve(args, reporter)
    words: list[object] = ["deploy"]
    if args.program_keypair:
        words += ["--program-keypair", args.program_keypair]
    hint = resume_hint(args, *words, *(["--final"] if args.final else []))
    program_keypair = (
        load_keypair(args.program_keypair.expanduser()) if args.program_keypair else None
    )

    async def body(target: Cluster, client: "RpcClient") -> int:
        payer = target.keypair()
        genesis_hash = await client.genesis_hash()
        choice = await select_build(client)
        build = choice.program
        program = program_keypair or default_program_keypair(payer, genesis_hash)
        ctx = ChainContext(
            client,
            program.pubkey(),
            payer,
            budget=budget_for(args, target.url),
            reporter=reporter,
            resume_hint=hint,
        )
        plan = await plan_deploy(ctx, program, build, args.final)
        auto = ctx.budget.auto_price
        if auto is not None:
            # The price of writing the buffer and the program, then the cost at that price.
            writable = [plan.buffer, plan.program_id]
            ctx = replace(ctx, budget=await priced(client, ctx.budget, writable))
            plan = await plan_deploy(ctx, program, build, args.final)
        for line in (choice.reason, *plan.describe()):
            reporter.line(line)
        if (price_line := describe_price(ctx.budget, auto)) is not None:
            reporter.line(price_line)
        if plan.transactions:
            # Dry runs too: a plan the payer cannot pay is refused with its shortfall.
            await check_deploy_funds(ctx, plan)
        if args.dry_run:
            emit(args, {"dry_run": True, "plan": plan.to_json()})
            return 0
        if plan.transactions:
            what = f"deploying {plan.program_id}"
            confirm_spend(args, client.url, genesis_hash, plan.cost_lamports, what)
        result = await deploy(ctx, program, plan)
        config = target.config.path or default_config_path()
        try:
            record_program_id(config, genesis_hash, str(plan.program_id))
        except CurtaError as exc:
            raise ConfigError(
                f"program {plan.program_id} is deployed, but recording it failed ({exc}); "
                f"pass --program-id {plan.program_id} to the other commands"
            ) from exc
        state = (
            "final: no upgrade authority"
            if not result.program.upgradeable
            else f"upgradeable by {result.program.upgrade_authority}"
        )
        if plan.new_program is not None:
            reporter.line(f"deployed {build.name} to {plan.program_id} ({state})")
        elif plan.set_final:
            reporter.line(f"removed the upgrade authority of {plan.program_id} ({state})")
        else:
            reporter.line(f"{build.name} was already deployed to {plan.program_id} ({state})")
        reporter.line(f"recorded in {config} for the cluster with genesis {genesis_hash}")
        reporter.line(str(plan.program_id))
        emit(args, {**result.to_json(), "config": str(config), "genesis_hash": genesis_hash})
        return 0

    return run_with_client(args, body, hint, target)

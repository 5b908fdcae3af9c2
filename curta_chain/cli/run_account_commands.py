"""The run-account commands: ``runs`` lists runs and their rent, ``close-run`` closes one.

A run account keeps its rent until its opener closes it, in whatever state the run is:
finished, cut short by a kill, or never stepped. Like the other command modules, this one
imports the library inside its run functions.
"""

import argparse
from typing import TYPE_CHECKING

from curta_chain.cli.cluster_runner import (
    add_price_option,
    budget_for,
    describe_price,
    run_on_cluster,
    with_price,
)
from curta_chain.cli.options import (
    Cluster,
    add_cluster_options,
    add_yes_option,
    emit,
    make_reporter,
    next_command,
    parse_pubkey,
    resolve,
)
from curta_chain.reporting import counted, sol

if TYPE_CHECKING:
    from curta_chain.chain.context import ChainContext
    from curta_chain.chain.session import Connection


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add ``runs`` and ``close-run``."""
    p = subparsers.add_parser(
        "runs",
        help="list on-chain runs (yours by default): model, state, tokens and rent",
        description="List the program's run accounts opened by --opener (default: the -k "
        "keypair's address), each with its model, state, tokens and the rent it holds; "
        "`curta-chain close-run RUN` gives the rent back.",
    )
    p.add_argument(
        "--opener",
        metavar="ADDRESS_OR_SIGNER",
        help="whose runs to list (default: the -k keypair's address)",
    )
    add_cluster_options(p)
    p.set_defaults(run=_runs)

    p = subparsers.add_parser(
        "close-run",
        help="close a run account in any state; its rent back to the opener",
        description="Close a run account you opened, finished or not (a run cut short "
        "included): its lamports go back to you, the opener (-k).",
    )
    p.add_argument("run_address", metavar="RUN", help="the run account's address (runs lists them)")
    add_cluster_options(p)
    add_price_option(p)
    add_yes_option(p)
    p.set_defaults(run=_close_run)


def _context(
    args: argparse.Namespace, target: Cluster, chain: "Connection", resume: str
) -> "ChainContext":
    from curta_chain.chain.context import ChainContext

    return ChainContext(
        chain.client,
        chain.program_id,
        target.keypair(),
        budget=budget_for(args, target.url),
        reporter=target.reporter,
        resume_hint=resume,
    )


def _runs(args: argparse.Namespace) -> int:
    reporter = make_reporter(args)
    target = resolve(args, reporter)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.onchain.runs import find_runs

        opener = (
            target.keypair().pubkey()
            if args.opener is None
            else target.signers.pubkey(args.opener, "--opener")
        )
        found, listed = [], []
        with reporter.waiting(f"{target.url} to list the runs of {opener}"):
            for program in await target.listed_programs(chain):
                runs = await find_runs(program.client, program.program_id, opener)
                found += runs
                listed += [{**run.to_json(), "program": str(program.program_id)} for run in runs]
        rent = sum(run.lamports for run in found)
        if emit(args, {"opener": str(opener), "runs": listed, "rent_lamports": rent}):
            return 0
        if not found:
            reporter.line(f"no runs of {opener} on {target.url}")
            return 0
        # Tokens: the prompt's (the opening one included), the generated ones, and the most
        # the run account holds (both together).
        reporter.line(
            f"{'Run':<44}  {'Model':<44}  {'State':<22}  {'Prompt':>6}  {'Generated':>9}  "
            f"{'Capacity':>8}  {'Rent (SOL)':>12}"
        )
        for run in found:
            held = sol(run.lamports).removesuffix(" SOL")
            reporter.line(
                f"{run.address!s:<44}  {run.header.model!s:<44}  {run.state:<22}  "
                f"{run.header.prompt_tokens:>6}  {run.generated:>9}  {run.header.capacity:>8}  "
                f"{held:>12}"
            )
        reporter.line(
            f"{counted(len(found), 'run')} of {opener}, holding {sol(rent)} of rent: "
            f"`curta-chain close-run RUN` gives a run's back"
        )
        return 0

    return run_on_cluster(args, body, target=target)


def _close_run(args: argparse.Namespace) -> int:
    reporter = make_reporter(args)
    target = resolve(args, reporter)
    address = parse_pubkey(args.run_address, "RUN")
    # Closing a run is one transaction, safe to resend.
    hint = f"rerun `{next_command(args, 'close-run', address)}`"

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.chain.rent import require_funds
        from curta_chain.cli.options import confirm_spend
        from curta_chain.onchain.runs import close_run, close_run_cost

        chain = await target.follow_owner(chain, address)
        ctx = _context(args, target, chain, hint)
        auto = ctx.budget.auto_price
        ctx = await with_price(ctx, [address])
        run, fee = await close_run_cost(ctx, address)
        if (price_line := describe_price(ctx.budget, auto)) is not None:
            reporter.line(f"closing run {address}: fees {sol(fee)}")
            reporter.line(price_line)
        # The rent comes back in the closing transaction, but its fee is charged first.
        await require_funds(ctx.client, ctx.payer.pubkey(), fee, "closing the run needs")
        confirm_spend(
            args,
            ctx.client.url,
            chain.genesis_hash,
            fee,
            f"closing run {address} ({sol(run.lamports)} of rent comes back)",
        )
        result = await close_run(ctx, address)
        if not emit(args, result.to_json()):
            reporter.line(
                f"closed run {address} ({result.run.state}, "
                f"{counted(result.run.generated, 'token')} generated): "
                f"{sol(result.lamports_returned)} of rent back to {ctx.payer.pubkey()}"
            )
            if result.signature:
                reporter.line(f"Signature: {result.signature}")
        return 0

    return run_on_cluster(args, body, hint, target)

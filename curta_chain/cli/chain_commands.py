"""The chain commands: publish, seal, verify, status, models, close, airdrop.

Each one (but airdrop) first connects: it finds the curta program for the cluster and
checks that it is a shipped build, before anything is sent. Off the embedded localnet, a
command that spends asks for confirmation on the terminal first (``--yes`` skips it).
Each run function imports the library when it runs (``curta-chain --help`` stays fast);
the shared options and the reporter come from ``options``, the event loop from ``running``.
"""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from curta_chain.cli.options import (
    Cluster,
    add_cluster_options,
    add_yes_option,
    emit,
    make_reporter,
    parse_pubkey,
    resolve,
)
from curta_chain.cli.running import (
    U64_MAX,
    add_price_option,
    budget_for,
    describe_price,
    resolve_url,
    run_on_cluster,
    run_with_client,
)
from curta_chain.reporting import counted, sol

if TYPE_CHECKING:
    from solders.pubkey import Pubkey

    from curta_chain.artifact import Artifact
    from curta_chain.chain.context import ChainContext
    from curta_chain.chain.plan import PublishPlan
    from curta_chain.chain.rpc import RpcClient
    from curta_chain.chain.session import Connection
    from curta_chain.chain.verify import VerifyReport
    from curta_chain.program import ModelAccount
    from curta_chain.reporting import Reporter

_MODEL_HELP = "the model account's address (publish prints it)"
_ARTIFACT_HELP = "the CURTAW01 artifact file"


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the chain commands."""
    p = subparsers.add_parser(
        "publish",
        help="upload an artifact; prints the model address and the next command",
        description="Create the model and its weight accounts and upload the artifact's "
        "bytes. Rerunning it resumes from what the chain holds. Prints the plan and its "
        "cost first; --dry-run stops there.",
    )
    p.add_argument("artifact", type=Path, metavar="ARTIFACT", help=_ARTIFACT_HELP)
    add_cluster_options(p, fee_payer=True)
    p.add_argument("--dry-run", action="store_true", help="print the plan and cost, send nothing")
    add_price_option(p)
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
    _add_model_and_artifact(
        p, "check the upload before sealing, and name the first bad chunk if it fails"
    )
    add_cluster_options(p, fee_payer=True)
    add_price_option(p)
    add_yes_option(p)
    p.set_defaults(run=_seal)

    p = subparsers.add_parser(
        "verify",
        help="prove a model on chain is exactly an artifact",
        description="Read the model and its weight accounts and check them against the "
        "artifact: bindings, lengths, every byte, the configuration, both hashes and the "
        "sealed state. Exit 0 only if all hold.",
    )
    p.add_argument("model", metavar="MODEL", help=_MODEL_HELP)
    p.add_argument("artifact", type=Path, metavar="ARTIFACT", help=_ARTIFACT_HELP)
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
    p.add_argument(
        "--all-differences",
        action="store_true",
        help="list every differing byte range (default: the first 10; all are counted)",
    )
    p.set_defaults(run=_verify)

    p = subparsers.add_parser(
        "status",
        help="show a model: state, hashes, lamports, sections and the next step",
        description="Show a model account, what its accounts hold in lamports and bytes, and "
        "the next command. Given the artifact, count the bytes already uploaded.",
    )
    _add_model_and_artifact(p, "count, per section, the bytes on chain that match it")
    add_cluster_options(p, keypair=False)
    p.set_defaults(run=_status)

    p = subparsers.add_parser(
        "models",
        help="list the models of an authority (yours by default)",
        description="List the curta models whose authority is the given address (default: "
        "the -k keypair's), found with one filtered getProgramAccounts call.",
    )
    p.add_argument(
        "--authority",
        metavar="ADDRESS_OR_SIGNER",
        help="whose models to list (default: the -k keypair's address)",
    )
    p.add_argument("--all", action="store_true", help="list every model of the program")
    add_cluster_options(p)
    p.set_defaults(run=_models)

    p = subparsers.add_parser(
        "close",
        help="close an unsealed model; rent back to its authority or --recipient",
        description="Close an unsealed model and every weight account bound to it, in one "
        "transaction; their lamports go to the authority, or to --recipient.",
    )
    p.add_argument("model", metavar="MODEL", help=_MODEL_HELP)
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


def _add_model_and_artifact(parser: argparse.ArgumentParser, artifact_help: str) -> None:
    parser.add_argument("model", metavar="MODEL", help=_MODEL_HELP)
    parser.add_argument("artifact", type=Path, nargs="?", metavar="ARTIFACT", help=artifact_help)


def _context(args: argparse.Namespace, target: Cluster, chain: "Connection") -> "ChainContext":
    """What publish, seal and close run with: the checked program and the signers.

    The authority is ``-k``, the fee payer ``--fee-payer`` (else ``-k``); then the budget
    and the reporter.
    """
    from curta_chain.chain.context import ChainContext

    return ChainContext(
        chain.client,
        chain.program_id,
        target.keypair(),
        fee_payer=target.fee_payer(),
        budget=budget_for(args, target.url),
        reporter=target.reporter,
    )


def _next(args: argparse.Namespace, *words: object) -> str:
    """A command line to run next, repeating the cluster options the user gave."""
    line = ["curta-chain", *(str(w) for w in words)]
    for option, value in (("-u", args.url), ("-C", args.config)):
        if value is not None:
            line += [option, str(value)]
    keypair = getattr(args, "keypair", None)
    if keypair is not None and words[0] in ("seal", "publish", "close"):
        line += ["-k", keypair]
    if getattr(args, "program_id", None) is not None:
        line += ["--program-id", args.program_id]
    return " ".join(line)


def _read_artifact(path: Path) -> "Artifact":
    from curta_chain.artifact import read_artifact

    return read_artifact(path)


def _publish(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from curta_chain.chain.fees import priced
    from curta_chain.chain.publish import RESUME_HINT, check_funds, plan_publish, publish

    artifact = _read_artifact(args.artifact)
    reporter = make_reporter(args)
    target = resolve(args, reporter)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.cli.confirm import confirm_spend

        ctx = _context(args, target, chain)
        client, payer = ctx.client, ctx.payer
        with reporter.waiting(f"{target.url} to show what it holds of this model"):
            plan = await plan_publish(ctx, artifact)
            auto = ctx.budget.auto_price is not None
            if auto:
                # The price of writing these accounts, then the plan's cost at that price.
                writable = [plan.model, *plan.weight_accounts]
                ctx = replace(ctx, budget=await priced(client, ctx.budget, writable))
                plan = await plan_publish(ctx, artifact)
        reporter.line(f"Plan for model {plan.model} ({plan.state}):")
        reporter.line(
            f"  {len(plan.section_lengths)} sections, {len(plan.create_sections)} accounts to "
            f"create, {len(plan.writes):,} writes ({plan.write_bytes:,} bytes)"
        )
        reporter.line(
            f"  {plan.transactions:,} transactions, {plan.payload_per_write:,} bytes a write"
        )
        reporter.line(
            f"  cost {sol(plan.cost_lamports)}: rent {plan.rent_lamports:,} + fees "
            f"{plan.fee_lamports:,} lamports"
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
        await check_funds(ctx, plan)
        confirm_spend(
            args, client.url, chain.genesis_hash, plan.cost_lamports, f"publishing {plan.model}"
        )
        result = await publish(ctx, artifact, plan)
        after = _next(args, "seal", plan.model, args.artifact)
        if not emit(args, {**result.to_json(), "next": after}):
            reporter.line(
                f"published {counted(result.transactions, 'transaction')} in {result.seconds:.1f} s"
            )
            for line in result.signatures.lines():
                reporter.line(line)
            reporter.line(f"Model: {plan.model}")
            reporter.line(f"Next: {after}")
        return 0

    return run_on_cluster(args, body, RESUME_HINT, target)


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
        return "it holds exactly this artifact", _next(args, "verify", plan.model, args.artifact)
    if plan.state == "sealing":
        differing = await frozen_differences(client, plan, artifact)
        if differing:
            size = sum(piece.length for piece in differing)
            raise AccountError(
                f"model {plan.model} is sealing and its frozen bytes differ from "
                f"{args.artifact} in {len(differing):,} pieces ({size:,} bytes): the seal will "
                f"end failed. Finish it with `{_next(args, 'seal', plan.model)}`, then publish "
                f"again to reopen and rewrite them; nothing was sent"
            )
        why = "its bytes are all on chain and frozen, and sealing has begun"
    else:
        why = "every byte is on chain already"
    return why, _next(args, "seal", plan.model, args.artifact)


def _seal(args: argparse.Namespace) -> int:
    from curta_chain.chain.seal import resume_hint, seal, seal_cost
    from curta_chain.program import ModelState

    artifact = _read_artifact(args.artifact) if args.artifact else None
    reporter = make_reporter(args)
    target = resolve(args, reporter)
    address = parse_pubkey(args.model, "model")
    hint = resume_hint(address)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.cli.confirm import confirm_spend

        ctx = _context(args, target, chain)
        client = ctx.client
        transactions, fee = await seal_cost(ctx, address)
        if transactions and not chain.localnet:
            reporter.line(
                f"sealing {address}: {counted(transactions, 'transaction')}, "
                f"fees {sol(fee)} on {target.url}"
            )
            confirm_spend(args, client.url, chain.genesis_hash, fee, f"sealing {address}")
        result = await seal(ctx, address, artifact)
        sealed = result.state == ModelState.SEALED
        artifact_word = args.artifact or "ARTIFACT"
        after = (
            _next(args, "verify", address, artifact_word)
            if sealed
            else _next(args, "publish", artifact_word)
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


def _verify(args: argparse.Namespace) -> int:
    from curta_chain.chain.verify import LISTED_RANGES, verify

    artifact = _read_artifact(args.artifact)
    reporter = make_reporter(args)
    target = resolve(args, reporter)
    address = parse_pubkey(args.model, "model")
    cross_check = resolve_url(args.cross_check, "--cross-check") if args.cross_check else None

    async def body(target: Cluster, chain: "Connection") -> int:
        second = target.client(url=cross_check) if cross_check else None
        try:
            with reporter.waiting(f"model {address} and its weight accounts to be read"):
                report = await verify(
                    chain.client,
                    chain.program_id,
                    address,
                    artifact,
                    target.program_hashes,
                    args.require_final,
                    second,
                    None if args.all_differences else LISTED_RANGES,
                )
        finally:
            if second is not None:
                await second.aclose()
        if not emit(args, report.to_json()):
            _print_verify(reporter, report, args.artifact, chain.client.url)
        return 0 if report.ok else 1

    return run_on_cluster(args, body, target=target)


def _print_verify(reporter: "Reporter", report: "VerifyReport", artifact: Path, url: str) -> None:
    """The verdict and both hashes first, then the causes, the byte ranges, the program."""
    if report.ok:
        reporter.line(f"verified {report.model}: sealed, every byte matches {artifact}")
    else:
        causes = [d for d in report.differences if d.kind != "bytes"]
        found = [counted(len(causes), "problem")] if causes else []
        if report.differing_ranges:
            found.append(
                f"{counted(report.differing_ranges, 'differing byte range')} "
                f"({counted(report.differing_bytes, 'byte')})"
            )
        reporter.line(f"NOT verified {report.model}: {', '.join(found)}")
    same = report.declared_hash == report.artifact_hash
    reporter.line(f"declared hash  {report.declared_hash.hex()}  (the model's, {report.state})")
    reporter.line(
        f"artifact hash  {report.artifact_hash.hex()}  ({artifact}: "
        f"{'the same' if same else 'DIFFERENT'})"
    )
    if report.chain_hash is not None and report.chain_hash != report.declared_hash:
        reporter.line(f"chain hash     {report.chain_hash.hex()}  (the chain's bytes hash to it)")
    for difference in report.differences:
        reporter.line(str(difference))
    hidden = report.differing_ranges - report.listed_ranges
    if hidden:
        reporter.line(
            f"and {counted(hidden, 'more differing byte range')}: --all-differences lists them"
        )
    for line in report.program.describe():
        reporter.line(line)
    if report.cross_checked:
        reporter.line(f"cross-checked  every account read again from {report.cross_checked}")
    else:
        reporter.line(f"trusted node   {url} (one node: --cross-check URL adds another)")


def _status(args: argparse.Namespace) -> int:
    artifact = _read_artifact(args.artifact) if args.artifact else None
    reporter = make_reporter(args)
    target = resolve(args, reporter)

    async def body(target: Cluster, chain: "Connection") -> int:
        address = parse_pubkey(args.model, "model")
        with reporter.waiting(f"model {address} and its weight accounts to be read"):
            status = await _model_status(chain.client, chain.program_id, address, artifact)
        status["next"] = _status_next(args, address, status)
        if emit(args, status):
            return 0
        _print_status(reporter, status)
        return 0

    return run_on_cluster(args, body, target=target)


async def _model_status(
    client: "RpcClient", program_id: "Pubkey", address: "Pubkey", artifact: "Artifact | None"
) -> dict[str, object]:
    """The model, its accounts' lamports and headers, and (with the artifact) bytes matching."""
    import asyncio
    import contextlib

    import numpy as np

    from curta_chain.chain.accounts import ZERO_KEY, read_model, read_section
    from curta_chain.constants import WEIGHT_HEADER_SIZE
    from curta_chain.errors import AccountError
    from curta_chain.program import WeightHeader

    model = await read_model(client, program_id, address)
    if model is None:
        raise AccountError(f"{address}: no such account on {client.url}")
    bound = [slot.weight_account for slot in model.sections if slot.weight_account != ZERO_KEY]
    infos = dict(
        zip(
            [address, *bound],
            await client.accounts([address, *bound], head=WEIGHT_HEADER_SIZE),
            strict=True,
        )
    )
    same = artifact is not None and [len(s) for s in artifact.sections] == [
        slot.length for slot in model.sections
    ]
    sections: list[dict[str, object]] = []
    for index, slot in enumerate(model.sections):
        info = infos.get(slot.weight_account) if slot.weight_account != ZERO_KEY else None
        entry: dict[str, object] = {
            "index": index,
            "length": slot.length,
            "weight_account": None if slot.weight_account == ZERO_KEY else str(slot.weight_account),
            "lamports": info.lamports if info else 0,
            "frozen": None,
            "bytes_matching": None,
        }
        if info is not None and info.owner == program_id:
            with contextlib.suppress(AccountError):
                entry["frozen"] = WeightHeader.from_bytes(info.data).frozen
        sections.append(entry)
    if same and artifact is not None:

        async def matching(index: int) -> int:
            slot = model.sections[index]
            if slot.weight_account == ZERO_KEY:
                return 0
            chain = await read_section(client, slot.weight_account, slot.length)
            ours = np.frombuffer(bytes(artifact.sections[index]), dtype=np.uint8)
            return int(np.count_nonzero(np.frombuffer(chain, dtype=np.uint8) == ours))

        counts = await asyncio.gather(*(matching(i) for i in range(len(model.sections))))
        for entry, count in zip(sections, counts, strict=True):
            entry["bytes_matching"] = count
    model_info = infos[address]
    return {
        "model": str(address),
        "program": str(program_id),
        **_model_fields(model),
        "total_chunks": model.total_chunks,
        "lamports": sum(info.lamports for info in infos.values() if info is not None),
        "model_lamports": model_info.lamports if model_info else 0,
        "artifact_hash_matches": (
            None if artifact is None else artifact.weights_hash() == model.declared_hash
        ),
        "sections": sections,
    }


def _model_fields(model: "ModelAccount") -> dict[str, object]:
    fields = model.to_json()
    fields.pop("sections")
    return fields


def _status_next(args: argparse.Namespace, address: "Pubkey", status: dict[str, object]) -> str:
    artifact = args.artifact or "ARTIFACT"
    state = status["state"]
    sections = status["sections"]
    assert isinstance(sections, list)
    if state == "uploading":
        complete = args.artifact is not None and all(
            s["bytes_matching"] == s["length"] for s in sections
        )
        if complete:
            return _next(args, "seal", address, artifact)
        return f"{_next(args, 'publish', artifact)} (to finish the upload), then seal"
    if state == "sealing":
        return f"{_next(args, 'seal', address)} (to finish the seal)"
    if state == "sealed":
        return _next(args, "verify", address, artifact)
    return (
        f"{_next(args, 'publish', artifact)} (reopens it and rewrites what differs), or "
        f"{_next(args, 'close', address)} (rent back)"
    )


def _print_status(reporter: "Reporter", status: dict[str, object]) -> None:

    lamports = status["lamports"]
    sections = status["sections"]
    assert isinstance(lamports, int) and isinstance(sections, list)
    bound = sum(1 for s in sections if s["weight_account"])
    rows = [
        ("Model", status["model"]),
        ("Program", status["program"]),
        ("State", status["state"]),
        ("Authority", status["authority"]),
        ("Declared hash", status["declared_hash"]),
        ("Running hash", status["running_hash"]),
        ("Sealed chunks", f"{status['chunks_hashed']}/{status['total_chunks']}"),
        (
            "Balance",
            f"{sol(lamports)} in the model and {bound} weight accounts",
        ),
    ]
    if status["artifact_hash_matches"] is False:
        rows.append(("Artifact", "its hash is NOT the declared hash: another artifact"))
    for key, value in rows:
        reporter.line(f"{key + ':':<15} {value}")
    for s in sections:
        account = s["weight_account"] or "unbound"
        frozen = {True: "frozen", False: "open", None: ""}[s["frozen"]]
        line = f"Section {s['index']:<7} {s['length']:>10,} bytes  {account}  {frozen}"
        if s["bytes_matching"] is not None:
            missing = s["length"] - s["bytes_matching"]
            line += f"  {f'{missing:,} bytes to upload' if missing else 'uploaded'}"
        reporter.line(line.rstrip())
    reporter.line(f"{'Next:':<15} {status['next']}")


def _models(args: argparse.Namespace) -> int:
    reporter = make_reporter(args)
    target = resolve(args, reporter)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.chain.accounts import find_models
        from curta_chain.constants import LAMPORTS_PER_SOL

        authority = None
        if not args.all:
            authority = (
                target.keypair().pubkey()
                if args.authority is None
                else target.signers.pubkey(args.authority, "--authority")
            )
        with reporter.waiting(f"{target.url} to list the program's models"):
            found = await find_models(chain.client, chain.program_id, authority)
        rows = [
            {
                "model": str(address),
                **_model_fields(model),
                "sections": len(model.sections),
                "lamports": lamports,
            }
            for address, model, lamports in found
        ]
        if emit(args, {"authority": str(authority) if authority else None, "models": rows}):
            return 0
        whose = f"of {authority}" if authority else "of every authority"
        if not rows:
            reporter.line(f"no models {whose} on {target.url}")
            return 0
        reporter.line(f"{'Model':<44}  {'State':<9}  {'Sections':>8}  {'Model SOL':>12}  Hash")
        for row in rows:
            in_sol = int(row["lamports"]) / LAMPORTS_PER_SOL  # type: ignore[call-overload]
            reporter.line(
                f"{row['model']:<44}  {row['state']:<9}  {row['sections']:>8}  {in_sol:>12.6f}  "
                f"{str(row['declared_hash'])[:16]}"
            )
        reporter.line(f"{counted(len(rows), 'model')} {whose}")
        return 0

    return run_on_cluster(args, body, target=target)


def _close(args: argparse.Namespace) -> int:
    from curta_chain.chain.close import resume_hint

    reporter = make_reporter(args)
    target = resolve(args, reporter)
    address = parse_pubkey(args.model, "model")
    hint = resume_hint(address)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.chain.close import close, close_cost
        from curta_chain.cli.confirm import confirm_spend

        ctx = _context(args, target, chain)
        recipient = (
            ctx.authority.pubkey()
            if args.recipient is None
            else target.signers.pubkey(args.recipient, "--recipient")
        )
        fee = await close_cost(ctx, address)
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
        from curta_chain.chain.sender import wait_for_signature

        if "mainnet" in target.url:
            raise ConfigError(f"{target.url}: mainnet-beta has no faucet")
        recipient = (
            target.keypair().pubkey()
            if args.recipient is None
            else target.signers.pubkey(args.recipient, "recipient")
        )
        lamports = round(args.sol * LAMPORTS_PER_SOL)
        reporter.line(f"Requesting airdrop of {args.sol:g} SOL to {recipient}")
        signature = await client.request_airdrop(recipient, lamports)
        with reporter.waiting(f"the airdrop to be {client.commitment}"):
            await wait_for_signature(client, signature)
        balance = await client.balance(recipient)
        if not emit(args, {"pubkey": str(recipient), "signature": signature, "balance": balance}):
            reporter.line(f"Signature: {signature}")
            reporter.line(f"{balance / LAMPORTS_PER_SOL:g} SOL")
        return 0

    return run_with_client(args, body, target=target)

"""The chain commands that only read: verify, status and models.

Each connects first (finds the curta program and checks it is a shipped build) and
follows a model's owner when that is another shipped build (``Cluster.follow_owner``).
Each run function imports the library when it runs (``curta-chain --help`` stays fast).
"""

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from curta_chain.cli.cluster_runner import resolve_url, run_on_cluster, run_with_client
from curta_chain.cli.options import (
    ARTIFACT_HELP,
    MODEL_HELP,
    Cluster,
    add_cluster_options,
    add_model_and_artifact,
    emit,
    make_reporter,
    next_command,
    parse_pubkey,
    read_artifact_file,
    resolve,
)
from curta_chain.reporting import counted, sol

if TYPE_CHECKING:
    from solders.pubkey import Pubkey

    from curta_chain.chain.model_status import ModelStatus
    from curta_chain.chain.rpc import RpcClient
    from curta_chain.chain.session import Connection
    from curta_chain.chain.verify_report import VerifyReport
    from curta_chain.reporting import Reporter


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add verify, status and models."""
    p = subparsers.add_parser(
        "verify",
        help="prove a model on chain is exactly an artifact (or, with --chain-only, sealed "
        "and whole)",
        description="Read the model and its weight accounts and check them against the "
        "artifact: bindings, lengths, every byte, the configuration, both hashes and the "
        "sealed state. With --chain-only instead of an artifact, check the chain alone: the "
        "program, bindings, the sealed state and the chain's bytes against the declared "
        "hash. The program is the model's owner (checked: executable, a shipped build) "
        "unless --program-id names one. Exit 0 only if all hold.",
    )
    p.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    p.add_argument(
        "artifact",
        type=Path,
        nargs="?",
        metavar="ARTIFACT",
        help=f"{ARTIFACT_HELP} to compare byte for byte",
    )
    p.add_argument(
        "--chain-only",
        action="store_true",
        help="compare no artifact: prove only that the model is sealed and its bytes hash to "
        "its declared hash (not which file it holds)",
    )
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
    p.set_defaults(run=_verify, usage_error=p.error)

    p = subparsers.add_parser(
        "status",
        help="show a model: state, hashes, lamports, sections and the next step",
        description="Show a model account, what its accounts hold in lamports and bytes, and "
        "the next command. Given the artifact, count the bytes already uploaded.",
    )
    add_model_and_artifact(p, "count, per section, the bytes on chain that match it")
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


def _verify_usage(args: argparse.Namespace) -> None:
    """Refuse, as a usage error (exit 2), arguments in the wrong order or no artifact."""
    from curta_chain.chain.session import is_address

    given = args.artifact
    if given is not None and not is_address(args.model) and is_address(str(given)):
        args.usage_error(
            f"the model comes first, then the artifact: `curta-chain verify {given} "
            f"{args.model}` (MODEL {args.model!r} is not an address; {str(given)!r} is)"
        )
    if given is None and not args.chain_only:
        args.usage_error(
            "verify MODEL compares the model with an ARTIFACT: give it, or pass --chain-only "
            "to check the chain alone (no artifact compared)"
        )
    if given is not None and args.chain_only:
        args.usage_error(f"--chain-only compares no artifact: drop {given} or --chain-only")


def _verify(args: argparse.Namespace) -> int:
    from curta_chain.chain.cluster import same_node
    from curta_chain.chain.session import connect_to_owner
    from curta_chain.chain.verify import LISTED_RANGES, verify

    _verify_usage(args)
    artifact = read_artifact_file(args.artifact) if args.artifact is not None else None
    reporter = make_reporter(args)
    target = resolve(args, reporter)
    address = parse_pubkey(args.model, "model")
    cross_check = resolve_url(args.cross_check, "--cross-check") if args.cross_check else None
    if cross_check is not None and same_node(cross_check, target.url):
        from curta_chain.errors import ConfigError

        raise ConfigError(
            f"--cross-check {args.cross_check}: that is the node -u reads ({target.url}); "
            "a cross-check reads every account again from a second, independent node"
        )

    async def body(target: Cluster, client: "RpcClient") -> int:
        if target.program_id is not None:
            chain = await target.connect(client)
        else:
            # The chain says which program the model is under; it is checked all the same.
            with reporter.waiting(f"{target.url} to show model {address} and its program"):
                chain = await connect_to_owner(client, address, target.program_hashes)
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
            lengths = [len(section) for section in artifact.sections] if artifact else []
            _print_verify(reporter, report, args.artifact, chain.client.url, lengths)
        return 0 if report.ok else 1

    return run_with_client(args, body, target=target)


def _print_verify(
    reporter: "Reporter",
    report: "VerifyReport",
    artifact: Path | None,
    url: str,
    lengths: Sequence[int] = (),
) -> None:
    """The verdict and both hashes first, then the causes, where bytes differ, the program.

    Without an artifact the second hash is the chain's own (its bytes, hashed here).

    Where bytes differ: a strip per section marking where in it they fall, then the ranges.
    """
    from curta_chain.cli.pictures import difference_strips

    if report.ok and not report.artifact_compared:
        reporter.line(
            f"verified {report.model}: sealed, the chain's bytes hash to its declared hash "
            "(no artifact was compared)"
        )
    elif report.ok:
        reporter.line(f"verified {report.model}: sealed, every byte matches {artifact}")
    else:
        causes = [d for d in report.differences if d.kind != "bytes"]
        found = [counted(len(causes), "problem")] if causes else []
        if report.differing_ranges:
            found.append(
                f"{counted(report.differing_ranges, 'differing byte range')} "
                f"({counted(report.differing_bytes, 'byte')})"
            )
        alone = "" if report.artifact_compared else " (no artifact was compared)"
        reporter.line(f"NOT verified {report.model}: {', '.join(found)}{alone}")
    reporter.line(f"declared hash  {report.declared_hash.hex()}  (the model's, {report.state})")
    if artifact is None or report.artifact_hash is None:
        if report.chain_hash is not None:
            same = report.chain_hash == report.declared_hash
            reporter.line(
                f"chain hash     {report.chain_hash.hex()}  (the chain's bytes: "
                f"{'the same' if same else 'DIFFERENT'})"
            )
        reporter.line("artifact       none compared (verify MODEL ARTIFACT checks every byte)")
    else:
        same = report.declared_hash == report.artifact_hash
        reporter.line(
            f"artifact hash  {report.artifact_hash.hex()}  ({artifact}: "
            f"{'the same' if same else 'DIFFERENT'})"
        )
    if (
        artifact is not None
        and report.chain_hash is not None
        and report.chain_hash != report.declared_hash
    ):
        reporter.line(f"chain hash     {report.chain_hash.hex()}  (the chain's bytes hash to it)")
    strips = difference_strips(report, lengths)
    for difference in report.differences:
        if difference.kind == "bytes" and strips:
            for line in strips:
                reporter.line(line)
            strips = []
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
    artifact = read_artifact_file(args.artifact) if args.artifact else None
    reporter = make_reporter(args)
    target = resolve(args, reporter)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.chain.model_status import read_status

        address = parse_pubkey(args.model, "model")
        chain = await target.follow_owner(chain, address)
        with reporter.waiting(f"model {address} and its weight accounts to be read"):
            status = await read_status(chain.client, chain.program_id, address, artifact)
        after = _status_next(args, status)
        if not emit(args, {**status.to_json(), "next": after}):
            _print_status(reporter, status, after)
        return 0

    return run_on_cluster(args, body, target=target)


def _status_next(args: argparse.Namespace, status: "ModelStatus") -> str:
    from curta_chain.program import ModelState

    address = status.address
    if status.artifact_hash_matches is False:
        # Another model's artifact: publishing it would make that model, not finish this one.
        return (
            f"{next_command(args, 'status', address)} (without {args.artifact}, another "
            "model's artifact: its weights hash is not the declared one)"
        )
    artifact = args.artifact or "ARTIFACT"
    if status.state == ModelState.UPLOADING:
        if status.uploaded:
            return next_command(args, "seal", address, *([args.artifact] if args.artifact else []))
        return f"{next_command(args, 'publish', artifact)} (to finish the upload), then seal"
    if status.state == ModelState.SEALING:
        return f"{next_command(args, 'seal', address)} (to finish the seal)"
    if status.state == ModelState.SEALED:
        return next_command(args, "verify", address, args.artifact or "--chain-only")
    return (
        f"{next_command(args, 'publish', artifact)} (reopens it and rewrites what differs), or "
        f"{next_command(args, 'close', address)} (rent back)"
    )


def _print_status(reporter: "Reporter", status: "ModelStatus", after: str) -> None:
    from curta_chain.cli.pictures import section_bar

    model = status.model
    rows = [
        ("Model", str(status.address)),
        ("Program", str(status.program_id)),
        ("State", model.state.name.lower()),
        ("Authority", str(model.authority)),
        ("Declared hash", model.declared_hash.hex()),
        ("Running hash", model.running_hash.hex()),
        ("Sealed chunks", f"{model.chunks_hashed}/{model.total_chunks}"),
        ("Balance", f"{sol(status.lamports)} in the model and {status.bound} weight accounts"),
    ]
    if status.artifact_hash_matches is False:
        rows.append(("Artifact", "its hash is NOT the declared hash: another artifact"))
    for key, value in rows:
        reporter.line(f"{key + ':':<15} {value}")
    for line in section_bar(status):
        reporter.line(line)
    for s in status.sections:
        account = s.weight_account or "unbound"
        frozen = {True: "frozen", False: "open", None: ""}[s.frozen]
        line = f"Section {s.index:<7} {s.length:>10,} bytes  {account}  {frozen}"
        if s.bytes_matching is not None:
            missing = s.length - s.bytes_matching
            line += f"  {f'{missing:,} bytes to upload' if missing else 'uploaded'}"
        reporter.line(line.rstrip())
    reporter.line(f"{'Next:':<15} {after}")


def _own_address(target: Cluster) -> "Pubkey":
    """The -k keypair's address: whose models ``models`` lists unless told otherwise.

    Raises:
        KeypairError: the keypair cannot be read; the message names the other choices.
    """
    from curta_chain.errors import KeypairError

    try:
        return target.keypair().pubkey()
    except KeypairError as exc:
        raise KeypairError(
            f"{exc}; or list another address's models with --authority ADDRESS, or every "
            "model with --all"
        ) from exc


def _models(args: argparse.Namespace) -> int:
    reporter = make_reporter(args)
    target = resolve(args, reporter)

    async def body(target: Cluster, chain: "Connection") -> int:
        from curta_chain.chain.accounts import find_models
        from curta_chain.chain.model_status import model_balances

        authority = None
        if not args.all:
            authority = (
                _own_address(target)
                if args.authority is None
                else target.signers.pubkey(args.authority, "--authority")
            )
        rows = []
        with reporter.waiting(f"{target.url} to list the program's models"):
            for program in await target.listed_programs(chain):
                found = await find_models(program.client, program.program_id, authority)
                balances = await model_balances(
                    program.client, [(model, lamports) for _, model, lamports in found]
                )
                for (address, model, own), balance in zip(found, balances, strict=True):
                    fields = model.to_json()
                    fields.pop("sections")
                    rows.append(
                        {
                            "model": str(address),
                            **fields,
                            "sections": len(model.sections),
                            "lamports": balance,
                            "model_lamports": own,
                            "program": str(program.program_id),
                        }
                    )
        if emit(args, {"authority": str(authority) if authority else None, "models": rows}):
            return 0
        whose = f"of {authority}" if authority else "of every authority"
        if not rows:
            reporter.line(f"no models {whose} on {target.url}")
            if authority and args.authority is None:
                reporter.line("--authority ADDRESS lists another address's, --all every model")
            return 0
        # The balance is the model's and its weight accounts': what closing it gives back.
        reporter.line(f"{'Model':<44}  {'State':<9}  {'Sections':>8}  {'Balance SOL':>13}")
        for row in rows:
            held = sol(int(str(row["lamports"]))).removesuffix(" SOL")
            reporter.line(
                f"{row['model']:<44}  {row['state']:<9}  {row['sections']:>8}  {held:>13}"
            )
        reporter.line(f"{counted(len(rows), 'model')} {whose}")
        return 0

    return run_on_cluster(args, body, target=target)

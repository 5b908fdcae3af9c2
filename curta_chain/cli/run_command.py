"""``run``: generate text from an artifact file or a sealed model on chain, in integers.

The generated text is stdout; what the run does (and its progress) is said on stderr. The
inference code loads when the command runs, not for ``--help``.
"""

import argparse
import codecs
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from curta_chain.cli.cluster_runner import (
    add_price_option,
    add_tx_version_option,
    budget_for,
    run_on_cluster,
)
from curta_chain.cli.console import ConsoleReporter
from curta_chain.cli.options import (
    Cluster,
    add_cluster_options,
    add_yes_option,
    emit,
    is_json,
    make_reporter,
    parse_pubkey,
    resolve,
    resume_hint,
)
from curta_chain.constants import ACCOUNT_CU_LIMIT, DEFAULT_STEPS
from curta_chain.reporting import counted, sol

if TYPE_CHECKING:
    from curta_chain.artifact import Artifact
    from curta_chain.chain.session import Connection
    from curta_chain.inference import SamplingSettings
    from curta_chain.onchain.pipeline import OnChainRun


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add ``run``."""
    p = subparsers.add_parser(
        "run",
        help="generate text from an artifact or a sealed model on chain, in integers",
        description="Run the integer forward pass (docs/inference.md) on SOURCE, an "
        "artifact file or a model address, and stream the text it generates.",
    )
    p.add_argument("source", metavar="SOURCE", help="an artifact file, or a model address")
    # llama2.c's run.c options beside the long ones (-i -n -t -p -s); none of them is a
    # Solana CLI option (-u -k -C -y). run.c's -z (a tokenizer file) has no counterpart:
    # the tokenizer is part of the artifact, hashed and sealed with the weights. Its -y
    # (a chat system prompt) and -m (chat mode) neither: this model is not a chat model,
    # and -y is --yes.
    p.add_argument(
        "-i",
        "--prompt",
        default="",
        metavar="TEXT",
        help="the text to continue (default: none, the opening token alone, as run.c)",
    )
    length = p.add_mutually_exclusive_group()
    length.add_argument(
        "-n",
        type=int,
        dest="run_c_steps",
        metavar="STEPS",
        help="llama2.c's run.c -n: steps including the prompt's tokens; 0, or more than the "
        "context, runs to the context's end",
    )
    length.add_argument(
        "--steps",
        type=int,
        metavar="N",
        help=f"new tokens to generate (default {DEFAULT_STEPS}, or what the context has room "
        "for); a stop token ends the run sooner",
    )
    p.add_argument(
        "-t", "--temperature", default="1.0", metavar="T", help="0 is greedy (default 1.0)"
    )
    p.add_argument(
        "-p",
        "--top-p",
        default="0.9",
        metavar="P",
        help="nucleus sampling; 0 or 1 is off (default 0.9)",
    )
    p.add_argument(
        "-s", "--seed", type=int, metavar="S", help="u64 seed (default: random, printed)"
    )
    p.add_argument(
        "--allow-unsealed", action="store_true", help="run a model on chain that is not sealed"
    )
    p.add_argument(
        "--on-chain",
        action="store_true",
        help="the program computes every token (SOURCE is a sealed model; -k pays), checked "
        "step by step against the integer core; rerun to resume",
    )
    p.add_argument(
        "--close-run",
        action="store_true",
        help="with --on-chain: close the finished run account, rent back to the payer "
        "(default: keep it, the chain's record of what the model said)",
    )
    p.add_argument(
        "--account-cu-limit",
        type=int,
        default=ACCOUNT_CU_LIMIT,
        metavar="UNITS",
        help="with --on-chain: the compute units a block gives one writable account on this "
        f"cluster (default {ACCOUNT_CU_LIMIT:,}); the run keeps four blocks' worth of steps "
        "in flight under it",
    )
    add_price_option(p)
    add_tx_version_option(p, "the opening transaction of a run --on-chain (it carries the prompt)")
    add_yes_option(p)
    add_cluster_options(p)
    p.set_defaults(run=_run)


def _settings(args: argparse.Namespace) -> "SamplingSettings":
    from curta_chain.errors import ConfigError
    from curta_chain.inference import SamplingSettings, q16
    from curta_chain.inference.sampling import MASK64, MAX_TEMPERATURE, ONE

    temperature = q16(args.temperature, "--temperature", MAX_TEMPERATURE * ONE)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little")
    if not 0 <= seed <= MASK64:
        raise ConfigError(f"--seed {seed}: expected 0 to {MASK64}")
    # Other tools' -p is the prompt; run.c's, as ours, is the top-p.
    top_p = q16(
        args.top_p, "--top-p", ONE, "; -p is llama2.c's top-p: the prompt is -i or --prompt"
    )
    return SamplingSettings(temperature, top_p, seed)


def _load(args: argparse.Namespace) -> "Artifact":
    from curta_chain.artifact import read_artifact
    from curta_chain.errors import ConfigError

    path = Path(args.source)
    if path.exists():
        return read_artifact(path)
    # The chain's client loads only for an address: a file's run starts sooner without it.
    from curta_chain.chain.fetch import fetch_artifact

    try:
        address = parse_pubkey(args.source, "SOURCE")
    except ConfigError as exc:
        raise ConfigError(f"{args.source}: no such file, and not a model address") from exc
    reporter = make_reporter(args, lines_to_stderr=True)
    loaded: list[Artifact] = []

    async def main(target: Cluster, chain: "Connection") -> int:
        chain = await target.follow_owner(chain, address)
        with reporter.waiting(f"model {address} to be read"):
            loaded.append(
                await fetch_artifact(chain.client, chain.program_id, address, args.allow_unsealed)
            )
        return 0

    run_on_cluster(args, main, target=resolve(args, reporter))
    return loaded[0]


def _run(args: argparse.Namespace) -> int:
    if args.on_chain:
        return _run_on_chain(args, _settings(args))
    # One core's work, as llama2.c's run.c's: set before numpy loads, so that BLAS starts no
    # workers to spin idle on the other cores.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from curta_chain.inference import Tokenizer, generate, plan_run
    from curta_chain.inference.native import NativeModel, fastest_model
    from curta_chain.inference.tokenizer import STOP_TOKENS

    settings = _settings(args)
    artifact = _load(args)
    reporter = make_reporter(args, lines_to_stderr=True)
    # The program's C built for this machine, or numpy's pass where it cannot be: the same
    # integers either way.
    model, tokenizer = fastest_model(artifact, reporter), Tokenizer.from_artifact(artifact)
    plan = plan_run(model, tokenizer, args.prompt, args.steps, steps=args.run_c_steps)
    text_mode = not is_json(args)
    show = _TextShown(reporter, text_mode)
    prompt_bytes = tokenizer.decode(plan.prompt_ids[1:])
    show(prompt_bytes)
    generated: list[int] = []
    pieces: list[bytes] = []
    start = time.perf_counter()
    first = start
    previous = plan.prompt_ids[-1]
    for token in generate(model, plan, settings):
        if not generated:
            first = time.perf_counter()
        generated.append(token)
        piece = tokenizer.piece(previous, token)
        previous = token
        pieces.append(piece)
        show(piece)
    end = time.perf_counter()
    rate = (len(generated) - 1) / (end - first) if len(generated) > 1 and end > first else None
    stop = "token" if generated and generated[-1] in STOP_TOKENS else "steps"
    generated_bytes = b"".join(pieces)
    if text_mode:
        show.end()
        speed = f"{rate:.1f} tokens/s" if rate is not None else "one token"
        seed = "greedy" if settings.greedy else f"seed {settings.seed}"
        print(
            f"{counted(len(generated), 'token')} ({speed}; prompt of "
            f"{counted(len(plan.prompt_ids), 'token')} and first token in "
            f"{first - start:.2f} s), {seed}, "
            f"stopped by {'a stop token' if stop == 'token' else 'the step count'}",
            file=sys.stderr,
        )
        return 0
    result = {
        "source": artifact.source,
        "weights_hash": artifact.weights_hash().hex(),
        "prompt_ids": list(plan.prompt_ids),
        "generated_ids": generated,
        "text": (prompt_bytes + generated_bytes).decode("utf-8", errors="replace"),
        "generated_text": generated_bytes.decode("utf-8", errors="replace"),
        "stop": stop,
        "sampling": settings.to_json(),
        "first_token_seconds": round(first - start, 6),
        "tokens_per_second": rate,
        "forward_pass": "native" if isinstance(model, NativeModel) else "numpy",
    }
    emit(args, result)
    return 0


def _run_on_chain(args: argparse.Namespace, settings: "SamplingSettings") -> int:
    from curta_chain.errors import ConfigError
    from curta_chain.onchain.run import run_on_chain

    try:
        address = parse_pubkey(args.source, "SOURCE")
    except ConfigError as exc:
        raise ConfigError(
            f"--on-chain runs a model on chain: {args.source!r} is not an address"
        ) from exc
    if args.account_cu_limit <= 0:
        raise ConfigError(
            f"--account-cu-limit {args.account_cu_limit}: expected a positive count of "
            "compute units"
        )
    # The text is stdout; what the run does is said on stderr.
    reporter = make_reporter(args, lines_to_stderr=True)
    show = _TextShown(reporter, not is_json(args))
    target = resolve(args, reporter)
    runs: list[OnChainRun] = []

    async def main(target: Cluster, chain: "Connection") -> int:
        from curta_chain.chain.context import ChainContext
        from curta_chain.cli.options import confirm_spend

        chain = await target.follow_owner(chain, address)

        def confirm(rent: int, size: int) -> None:
            back = "at the end, --close-run" if args.close_run else "when the run is closed"
            what = (
                f"a run account of {size:,} bytes on {address} (its rent comes back {back}), "
                "plus a fee for each step"
            )
            reporter.line(f"opening {what}: rent {sol(rent)}")
            confirm_spend(args, chain.client.url, chain.genesis_hash, rent, what)

        ctx = ChainContext(
            chain.client,
            chain.program_id,
            target.keypair(),
            budget=budget_for(args, target.url),
            reporter=reporter,
            resume_hint=_resume_hint(args, settings),
        )
        runs.append(
            await run_on_chain(
                ctx,
                address,
                args.prompt,
                args.steps,
                settings,
                show,
                confirm=confirm,
                close=args.close_run,
                account_cu_limit=args.account_cu_limit,
                steps=args.run_c_steps,
            )
        )
        return 0

    run_on_cluster(args, main, _resume_hint(args, settings), target)
    result = runs[0]
    if emit(args, {**result.to_json(), "sampling": settings.to_json()}):
        return 0
    show.end()
    # The run's address and signatures on stdout, after the text, as the other commands'.
    print(f"Run: {result.run}")
    for line in result.signature_lines():
        print(line)
    sys.stdout.flush()
    per_token = result.steps_per_token
    units = result.units_per_token
    print(
        f"run {result.run}: {counted(len(result.generated), 'token')}, finished by "
        f"{result.finish.name.lower().replace('_', ' ')}; "
        f"{counted(result.transactions, 'transaction')} sent here"
        + (
            f", {per_token:.1f} step transactions and {units:,.0f} compute units per generated "
            f"token, prompt included (largest step {max(result.step_units):,})"
            if per_token is not None and units is not None
            else ""
        )
        + ("; greedy" if settings.greedy else f"; seed {settings.seed}"),
        file=sys.stderr,
    )
    # Each step's run account was compared with the integer core's mirror as it landed.
    print(
        f"the chain's {counted(len(result.generated), 'token')} "
        f"{'equals' if len(result.generated) == 1 else 'equal'} the off-chain integer core's: "
        "the mirror checked every step",
        file=sys.stderr,
    )
    return 0


def _resume_hint(args: argparse.Namespace, settings: "SamplingSettings") -> str:
    """The command that resumes this run: the same run (prompt, length, sampling, seed)."""
    words: list[object] = [args.source, "--on-chain"]
    if args.prompt:
        words += ["--prompt", args.prompt]
    if args.run_c_steps is not None:
        words += ["-n", args.run_c_steps]
    elif args.steps is not None:
        words += ["--steps", args.steps]
    words += ["--temperature", args.temperature, "--top-p", args.top_p, "--seed", settings.seed]
    if args.close_run:
        words.append("--close-run")
    if args.account_cu_limit != ACCOUNT_CU_LIMIT:
        words += ["--account-cu-limit", args.account_cu_limit]
    return resume_hint(args, "run", *words)


class _TextShown:
    """The generated text on stdout: UTF-8 decoded as it streams, through the reporter."""

    def __init__(self, reporter: ConsoleReporter, shown: bool):
        self._reporter = reporter
        self._shown = shown
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __call__(self, piece: bytes) -> None:
        if self._shown and piece:
            self._reporter.text(self._decoder.decode(piece))

    def end(self) -> None:
        """Write what the decoder holds and end the text's line."""
        if self._shown:
            self._reporter.text(self._decoder.decode(b"", final=True))
            self._reporter.end_text()

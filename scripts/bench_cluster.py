"""Measure every chain command against the busy localnet: clean, lossy, behind providers' limits.

Each scenario starts its own `curta-chain localnet --blocks` (a block a slot, the leader's
order, the scheduler's limits) and runs, with one fresh payer: deploy, publish stories260K,
seal it, `run --on-chain` (with --close-run), and (without --quick) publish, seal and run the
stories15M shape. Scenarios: clean, 10 % and 30 % of accepted transactions lost, and the
providers' limits on (--rps, --max-batch). Each row says the command's time against its
clean time in the same run, the transactions signed, sent and landed, and the lamports
spent beyond the plan (what the payer lost less the plan's rent and fees: a duplicate a
resend landed, a refused step). A second table gives each run's tokens a second (over the
command's wall time) and, over the slots from its first step to its last, tokens a slot,
slots a token and blocks a token (prompt positions included), and the slots and blocks a
token took once the prompt was read: on this machine the localnet's LiteSVM (6 to 19 ms a
1.2M-unit step on solders 0.29: docs/numbers.md, "Execution time of a step") bounds the
wall time, and a block it takes longer to execute than a slot lasts leaves the slots after
it empty.

    .venv/bin/python scripts/bench_cluster.py [--quick] [--tokens N] [--seed N]
        [--scenarios NAME ...] [--rounds N] [--tx-version auto|legacy|v1]
        [--pipeline-blocks N] [--record]

``--rounds N`` runs the scenarios N times over, each command's time against the clean time
of its own round (a shared machine's load changes between rounds), and reports the median.
Round N's localnets take seed ``--seed`` + N - 1: a seed fixes which transactions are lost,
so each round is another pattern of losses and the median is not one pattern's luck.
Prints a table, then as its last line one JSON object (scenario -> command -> numbers), with
``--rounds`` above 1 a list of them, a round each. ``--record`` appends to docs/numbers/:
with ``--quick`` the times against clean (cluster.jsonl), else the seals and runs against
issue 29's targets (pipelined_runs.jsonl).
"""

import argparse
import asyncio
import json
import shlex
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench_inference import stories260k
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.chain.context import ChainContext
from curta_chain.chain.deploy import deploy, plan_deploy
from curta_chain.chain.effects import Effects
from curta_chain.chain.features import TxVersionChoice, select_build
from curta_chain.chain.keys import default_program_keypair
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.seal import seal, seal_cost
from curta_chain.chain.sender import Sender, SendStats, wait_for_signature
from curta_chain.chain.specs import Budget, TxSpec
from curta_chain.chain.transport import HttpTransport
from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, plan_run
from curta_chain.onchain import pipeline
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run import run_on_chain
from curta_chain.onchain.run_account import opened_run_data
from curta_chain.program import ModelState
from curta_chain.reporting import Progress

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
SIGNATURE_FEE = 5_000
PROMPT = "Once upon a time"
SCENARIOS: dict[str, list[str]] = {
    "clean": [],
    "10% lost": ["--drop-rate", "0.1"],
    "30% lost": ["--drop-rate", "0.3"],
    "limits": ["--rps", "100", "--max-batch", "100"],
}
TARGET = 2.0
"""At most this many times its clean time at 30 % loss, for every command."""


@dataclass
class CountingSender(Sender):
    """A sender that keeps the totals of every send of one command."""

    signed: int = 0
    sent_calls: int = 0
    landed: int = 0
    totals: list[SendStats] = field(default_factory=list)

    async def send(
        self,
        specs: Sequence[TxSpec],
        progress: Progress | None = None,
        commitment: str | None = None,
        what: str | None = None,
        effects: Effects | None = None,
    ) -> SendStats:
        stats = await super().send(specs, progress, commitment, what, effects)
        self.signed += len(specs) + stats.resigned
        self.sent_calls += stats.sent
        self.landed += stats.confirmed
        return stats

    def reset(self) -> None:
        self.signed = self.sent_calls = self.landed = 0
        self._lossy = False  # each command starts as a fresh process does, with no loss seen


@dataclass
class Row:
    command: str
    seconds: float
    signed: int
    sent: int
    landed: int
    beyond_plan: int
    slots: int | None = None
    """Slots from the first to the last transaction the command landed on its account."""
    blocks: int | None = None
    """Of those, the slots whose blocks held one (fewer than ``slots`` when the localnet's
    own execution, not the client, keeps a block from coming sooner)."""
    run: "RunNumbers | None" = None
    version: str = ""
    """The transactions a deploy or publish wrote with ("v1" or "legacy", as its plan chose)."""


@dataclass
class RunNumbers:
    """A run's steps: how many, and the slots and blocks they landed in."""

    tokens: int
    steps: int
    step_slots: int
    """Slots from the first step's to the last step's (openRun and closeRun left out)."""
    step_blocks: int
    """Of those, the slots whose blocks held a step."""
    seconds: float
    """The command's wall time (opening, the mirror's count and closing included)."""
    generating_slots: float
    """Slots a token took once the prompt was read: from the step that chose the first
    generated token to the one that chose the last, over the tokens between."""
    generating_blocks: float
    """Of those slots, the ones whose blocks held a step, over the same tokens."""

    def to_json(self) -> dict[str, float | int]:
        return {
            "slots_per_generated_token": round(self.generating_slots, 2),
            "blocks_per_generated_token": round(self.generating_blocks, 2),
            "tokens": self.tokens,
            "steps": self.steps,
            "step_slots": self.step_slots,
            "step_blocks": self.step_blocks,
            "tokens_per_second": round(self.tokens / self.seconds, 2),
            "tokens_per_slot": round(self.tokens / self.step_slots, 2),
            "slots_per_token": round(self.step_slots / self.tokens, 2),
            "blocks_per_token": round(self.step_blocks / self.tokens, 2),
        }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_localnet(port: int, extra: list[str], seed: int) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "curta_chain", "localnet", "--port", str(port)]
    command += ["--blocks", "--seed", str(seed), *extra]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "ready" in line.lower():
            return proc
    raise SystemExit(f"localnet {' '.join(extra)} did not start (exit {proc.wait()})")


async def measured(
    client: RpcClient,
    sender: CountingSender,
    name: str,
    planned: int,
    work: Callable[[], Awaitable[object]],
) -> Row:
    """Run ``work``; what the payer lost beyond ``planned`` lamports is the excess."""
    payer = sender.payer.pubkey()
    sender.reset()
    before = await client.balance(payer)
    started = time.monotonic()
    await work()
    seconds = time.monotonic() - started
    after = await client.balance(payer)
    beyond = before - after - planned
    return Row(name, seconds, sender.signed, sender.sent_calls, sender.landed, beyond)


async def scenario(
    url: str, artifacts: list[tuple[str, Artifact]], tokens: int, tx_version: TxVersionChoice
) -> list[Row]:
    client = RpcClient(HttpTransport(url), "confirmed")
    budget = Budget(tx_version=tx_version)
    payer = Keypair()
    try:
        signature = await client.request_airdrop(payer.pubkey(), 5_000 * LAMPORTS_PER_SOL)
        await wait_for_signature(client, signature)
        sender = CountingSender(client, payer)
        rows: list[Row] = []
        genesis = await client.genesis_hash()
        program = default_program_keypair(payer, genesis)
        deploy_ctx = ChainContext(client, program.pubkey(), payer, budget=budget, sender=sender)
        build = (await select_build(client)).program
        plan = await plan_deploy(deploy_ctx, program, build, final=False)
        rows.append(
            await measured(
                client,
                sender,
                "deploy",
                plan.cost_lamports,
                lambda: deploy(deploy_ctx, program, plan),
            )
        )
        rows[-1].version = plan.tx_version
        ctx = ChainContext(client, PROGRAM_ID, payer, budget=budget, sender=sender)
        for label, artifact in artifacts:
            rows += await model_rows(ctx, sender, label, artifact, tokens)
        return rows
    finally:
        await client.aclose()


async def model_rows(
    ctx: ChainContext, sender: CountingSender, label: str, artifact: Artifact, tokens: int
) -> list[Row]:
    """Publish, seal and run one model; a row each."""
    client = ctx.client
    published = await plan_publish(ctx, artifact)
    rows = [
        await measured(
            client,
            sender,
            f"publish {label}",
            published.cost_lamports,
            lambda: publish(ctx, artifact, published),
        )
    ]
    rows[0].version = published.tx_version
    _, fee = await seal_cost(ctx, published.model)

    async def sealing() -> None:
        result = await seal(ctx, published.model, artifact)
        assert result.state == ModelState.SEALED, result.describe()

    since = await client.call("getSlot", [{"commitment": "processed"}])
    rows.append(await measured(client, sender, f"seal {label}", fee, sealing))
    rows[-1].slots, rows[-1].blocks = await slots_spanned(client, published.model, since)
    runs: list[Any] = []

    async def running() -> None:
        settings = SamplingSettings(0, 0, 0)
        runs.append(await run_on_chain(ctx, published.model, PROMPT, tokens, settings, close=True))

    since = await client.call("getSlot", [{"commitment": "processed"}])
    row = await measured(client, sender, f"run {label} ({tokens} tokens)", 0, running)
    row.slots, row.blocks = await slots_spanned(client, runs[0].run, since)
    # openRun lands before any step is sent, closeRun after the last; the k-th step to land
    # makes the run's step count k, so the slots in order are the slots of steps 1, 2, ...
    landed = sorted(t.slot for t in await client.landed_transactions(runs[0].run, since))
    steps = landed[1:-1]
    chosen = token_steps(artifact, published.model, ctx.payer.pubkey(), tokens)
    first, last = steps[chosen[0] - 1], steps[chosen[-1] - 1]
    between = max(len(chosen) - 1, 1)
    row.run = RunNumbers(
        len(runs[0].generated),
        len(steps),
        max(steps) - min(steps) + 1,
        len(set(steps)),
        row.seconds,
        (last - first) / between,
        len({slot for slot in steps if first < slot <= last}) / between,
    )
    # The plan of a closed run: its rent comes back; one fee a signature (openRun has two).
    row.beyond_plan -= SIGNATURE_FEE * (runs[0].transactions + 1)
    rows.append(row)
    return rows


def token_steps(artifact: Artifact, model: Pubkey, payer: Pubkey, tokens: int) -> list[int]:
    """The step count after which the greedy run of ``PROMPT`` chooses each of its tokens."""
    int_model, tokenizer = IntModel.from_artifact(artifact), Tokenizer.from_artifact(artifact)
    plan = plan_run(int_model, tokenizer, PROMPT, tokens)
    capacity = len(plan.prompt_ids) + plan.max_tokens
    opened = opened_run_data(artifact.config, model, payer, capacity, PROMPT.encode())
    return RunMirror(artifact, opened, int_model, tokenizer).token_steps()


async def slots_spanned(client: RpcClient, address: Pubkey, since: int) -> tuple[int, int]:
    """Slots from the first to the last transaction naming ``address`` from ``since`` on,
    and how many of them held one."""
    slots = [t.slot for t in await client.landed_transactions(address, since)]
    return (max(slots) - min(slots) + 1, len(set(slots))) if slots else (0, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="stories260K only (a few minutes)")
    parser.add_argument("--tokens", type=int, default=4, help="tokens each run generates")
    parser.add_argument("--seed", type=int, default=1, help="the localnet's seed")
    parser.add_argument("--scenarios", nargs="*", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument(
        "--rounds", type=int, default=1, help="run the scenarios this many times (the median)"
    )
    parser.add_argument(
        "--tx-version",
        nargs="+",
        default=["auto"],
        choices=["auto", "legacy", "v1"],
        help="the transactions publish and deploy write with, as the CLI's option; each "
        "further version runs every scenario again in the same round, named 'SCENARIO, VERSION'",
    )
    parser.add_argument(
        "--pipeline-blocks",
        type=int,
        default=pipeline.PIPELINE_BLOCKS,
        help="blocks' worth of a run's steps kept in flight (a deeper queue keeps the "
        "localnet's slots full while its LiteSVM, slower than a slot, makes a block)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="append to docs/numbers/: with --quick the times against clean (cluster.jsonl), "
        "else the runs and seals (pipelined_runs.jsonl)",
    )
    args = parser.parse_args()
    if args.record and args.quick and "clean" not in args.scenarios:
        parser.error("--quick --record compares with the clean scenario: add it to --scenarios")
    if args.record and not args.quick and args.rounds > 1:
        parser.error("--record without --quick records one round: leave --rounds out")
    pipeline.PIPELINE_BLOCKS = args.pipeline_blocks
    artifacts = [("stories260K", stories260k())]
    if not args.quick:
        artifacts.append(("stories15M shape", synthetic_artifact()))
    rounds: list[dict[str, list[Row]]] = []
    for number in range(1, args.rounds + 1):
        results: dict[str, list[Row]] = {}
        for name in args.scenarios:
            for version in args.tx_version:
                key = name if version == args.tx_version[0] else f"{name}, {version}"
                port = free_port()
                proc = start_localnet(port, SCENARIOS[name], args.seed + number - 1)
                try:
                    results[key] = asyncio.run(
                        scenario(f"http://127.0.0.1:{port}", artifacts, args.tokens, version)
                    )
                finally:
                    proc.terminate()
                    proc.wait()
                print(f"round {number}, {key}: done", file=sys.stderr)
        rounds.append(results)
    for number, results in enumerate(rounds, 1):
        if args.rounds > 1:
            print(f"round {number}\n")
        print_round(results)
    as_json = [round_json(results) for results in rounds]
    print(json.dumps(as_json[0] if args.rounds == 1 else as_json))
    if args.record and args.quick:
        record_cluster(rounds, args.tx_version, args.seed)
    elif args.record:
        record_runs(rounds[-1], args.pipeline_blocks)


def against_clean(results: dict[str, list[Row]]) -> dict[str, dict[str, float]]:
    """Each scenario's commands' times over the clean scenario's (of the same transaction
    version: "30% lost, legacy" over "clean, legacy") in the same round."""
    ratios: dict[str, dict[str, float]] = {}
    for name, rows in results.items():
        version = name[name.index(",") :] if "," in name else ""
        clean = {row.command: row.seconds for row in results.get("clean" + version, [])}
        ratios[name] = {
            row.command: row.seconds / clean[row.command] for row in rows if row.command in clean
        }
    return ratios


def print_round(results: dict[str, list[Row]]) -> None:
    """One round's two tables: every command, then the runs' slots and blocks."""
    ratios = against_clean(results)
    print(
        f"| {'scenario':<9} | {'command':<32} | {'seconds':>8} | {'x clean':>7} | {'signed':>7} "
        f"| {'sent':>7} | {'landed':>7} | {'lamports beyond plan':>20} | {'slots':>5} "
        f"| {'blocks':>6} |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, rows in results.items():
        for row in rows:
            base = ratios[name].get(row.command)
            ratio = f"{base:.2f}" if base is not None else "-"
            print(
                f"| {name:<9} | {row.command:<32} | {row.seconds:>8.1f} | {ratio:>7} "
                f"| {row.signed:>7,} | {row.sent:>7,} | {row.landed:>7,} | {row.beyond_plan:>20,} "
                f"| {row.slots if row.slots is not None else '-':>5} "
                f"| {row.blocks if row.blocks is not None else '-':>6} |"
            )
    print()
    print(
        "| scenario | run | tokens | steps | seconds | tokens/s | slots of steps "
        "| blocks of steps | tokens/slot | slots/token | blocks/token | slots/generated token "
        "| blocks/generated token |"
    )
    print("| --- | --- |" + " ---: |" * 11)
    for name, rows in results.items():
        for row in rows:
            if row.run is not None:
                n = row.run.to_json()
                print(
                    f"| {name} | {row.command} | {n['tokens']} | {n['steps']} "
                    f"| {row.seconds:.1f} | {n['tokens_per_second']} | {n['step_slots']} "
                    f"| {n['step_blocks']} | {n['tokens_per_slot']} | {n['slots_per_token']} "
                    f"| {n['blocks_per_token']} | {n['slots_per_generated_token']} "
                    f"| {n['blocks_per_generated_token']} |"
                )
    print()


def round_json(results: dict[str, list[Row]]) -> dict[str, dict[str, dict[str, Any]]]:
    """One round as JSON: scenario -> command -> numbers."""
    return {
        name: {
            row.command: {
                "seconds": round(row.seconds, 2),
                "signed": row.signed,
                "sent": row.sent,
                "landed": row.landed,
                "lamports_beyond_plan": row.beyond_plan,
                "slots": row.slots,
                "blocks": row.blocks,
                **(row.run.to_json() if row.run is not None else {}),
            }
            for row in rows
        }
        for name, rows in results.items()
    }


def record_cluster(rounds: list[dict[str, list[Row]]], versions: list[str], seed: int) -> None:
    """Append each command's time against clean at 10 % and 30 % loss (the median of the
    rounds), its sends at 30 %, the limits' times and each further version's, to the page."""
    from numbers_page import record

    ratios = [against_clean(results) for results in rounds]
    commands = [row.command for row in rounds[0]["clean"]]

    def rows_of(name: str, command: str) -> list[Row]:
        return [row for r in rounds for row in r.get(name, []) if row.command == command]

    def median(name: str, command: str) -> float | None:
        found = [r[name][command] for r in ratios if command in r.get(name, {})]
        return statistics.median(found) if found else None

    def seconds(name: str, command: str) -> str:
        return f"{statistics.median(row.seconds for row in rows_of(name, command)):.1f} s"

    def spread(name: str, command: str) -> str:
        found = sorted(r[name][command] for r in ratios if command in r.get(name, {}))
        return f"{found[0]:.2f}× to {found[-1]:.2f}×"

    def counts(values: list[int]) -> str:
        low, high = min(values), max(values)
        return f"{low:,}" if low == high else f"{low:,}-{high:,}"

    def written(name: str) -> str:
        """What deploy and publish wrote with in a scenario: "v1", or "legacy"."""
        return "/".join(sorted({row.version for row in rounds[0][name] if row.version}))

    def against(name: str) -> str:
        return "; ".join(
            f"{short_name(c)} {median(name, c):.2f}×"
            for c in commands
            if median(name, c) is not None
        )

    rows: list[list[str]] = []
    for command in commands:
        light, heavy = median("10% lost", command), median("30% lost", command)
        lossy = rows_of("30% lost", command)
        cell = "-"
        if heavy is not None:
            met = "" if heavy <= TARGET else f" (target ≤ {TARGET:g}×, not met)"
            cell = f"**{heavy:.2f}×**{met}"
        sends = "-"
        if lossy:
            sends = f"{counts([r.sent for r in lossy])} ({counts([r.signed for r in lossy])})"
        rows.append(
            [short_name(command), f"{light:.2f}×" if light is not None else "-", cell, sends]
        )
    beyond = [
        f"{short_name(row.command)} {name}: {row.beyond_plan:,}"
        for results in rounds
        for name, scenario_rows in results.items()
        for row in scenario_rows
        if row.beyond_plan
    ]
    spent = "0 in every row" if not beyond else "; ".join(beyond)
    publishing = next(c for c in commands if c.startswith("publish"))
    count = len(rounds)
    notes = ["One round." if count == 1 else f"Each column is the median of {count} rounds."]
    if "30% lost" in rounds[0]:
        if count > 1:
            notes.append(
                "At 30% lost: "
                + "; ".join(f"{short_name(c)} {spread('30% lost', c)}" for c in commands)
                + "."
            )
        notes.append(
            f"Publish ({written('clean')}) took {seconds('clean', publishing)} clean and "
            f"{seconds('30% lost', publishing)} at 30% lost."
        )
    for version in versions[1:]:
        clean, lossy_name = f"clean, {version}", f"30% lost, {version}"
        if lossy_name not in rounds[0]:
            continue
        signed = rows_of(clean, publishing)[0].signed
        notes.append(
            f"With `--tx-version {version}` in the same rounds, at 30% lost: "
            f"{against(lossy_name)}; publish signed {signed:,} transactions and took "
            f"{seconds(clean, publishing)} clean, {seconds(lossy_name, publishing)} at 30% lost."
        )
    notes.append(
        "The localnet's seed fixes which transactions it loses; each round had its own "
        f"(seeds {seed} to {seed + count - 1})."
    )
    if "limits" in rounds[0]:
        notes.append(
            "Behind a provider's limits (`limits`: 100 calls a second, batches of at most "
            f"100): {against('limits')}."
        )
    record(
        "cluster",
        "Busy clusters",
        shlex.join([".venv/bin/python", "scripts/bench_cluster.py", *sys.argv[1:]]),
        ["command", "10% lost", "30% lost", "sends at 30% lost (transactions signed)"],
        rows,
        "stories260K on `curta-chain localnet --blocks --drop-rate P`, each command against "
        f"its clean time in the same round, deploy and publish writing {written('clean')} "
        f"transactions; lamports spent beyond the plan: {spent}. "
        f"Target: at most {TARGET:g}× at 30% loss.",
        " ".join(notes),
    )


def short_name(command: str) -> str:
    """A command's name in the page's table: without the model (stories260K throughout)."""
    if command.startswith("run "):
        return "run --on-chain, " + command.split("(")[-1].rstrip(")")
    return command.split()[0]


def record_runs(results: dict[str, list[Row]], pipeline_blocks: int) -> None:
    """Append each scenario's seals and runs, against issue 29's targets, to the page."""
    from numbers_page import record

    rows: list[list[str]] = []
    for name, scenario_rows in results.items():
        for row in scenario_rows:
            if row.command.startswith("seal"):
                rows.append(
                    [name, row.command, f"{row.seconds:.1f} s", "", f"{row.slots} ({row.blocks})"]
                )
            if row.run is None:
                continue
            n = row.run.to_json()
            rate = float(n["tokens_per_second"])
            generated = float(n["slots_per_generated_token"])
            speed = f"{rate:.1f}"
            slots = f"{generated:.2f} ({n['blocks_per_generated_token']:.2f})"
            if "stories260K" in row.command:
                speed = f"**{rate:.1f}** (target ≥ 10, {'met' if rate >= 10 else 'not met'})"
            else:
                slots = f"**{slots}** (target ≤ 3, {'met' if generated <= 3 else 'not met'})"
            rows.append([name, row.command, f"{row.seconds:.1f} s", speed, slots])
    record(
        "pipelined_runs",
        "On-chain runs and seals on the busy localnet",
        shlex.join([".venv/bin/python", "scripts/bench_cluster.py", *sys.argv[1:]]),
        ["scenario", "command", "wall time", "tokens/s", "slots a generated token (blocks)"],
        rows,
        f"`curta-chain localnet --blocks` (400 ms slots, a block a slot, the scheduler's "
        f"limits), {pipeline_blocks} blocks' worth of a run's steps in flight. A seal's last "
        "column is the slots its steps span (the blocks that held one).",
    )


if __name__ == "__main__":
    main()

"""publish, seal and run --on-chain on the real solana-test-validator beside the embedded localnet.

    .venv/bin/python scripts/bench_validator.py [--model stories260K|15m] [--steps N]
        [--url URL] [--samples N] [--record]

Starts solana-test-validator (``curta_chain.validator``: the pinned build, free ports, the
shipped program preloaded) unless ``--url`` names one already running with the program at
``LOCALNET_PROGRAM_ID``, and the embedded localnet as its own process (``curta-chain
localnet``), as users run both. On each, one payer runs the real CLI as processes:
``publish`` (stories260K, 355 transactions; or ``--model 15m``, stories15M's shapes, 16,400
writes), ``seal`` (one 64 KiB chunk a step, the mirror checking each) and ``run --on-chain
-n N``; each command's time is its own (``seconds`` in its JSON answer: from its first
transaction to the last one confirmed) and its transactions a second follow. A seal step's
execution on each node: ``simulateTransaction`` of one step (a 64 KiB chunk, 33,174
compute units) less that of a plain transfer, the median of ``--samples`` of each,
alternating (on a loaded machine the RPC's own time swamps it: read it with the two
medians beside it); and a run step's wall time (``run --on-chain``'s seconds over its
steps, one block's wait included). The nodes take turns command by command so a change in
the machine's load falls on both alike. Prints a Markdown table with the ratios (validator
/ embedded); the last line is JSON.
"""

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from numbers_page import record
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.synthetic import STORIES15M, synthetic_artifact
from curta_chain.cli.keypairs import write_keypair
from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID
from curta_chain.program.instructions import begin_sealing, seal_step
from curta_chain.validator import ValidatorProcess, require_validator, validator_version

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CURTA_DATA", REPO.parent / "shared" / "data" / "llama2c"))
PROGRAM = Pubkey.from_string(LOCALNET_PROGRAM_ID)
READY_TIMEOUT = 120.0


def rpc(url: str, method: str, *params: Any) -> Any:
    answer = httpx.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}, timeout=60
    ).json()
    if "error" in answer:
        raise SystemExit(f"{url} {method}: {answer['error']}")
    return answer["result"]


def confirmed(url: str, signature: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        status = rpc(url, "getSignatureStatuses", [signature])["value"][0]
        if status and status["confirmationStatus"] in ("confirmed", "finalized"):
            if status["err"] is not None:
                raise SystemExit(f"{url}: {signature} failed: {status['err']}")
            return
        time.sleep(0.1)
    raise SystemExit(f"{url}: {signature} was not confirmed")


def first_tokens(data: bytes, count: int) -> bytes:
    pos = 4
    for _ in range(count):
        pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
    return data[:pos]


def artifact(model: str) -> bytes:
    if model == "15m":
        return synthetic_artifact(STORIES15M, seed=15).data
    checkpoint = (DATA / "stories260K.bin").read_bytes()
    tokenizer = first_tokens((DATA / "tokenizer.bin").read_bytes(), 512)
    return convert_llama2c_bytes(checkpoint, tokenizer, "stories260K.bin", "tok512.bin").data


class Node:
    """One node of the comparison, a payer funded there, and what each command measured."""

    def __init__(self, name: str, url: str, folder: Path):
        self.name, self.url = name, url
        self.payer = Keypair()
        self.key = folder / f"{name}.json"
        write_keypair(self.payer, self.key)
        self.results: dict[str, dict[str, Any]] = {}

    def fund(self, sol: int) -> None:
        confirmed(
            self.url,
            rpc(self.url, "requestAirdrop", str(self.payer.pubkey()), sol * LAMPORTS_PER_SOL),
        )

    def cli(self, name: str, *args: str) -> dict[str, Any]:
        command = [sys.executable, "-m", "curta_chain", *args, "-u", self.url, "-k", str(self.key)]
        command += ["--program-id", LOCALNET_PROGRAM_ID, "--yes", "--output", "json-compact"]
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise SystemExit(f"{self.name}: {' '.join(args[:1])}: {done.stderr.strip()}")
        answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        self.results[name] = answer
        return answer

    def transaction(self, *instructions: Instruction) -> str:
        value = rpc(self.url, "getLatestBlockhash", {"commitment": "confirmed"})["value"]
        blockhash = Hash.from_string(value["blockhash"])
        message = Message.new_with_blockhash(list(instructions), self.payer.pubkey(), blockhash)
        return base64.b64encode(bytes(Transaction([self.payer], message, blockhash))).decode()

    def simulate_seconds(self, transaction: str) -> float:
        config = {"encoding": "base64", "commitment": "processed", "replaceRecentBlockhash": True}
        start = time.perf_counter()
        value = rpc(self.url, "simulateTransaction", transaction, config)["value"]
        seconds = time.perf_counter() - start
        if value["err"] is not None:
            raise SystemExit(f"{self.name}: simulation failed: {value['err']} {value['logs']}")
        return seconds


def start_embedded(folder: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "curta_chain", "localnet", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=folder,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Localnet ready at"):
            return process, line.split()[-1]
    raise SystemExit("the embedded localnet did not start")


def seal_step_seconds(nodes: list[Node], models: dict[str, dict[str, Any]], samples: int) -> None:
    """Each node: begin sealing by hand, then time simulated seal steps against transfers."""
    steps, transfers = {}, {}
    for node in nodes:
        model = Pubkey.from_string(models[node.name]["model"])
        weight = Pubkey.from_string(models[node.name]["weight_accounts"][0])
        transaction = node.transaction(begin_sealing(PROGRAM, node.payer.pubkey(), model))
        config = {"encoding": "base64", "preflightCommitment": "confirmed"}  # its blockhash's
        confirmed(node.url, rpc(node.url, "sendTransaction", transaction, config))
        steps[node.name] = node.transaction(seal_step(PROGRAM, model, [weight], 0))
        pay = TransferParams(
            from_pubkey=node.payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1_000_000
        )
        transfers[node.name] = node.transaction(transfer(pay))
    for node in nodes:
        step_times, transfer_times = [], []
        for _ in range(samples):
            step_times.append(node.simulate_seconds(steps[node.name]))
            transfer_times.append(node.simulate_seconds(transfers[node.name]))
        node.results["seal step"] = {
            "step_ms": statistics.median(step_times) * 1000,
            "transfer_ms": statistics.median(transfer_times) * 1000,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=["stories260K", "15m"], default="stories260K")
    parser.add_argument("--steps", type=int, default=16, help="tokens run --on-chain generates")
    parser.add_argument("--url", help="a running validator (default: start one)")
    parser.add_argument("--samples", type=int, default=41, help="simulations of each kind")
    parser.add_argument("--record", action="store_true", help="append to docs/numbers/")
    args = parser.parse_args()

    executable = None if args.url else require_validator()  # looked up with the real HOME
    folder = Path(tempfile.mkdtemp(prefix="bench-validator-"))
    os.environ["HOME"] = str(folder)  # the CLI's config (deploy records) stays in here
    art = folder / "model.curta"
    art.write_bytes(artifact(args.model))
    validator = None
    if args.url is None:
        validator = ValidatorProcess.start(folder / "ledger", executable=executable)
        url, version = validator.url, validator_version(Path(validator.command[0]))
    else:
        url, version = args.url, f"at {args.url}"
    embedded, embedded_url = start_embedded(folder)
    try:
        nodes = [Node("validator", url, folder), Node("embedded", embedded_url, folder)]
        for node in nodes:
            node.fund(200 if args.model == "15m" else 20)
        published = {}
        for node in nodes:
            published[node.name] = node.cli("publish", "publish", str(art))
        seal_step_seconds(nodes, published, args.samples)
        for node in nodes:
            node.cli("seal", "seal", published[node.name]["model"])
        for node in nodes:
            node.cli(
                "run",
                "run",
                published[node.name]["model"],
                "--on-chain",
                "-n",
                str(args.steps),
                "-s",
                "1",
                "--close-run",
            )
    finally:
        embedded.terminate()
        embedded.wait()
        if validator is not None:
            validator.stop()
    report(nodes, version, args)


def report(nodes: list[Node], version: str, args: argparse.Namespace) -> None:
    theirs, ours = (node.results for node in nodes)
    table: list[list[str]] = []
    rows: dict[str, Any] = {}
    for name in ("publish", "seal", "run"):
        a, b = theirs[name], ours[name]
        rows[name] = {
            "transactions": a["transactions"],
            "validator_seconds": a["seconds"],
            "embedded_seconds": b["seconds"],
            "validator_tps": a["transactions"] / a["seconds"],
            "embedded_tps": b["transactions"] / b["seconds"],
        }
        r = rows[name]
        table.append(
            [
                f"{name} ({a['transactions']:,} transactions), seconds",
                f"{a['seconds']:.2f}",
                f"{b['seconds']:.2f}",
                f"{a['seconds'] / b['seconds']:.2f}",
            ]
        )
        table.append(
            [
                f"{name}, transactions a second",
                f"{r['validator_tps']:.0f}",
                f"{r['embedded_tps']:.0f}",
                f"{r['validator_tps'] / r['embedded_tps']:.2f}",
            ]
        )
    per_step = [r["seconds"] / r["step_transactions"] * 1000 for r in (theirs["run"], ours["run"])]
    table.append(
        [
            "a run step, wall (run seconds / steps), ms",
            f"{per_step[0]:.0f}",
            f"{per_step[1]:.0f}",
            f"{per_step[0] / per_step[1]:.2f}",
        ]
    )
    rows["run_step_ms"] = {"validator": per_step[0], "embedded": per_step[1]}
    a, b = theirs["seal step"], ours["seal step"]
    for key, label in (
        ("step_ms", "simulate a seal step, ms"),
        ("transfer_ms", "simulate a transfer, ms"),
    ):
        table.append([label, f"{a[key]:.2f}", f"{b[key]:.2f}", f"{a[key] / b[key]:.2f}"])
    exec_a, exec_b = a["step_ms"] - a["transfer_ms"], b["step_ms"] - b["transfer_ms"]
    table.append(
        [
            "a seal step's execution (the difference), ms",
            f"{exec_a:.2f}",
            f"{exec_b:.2f}",
            f"{exec_a / exec_b:.2f}",
        ]
    )
    rows["seal_step"] = {
        "validator_ms": exec_a,
        "embedded_ms": exec_b,
        **{f"validator_{k}": v for k, v in a.items()},
        **{f"embedded_{k}": v for k, v in b.items()},
    }
    columns = ["command", "validator", "embedded", "validator / embedded"]
    print(f"solana-test-validator: {version}; model {args.model}; run -n {args.steps}")
    print()
    print("| " + " | ".join(columns) + " |")
    print("| --- | ---: | ---: | ---: |")
    for row in table:
        print("| " + " | ".join(row) + " |")
    print()
    print(json.dumps({"version": version, "model": args.model, "steps": args.steps, **rows}))
    if args.record:
        model = "stories260K" if args.model == "stories260K" else "the stories15M shape"
        command = f".venv/bin/python scripts/bench_validator.py --model {args.model} --record"
        record(
            "validator" if args.model == "stories260K" else f"validator_{args.model}",
            f"The real solana-test-validator beside the embedded localnet: {model}",
            command,
            columns,
            table,
            summary=(
                f"`{version}`, started by the script (free ports, the shipped program "
                f"preloaded), and `curta-chain localnet` as its own process, side by side; "
                f"the CLI as processes on each, taking turns command by command; "
                f"`run --on-chain -n {args.steps}`."
            ),
            notes=(
                "A seal step's execution is the median simulation of a step less that of a "
                "transfer: on a loaded machine the RPC's own time swamps it."
            ),
        )


if __name__ == "__main__":
    main()

"""Run a stories15M-shaped model on chain through the CLI, end to end, and count what it took.

Starts `curta-chain localnet` (its default: a slot a 400 ms, no block limits), funds a payer,
then with the CLI: publishes and seals the stories15M shape (synthetic weights, the real
32,000-token vocabulary), runs it off chain (`curta-chain run ARTIFACT`), and greedy on chain
(`run MODEL --on-chain`) after a 13-token prompt, once with 1 new token and once with 9. The
tokens must be the file's. From the CLI's JSON: the step transactions and their compute units
(the chain's own count, compute-budget instruction included); a generated token is the 9-token
run less the 1-token one over 8 tokens, a prompt position the 1-token run less one generated
token over the prompt's 13 positions.

    .venv/bin/python scripts/bench_onchain_run.py [--record]

``--record`` appends the table to docs/numbers/onchain_run.jsonl (numbers_page.py renders it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_cluster import free_port
from bench_inference import PROMPT_13, macs_a_token, stories15m
from solders.keypair import Keypair

from curta_chain.cli.keypairs import write_keypair
from curta_chain.constants import LAMPORTS_PER_SOL

COMMAND = ".venv/bin/python scripts/bench_onchain_run.py --record"


def start_localnet(port: int) -> subprocess.Popen[str]:
    """`curta-chain localnet` on ``port``, once it says it is ready."""
    command = [sys.executable, "-m", "curta_chain", "localnet", "--port", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "ready" in line.lower():
            return proc
    raise SystemExit(f"the localnet did not start (exit {proc.wait()})")


def rpc(url: str, method: str, params: list) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url, json=body, timeout=60).json()["result"]


def fund(url: str, keypair: Keypair, sol: int) -> None:
    """Airdrop ``sol`` to ``keypair`` and wait until it is confirmed."""
    signature = rpc(url, "requestAirdrop", [str(keypair.pubkey()), sol * LAMPORTS_PER_SOL])
    while True:
        status = rpc(url, "getSignatureStatuses", [[signature]])["value"][0]
        if status and status.get("confirmationStatus") in ("confirmed", "finalized"):
            return
        time.sleep(0.2)


def cli(*args: str) -> dict:
    """``curta-chain ARGS --output json-compact``: its last line, parsed (exit 0 required)."""
    command = [sys.executable, "-m", "curta_chain", *args, "--output", "json-compact"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{' '.join(args[:2])} failed: {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(url: str, folder: Path) -> list[list[str]]:
    """Publish, seal and run the stories15M shape on ``url``; the table's rows."""
    payer = Keypair()
    keypair = folder / "payer.json"
    write_keypair(payer, keypair)
    fund(url, payer, 300)
    artifact = stories15m()
    path = folder / "stories15M-shaped.curta"
    path.write_bytes(artifact.data)
    chain = ["-u", url, "-k", str(keypair)]
    model = cli("publish", str(path), *chain)["model"]
    cli("seal", model, str(path), *chain)
    runs = {}
    for new in (1, 9):
        args = ["--prompt", PROMPT_13.decode(), "--steps", str(new), "--temperature", "0"]
        from_file = cli("run", str(path), *args)
        on_chain = cli("run", model, *args, *chain, "--on-chain", "--close-run")
        if on_chain["generated_ids"] != from_file["generated_ids"]:
            raise SystemExit(f"{new} new tokens: the chain's differ from the file's")
        runs[new] = on_chain
    prompt = len(runs[1]["prompt_ids"])
    token_steps = (runs[9]["step_transactions"] - runs[1]["step_transactions"]) / 8
    token_units = (runs[9]["compute_units"] - runs[1]["compute_units"]) / 8
    position_steps = (runs[1]["step_transactions"] - token_steps) / prompt
    macs = macs_a_token(artifact.config)
    return [
        [
            f"stories15M-shaped, a {prompt}-token prompt",
            f"{runs[1]['step_transactions']} / {runs[9]['step_transactions']}",
            f"**{position_steps:.2f}**",
            f"**{token_steps:.2f}**",
            f"**{token_units / macs:.3f}**",
            f"{runs[9]['max_step_compute_units']:,}",
        ]
    ]


def main() -> int:
    port = free_port()
    proc = start_localnet(port)
    try:
        with tempfile.TemporaryDirectory(prefix="curta-bench-run-") as tmp:
            rows = measure(f"http://127.0.0.1:{port}", Path(tmp))
    finally:
        proc.terminate()
        proc.wait()
    columns = [
        "greedy `run --on-chain` (1 / 9 new tokens)",
        "step transactions",
        "a prompt position",
        "a generated token",
        "CU per MAC over a generated token",
        "largest step (CU)",
    ]
    print("| " + " | ".join(columns) + " |")
    print("| --- |" + " ---: |" * (len(columns) - 1))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if "--record" in sys.argv[1:]:
        from numbers_page import record

        record(
            "onchain_run",
            "Inference on chain: `run --on-chain` end to end",
            COMMAND,
            columns,
            rows,
            "The CLI against `curta-chain localnet`: publish and seal the stories15M shape "
            "(synthetic weights, the real 32,000-token vocabulary), then greedy runs on chain "
            "after a 13-token prompt, their tokens the file's. Compute units are the chain's "
            "own count of each step transaction.",
            "A generated token: the 9-token run less the 1-token one, over 8 tokens. A prompt "
            "position: the 1-token run less a generated token, over the prompt's 13 positions "
            "(read two at a time but the last).",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the demo model's workflow costs: the payer's balance before and after each command.

Runs the README's devnet workflow (deploy --final, publish, seal, run --on-chain, close-run)
as CLI processes against an embedded localnet, which charges what a validator charges (rent
by the runtime's formula, 5,000 lamports a signature), and prints what each command took
from the payer, what of it is rent and whether that rent comes back. ``--record`` appends
the table to docs/numbers/costs.jsonl (scripts/numbers_page.py renders it).
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from solders.keypair import Keypair

from curta_chain.cli.keypairs import write_keypair
from curta_chain.localnet import start_in_thread

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "curta_chain" / "demo"
TOKENS = 12
SOL = 1_000_000_000


def cli(*argv: str) -> dict:
    """Run ``curta-chain argv --output json -y`` and return what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "curta_chain", *argv, "--output", "json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"curta-chain {' '.join(argv)} failed: {done.stderr.strip()}")
    return json.loads(done.stdout) if done.stdout.strip() else {}


def sol(lamports: int) -> str:
    return f"{lamports / SOL:.9f}".rstrip("0").rstrip(".")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--record", action="store_true", help="append the results to docs/numbers/costs.jsonl"
    )
    args = parser.parse_args()
    localnet = start_in_thread()
    try:
        with tempfile.TemporaryDirectory() as folder:
            rows = measure(localnet.url, Path(folder))
    finally:
        localnet.stop()
    for row in rows:
        print(" | ".join(row))
    if args.record:
        from numbers_page import record

        record(
            "costs",
            "What the demo model costs",
            ".venv/bin/python scripts/bench_costs.py --record",
            ["command", "taken from the payer (SOL)", "of which rent", "the rent"],
            rows,
            "The README's devnet workflow for the demo model (`curta_chain/demo`, 349,056 bytes "
            "converted, 2 sections), each command as a process against the embedded localnet, "
            "which charges rent by the runtime's formula and 5,000 lamports a signature, as a "
            "validator does: the payer's balance before and after each command. No priority "
            "fee (`--with-compute-unit-price` adds one); a negative figure is rent given back.",
        )


def measure(url: str, folder: Path) -> list[list[str]]:
    """Run the workflow on ``url`` and return a row per command."""
    payer = Keypair()
    keypair = folder / "id.json"
    write_keypair(payer, keypair)
    chain = ["-u", url, "-k", str(keypair), "-C", str(folder / "config.yml")]
    artifact = folder / "demo.curta"
    cli("convert", str(DEMO / "model.bin"), str(DEMO / "tokenizer.bin"), "-o", str(artifact))
    cli("airdrop", "100", "-u", url, "-k", str(keypair))

    def balance() -> int:
        params = [str(payer.pubkey()), {"commitment": "confirmed"}]
        body = {"jsonrpc": "2.0", "id": 1, "method": "getBalance", "params": params}
        return httpx.post(url, json=body, timeout=30).json()["result"]["value"]

    rows = []

    def step(label: str, rent: int, back: str, *argv: str) -> dict:
        before = balance()
        out = cli(*argv, *chain)
        rows.append([label, sol(before - balance()), sol(rent), back])
        return out

    deploy_plan = cli("deploy", "--final", "--dry-run", *chain)["plan"]
    # The buffer's rent moves into the program data at the deploy: it stays with the program.
    step(
        "deploy --final",
        deploy_plan["rent_lamports"],
        "stays with the program",
        "deploy",
        "--final",
        "-y",
    )
    publish_plan = cli("publish", str(artifact), "--dry-run", *chain)["plan"]
    model = step(
        "publish",
        publish_plan["rent_lamports"],
        "back on close until sealed, then locked",
        "publish",
        str(artifact),
        "-y",
    )["model"]
    step("seal", 0, "none", "seal", model, str(artifact), "-y")
    run = step(
        f"run --on-chain, {TOKENS} tokens",
        0,
        "none",
        "run",
        model,
        "--on-chain",
        "-i",
        "Once upon a time",
        "--steps",
        str(TOKENS),
        "-t",
        "0",
        "-y",
    )
    rows[-1][2] = sol(run["rent_lamports"])
    rows[-1][3] = "back on close-run (or --close-run)"
    step("close-run", 0, "none", "close-run", run["run"], "-y")
    return rows


if __name__ == "__main__":
    main()

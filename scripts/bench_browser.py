"""The page against the CLI, in the same run: verify MB/s and tokens/s in headless Chromium.

Publishes and seals a stories15M-shaped artifact (synthetic weights, 8 sections, 15.2 MB)
on a fresh embedded localnet, then measures:

  page_verify_mb_per_s   the page reading every weight account (1 MiB dataSlice reads,
                         through `curta-chain web`'s relay) and hashing it with WebCrypto
  cli_verify_mb_per_s    curta_chain.chain.verify (what `curta-chain verify` runs) on the
                         same model, in this process
  page_tokens_per_s      the page's generator (TypeScript integer forward pass)
  cli_tokens_per_s       `curta-chain run` on the artifact, same prompt, seed and steps

Prints a table, then as its last line one JSON object (with ``--runs`` above 1, a list).

    .venv/bin/python scripts/bench_browser.py [--steps 40] [--runs N] [--record]

With ``--runs N`` it measures N times over the one published model (a run's figures move
with the shared machine's load); ``--record`` appends them to docs/numbers/browser.jsonl.
"""

import argparse
import asyncio
import contextlib
import io
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact.synthetic import STORIES15M, synthetic_artifact
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.transport import HttpTransport
from curta_chain.chain.verify import verify
from curta_chain.cli import main as cli_main
from curta_chain.cli.keypairs import write_keypair
from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID
from curta_chain.localnet import start_in_thread
from curta_chain.web import start_web_server

# solana-py's reference client, called from plain code: the tests' (tests/reference_client.py).
sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
from reference_client import Client

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
PROMPT = "Once upon a time"
TIMEOUT_MS = 600_000
GENERATE_TARGET = 0.5
"""The page generates at least this share of `curta-chain run`'s tokens a second (issue 22)."""

if TYPE_CHECKING:
    from playwright.sync_api import Playwright


def cli(*args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main([*args, "--output", "json"])
    if code:
        raise SystemExit(f"curta-chain {' '.join(args)} failed")
    return json.loads(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="tokens to generate (default 40)")
    parser.add_argument(
        "--runs", type=int, default=1, help="measure this many times over one published model"
    )
    parser.add_argument(
        "--record", action="store_true", help="append the results to docs/numbers/browser.jsonl"
    )
    args = parser.parse_args()
    steps = args.steps
    folder = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    os.environ["HOME"] = str(folder)  # never the real Solana CLI config
    artifact = synthetic_artifact(STORIES15M, seed=15)
    path = folder / "stories15M.curta"
    path.write_bytes(artifact.data)
    megabytes = len(artifact.data) / 1e6
    results: list[dict[str, float]] = []
    localnet = start_in_thread()
    try:
        payer = Keypair()
        client = Client(localnet.url)
        signature = client.request_airdrop(payer.pubkey(), 500 * LAMPORTS_PER_SOL).value
        client.confirm_transaction(signature, "confirmed", sleep_seconds=0.05)
        keypair = folder / "payer.json"
        write_keypair(payer, keypair)
        chain = ["-u", localnet.url, "-k", str(keypair)]
        print(f"publishing and sealing {megabytes:.1f} MB ...", flush=True)
        model = cli("publish", str(path), *chain)["model"]
        cli("seal", model, str(path), *chain)

        async def cli_verify() -> float:
            rpc = RpcClient(HttpTransport(localnet.url))
            try:
                started = time.perf_counter()
                report = await verify(
                    rpc, Pubkey.from_string(LOCALNET_PROGRAM_ID), Pubkey.from_string(model),
                    artifact,
                )  # fmt: skip
                assert report.ok, report.differences
                return time.perf_counter() - started
            finally:
                await rpc.aclose()

        web = start_web_server(localnet.url)
        try:
            from playwright.sync_api import sync_playwright

            for number in range(1, args.runs + 1):
                print(f"run {number} of {args.runs} ...", flush=True)
                cli_seconds = asyncio.run(cli_verify())
                run = cli(
                    "run", str(path), "--prompt", PROMPT, "--steps", str(steps), "--seed", "5"
                )
                # Playwright's sync API runs an event loop of its own: the CLI's go first.
                with sync_playwright() as playwright:
                    page_seconds, page_rate = page_run(
                        playwright, folder / f"profile-{number}", web.url, localnet.url, model,
                        steps, run["generated_ids"],
                    )  # fmt: skip
                results.append(
                    {
                        "page_verify_seconds": page_seconds,
                        "cli_verify_seconds": cli_seconds,
                        "page_tokens_per_s": page_rate,
                        "cli_tokens_per_s": run["tokens_per_second"],
                    }
                )
        finally:
            web.stop()
    finally:
        localnet.stop()
    summaries = [summarize(result, megabytes, steps) for result in results]
    for summary in summaries:
        width = max(len(k) for k in summary)
        for key, value in summary.items():
            print(f"{key:<{width}}  {value}")
    print(json.dumps(summaries[0] if args.runs == 1 else summaries))
    if args.record:
        record_runs(summaries)


def page_run(
    playwright: "Playwright",
    profile: Path,
    web_url: str,
    localnet_url: str,
    model: str,
    steps: int,
    expected_ids: list[int],
) -> tuple[float, float]:
    """The page's verify seconds and tokens a second, in a fresh headless Chromium profile."""
    context = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS
    )
    try:
        page = context.new_page()
        page.goto(f"{web_url}?{urlencode({'url': localnet_url, 'model': model})}")
        page.wait_for_function(
            "() => document.getElementById('verdict').dataset.seconds", timeout=TIMEOUT_MS
        )
        verdict = page.text_content("#verdict") or ""
        assert verdict.startswith("verified"), verdict
        seconds = float(page.get_attribute("#verdict", "data-seconds") or "nan")
        page.fill("#prompt", PROMPT)
        page.fill("#steps", str(steps))
        page.fill("#seed", "5")
        page.click("#generate")
        page.wait_for_selector("#generated[data-done='true']", timeout=TIMEOUT_MS)
        ids = json.loads(page.get_attribute("#generated", "data-token-ids") or "[]")
        assert ids == expected_ids, "the page's ids differ from curta-chain run's"
        rate = float(page.get_attribute("#rate", "data-tokens-per-second") or "nan")
    finally:
        context.close()
    return seconds, rate


def summarize(result: dict[str, float], megabytes: float, steps: int) -> dict[str, float]:
    """One run's figures, as printed and recorded."""
    page_seconds, cli_seconds = result["page_verify_seconds"], result["cli_verify_seconds"]
    page_rate, cli_rate = result["page_tokens_per_s"], result["cli_tokens_per_s"]
    return {
        "artifact_mb": round(megabytes, 2),
        "page_verify_seconds": round(page_seconds, 3),
        "page_verify_mb_per_s": round(megabytes / page_seconds, 2),
        "cli_verify_seconds": round(cli_seconds, 3),
        "cli_verify_mb_per_s": round(megabytes / cli_seconds, 2),
        "verify_ratio": round(cli_seconds / page_seconds, 2),
        "page_tokens_per_s": round(page_rate, 2),
        "cli_tokens_per_s": round(cli_rate, 2),
        "tokens_per_s_ratio": round(page_rate / cli_rate, 2),
        "steps": steps,
    }


def record_runs(summaries: list[dict[str, float]]) -> None:
    """Append the page against the CLI to the page of numbers: each run's figures in turn,
    and the median of the runs' ratios (the target is judged on it)."""
    from numbers_page import record

    def each(key: str) -> str:
        return ", ".join(f"{summary[key]:.2f}" for summary in summaries)

    def ratio(key: str) -> tuple[float, str]:
        middle = statistics.median(summary[key] for summary in summaries)
        runs = f" ({each(key)})" if len(summaries) > 1 else ""
        return middle, f"{middle:.2f}{runs}"

    generating, generating_cell = ratio("tokens_per_s_ratio")
    met = "met" if generating >= GENERATE_TARGET else "not met"
    first = summaries[0]
    runs = "one run" if len(summaries) == 1 else f"{len(summaries)} runs in turn"
    record(
        "browser",
        "In the browser",
        shlex.join([".venv/bin/python", "scripts/bench_browser.py", *sys.argv[1:]]),
        ["measure", "the page", "the CLI", "the page ÷ the CLI"],
        [
            [
                f"reading and verifying the {first['artifact_mb']:.1f} MB stories15M-shaped "
                "model (MB/s)",
                each("page_verify_mb_per_s"),
                f"{each('cli_verify_mb_per_s')} (`curta-chain verify`)",
                ratio("verify_ratio")[1],
            ],
            [
                f"generating {first['steps']:g} tokens (tokens/s)",
                each("page_tokens_per_s"),
                f"{each('cli_tokens_per_s')} (`curta-chain run`)",
                f"**{generating_cell}** (target ≥ {GENERATE_TARGET:g}, {met})",
            ],
        ],
        f"Headless {chromium_version()}, the model read from the localnet through "
        f"`curta-chain web`'s relay, the CLI's figures in the same process; {runs} over one "
        "published model, the last column the median of the runs' ratios (each run's in "
        "brackets). Target: the page generating at least half the CLI's tokens a second.",
    )


def chromium_version() -> str:
    """The browser the page ran in ("Chromium 156.0...."), as it names itself."""
    answer = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, check=True)
    return " ".join(answer.stdout.split()[:2])


if __name__ == "__main__":
    main()

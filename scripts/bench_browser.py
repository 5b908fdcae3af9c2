"""The page against the CLI, in the same run: verify MB/s and tokens/s in headless Chromium.

Publishes and seals a stories15M-shaped artifact (synthetic weights, 8 sections, 15.2 MB)
on a fresh embedded localnet, then measures:

  page_verify_mb_per_s   the page reading every weight account (1 MiB dataSlice reads,
                         through `curta-chain web`'s relay) and hashing it with WebCrypto
  cli_verify_mb_per_s    curta_chain.chain.verify (what `curta-chain verify` runs) on the
                         same model, in this process
  page_tokens_per_s      the page's generator (TypeScript integer forward pass)
  cli_tokens_per_s       `curta-chain run` on the artifact, same prompt, seed and steps

Prints a table, then as its last line one JSON object.

    .venv/bin/python scripts/bench_browser.py [--steps 40]
"""

import argparse
import asyncio
import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from reference_client import Client
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

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
PROMPT = "Once upon a time"
TIMEOUT_MS = 600_000


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
    steps = parser.parse_args().steps
    folder = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    os.environ["HOME"] = str(folder)  # never the real Solana CLI config
    artifact = synthetic_artifact(STORIES15M, seed=15)
    path = folder / "stories15M.curta"
    path.write_bytes(artifact.data)
    megabytes = len(artifact.data) / 1e6
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

        cli_seconds = asyncio.run(cli_verify())
        run = cli("run", str(path), "--prompt", PROMPT, "--steps", str(steps), "--seed", "5")
        cli_rate = run["tokens_per_second"]
        web = start_web_server(localnet.url)
        try:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as playwright:
                context = playwright.chromium.launch_persistent_context(
                    str(folder / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
                )
                page = context.new_page()
                page.goto(f"{web.url}?{urlencode({'url': localnet.url, 'model': model})}")
                page.wait_for_function(
                    "() => document.getElementById('verdict').dataset.seconds", timeout=TIMEOUT_MS
                )
                assert page.text_content("#verdict").startswith("verified"), page.text_content(
                    "#verdict"
                )
                page_seconds = float(page.get_attribute("#verdict", "data-seconds"))
                page.fill("#prompt", PROMPT)
                page.fill("#steps", str(steps))
                page.fill("#seed", "5")
                page.click("#generate")
                page.wait_for_selector("#generated[data-done='true']", timeout=TIMEOUT_MS)
                ids = json.loads(page.get_attribute("#generated", "data-token-ids"))
                assert ids == run["generated_ids"], "the page's ids differ from curta-chain run's"
                page_rate = float(page.get_attribute("#rate", "data-tokens-per-second"))
                context.close()
        finally:
            web.stop()
    finally:
        localnet.stop()
    result = {
        "artifact_mb": round(megabytes, 2),
        "page_verify_seconds": round(page_seconds, 3),
        "page_verify_mb_per_s": round(megabytes / page_seconds, 2),
        "cli_verify_seconds": round(cli_seconds, 3),
        "cli_verify_mb_per_s": round(megabytes / cli_seconds, 2),
        "page_tokens_per_s": round(page_rate, 2),
        "cli_tokens_per_s": round(cli_rate, 2),
        "tokens_per_s_ratio": round(page_rate / cli_rate, 2),
        "steps": steps,
    }
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()

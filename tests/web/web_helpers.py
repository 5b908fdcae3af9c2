"""Helpers of the web tests: the CLI in this process, node scripts, the shared world."""

import contextlib
import io
import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference_client import Client
from solders.keypair import Keypair

from curta_chain.artifact import Artifact
from curta_chain.artifact.layout import ModelConfig
from curta_chain.cli import main
from curta_chain.constants import LAMPORTS_PER_SOL
from curta_chain.localnet import LocalnetHandle

REPO = Path(__file__).resolve().parents[2]
SDK = REPO / "sdk" / "js"
TINY = ModelConfig(
    dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)
"""Small enough to publish in a few dozen writes; `curta-chain run` runs it in milliseconds."""
NODE_TIMEOUT = 120.0


def cli(*args: str) -> tuple[int, str]:
    """Run ``curta-chain ARGS`` in this process; return its exit code and stdout.

    In a thread of its own: Playwright's sync API keeps an event loop running in the test's
    thread, where the CLI's ``asyncio.run`` would refuse to start.
    """
    out, err = io.StringIO(), io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return main(list(args))

    with ThreadPoolExecutor(1) as pool:
        code = pool.submit(run).result()
    return code, out.getvalue() + err.getvalue()


def cli_json(*args: str) -> Any:
    """``curta-chain ARGS --output json``, parsed (any exit code)."""
    _, out = cli(*args, "--output", "json")
    return json.loads(out)


@dataclass
class World:
    localnet: LocalnetHandle
    authority: Keypair
    keypair_path: Path
    artifact: Artifact
    artifact_path: Path
    sealed: str
    failed: str
    verify_json: dict[str, Any]
    folder: Path

    @property
    def url(self) -> str:
        return self.localnet.url

    def chain(self, *args: str) -> tuple[int, str]:
        """A chain command against this localnet, signed by the authority."""
        return cli(*args, "-u", self.url, "-k", str(self.keypair_path))


def node_json(script: Path, *args: str) -> Any:
    """Run a node script; return the JSON it prints last."""
    done = subprocess.run(
        ["node", str(script), *args], capture_output=True, text=True, timeout=NODE_TIMEOUT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def funded(url: str, sol: int) -> Keypair:
    """A new keypair holding ``sol`` SOL from the faucet, the airdrop confirmed."""
    keypair = Keypair()
    client = Client(url)
    signature = client.request_airdrop(keypair.pubkey(), sol * LAMPORTS_PER_SOL).value
    client.confirm_transaction(signature, "confirmed", sleep_seconds=0.05)
    return keypair

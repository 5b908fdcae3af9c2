"""What the validator tier's tests share: nodes, JSON-RPC reads, funding, the CLI as a process."""

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from solders.keypair import Keypair

SPENDS = {"deploy", "publish", "seal", "close", "close-run", "run"}
"""Commands that take --yes."""
READS = {"verify", "status", "models", "runs"}
"""Commands that take no -k."""
CONFIRM_TIMEOUT = 120.0
"""Seconds an airdrop may take to be confirmed."""


@dataclass(frozen=True)
class Node:
    """A JSON-RPC node of the tier: its name (for messages) and URL."""

    name: str
    url: str


def rpc(url: str, method: str, *params: Any) -> Any:
    """One JSON-RPC call; its result (an error fails the test)."""
    answer = httpx.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}, timeout=30
    ).json()
    assert "error" not in answer, f"{method}: {answer['error']}"
    return answer["result"]


def balance(url: str, address: object) -> int:
    """Lamports ``address`` holds, at confirmed (what the CLI waits for)."""
    return int(rpc(url, "getBalance", str(address), {"commitment": "confirmed"})["value"])


def airdrop(url: str, address: object, lamports: int) -> None:
    """Have the node's faucet send ``lamports`` to ``address``; return once confirmed."""
    before = balance(url, address)
    signature = rpc(url, "requestAirdrop", str(address), lamports)
    deadline = time.monotonic() + CONFIRM_TIMEOUT
    while True:
        status = rpc(url, "getSignatureStatuses", [signature])["value"][0]
        if status and status["confirmationStatus"] in ("confirmed", "finalized"):
            assert status["err"] is None, status
            break
        assert time.monotonic() < deadline, f"the airdrop to {address} was not confirmed"
        time.sleep(0.1)
    assert balance(url, address) == before + lamports


@dataclass(frozen=True)
class Payer:
    """One keypair (the same on every node) and its file."""

    keypair: Keypair
    path: Path

    def fund(self, node: Node, sol: int) -> None:
        """Airdrop ``sol`` SOL to it on ``node``."""
        airdrop(node.url, self.keypair.pubkey(), sol * 1_000_000_000)

    def balance(self, node: Node) -> int:
        """Its lamports on ``node``."""
        return balance(node.url, self.keypair.pubkey())


@dataclass(frozen=True)
class Done:
    """A finished ``curta-chain`` process: its exit code, JSON answer and stderr."""

    code: int
    answer: dict[str, Any]
    stderr: str
    seconds: float


def cli_args(command: str, *args: str, node: Node, payer: Payer | None = None) -> list[str]:
    """The argv of ``curta-chain command args`` against ``node``, paid by ``payer``."""
    argv = [sys.executable, "-m", "curta_chain", command, *args, "-u", node.url]
    if payer is not None and command not in READS:
        argv += ["-k", str(payer.path)]
    if command in SPENDS and "--dry-run" not in args:
        argv.append("--yes")
    return [*argv, "--output", "json-compact"]


def cli(command: str, *args: str, node: Node, payer: Payer | None = None) -> Done:
    """Run ``curta-chain`` as its own process, no terminal; fail the test if it fails."""
    start = time.monotonic()
    done = subprocess.run(
        cli_args(command, *args, node=node, payer=payer),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    seconds = time.monotonic() - start
    assert done.returncode == 0, f"{command} on {node.name}: {done.stderr}"
    lines = done.stdout.strip().splitlines()
    return Done(done.returncode, json.loads(lines[-1]), done.stderr, seconds)

"""Off the embedded localnet, real money is spent only once a person says yes on a terminal.

The cluster here is the localnet behind a proxy that reports devnet's genesis hash: to the
CLI it is devnet (no built-in program id, so ``--program-id`` names the localnet's
program, a shipped build). The CLI runs as its own process: on a pseudo-terminal (pty) for
the prompt, with no terminal on stdin for the refusal, and with ``--yes``.
"""

import os
import pty
import select
import time
from collections.abc import Iterator
from pathlib import Path

import processes
import pytest
from fault_proxy import FaultProxy, balance, cli_command, record, run_cli, run_plain
from solders.keypair import Keypair

from curta_chain.artifact import Artifact
from curta_chain.cli import keypairs
from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID

DEVNET_GENESIS = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"
FUNDS = 20 * LAMPORTS_PER_SOL


@pytest.fixture
def devnet(localnet) -> Iterator[FaultProxy]:
    proxy = FaultProxy(localnet.url, edits={"getGenesisHash": lambda _: DEVNET_GENESIS}).start()
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def payer(localnet, fund) -> Keypair:
    return fund(localnet.url, FUNDS / LAMPORTS_PER_SOL)


@pytest.fixture
def via(devnet, payer, tmp_path) -> tuple[str, ...]:
    key = tmp_path / "id.json"
    keypairs.write_keypair(payer, key)
    return ("-u", devnet.url, "-k", str(key), "--program-id", LOCALNET_PROGRAM_ID)


@pytest.fixture
def art(tmp_path, stories260k: Artifact) -> Path:
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    return path


def on_terminal(argv: tuple[str, ...], answer: bytes, timeout: float = 120) -> tuple[int, str]:
    """Run the CLI with a pty as its terminal; type ``answer`` at the prompt."""
    master, slave = pty.openpty()
    process = processes.start(cli_command(*argv), stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    seen, answered = b"", False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if not answered and b"[y/N] " in seen:
                os.write(master, answer)
                answered = True
        return processes.wait(process, 30), seen.decode(errors="replace")
    finally:
        os.close(master)
        if process.poll() is None:
            processes.kill(process)


def test_the_terminal_is_asked_and_only_yes_spends(localnet, devnet, payer, via, art):
    code, dry, err = run_cli("publish", str(art), "--dry-run", *via)
    assert code == 0, err
    plan = dry["plan"]
    sol = f"{(plan['rent_lamports'] + plan['fee_lamports']) / LAMPORTS_PER_SOL:.9f} SOL"
    prompt = f"Spend {sol} on publishing {plan['model']} on {devnet.url}? [y/N] "

    code, seen = on_terminal(("publish", str(art), *via), b"n\n")
    assert code == 1 and prompt in seen
    assert seen.rstrip().endswith("error: not confirmed (n): nothing was sent")
    assert f"cost {sol}" in seen  # the plan and its cost come first
    assert balance(localnet.url, payer.pubkey()) == FUNDS

    code, seen = on_terminal(("publish", str(art), *via), b"\n")  # Enter: the default is no
    assert code == 1 and "not confirmed (no answer)" in seen
    assert balance(localnet.url, payer.pubkey()) == FUNDS

    code, seen = on_terminal(("publish", str(art), *via), b"y\n")
    assert code == 0 and prompt in seen, seen
    assert f"Model: {plan['model']}" in seen.splitlines()
    assert (
        balance(localnet.url, payer.pubkey())
        == FUNDS - plan["rent_lamports"] - plan["fee_lamports"]
    )

    code, seen = on_terminal(("seal", plan["model"], *via), b"yes\n")
    assert (
        code == 0
        and f"on sealing {plan['model']} (final: it can never be closed) on {devnet.url}? [y/N] "
        in seen
    ), seen
    record("spend confirmation: a terminal answers no, then yes", lost_lamports=0)


def test_no_terminal_and_no_yes_stop_before_anything_is_sent(localnet, payer, via, art, tmp_path):
    def refused(argv: tuple[str, ...], what: str) -> None:
        done = run_plain(*argv)
        assert done.returncode == 1, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert done.stderr.startswith(f"error: {via[1]} is not a localnet and there is no terminal")
        assert f"SOL on {what}" in done.stderr
        assert done.stderr.endswith(": pass --yes to spend it; nothing was sent\n")

    refused(("publish", str(art), *via), "publishing")
    refused(("deploy", *via[:4], "-C", str(tmp_path / "c.yml")), "deploying")
    assert balance(localnet.url, payer.pubkey()) == FUNDS
    code, published, err = run_cli("publish", str(art), *via, "--yes")
    assert code == 0, err
    after = balance(localnet.url, payer.pubkey())
    refused(("seal", published["model"], *via), f"sealing {published['model']}")
    refused(("close", published["model"], *via), f"closing {published['model']}")
    assert balance(localnet.url, payer.pubkey()) == after
    record("spend confirmation: no terminal and no --yes", lost_lamports=0)


def test_yes_spends_without_asking(localnet, payer, via, art):
    code, published, err = run_cli("publish", str(art), *via, "--yes")
    assert code == 0, err
    code, sealed, err = run_cli("seal", published["model"], *via, "--yes")
    assert code == 0 and sealed["state"] == "sealed", err
    code, report, err = run_cli("verify", published["model"], str(art), *via[:2], *via[4:])
    assert code == 0 and report["ok"], err

"""kill -9 of ``publish`` and ``seal`` on the real validator; the rerun finishes, nothing is lost.

As ``tests/reliability/test_crash_resume.py`` does on the embedded localnet: the CLI runs as
its own process through a ``FaultProxy`` (no faults) that forwards one request at a time
and kills the client with SIGKILL once the chosen transaction has been forwarded, then
drops whatever the client had queued. The validator, unlike the embedded localnet, answers
``sendTransaction`` before it runs the transaction, so writes the killed client had on
their way may land after the rerun planned without them: those pieces land twice, and a
creation or seal step the rerun sends again is refused on chain. The books allow exactly
that and no more: every failure is such a redundant transaction, the model and each
weight account were created once, at most one window (``sender.WINDOW``) of duplicates
and refusals, the accounts hold the plan's rent and the payer spent the rent plus the fee
of every signature that landed.
"""

import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from fault_proxy import (
    FaultProxy,
    Request,
    account_states,
    balance,
    fees_paid,
    landed,
    run_cli,
    start_cli,
)
from validator_helpers import Node, Payer

from curta_chain.artifact import Artifact
from curta_chain.chain.sender import WINDOW
from curta_chain.constants import LOCALNET_PROGRAM_ID

PROGRAM = ("--program-id", LOCALNET_PROGRAM_ID)
REDUNDANT = ("create_model", "bind_weight_account", "begin_sealing", "seal_step")
"""What a rerun may send again and see refused, because the killed run's copy landed late."""


@dataclass(frozen=True)
class KillPoint:
    name: str
    command: str
    when: Callable[[FaultProxy, Request], bool]


POINTS = [
    KillPoint("mid-upload", "publish", lambda proxy, _: proxy.count("write_weights") >= 176),
    KillPoint("mid-seal", "seal", lambda proxy, _: proxy.count("seal_step") >= 3),
]


@pytest.mark.parametrize("point", POINTS, ids=[point.name for point in POINTS])
def test_kill_9_then_rerun_completes_and_spends_only_what_landed(
    validator: Node, payer: Payer, tmp_path: Path, stories260k: Artifact, point: KillPoint
):
    payer.fund(validator, 20)
    art = tmp_path / "stories260K.curta"
    art.write_bytes(stories260k.data)
    proxy = FaultProxy(validator.url, serialize=True).start()
    try:
        via = ("-u", proxy.url, "-k", str(payer.path), *PROGRAM)
        code, dry, err = run_cli("publish", str(art), "--dry-run", *via)
        assert code == 0 and dry is not None, err
        plan = dry["plan"]
        before = balance(validator.url, payer.keypair.pubkey())
        victim: list[subprocess.Popen[str]] = []

        def kill() -> None:
            victim[0].kill()
            victim[0].wait()
            proxy.down = True  # what the client had queued never reaches the node

        trigger = proxy.trigger(point.when, kill, "after")
        if point.command == "seal":
            code, _, err = run_cli("publish", str(art), "--yes", *via)
            assert code == 0, err
            victim.append(start_cli("seal", plan["model"], "--yes", *via))
        else:
            victim.append(start_cli("publish", str(art), "--yes", *via))
        victim[0].wait(timeout=300)
        assert victim[0].returncode == -signal.SIGKILL, victim[0].stderr and victim[0].stderr.read()
        assert trigger.settled.wait(60)
        proxy.down = False
        if point.command == "publish":
            code, published, err = run_cli("publish", str(art), "--yes", *via)
            assert code == 0 and published is not None, err
            assert published["model"] == plan["model"]
        code, sealed, err = run_cli("seal", plan["model"], str(art), "--yes", *via)
        assert code == 0 and sealed is not None, err
        assert sealed["state"] == "sealed"
    finally:
        proxy.stop()
    code, report, err = run_cli("verify", plan["model"], str(art), "-u", validator.url, *PROGRAM)
    assert code == 0 and report is not None and report["ok"], err

    outcomes = landed(validator.url, proxy.sent)
    failed = [tx for tx, err in outcomes.values() if err is not None]
    assert all(tx.kind in REDUNDANT for tx in failed), failed
    kinds = [tx.kind for tx, err in outcomes.values() if err is None]
    assert kinds.count("create_model") == 1
    assert kinds.count("bind_weight_account") == len(plan["section_lengths"])
    held = account_states(validator.url, [plan["model"], *plan["weight_accounts"]])
    assert sum(lamports for lamports, _, _ in held.values()) == plan["rent_lamports"]
    spent = before - balance(validator.url, payer.keypair.pubkey())
    assert spent == plan["rent_lamports"] + fees_paid(validator.url, proxy.sent)
    duplicates = kinds.count("write_weights") - plan["write_transactions"]
    assert duplicates >= 0 and duplicates + len(failed) <= WINDOW
    distinct = {tx.signature: tx for tx in proxy.sent if tx.kind == "write_weights"}
    resent = sum(tx.payload_bytes for tx in distinct.values()) - plan["write_bytes"]
    assert 0 <= resent <= WINDOW * plan["payload_per_write"]

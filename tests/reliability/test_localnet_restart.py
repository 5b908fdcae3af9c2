"""kill -9 of the localnet (with --ledger) mid-publish and mid-seal; restarted, the work completes.

The localnet runs as the CLI subprocess on a ledger folder, and the client reaches it
through a ``FaultProxy`` that forwards one request at a time, so the kill lands at a
chosen request: while the node applies a batch of writes (some of it may be applied and
logged, none acknowledged), or just after it acknowledged one (which must survive). Either
the client gives up with its resumable error and is rerun once the node is back, or the
node comes back within ``--rpc-timeout`` and the same run carries on. In every case the
model ends sealed and verified, every landed transaction succeeded, and the payer spent
exactly what a clean run costs.

Each crash runs twice: on the default localnet, and once on a busy one (``--blocks --drop-
rate 0.1 --seed N --slot-ms 200``: a block a slot, 10% of accepted transactions lost),
where what the node had accepted but not yet put in a block dies with it and is sent again.
"""

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import processes
import pytest
from fault_proxy import (
    LAMPORTS_PER_SIGNATURE,
    FaultProxy,
    Request,
    balance,
    fees_paid,
    landed,
    record,
    run_cli,
    start_cli,
)

from curta_chain.artifact import Artifact
from curta_chain.chain.sender import WINDOW
from curta_chain.cli.keypairs import write_keypair
from curta_chain.constants import HASH_CHUNK_SIZE

KILL_INTO_BATCH = 0.005
"""Seconds after a write batch is forwarded that the node is killed: while it applies it."""
DOWN_FOR = 1.0
"""Seconds the node stays down when the client is meant to ride through the restart."""
SEED = int(os.environ.get("CURTA_RELIABILITY_SEED", "6"))
CLUSTERS = {
    "localnet": (),
    "busy": ("--blocks", "--drop-rate", "0.1", "--seed", str(SEED), "--slot-ms", "200"),
}


@dataclass(frozen=True)
class Crash:
    """Which command runs, when the node dies, and whether that run must ride through."""

    name: str
    command: str
    stage: str
    when: Callable[[FaultProxy, Request], bool]
    rides_through: bool


def _batch_of(kind: str, after: int) -> Callable[[FaultProxy, Request], bool]:
    return lambda proxy, request: (
        any(tx.kind == kind for tx in request.transactions) and proxy.count(kind) >= after
    )


CRASHES = [
    # Killed as the first write batch arrives: v1 writes (stories260K's 93) go in one batch.
    Crash(
        "publish-gives-up-then-reruns", "publish", "before", _batch_of("write_weights", 0), False
    ),
    Crash("publish-rides-through", "publish", "after", _batch_of("write_weights", 1), True),
    Crash("seal-rides-through", "seal", "after", _batch_of("seal_step", 3), True),
]


@pytest.mark.parametrize("crash", CRASHES, ids=[c.name for c in CRASHES])
@pytest.mark.parametrize("cluster", list(CLUSTERS))
def test_localnet_killed_mid_run_then_restarted_the_model_completes_and_verifies(
    localnet_process, fund, tmp_path, stories260k: Artifact, crash, cluster
):
    node = localnet_process(tmp_path / "ledger", extra=CLUSTERS[cluster])
    art = tmp_path / "model.curta"
    art.write_bytes(stories260k.data)
    payer = fund(node.url, 20)
    keypair = tmp_path / "id.json"
    write_keypair(payer, keypair)
    before = balance(node.url, payer.pubkey())
    proxy = FaultProxy(node.url, serialize=True).start()
    try:
        via = ("-u", proxy.url, "-k", str(keypair))
        code, dry, err = run_cli("publish", str(art), "--dry-run", *via)
        assert code == 0, err
        plan = dry["plan"]
        if crash.command == "seal":
            code, _, err = run_cli("publish", str(art), *via)
            assert code == 0, err

        if crash.rides_through:
            # Killed after it acknowledged the request; back before the client gives up.
            def action() -> None:
                node.kill()
                threading.Thread(target=lambda: (time.sleep(DOWN_FOR), node.start())).start()
        else:

            def action() -> None:
                threading.Timer(KILL_INTO_BATCH, node.kill).start()

        trigger = proxy.trigger(crash.when, action, crash.stage)
        target = str(art) if crash.command == "publish" else plan["model"]
        timeout = ("--rpc-timeout", "30" if crash.rides_through else "2")
        client = start_cli(crash.command, target, *via, *timeout)
        _, err = processes.finish(client, 120)
        assert trigger.fired, f"the node was never killed: {err}"
        if crash.rides_through:
            assert client.returncode == 0, err
        else:
            assert client.returncode == 1
            assert f"rerun `curta-chain publish {art} " in err
            assert len(err.strip().splitlines()) == 1
            node.start()
            code, _, err = run_cli("publish", str(art), *via)
            assert code == 0, err
        if crash.command == "publish":
            code, sealed, err = run_cli("seal", plan["model"], *via)
            assert code == 0 and sealed["state"] == "sealed", err
        code, report, err = run_cli("verify", plan["model"], str(art), "-u", proxy.url)
        assert code == 0 and report["ok"], err
    finally:
        proxy.stop()

    assert all(error is None for _, error in landed(node.url, proxy.sent).values())
    spent = before - balance(node.url, payer.pubkey())
    assert spent == plan["rent_lamports"] + fees_paid(node.url, proxy.sent)
    chunks = sum(-(-length // HASH_CHUNK_SIZE) for length in plan["section_lengths"])
    clean = plan["rent_lamports"] + plan["fee_lamports"] + LAMPORTS_PER_SIGNATURE * (1 + chunks)
    assert spent == clean
    # A batch the node took but died before logging is sent again, and charged only once.
    resent = proxy.write_bytes() - plan["write_bytes"]
    bound = WINDOW * plan["payload_per_write"]
    assert 0 <= resent <= bound
    record(
        f"localnet kill -9 and restart: {crash.name}" + (" (busy)" if cluster == "busy" else ""),
        replayed=[line.split(": ")[-1].strip() for line in node.output if "replayed" in line],
        resent_bytes=resent,
        bound_bytes=bound,
        lost_lamports=spent - clean,
    )


def test_a_restarted_localnet_keeps_what_it_acknowledged_before_the_kill(
    localnet_process, fund, tmp_path, stories260k: Artifact
):
    # The plain case without a proxy: publish, kill -9, restart, and the rerun sends nothing.
    node = localnet_process(tmp_path / "ledger")
    art = tmp_path / "model.curta"
    art.write_bytes(stories260k.data)
    keypair = tmp_path / "id.json"
    write_keypair(fund(node.url, 20), keypair)
    via = ("-u", node.url, "-k", str(keypair))
    code, published, err = run_cli("publish", str(art), *via)
    assert code == 0, err
    node.restart()
    code, again, err = run_cli("publish", str(art), *via)
    assert code == 0 and again["model"] == published["model"] and again["transactions"] == 0, err
    code, sealed, err = run_cli("seal", published["model"], *via)
    assert code == 0 and sealed["state"] == "sealed", err
    code, report, err = run_cli("verify", published["model"], str(art), "-u", node.url)
    assert code == 0 and report["ok"], err

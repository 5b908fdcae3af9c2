"""kill -9 of `publish` and `seal` at chosen points; the rerun finishes and nothing is lost.

The CLI runs as its own process and talks to the localnet through a ``FaultProxy`` that
injects no faults here: it forwards one request at a time, counts the transactions going by
and, at the chosen point, kills the client with SIGKILL after the node applied a request
and before the client saw the answer; requests the client had queued are then dropped.
Then the same command is rerun to completion, sealed and verified, and the books are
checked:

- the write bytes sent again across both runs (every write delivered minus the plan's
  bytes) are at most one in-flight window of writes (``sender.WINDOW`` x payload); here
  they are zero, as the localnet applies what it accepts before it answers;
- every transaction that landed succeeded (a second create of an account would fail), and
  the model and each weight account were created exactly once;
- the payer spent exactly what a clean publish and seal cost: the plan's rent and fees
  (what ``publish --dry-run`` promised) plus the seal's fees; the model and weight
  accounts hold exactly the plan's rent.

The last case is a real cluster's worst one: writes still on the wire when the client
died land after the rerun planned without them, so those pieces are written twice (the
same bytes). Their fees are the only loss, and the window bounds them.

Each kill point runs twice: on the default localnet, and once on a busy one (blocks of 200
ms slots, the leader's order, 10% of accepted transactions lost). There a resend is the
same bytes and is not counted as sent again (the bytes sent again are those of distinct
transactions), but a write the node accepted and lost when the client died is signed again
by the rerun; and one still queued at the leader when the rerun planned lands twice, as on
the wire. A creation, a seal's beginning or a seal step the killed client had queued lands
after the rerun planned without it too: the rerun's own then lands refused
(AccountAlreadyInUse, ModelNotUploading, ModelNotSealing), and the rerun reads the chain
again and goes on. All stay within the window, and the only loss is the duplicates' and the
refusals' fees.
"""

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fault_proxy import (
    LAMPORTS_PER_SIGNATURE,
    FaultProxy,
    Request,
    account_states,
    balance,
    fees_paid,
    landed,
    record,
    run_cli,
    start_cli,
)
from solders.keypair import Keypair

from curta_chain.artifact import Artifact
from curta_chain.chain.sender import WINDOW
from curta_chain.cli.keypairs import write_keypair
from curta_chain.constants import HASH_CHUNK_SIZE, SLOT_SECONDS
from curta_chain.localnet import BusyOptions, start_in_thread

SEED = int(os.environ.get("CURTA_RELIABILITY_SEED", "6"))
CLUSTERS = {
    "localnet": BusyOptions(),
    "busy": BusyOptions(blocks=True, drop_rate=0.1, seed=SEED),
}
BUSY_SLOT_SECONDS = 0.2
"""The busy localnet's slots: half a cluster's, to keep the suite's time short."""


@dataclass(frozen=True)
class Node:
    """A localnet of this process for one test, and whether it is the busy one."""

    url: str
    busy: bool


@pytest.fixture(params=list(CLUSTERS))
def node(request) -> Iterator[Node]:
    busy = request.param == "busy"
    handle = start_in_thread(
        busy=CLUSTERS[request.param], slot_duration=BUSY_SLOT_SECONDS if busy else SLOT_SECONDS
    )
    try:
        yield Node(handle.url, busy)
    finally:
        handle.stop()


@dataclass(frozen=True)
class KillPoint:
    """Which command to kill, and when (``when(proxy, request, writes)``: ``writes`` is the
    plan's write count, v1 or legacy as the command chose).

    With ``lands_late`` the kill comes as a write batch arrives, and that batch reaches the
    node only once the rerun's first writes did, so the rerun planned without it: writes still
    on the wire when the client died, as on a real cluster. They land twice; the extra is
    what the window bounds.
    """

    name: str
    command: str
    when: Callable[[FaultProxy, Request, int], bool]
    lands_late: bool = False


def _forwarded(kind: str, count: int) -> Callable[[FaultProxy, Request, int], bool]:
    return lambda proxy, _request, _writes: proxy.count(kind) >= count


def _writes_forwarded(share: float) -> Callable[[FaultProxy, Request, int], bool]:
    """Once ``share`` of the plan's writes went by (at least one)."""
    return lambda proxy, _request, writes: (
        proxy.count("write_weights") >= max(1, int(share * writes))
    )


def _write_batch_after(share: float) -> Callable[[FaultProxy, Request, int], bool]:
    return lambda proxy, request, writes: (
        any(tx.kind == "write_weights" for tx in request.transactions)
        and proxy.count("write_weights") >= share * writes
    )


KILL_POINTS = [
    KillPoint("creating-model", "publish", _forwarded("create_model", 1)),
    KillPoint("binding-accounts", "publish", _forwarded("bind_weight_account", 1)),
    KillPoint("early-upload", "publish", _writes_forwarded(0)),
    KillPoint("mid-upload", "publish", _writes_forwarded(0.5)),
    KillPoint("late-upload", "publish", _writes_forwarded(1)),
    KillPoint("begin-sealing", "seal", _forwarded("begin_sealing", 1)),
    KillPoint("mid-seal", "seal", _forwarded("seal_step", 3)),
]
LATE_DELIVERY_TIMEOUT = 120.0
"""Seconds a late batch waits at most for the rerun's first writes."""


@dataclass(frozen=True)
class CrashOutcome:
    """The books of one kill-and-rerun scenario."""

    writes: int
    """The plan's write transactions."""
    writes_at_kill: int
    resent_bytes: int
    bound_bytes: int
    duplicate_writes: int
    refused_signatures: int
    """Signatures of the rerun's transactions refused for work an earlier one did."""
    lost_lamports: int


def crash_and_resume(
    url: str,
    tmp_path: Path,
    artifact: Artifact,
    point: KillPoint,
    payer: Keypair,
    cluster: str = "localnet",
    tx_version: str = "auto",
) -> CrashOutcome:
    """Publish and seal ``artifact`` with a kill -9 at ``point``, rerun, and check the books.

    ``cluster`` names the localnet in the record (``busy`` for the busy one); every publish
    runs with ``--tx-version tx_version`` (auto: v1, which the localnet has).
    """
    art = tmp_path / "model.curta"
    art.write_bytes(artifact.data)
    keypair = tmp_path / "id.json"
    write_keypair(payer, keypair)
    # One request at a time makes the kill point exact; a late batch must not hold up the rest.
    proxy = FaultProxy(url, serialize=not point.lands_late).start()
    try:
        return _scenario(url, proxy, art, keypair, payer, point, cluster, tx_version)
    finally:
        proxy.stop()


def _scenario(
    url: str,
    proxy: FaultProxy,
    art: Path,
    keypair: Path,
    payer: Keypair,
    point: KillPoint,
    cluster: str,
    tx_version: str,
) -> CrashOutcome:
    via = ("-u", proxy.url, "-k", str(keypair))
    version = ("--tx-version", tx_version)
    code, dry, err = run_cli("publish", str(art), "--dry-run", *via, *version)
    assert code == 0, err
    plan = dry["plan"]
    before = balance(url, payer.pubkey())
    victim: list[subprocess.Popen[str]] = []
    held: list[Request] = []

    def when(proxy: FaultProxy, request: Request) -> bool:
        if point.when(proxy, request, plan["write_transactions"]):
            held.append(request)
            return True
        return False

    def kill() -> None:
        victim[0].kill()
        victim[0].wait()
        if point.lands_late:
            # This batch is on its way until the rerun, having planned, sends these pieces too.
            pieces = {(tx.account, tx.offset) for tx in held[0].transactions}
            deadline = time.monotonic() + LATE_DELIVERY_TIMEOUT
            while time.monotonic() < deadline and not any(
                (tx.account, tx.offset) in pieces and tx not in held[0].transactions
                for tx in list(proxy.sent)
            ):
                time.sleep(0.05)
        else:
            proxy.down = True  # what the client had queued never reaches the node

    trigger = proxy.trigger(when, kill, "before" if point.lands_late else "after")
    if point.command == "seal":
        code, published, err = run_cli("publish", str(art), *via, *version)
        assert code == 0, err
        victim.append(start_cli("seal", plan["model"], *via))
    else:
        victim.append(start_cli("publish", str(art), *via, *version))
    victim[0].wait(timeout=300)
    assert victim[0].returncode == -signal.SIGKILL, victim[0].stderr.read()
    if not point.lands_late:
        assert trigger.settled.wait(60)  # the action ran whole: the proxy is down by now
    writes_at_kill = proxy.count("write_weights")
    proxy.down = False
    if point.lands_late:
        # The rerun starts at once; sealing waits until the late batch has landed.
        code, _, err = run_cli("publish", str(art), *via, *version)
        assert code == 0, err
        assert trigger.settled.wait(60)

    elif point.command == "publish":
        code, published, err = run_cli("publish", str(art), *via, *version)
        assert code == 0, err
        assert published["model"] == plan["model"]
    code, sealed, err = run_cli("seal", plan["model"], str(art), *via)
    assert code == 0, err
    assert sealed["state"] == "sealed"
    code, report, err = run_cli("verify", plan["model"], str(art), "-u", url)
    assert code == 0 and report["ok"], err

    outcomes = landed(url, proxy.sent)
    failed = [tx for tx, err in outcomes.values() if err is not None]
    if cluster == "localnet":
        assert not failed, "a transaction failed on chain"
    else:
        redundant = ("create_model", "bind_weight_account", "begin_sealing", "seal_step")
        assert all(tx.kind in redundant for tx in failed), failed
    kinds = [tx.kind for tx, err in outcomes.values() if err is None]
    assert kinds.count("create_model") == 1
    assert kinds.count("bind_weight_account") == len(plan["section_lengths"])

    held = account_states(url, [plan["model"], *plan["weight_accounts"]])
    assert sum(lamports for lamports, _, _ in held.values()) == plan["rent_lamports"]
    chunks = sum(-(-length // HASH_CHUNK_SIZE) for length in plan["section_lengths"])
    clean_cost = plan["rent_lamports"] + plan["fee_lamports"]
    clean_cost += LAMPORTS_PER_SIGNATURE * (1 + chunks)  # begin sealing, one step a chunk
    spent = before - balance(url, payer.pubkey())
    assert spent == plan["rent_lamports"] + fees_paid(url, proxy.sent)

    # Only writes can land twice (the same piece signed by both runs); nothing else is paid for.
    duplicates = kinds.count("write_weights") - plan["write_transactions"]
    refused = sum(tx.signatures for tx in failed)
    assert duplicates >= 0 and duplicates + len(failed) <= WINDOW
    assert spent - clean_cost == LAMPORTS_PER_SIGNATURE * (duplicates + refused)
    # Bytes of distinct transactions: a resend of the same one is not a second write.
    distinct = {tx.signature: tx for tx in proxy.sent if tx.kind == "write_weights"}
    resent = sum(tx.payload_bytes for tx in distinct.values()) - plan["write_bytes"]
    bound = WINDOW * plan["payload_per_write"]
    assert 0 <= resent <= bound
    outcome = CrashOutcome(
        plan["write_transactions"],
        writes_at_kill,
        resent,
        bound,
        duplicates,
        refused,
        spent - clean_cost,
    )
    assert plan["transaction_version"] == ("legacy" if tx_version == "legacy" else "v1")
    record(
        f"kill -9 {point.command} at {point.name}"
        + (f" ({cluster})" if cluster != "localnet" else "")
        + (f" ({plan['transaction_version']} writes)"),
        writes=plan["write_transactions"],
        writes_at_kill=writes_at_kill,
        resent_bytes=resent,
        bound_bytes=bound,
        duplicate_writes=duplicates,
        refused_signatures=refused,
        lost_lamports=outcome.lost_lamports,
        rent_lamports=plan["rent_lamports"],
    )
    return outcome


@pytest.mark.parametrize("point", KILL_POINTS, ids=[p.name for p in KILL_POINTS])
def test_kill_9_then_rerun_completes_and_loses_nothing(node, fund, tmp_path, stories260k, point):
    payer = fund(node.url, 20)
    cluster = "busy" if node.busy else "localnet"
    outcome = crash_and_resume(node.url, tmp_path, stories260k, point, payer, cluster)
    if node.busy:
        # crash_and_resume checked the bounds: at most one window of duplicates and refusals.
        lost = outcome.duplicate_writes + outcome.refused_signatures
        assert outcome.lost_lamports == LAMPORTS_PER_SIGNATURE * lost
    else:
        assert outcome.resent_bytes == 0 and outcome.lost_lamports == 0


def test_kill_9_with_writes_still_on_the_wire_resends_at_most_one_window(
    localnet, fund, tmp_path, stories15m
):
    # 4,300 v1 writes (16,400 legacy), so the window (2,048) is a part of the upload. The
    # batch that was on its way when the client died lands after the rerun planned without
    # it: those pieces are written twice (same bytes) and their fees are the only loss.
    point = KillPoint("mid-upload-batch-lands-late", "publish", _write_batch_after(0.5), True)
    outcome = crash_and_resume(localnet.url, tmp_path, stories15m, point, fund(localnet.url, 200))
    assert outcome.writes_at_kill >= outcome.writes // 2
    assert 0 < outcome.duplicate_writes <= WINDOW
    assert outcome.resent_bytes <= outcome.bound_bytes


def test_kill_9_of_a_publish_with_legacy_writes_then_rerun_loses_nothing(
    localnet, fund, tmp_path, stories260k
):
    # The scenarios above write v1 (the localnet's default); legacy writes once, mid-upload.
    point = next(p for p in KILL_POINTS if p.name == "mid-upload")
    payer = fund(localnet.url, 20)
    outcome = crash_and_resume(
        localnet.url, tmp_path, stories260k, point, payer, "localnet", "legacy"
    )
    assert outcome.resent_bytes == 0 and outcome.lost_lamports == 0

import json
import threading

import httpx
import pytest
from chain_helpers import next_slot
from localnet_helpers import (
    CONFIRMED_PREFLIGHT,
    PROCESSED,
    advance_slots,
    b64,
    balance,
    latest_blockhash,
    result,
    send_b64,
    transfer_tx,
)
from solders.pubkey import Pubkey

from curta_chain.cli import main
from curta_chain.cli.keypairs import write_keypair
from curta_chain.errors import LocalnetError
from curta_chain.localnet import Localnet, start_in_thread
from curta_chain.localnet.ledger import Ledger
from curta_chain.user_data import recorded_local_clusters


def fill(url: str, fund, count: int) -> dict[Pubkey, int]:
    """Send ``count`` transfers to new accounts; return what each should hold."""
    payer = fund(url, 50)
    expected = {}
    blockhash = latest_blockhash(url)
    for n in range(count):
        to = Pubkey.new_unique()
        assert "result" in send_b64(url, transfer_tx(payer, to, 1_000_000 + n, blockhash))
        expected[to] = 1_000_000 + n
    expected[payer.pubkey()] = balance(url, payer.pubkey())
    return expected


def assert_holds(url: str, expected: dict[Pubkey, int]) -> None:
    keys = list(expected)
    for start in range(0, len(keys), 100):
        chunk = keys[start : start + 100]
        values = result(url, "getMultipleAccounts", [[str(k) for k in chunk], PROCESSED])["value"]
        for key, value in zip(chunk, values, strict=True):
            assert value is not None and value["lamports"] == expected[key], key


def test_restart_keeps_accounts_statuses_and_genesis(tmp_path, fund, clock):
    handle = start_in_thread(ledger=tmp_path, now=clock)
    payer = fund(handle.url, 50, commitment="processed")
    to = Pubkey.new_unique()
    advance_slots(clock, 3)
    assert "result" in send_b64(
        handle.url, transfer_tx(payer, to, 10**6, latest_blockhash(handle.url))
    )
    landed = result(handle.url, "getSlot", [PROCESSED])
    expected = {to: 10**6, payer.pubkey(): balance(handle.url, payer.pubkey())}
    genesis = result(handle.url, "getGenesisHash")
    handle.stop()

    clock.advance(-60)  # the wall clock says less than the chain had reached
    handle = start_in_thread(ledger=tmp_path, now=clock)
    try:
        assert_holds(handle.url, expected)
        assert result(handle.url, "getGenesisHash") == genesis
        # Slots keep counting from where the chain was, never from before it.
        assert result(handle.url, "getSlot", [PROCESSED]) == landed + 1
    finally:
        handle.stop()


def test_snapshots_bound_the_log_and_restore_everything(tmp_path, fund):
    handle = start_in_thread(ledger=tmp_path, snapshot_bytes=3_000)
    payer = fund(handle.url, 5)
    to = Pubkey.new_unique()
    signature = send_b64(handle.url, transfer_tx(payer, to, 10**6, latest_blockhash(handle.url)))
    expected = fill(handle.url, fund, 30)
    handle.stop()  # waits for a snapshot still being written
    assert list(tmp_path.glob("snapshot-*.bin"))
    assert len(list(tmp_path.glob("log-*.bin"))) <= 2

    handle = start_in_thread(ledger=tmp_path)
    try:
        assert_holds(handle.url, {**expected, to: 10**6})
        statuses = result(handle.url, "getSignatureStatuses", [[signature["result"]]])
        assert statuses["value"][0]["err"] is None
        again = send_b64(handle.url, transfer_tx(payer, to, 10**6, latest_blockhash(handle.url)))
        assert "result" in again
    finally:
        handle.stop()


def test_torn_record_at_the_end_is_dropped(tmp_path, fund):
    handle = start_in_thread(ledger=tmp_path)
    expected = fill(handle.url, fund, 3)
    handle.stop()
    log = sorted(tmp_path.glob("log-*.bin"))[-1]
    size = log.stat().st_size
    with open(log, "ab") as out:
        out.write(b"\x40\x00\x00\x00garbage")
    handle = start_in_thread(ledger=tmp_path)
    try:
        assert_holds(handle.url, expected)
    finally:
        handle.stop()
    assert log.stat().st_size == size


def test_ledger_in_use_is_refused(tmp_path):
    handle = start_in_thread(ledger=tmp_path)
    try:
        with pytest.raises(LocalnetError, match="in use by another localnet"):
            Localnet(ledger=tmp_path)
    finally:
        handle.stop()


def test_each_chain_has_its_own_genesis_hash_kept_by_its_ledger_and_new_on_reset(tmp_path, fund):
    def meta_genesis() -> str:
        return json.loads((tmp_path / "meta.json").read_text())["genesis_hash"]

    handle = start_in_thread(ledger=tmp_path)
    expected = fill(handle.url, fund, 1)
    first = result(handle.url, "getGenesisHash")
    assert first == handle.genesis_hash == meta_genesis()
    handle.stop()
    handle = start_in_thread(ledger=tmp_path)
    try:
        assert result(handle.url, "getGenesisHash") == first  # the same chain
    finally:
        handle.stop()
    handle = start_in_thread(ledger=tmp_path, reset=True)
    try:
        second = result(handle.url, "getGenesisHash")
        assert second != first and second == meta_genesis()  # a new chain
        key = next(iter(expected))
        assert balance(handle.url, key) == 0
        # Each start recorded its chain as this user's local cluster.
        recorded = [cluster["genesis_hash"] for cluster in recorded_local_clusters()]
        assert recorded[-1] == second and first in recorded
    finally:
        handle.stop()


def test_ledger_of_another_program_is_refused(tmp_path):
    Ledger(tmp_path, program_sha256="aa" * 32).close()
    with pytest.raises(LocalnetError, match="start with --reset"):
        Ledger(tmp_path, program_sha256="bb" * 32)
    # The refusal released the folder: the right program opens it at once.
    Ledger(tmp_path, program_sha256="aa" * 32).close()


def test_leftovers_of_a_crashed_snapshot_are_removed(tmp_path):
    Ledger(tmp_path).close()
    leftover = tmp_path / ".snapshot-00000001.bin.abc.tmp"
    leftover.write_bytes(b"partial")
    (tmp_path / "log-notes.bin").write_bytes(b"not ours")
    Ledger(tmp_path).close()
    assert not leftover.exists()
    assert (tmp_path / "log-notes.bin").exists()


def test_damaged_meta_and_snapshot_are_refused(tmp_path):
    (tmp_path / "meta.json").write_text("{not json")
    with pytest.raises(LocalnetError, match="not a localnet ledger meta file"):
        Ledger(tmp_path)
    Ledger(tmp_path, reset=True).close()
    (tmp_path / "snapshot-00000001.bin").write_bytes(b"CURTALS1" + bytes(5))
    ledger = Ledger(tmp_path)
    try:
        with pytest.raises(LocalnetError, match="damaged snapshot"):
            ledger.load_snapshot()
    finally:
        ledger.close()


def test_kill_9_during_writes_keeps_every_acknowledged_change(tmp_path, localnet_process, fund):
    node = localnet_process(tmp_path / "ledger")
    payer = fund(node.url, 100)
    acknowledged: dict[Pubkey, int] = {}
    signatures: list[str] = []
    failures: list[BaseException] = []
    streaming = threading.Event()
    """Set once 100 transfers are acknowledged: the node is killed with more on the way."""

    def stream() -> None:
        n = 0
        with httpx.Client(timeout=30) as http:
            while True:
                try:
                    blockhash = latest_blockhash(node.url)
                    targets, batch = [], []
                    for _ in range(25):
                        n += 1
                        to = Pubkey.new_unique()
                        tx = transfer_tx(payer, to, 1_000_000 + n, blockhash)
                        targets.append((to, 1_000_000 + n))
                        batch.append(
                            {
                                "jsonrpc": "2.0",
                                "id": len(batch),
                                "method": "sendTransaction",
                                "params": [b64(tx), CONFIRMED_PREFLIGHT],
                            }
                        )
                    answers = http.post(node.url, json=batch).json()
                except (httpx.HTTPError, ValueError):
                    return  # the node died under us
                for (to, lamports), answer in zip(targets, answers, strict=True):
                    if "result" in answer:
                        acknowledged[to] = lamports
                        signatures.append(answer["result"])
                        if len(acknowledged) >= 100:
                            streaming.set()
                    else:
                        failures.append(AssertionError(answer))

    writer = threading.Thread(target=stream)
    writer.start()
    assert streaming.wait(timeout=120), failures
    node.kill()
    writer.join()
    assert not failures
    assert len(acknowledged) >= 50

    node.start()
    assert_holds(node.url, acknowledged)
    statuses = result(node.url, "getSignatureStatuses", [signatures[-256:]])["value"]
    assert all(status is not None and status["err"] is None for status in statuses)
    assert node.stop() == 0


def test_a_log_write_failure_stops_the_localnet_with_one_error_line(tmp_path, localnet_process):
    ledger = tmp_path / "ledger"
    node = localnet_process(ledger)
    # The first write goes to segment 1; /dev/full refuses every write with ENOSPC.
    (ledger / "log-00000001.bin").symlink_to("/dev/full")
    answer = httpx.post(
        node.url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "requestAirdrop",
            "params": [str(Pubkey.new_unique()), 10**9],
        },
    )
    assert answer.status_code == 500
    assert answer.json()["error"]["code"] == -32603
    assert node.process.wait(timeout=30) == 1
    output = "".join(node.output) + node.process.stdout.read()
    assert "error: " in output and "cannot append to the log: No space left on device" in output
    (ledger / "log-00000001.bin").unlink()
    node.start()
    assert result(node.url, "getHealth") == "ok"


def test_damage_before_the_last_segment_is_refused(tmp_path, fund):
    for _ in range(2):  # each run appends to a segment of its own
        handle = start_in_thread(ledger=tmp_path)
        fill(handle.url, fund, 1)
        handle.stop()
    first = sorted(tmp_path.glob("log-*.bin"))[0]
    data = bytearray(first.read_bytes())
    data[30] ^= 0xFF
    first.write_bytes(bytes(data))
    with pytest.raises(LocalnetError, match="damaged record at offset 0"):
        start_in_thread(ledger=tmp_path)


def test_a_deployed_program_survives_snapshots_and_a_restart(tmp_path, fund, capsys, stories260k):
    # A snapshot after every record: the restart restores the program from one. The
    # program account loads from its program data, so the data must be restored first.
    ledger, work = tmp_path / "ledger", tmp_path / "work"
    work.mkdir()
    art = work / "model.curta"
    art.write_bytes(stories260k.data)
    handle = start_in_thread(ledger=ledger, snapshot_bytes=1)
    try:
        key = work / "id.json"
        write_keypair(fund(handle.url, 50), key)
        via = ["-k", str(key), "-C", str(work / "config.yml"), "--output", "json"]
        assert main(["deploy", "-u", handle.url, *via]) == 0
    finally:
        handle.stop()  # it drains the ledger: the last snapshot is written
    assert sorted(ledger.glob("snapshot-*.bin"))
    handle = start_in_thread(ledger=ledger)
    try:
        capsys.readouterr()
        assert main(["deploy", "--dry-run", "-u", handle.url, *via]) == 0
        assert json.loads(capsys.readouterr().out)["plan"]["state"] == "deployed"
        next_slot(handle.url)  # a program runs from the slot after it is loaded
        assert main(["publish", str(art), "-u", handle.url, *via]) == 0  # it runs
    finally:
        handle.stop()

"""The busy-cluster mode: blocks, the leader's order, the scheduler's limits, loss."""

import base64
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from localnet_helpers import (
    CONFIRMED_PREFLIGHT,
    PROCESSED,
    PROCESSED_PREFLIGHT,
    RENT,
    advance_slots,
    b64,
    balance,
    latest_blockhash,
    result,
    rpc,
    send_b64,
    transfer_tx,
)
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from curta_chain.cli import main
from curta_chain.localnet import BusyOptions, Localnet, LocalnetHandle, ManualClock, start_in_thread
from curta_chain.localnet.clock import SLOT_SECONDS
from curta_chain.localnet.cluster_methods import get_recent_prioritization_fees
from curta_chain.localnet.rpc_errors import RpcMethodError
from curta_chain.localnet.transaction_methods import send_transaction
from curta_chain.protocol.compute_budget import set_loaded_accounts_data_size_limit


@pytest.fixture
def block_localnet(clock: ManualClock) -> Iterator[LocalnetHandle]:
    handle = start_in_thread(now=clock, busy=BusyOptions(blocks=True, seed=7))
    try:
        yield handle
    finally:
        handle.stop()


def _funded(url: str, clock: ManualClock) -> Keypair:
    payer = Keypair()
    signature = result(url, "requestAirdrop", [str(payer.pubkey()), 10**10])
    advance_slots(clock, 1)
    assert result(url, "getSignatureStatuses", [[signature]])["value"][0] is not None
    return payer


def _blockhash(url: str) -> Hash:
    return Hash.from_string(result(url, "getLatestBlockhash", [PROCESSED])["value"]["blockhash"])


def test_a_transaction_is_invisible_before_its_block_and_processed_after(block_localnet, clock):
    url = block_localnet.url
    payer = _funded(url, clock)
    to = Keypair().pubkey()
    tx = transfer_tx(payer, to, 5_000_000, _blockhash(url))
    signature = send_b64(url, tx, preflight="processed")["result"]
    assert signature == str(tx.signatures[0])
    # Accepted, not run: no status, no balance change, no transaction.
    assert result(url, "getSignatureStatuses", [[signature]])["value"] == [None]
    assert balance(url, to) == 0
    advance_slots(clock, 1)
    status = result(url, "getSignatureStatuses", [[signature]])["value"][0]
    assert status["confirmationStatus"] == "processed" and status["err"] is None
    assert balance(url, to) == 5_000_000
    assert balance(url, to, "confirmed") == 0
    advance_slots(clock, 1)
    status = result(url, "getSignatureStatuses", [[signature]])["value"][0]
    assert status["confirmationStatus"] == "confirmed"
    assert balance(url, to, "confirmed") == 5_000_000


def test_preflight_failures_are_answered_at_once(block_localnet, clock):
    url = block_localnet.url
    payer = _funded(url, clock)
    too_much = transfer_tx(payer, Keypair().pubkey(), 10**12, _blockhash(url))
    answer = send_b64(url, too_much, preflight="processed")
    assert answer["error"]["code"] == -32002
    assert answer["error"]["data"]["err"] == {"InstructionError": [0, {"Custom": 1}]}


def test_a_block_runs_by_price_then_in_a_seeded_shuffle(clock):
    def block_order(seed: int) -> list[int]:
        localnet = Localnet(now=clock, busy=BusyOptions(blocks=True, seed=seed))
        payer = Keypair()
        localnet.airdrop(payer.pubkey(), 10**10)
        clock.advance(SLOT_SECONDS)
        blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
        prices = [0, 7, 3, 7, 0, 7, 3, 7, 0, 7]
        signatures = []
        for n, price in enumerate(prices, start=1):
            tx = transfer_tx(
                payer, Keypair().pubkey(), RENT + n, blockhash, (set_compute_unit_price(price),)
            )
            send_transaction(localnet, [b64(tx), PROCESSED_PREFLIGHT])
            signatures.append(str(tx.signatures[0]))
        clock.advance(SLOT_SECONDS)
        slot = localnet.tick()
        order = [signatures.index(d.signature) for d in localnet.history.block(slot)]
        assert [prices[i] for i in order] == sorted(prices, reverse=True)
        localnet.close()
        return order

    first = block_order(1)
    assert block_order(1) == first
    assert any(block_order(seed) != first for seed in (2, 3, 4))


def test_the_drop_rate_holds_over_ten_thousand_transactions(clock):
    localnet = Localnet(now=clock, busy=BusyOptions(blocks=True, seed=3, drop_rate=0.25))
    payer = Keypair()
    localnet.airdrop(payer.pubkey(), 10**12)
    clock.advance(SLOT_SECONDS)
    blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
    encoded = _transfers(payer, blockhash, 10_000)
    config = {"encoding": "base64", "skipPreflight": True}
    for item in encoded:
        send_transaction(localnet, [item, config])
    assert localnet.leader is not None
    queued = len(localnet.leader.queue)
    assert abs((10_000 - queued) / 10_000 - 0.25) <= 0.02
    # Sending the same bytes again is a new chance with the same odds (a copy that reached
    # the leader is not queued twice).
    resent = set(encoded[:4_000])
    lost = sum(1 for item in resent if _signature(item) not in localnet.leader.queue)
    for item in resent:
        send_transaction(localnet, [item, config])
    recovered = len(localnet.leader.queue) - queued
    assert abs(recovered / lost - 0.75) <= 0.05
    localnet.close()


def _transfers(payer: Keypair, blockhash: Hash, count: int) -> list[str]:
    """``count`` distinct signed transfers of 1, 2, ... lamports, base64, built fast.

    A transfer's lamports are the last 8 bytes of its message: each is the template's bytes
    with those replaced, signed (one signature, so the wire form is 1, signature, message).
    """
    template = bytes(transfer_tx(payer, Keypair().pubkey(), 1, blockhash).message)[:-8]
    encoded = []
    for lamports in range(1, count + 1):
        message = template + lamports.to_bytes(8, "little")
        wire = b"\x01" + bytes(payer.sign_message(message)) + message
        encoded.append(base64.b64encode(wire).decode())
    return encoded


def _signature(encoded: str) -> str:
    return str(VersionedTransaction.from_bytes(base64.b64decode(encoded)).signatures[0])


def test_a_dropped_transaction_still_answers_its_signature(clock):
    handle = start_in_thread(now=clock, busy=BusyOptions(blocks=True, drop_rate=1.0))
    try:
        url = handle.url
        payer = _funded(url, clock)  # the faucet's own transfers are never lost
        tx = transfer_tx(payer, Keypair().pubkey(), RENT, _blockhash(url))
        assert send_b64(url, tx, preflight="processed")["result"] == str(tx.signatures[0])
        advance_slots(clock, 2)
        assert result(url, "getSignatureStatuses", [[str(tx.signatures[0])]])["value"] == [None]
        assert rpc(url, "getTransaction", [str(tx.signatures[0])])["result"] is None
    finally:
        handle.stop()


def _chain(clock: ManualClock, **options) -> tuple[Localnet, list[Keypair]]:
    """A block-mode chain (no server) and three funded payers, at a fresh slot."""
    localnet = Localnet(now=clock, busy=BusyOptions(blocks=True, **options))
    payers = [Keypair() for _ in range(3)]
    for payer in payers:
        localnet.airdrop(payer.pubkey(), 10**10)
    assert localnet.leader is not None
    while localnet.leader.queue:  # the faucet's writes may take more than one block
        clock.advance(SLOT_SECONDS)
        localnet.tick()
    return localnet, payers


def _send(localnet: Localnet, tx) -> str:
    return send_transaction(localnet, [b64(tx), PROCESSED_PREFLIGHT])


def _next_block(localnet: Localnet, clock: ManualClock) -> list[str]:
    clock.advance(SLOT_SECONDS)
    return [details.signature for details in localnet.history.block(localnet.tick())]


def test_transactions_past_an_account_write_limit_wait_for_a_later_block(clock):
    localnet, (payer, _, _) = _chain(clock, account_write_limit=3)
    blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
    sent = [
        _send(localnet, transfer_tx(payer, Keypair().pubkey(), RENT + n, blockhash))
        for n in (1, 2, 3, 4, 5)
    ]
    first = _next_block(localnet, clock)
    assert len(first) == 3
    second = _next_block(localnet, clock)
    assert sorted(first + second) == sorted(sent)
    localnet.close()


def test_the_account_and_block_compute_limits_defer_what_does_not_fit(clock):
    # A transfer reserves 20,707 units: 720 + 2 x 300 + 3 (12 data bytes) + 3,000 (the
    # default limit of a builtin's instruction, SIMD-0170) + 16,384.
    localnet, payers = _chain(clock, account_cu_limit=50_000, block_cu_limit=100_000)
    blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
    one = [
        _send(localnet, transfer_tx(payers[0], Keypair().pubkey(), RENT + n, blockhash))
        for n in (1, 2, 3)
    ]
    assert len(_next_block(localnet, clock)) == 2  # the payer's 50,000 units hold two
    assert _next_block(localnet, clock) == [one[2]]
    many = [
        _send(localnet, transfer_tx(payer, Keypair().pubkey(), RENT + n, blockhash))
        for payer in payers
        for n in (10, 11)
    ]
    first = _next_block(localnet, clock)
    assert len(first) == 4  # the block's 100,000 units hold four
    assert sorted(first + _next_block(localnet, clock)) == sorted(many)
    localnet.close()


def test_a_transaction_whose_blockhash_expires_while_it_waits_never_lands(clock):
    localnet, (payer, _, _) = _chain(clock, account_write_limit=1)
    start = localnet.tick()
    old = Hash.from_string(localnet.clock.blockhash(start))
    clock.advance(149 * SLOT_SECONDS)
    fresh = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
    # The same payer: one write each block; the higher price goes first, the other waits
    # one block, by which its blockhash is 151 blocks old.
    expiring = _send(localnet, transfer_tx(payer, Keypair().pubkey(), RENT + 1, old))
    paying = _send(
        localnet,
        transfer_tx(payer, Keypair().pubkey(), RENT + 2, fresh, (set_compute_unit_price(5),)),
    )
    assert _next_block(localnet, clock) == [paying]
    assert _next_block(localnet, clock) == []
    assert localnet.leader is not None and not localnet.leader.queue
    assert localnet.status(expiring) is None
    localnet.close()


def test_full_blocks_hold_the_highest_prices_and_fees_report_what_they_held(clock):
    # Other users offer twice what a block holds, at prices up to 10**6 micro-lamports.
    localnet, (payer, other, _) = _chain(clock, background_load=2 * 100_000_000, seed=5)
    blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
    # Free, and as big as a program's call (a transfer alone asks for 3,000 units).
    big = (set_compute_unit_limit(200_000),)
    cheap = _send(localnet, transfer_tx(other, Keypair().pubkey(), RENT + 1, blockhash, big))
    target = Keypair().pubkey()
    price = 10**7
    paying = _send(
        localnet, transfer_tx(payer, target, RENT + 2, blockhash, (set_compute_unit_price(price),))
    )
    slot = localnet.tick() + 1
    assert _next_block(localnet, clock) == [paying]
    for _ in range(3):
        assert _next_block(localnet, clock) == []
    assert localnet.leader is not None and cheap in localnet.leader.queue
    clock.advance(SLOT_SECONDS)
    fees = {
        item["slot"]: item["prioritizationFee"]
        for item in get_recent_prioritization_fees(localnet, [])
    }
    with_target = {
        item["slot"]: item["prioritizationFee"]
        for item in get_recent_prioritization_fees(localnet, [[str(target)]])
    }
    assert 0 < fees[slot] < 10**6  # the lowest background price the block held
    assert with_target[slot] == price  # the price paid by what wrote the account
    assert with_target[slot + 1] == fees[slot + 1]
    localnet.close()


def test_past_its_rate_a_provider_answers_429_with_retry_after(clock):
    handle = start_in_thread(now=clock, busy=BusyOptions(rps=5, max_batch=3))
    try:
        url = handle.url
        call = {"jsonrpc": "2.0", "id": 1, "method": "getSlot"}
        refused = httpx.post(url, json=[call] * 4, timeout=30)
        assert refused.status_code == 200
        assert refused.json() == {
            "jsonrpc": "2.0",
            "error": {"code": 7701, "message": "Batch Size Exceeded"},
            "id": None,
        }
        # Each call of a batch counts: 3 + 2 pass, the sixth call in the second is refused.
        # A loaded machine may let a second pass between the requests: then try again.
        for _ in range(10):
            started = time.monotonic()
            answers = [
                httpx.post(url, json=[call] * 3, timeout=30),
                httpx.post(url, json=[call] * 2, timeout=30),
                httpx.post(url, json=call, timeout=30),
            ]
            if time.monotonic() - started < 1.0:
                break
            while httpx.post(url, json=call, timeout=30).status_code == 429:
                pass  # wait for the window to empty
        assert [a.status_code for a in answers] == [200, 200, 429]
        assert answers[1].json()[1]["result"] >= 0
        limited = answers[2]
        assert int(limited.headers["Retry-After"]) >= 1
        assert limited.json()["error"] == {"code": 7429, "message": "Rate Limited"}
    finally:
        handle.stop()


def test_kill_9_in_block_mode_loses_nothing_told_landed(tmp_path, localnet_process, fund):
    # The busy profile (blocks, 10% loss, half-full blocks), fast slots (whose limits scale
    # as SIMD-0525's do: a quarter of 400 ms's), no rate limit.
    busy = ("--profile", "busy", "--slot-ms", "100", "--rps", "1000000")
    node = localnet_process(tmp_path / "ledger", extra=busy)
    assert any(line.startswith("Busy cluster: blocks of 25,000,000 CU") for line in node.output)
    payer = fund(node.url, 100)
    landed: dict[str, tuple[Pubkey, int]] = {}
    """Transfers a status said had landed (at processed)."""
    failures: list[BaseException] = []
    enough = threading.Event()

    def stream() -> None:
        sent: dict[str, tuple[Pubkey, int]] = {}
        n = 0
        with httpx.Client(timeout=30) as http:
            while True:
                try:
                    blockhash = latest_blockhash(node.url)
                    batch = []
                    for _ in range(25):
                        n += 1
                        to = Pubkey.new_unique()
                        tx = transfer_tx(payer, to, 1_000_000 + n, blockhash)
                        sent[str(tx.signatures[0])] = (to, 1_000_000 + n)
                        params = [b64(tx), CONFIRMED_PREFLIGHT]
                        call = {"jsonrpc": "2.0", "id": n, "method": "sendTransaction"}
                        batch.append({**call, "params": params})
                    for answer in http.post(node.url, json=batch).json():
                        if "result" not in answer:
                            failures.append(AssertionError(answer))
                    waiting = [s for s in sent if s not in landed][-256:]
                    status = {"jsonrpc": "2.0", "id": 0, "method": "getSignatureStatuses"}
                    answer = http.post(node.url, json={**status, "params": [waiting]}).json()
                except (httpx.HTTPError, ValueError):
                    return  # the node died under us
                for signature, value in zip(waiting, answer["result"]["value"], strict=True):
                    if value is not None:
                        landed[signature] = sent[signature]
                if len(landed) >= 100:
                    enough.set()

    writer = threading.Thread(target=stream)
    writer.start()
    assert enough.wait(timeout=120), failures
    node.kill()
    writer.join()
    assert not failures

    node.start()
    statuses = result(node.url, "getSignatureStatuses", [list(landed)[-256:]])["value"]
    assert all(status is not None and status["err"] is None for status in statuses)
    keys = [str(to) for to, _ in landed.values()]
    for start in range(0, len(keys), 100):
        values = result(node.url, "getMultipleAccounts", [keys[start : start + 100], PROCESSED])
        expected = [lamports for _, lamports in list(landed.values())[start : start + 100]]
        assert [value["lamports"] for value in values["value"]] == expected
    assert node.stop() == 0


@pytest.mark.parametrize(
    ("args", "code", "error"),
    [
        (
            ["--drop-rate", "1.5"],
            2,
            "error: curta-chain localnet: argument --drop-rate: 1.5: expected a fraction from "
            "0 to 1 (see --help)",
        ),
        (
            ["--rps", "0"],
            2,
            "error: curta-chain localnet: argument --rps: 0: expected a whole number of at "
            "least 1 (see --help)",
        ),
        (
            ["--slot-ms", "fast"],
            2,
            "error: curta-chain localnet: argument --slot-ms: fast: expected a number above 0 "
            "(see --help)",
        ),
        (
            ["--account-write-limit", "5"],
            1,
            "error: --account-write-limit needs --blocks (or --profile busy)",
        ),
        (
            ["--validator", "--blocks"],
            1,
            "error: the busy-cluster flags work with the embedded localnet only",
        ),
    ],
)
def test_bad_busy_flags_are_one_line_errors(capsys, args, code, error):
    try:
        returned = main(["localnet", "--port", "0", *args])
    except SystemExit as exc:  # argparse's own refusals
        returned = exc.code
    assert returned == code
    assert capsys.readouterr().err.strip() == error


def test_the_same_seed_loses_the_same_transactions_and_without_blocks_the_rest_run_at_once(
    clock,
):
    def survivors(seed: int) -> set[int]:
        localnet = Localnet(now=clock, busy=BusyOptions(seed=seed, drop_rate=0.5))
        payer = Keypair()
        localnet.airdrop(payer.pubkey(), 10**12)  # without blocks: landed at once
        blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
        to = Keypair().pubkey()
        sent = {
            n: _send(localnet, transfer_tx(payer, to, RENT + n, blockhash)) for n in range(1, 201)
        }
        landed = {n for n, signature in sent.items() if localnet.status(signature) is not None}
        assert localnet.balance_at(to, localnet.tick()) == sum(RENT + n for n in landed)
        localnet.close()
        return landed

    first = survivors(11)
    assert 60 < len(first) < 140
    assert survivors(11) == first
    assert survivors(12) != first


def test_the_loaded_data_limit_holds_at_preflight_and_in_the_block(clock):
    localnet, (payer, _, _) = _chain(clock)
    blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
    # Three accounts of at least 64 bytes each pass a limit of 100 bytes.
    tight = (set_loaded_accounts_data_size_limit(100),)
    refused = transfer_tx(payer, Keypair().pubkey(), RENT + 1, blockhash, tight)
    with pytest.raises(RpcMethodError) as preflight:
        _send(localnet, refused)
    assert preflight.value.data["err"] == "MaxLoadedAccountsDataSizeExceeded"
    before = localnet.balance_at(payer.pubkey(), localnet.tick())
    tx = transfer_tx(payer, Keypair().pubkey(), RENT + 2, blockhash, tight)
    config = {"encoding": "base64", "skipPreflight": True}
    signature = send_transaction(localnet, [b64(tx), config])
    assert _next_block(localnet, clock) == [signature]
    assert localnet.status(signature)[1] == "MaxLoadedAccountsDataSizeExceeded"
    assert localnet.balance_at(payer.pubkey(), localnet.tick()) == before - 5_000
    localnet.close()


def test_the_preflight_in_block_mode_knows_no_blockhash_newer_than_its_bank(clock):
    localnet, (payer, _, _) = _chain(clock)
    blockhash = Hash.from_string(localnet.clock.blockhash(localnet.tick()))
    tx = transfer_tx(payer, Keypair().pubkey(), RENT, blockhash)
    for config in ({"encoding": "base64"}, CONFIRMED_PREFLIGHT):
        with pytest.raises(RpcMethodError) as refused:
            send_transaction(localnet, [b64(tx), config])
        assert refused.value.data["err"] == "BlockhashNotFound"
    assert localnet.leader is not None and not localnet.leader.queue
    assert send_transaction(localnet, [b64(tx), PROCESSED_PREFLIGHT]) == str(tx.signatures[0])
    other = transfer_tx(payer, Keypair().pubkey(), RENT + 1, blockhash)
    assert send_transaction(localnet, [b64(other), {"encoding": "base64", "skipPreflight": True}])
    assert sorted(_next_block(localnet, clock)) == sorted(
        map(str, (tx.signatures[0], other.signatures[0]))
    )
    localnet.close()

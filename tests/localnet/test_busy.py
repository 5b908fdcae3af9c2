"""The busy-cluster mode: blocks, the leader's order, the scheduler's limits, loss."""

from collections.abc import Iterator

import pytest
from localnet_helpers import (
    PROCESSED,
    advance_slots,
    b64,
    balance,
    result,
    rpc,
    send_b64,
    transfer_tx,
)
from solders.compute_budget import set_compute_unit_price
from solders.hash import Hash
from solders.keypair import Keypair

from curta_chain.localnet import BusyOptions, Localnet, LocalnetHandle, ManualClock, start_in_thread
from curta_chain.localnet.clock import SLOT_SECONDS
from curta_chain.localnet.transaction_methods import send_transaction


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
    signature = send_b64(url, tx)["result"]
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
    answer = send_b64(url, too_much)
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
        for lamports, price in enumerate(prices, start=1):
            tx = transfer_tx(
                payer, Keypair().pubkey(), lamports, blockhash, (set_compute_unit_price(price),)
            )
            send_transaction(localnet, [b64(tx), {"encoding": "base64"}])
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
    to = Keypair().pubkey()
    encoded = [b64(transfer_tx(payer, to, n, blockhash)) for n in range(1, 10_001)]
    config = {"encoding": "base64", "skipPreflight": True}
    for item in encoded:
        send_transaction(localnet, [item, config])
    assert localnet.leader is not None
    queued = len(localnet.leader.queue)
    assert abs((10_000 - queued) / 10_000 - 0.25) <= 0.02
    # Sending the same bytes again is a new chance with the same odds.
    for item in encoded:
        send_transaction(localnet, [item, config])
    recovered = len(localnet.leader.queue) - queued
    assert abs(recovered / (10_000 - queued) - 0.75) <= 0.05
    localnet.close()


def test_a_dropped_transaction_still_answers_its_signature(clock):
    handle = start_in_thread(now=clock, busy=BusyOptions(blocks=True, drop_rate=1.0))
    try:
        url = handle.url
        payer = _funded(url, clock)  # the faucet's own transfers are never lost
        tx = transfer_tx(payer, Keypair().pubkey(), 1, _blockhash(url))
        assert send_b64(url, tx)["result"] == str(tx.signatures[0])
        advance_slots(clock, 2)
        assert result(url, "getSignatureStatuses", [[str(tx.signatures[0])]])["value"] == [None]
        assert rpc(url, "getTransaction", [str(tx.signatures[0])])["result"] is None
    finally:
        handle.stop()

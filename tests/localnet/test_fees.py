"""Fees as a validator charges them: per signature plus the compute-unit price."""

import base64

from localnet_helpers import (
    advance_slots,
    balance,
    latest_blockhash,
    result,
    send_b64,
    transfer_tx,
)
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.localnet import start_in_thread

PRICED = (set_compute_unit_limit(10_000), set_compute_unit_price(1_000_000))
"""10,000 units at 1,000,000 micro-lamports each: a 10,000-lamport priority fee."""


def fee_for(url: str, tx) -> int:
    encoded = base64.b64encode(bytes(tx.message)).decode()
    return result(url, "getFeeForMessage", [encoded, {"commitment": "processed"}])["value"]


def test_priority_fee_is_charged_reported_and_replayed(tmp_path, fund, clock):
    handle = start_in_thread(ledger=tmp_path, now=clock)
    try:
        url = handle.url
        payer = fund(url, 1, commitment="processed")
        before = balance(url, payer.pubkey())
        to = Pubkey.new_unique()
        tx = transfer_tx(payer, to, 10**6, latest_blockhash(url), extra=PRICED)
        assert fee_for(url, tx) == 15_000
        signature = send_b64(url, tx)["result"]
        after = balance(url, payer.pubkey())
        assert before - after == 10**6 + 15_000
        advance_slots(clock, 1)  # getTransaction answers from confirmed on
        found = result(url, "getTransaction", [signature, {"commitment": "confirmed"}])["meta"]
        assert found["fee"] == 15_000
        assert found["preBalances"][0] == before and found["postBalances"][0] == after
    finally:
        handle.stop()
    handle = start_in_thread(ledger=tmp_path)
    try:
        assert balance(handle.url, payer.pubkey()) == after
    finally:
        handle.stop()


def test_price_without_a_limit_uses_the_default_units(localnet, funded_keypair):
    extra = (set_compute_unit_price(1_000),)
    tx = transfer_tx(
        funded_keypair, Pubkey.new_unique(), 10**6, latest_blockhash(localnet.url), extra
    )
    # SIMD-0170: 3,000 units each for the transfer and the price, builtins' instructions.
    assert fee_for(localnet.url, tx) == 5_000 + 6


def test_a_refused_priced_transaction_charges_nothing(manual_localnet, clock, fund):
    url = manual_localnet.url
    funded_keypair = fund(url, commitment="processed")
    before = balance(url, funded_keypair.pubkey())
    tx = transfer_tx(funded_keypair, Pubkey.new_unique(), 10**15, latest_blockhash(url), PRICED)
    assert send_b64(url, tx)["error"]["code"] == -32002
    assert balance(url, funded_keypair.pubkey()) == before
    landed = send_b64(url, tx, skip_preflight=True)["result"]
    assert balance(url, funded_keypair.pubkey()) == before - 15_000
    advance_slots(clock, 32)
    assert result(url, "getTransaction", [landed])["meta"]["fee"] == 15_000  # finalized


def test_a_payer_that_cannot_cover_the_fee_is_refused(localnet):
    url = localnet.url
    payer = Keypair()
    result(url, "requestAirdrop", [str(payer.pubkey()), 900_000])
    expensive = (set_compute_unit_limit(10_000), set_compute_unit_price(10**9))
    tx = transfer_tx(payer, Pubkey.new_unique(), 1, latest_blockhash(url), expensive)
    answer = send_b64(url, tx)["error"]
    assert answer["message"] == "Transaction simulation failed: Insufficient funds for fee"
    assert send_b64(url, tx, skip_preflight=True)["result"] == str(tx.signatures[0])
    assert balance(url, payer.pubkey()) == 900_000

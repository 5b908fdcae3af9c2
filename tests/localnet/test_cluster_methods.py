import base64
import time

from localnet_helpers import PROCESSED, advance_slots, result, rpc, transfer_tx
from reference_client import Client
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey

from curta_chain.constants import COMMITMENTS


def test_version_genesis_and_health(localnet):
    client = Client(localnet.url, "processed")
    assert client.get_version().value.solana_core
    genesis = client.get_genesis_hash().value
    assert genesis == client.get_genesis_hash().value
    assert result(localnet.url, "getHealth") == "ok"


def test_slots_and_block_height_advance_with_time(manual_localnet, clock):
    client = Client(manual_localnet.url, "processed")
    first = client.get_slot().value
    first_hash = client.get_latest_blockhash().value
    advance_slots(clock, 5)
    later = client.get_slot().value
    assert later == first + 5
    assert client.get_block_height().value == later
    latest = client.get_latest_blockhash().value
    assert latest.blockhash != first_hash.blockhash
    assert latest.last_valid_block_height == first_hash.last_valid_block_height + 5
    info = result(manual_localnet.url, "getEpochInfo", [PROCESSED])
    assert info["absoluteSlot"] == later and info["slotsInEpoch"] == 432_000


def test_each_commitment_sees_its_own_slot(manual_localnet, clock):
    url = manual_localnet.url
    advance_slots(clock, 40)
    slots = {c: result(url, "getSlot", [{"commitment": c}]) for c in COMMITMENTS}
    assert slots["confirmed"] == slots["processed"] - 1
    assert slots["finalized"] == slots["processed"] - 32
    assert result(url, "getSlot") == slots["finalized"]  # the validator's default
    for commitment, slot in slots.items():
        config = {"commitment": commitment}
        assert result(url, "getBlockHeight", [config]) == slot
        assert result(url, "getEpochInfo", [config])["absoluteSlot"] == slot
        latest = result(url, "getLatestBlockhash", [config])
        assert latest["context"]["slot"] == slot
        assert latest["value"]["lastValidBlockHeight"] == slot + 150


def test_latest_blockhash_is_valid_for_150_blocks(localnet):
    client = Client(localnet.url, "processed")
    latest = client.get_latest_blockhash().value
    slot = client.get_slot().value
    assert latest.last_valid_block_height - slot in range(145, 151)
    answer = result(localnet.url, "isBlockhashValid", [str(latest.blockhash), PROCESSED])
    assert answer["value"] is True and answer["context"]["slot"] >= slot
    unknown = result(localnet.url, "isBlockhashValid", [str(Hash.new_unique())])
    assert unknown["value"] is False


def test_blockhash_expires_after_150_blocks(manual_localnet, clock):
    url = manual_localnet.url
    blockhash = result(url, "getLatestBlockhash", [PROCESSED])["value"]["blockhash"]
    assert result(url, "isBlockhashValid", [blockhash, PROCESSED])["value"] is True
    advance_slots(clock, 150)
    assert result(url, "isBlockhashValid", [blockhash, PROCESSED])["value"] is True
    advance_slots(clock, 1)
    assert result(url, "isBlockhashValid", [blockhash, PROCESSED])["value"] is False


def test_fee_for_message(localnet):
    client = Client(localnet.url, "processed")
    payer = Keypair()
    blockhash = client.get_latest_blockhash().value.blockhash
    message = transfer_tx(payer, Pubkey.new_unique(), 1, blockhash).message
    assert client.get_fee_for_message(message).value == 5_000
    stale = Message.new_with_blockhash([], payer.pubkey(), Hash.new_unique())
    encoded = base64.b64encode(bytes(stale)).decode()
    assert result(localnet.url, "getFeeForMessage", [encoded])["value"] is None


def test_fee_for_message_refuses_garbage(localnet):
    answer = rpc(localnet.url, "getFeeForMessage", ["not base64!"])
    assert answer["error"]["code"] == -32602


def test_minimum_balance_for_rent_exemption(localnet):
    client = Client(localnet.url, "processed")
    assert client.get_minimum_balance_for_rent_exemption(0).value == 890_880
    assert client.get_minimum_balance_for_rent_exemption(848).value == 6_792_960
    assert rpc(localnet.url, "getMinimumBalanceForRentExemption", [-1])["error"]["code"] == -32602


def test_min_context_slot_not_reached(localnet):
    answer = rpc(localnet.url, "getBalance", [str(Pubkey.new_unique()), {"minContextSlot": 10**9}])
    assert answer["error"]["code"] == -32016


def test_identity_block_time_and_prioritization_fees(localnet):
    url = localnet.url
    identity = result(url, "getIdentity")["identity"]
    assert identity == result(url, "getIdentity")["identity"]
    slot = result(url, "getSlot", [PROCESSED]) - 1  # the last confirmed block
    assert abs(result(url, "getBlockTime", [slot]) - time.time()) < 5
    answer = rpc(url, "getBlockTime", [slot + 10_000])["error"]
    assert answer == {"code": -32004, "message": f"Block not available for slot {slot + 10_000}"}
    fees = result(url, "getRecentPrioritizationFees", [[identity]])
    assert fees and all(item["prioritizationFee"] == 0 for item in fees)


def test_prioritization_fees_cover_at_most_150_slots(manual_localnet, clock):
    advance_slots(clock, 200)
    fees = result(manual_localnet.url, "getRecentPrioritizationFees", [None])
    slot = result(manual_localnet.url, "getSlot", [PROCESSED])
    assert len(fees) == 150 and fees[-1]["slot"] == slot

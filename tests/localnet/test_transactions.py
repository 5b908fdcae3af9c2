import asyncio

import based58
import pytest
from localnet_helpers import (
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
from reference_client import Client
from solana.rpc.async_api import AsyncClient
from solana.rpc.core import RPCException
from solana.rpc.models import TxOpts
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID

PROGRAM = Pubkey.from_string(LOCALNET_PROGRAM_ID)
TRANSFER_TO_NEW_ACCOUNT_LOADS = 64 + 64 + len(b"solana_system_program")
"""Account data a transfer to a new account loads, as agave counts it: 64 bytes for each
account that exists (the payer, the system program) and the system program's data, its
name in agave's genesis."""


def refused_before_loading(message: str, err: str) -> dict:
    """The -32002 agave 4.2 answers for a preflight refused before it loads an account."""
    data = dict.fromkeys(
        (
            "accounts",
            "returnData",
            "innerInstructions",
            "replacementBlockhash",
            "fee",
            "preBalances",
            "postBalances",
            "preTokenBalances",
            "postTokenBalances",
            "loadedAddresses",
        )
    )
    data.update(err=err, logs=[], unitsConsumed=0, loadedAccountsDataSize=0)
    return {"code": -32002, "message": f"Transaction simulation failed: {message}", "data": data}


def test_airdrop_then_transfer_with_client(localnet):
    client = Client(localnet.url, "processed")
    payer = Keypair()
    airdrop = client.request_airdrop(payer.pubkey(), 2 * LAMPORTS_PER_SOL).value
    status = client.get_signature_statuses([airdrop]).value[0]
    assert status is not None and status.err is None
    assert client.get_balance(payer.pubkey()).value == 2 * LAMPORTS_PER_SOL
    to = Pubkey.new_unique()
    blockhash = client.get_latest_blockhash().value.blockhash
    signature = client.send_transaction(transfer_tx(payer, to, LAMPORTS_PER_SOL, blockhash)).value
    confirmed = client.confirm_transaction(signature, "confirmed").value[0]
    assert confirmed.err is None
    assert client.get_balance(to).value == LAMPORTS_PER_SOL
    assert client.get_balance(payer.pubkey()).value == LAMPORTS_PER_SOL - 5_000

    found = client.get_transaction(signature, commitment="confirmed").value
    assert found.transaction.meta.err is None
    assert found.transaction.meta.fee == 5_000
    assert found.transaction.meta.compute_units_consumed == 150
    assert any("success" in line for line in found.transaction.meta.log_messages)
    assert found.transaction.meta.post_balances[1] == LAMPORTS_PER_SOL


def test_transfer_with_async_client(localnet):
    async def flow() -> int:
        async with AsyncClient(localnet.url, "processed") as client:
            payer = Keypair()
            await client.request_airdrop(payer.pubkey(), LAMPORTS_PER_SOL)
            blockhash = (await client.get_latest_blockhash()).value.blockhash
            to = Pubkey.new_unique()
            tx = transfer_tx(payer, to, 1_000_000, blockhash)
            signature = (await client.send_raw_transaction(bytes(tx))).value
            await client.confirm_transaction(signature, "confirmed")
            return (await client.get_balance(to)).value

    assert asyncio.run(flow()) == 1_000_000


def test_two_equal_airdrops_in_one_slot_both_land(localnet):
    client = Client(localnet.url, "processed")
    pubkey = Pubkey.new_unique()
    first = client.request_airdrop(pubkey, LAMPORTS_PER_SOL).value
    second = client.request_airdrop(pubkey, LAMPORTS_PER_SOL).value
    assert first != second
    assert client.get_balance(pubkey).value == 2 * LAMPORTS_PER_SOL


def test_an_airdrop_below_the_rent_exempt_minimum_lands_failed_as_agave_s(localnet):
    # agave's RPC sends the faucet's transfer without a preflight: a signature comes back,
    # and the transfer lands failed (the new account would be below its minimum), the
    # faucet paying its fee; the account never holds a lamport.
    client = Client(localnet.url, "confirmed")
    pubkey = Pubkey.new_unique()
    signature = client.request_airdrop(pubkey, 1_000).value
    client.confirm_transaction(signature, "confirmed", sleep_seconds=0.05)
    answer = rpc(localnet.url, "getSignatureStatuses", [[str(signature)]])
    assert answer["result"]["value"][0]["err"] == {"InsufficientFundsForRent": {"account_index": 1}}
    assert client.get_balance(pubkey).value == 0
    landed = rpc(
        localnet.url,
        "getTransaction",
        [str(signature), {"encoding": "json", "commitment": "confirmed"}],
    )["result"]
    assert landed["meta"]["fee"] == 5_000
    assert landed["meta"]["preBalances"][0] - landed["meta"]["postBalances"][0] == 5_000


def test_airdrop_the_faucet_cannot_pay_is_an_internal_error(localnet):
    answer = rpc(localnet.url, "requestAirdrop", [str(Pubkey.new_unique()), 2**63])
    assert answer["error"] == {"code": -32603, "message": "Internal error"}


def test_sendtransaction_base58_default_encoding(localnet, funded_keypair):
    to = Pubkey.new_unique()
    tx = transfer_tx(funded_keypair, to, 5_000_000, latest_blockhash(localnet.url))
    confirmed = {"preflightCommitment": "confirmed"}  # where the blockhash came from
    encoded = based58.b58encode(bytes(tx)).decode()
    signature = result(localnet.url, "sendTransaction", [encoded, confirmed])
    assert signature == str(tx.signatures[0])
    assert balance(localnet.url, to) == 5_000_000


def test_duplicate_is_already_processed_and_never_runs_twice(localnet, funded_keypair):
    to = Pubkey.new_unique()
    tx = transfer_tx(funded_keypair, to, 1_000_000, latest_blockhash(localnet.url))
    assert send_b64(localnet.url, tx)["result"] == str(tx.signatures[0])
    payer_balance = balance(localnet.url, funded_keypair.pubkey())

    again = send_b64(localnet.url, tx)["error"]
    assert again["code"] == -32002
    assert again["message"] == (
        "Transaction simulation failed: This transaction has already been processed"
    )
    assert again["data"]["err"] == "AlreadyProcessed"
    assert send_b64(localnet.url, tx, skip_preflight=True)["result"] == str(tx.signatures[0])
    assert balance(localnet.url, to) == 1_000_000
    assert balance(localnet.url, funded_keypair.pubkey()) == payer_balance


def test_failing_preflight_answers_with_logs_and_charges_nothing(localnet, funded_keypair):
    client = Client(localnet.url, "processed")
    before = balance(localnet.url, funded_keypair.pubkey())
    tx = transfer_tx(funded_keypair, Pubkey.new_unique(), 10**15, latest_blockhash(localnet.url))
    with pytest.raises(RPCException) as caught:
        client.send_transaction(tx)
    failure = caught.value.args[0]
    assert failure.message.startswith(
        "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1"
    )
    assert any("insufficient lamports" in line for line in failure.data.logs)
    assert balance(localnet.url, funded_keypair.pubkey()) == before
    assert client.get_signature_statuses([tx.signatures[0]]).value[0] is None
    # agave 4.2's preflight data: the fee and loaded data of the run, no balances.
    data = send_b64(localnet.url, tx)["error"]["data"]
    assert data["fee"] == 5_000
    assert data["loadedAccountsDataSize"] == TRANSFER_TO_NEW_ACCOUNT_LOADS
    for absent in (
        "preBalances",
        "postBalances",
        "preTokenBalances",
        "postTokenBalances",
        "loadedAddresses",
    ):
        assert data[absent] is None


def test_a_program_gets_the_validators_default_compute_limit(localnet, funded_keypair):
    """SIMD-0170: 200,000 units for the curta program's instruction, 3,000 for the transfer's."""
    call = Instruction(PROGRAM, bytes(8), [])  # a discriminator it does not know
    pay = transfer(
        TransferParams(
            from_pubkey=funded_keypair.pubkey(), to_pubkey=Pubkey.new_unique(), lamports=1
        )
    )
    message = Message.new_with_blockhash(
        [call, pay], funded_keypair.pubkey(), latest_blockhash(localnet.url)
    )
    tx = VersionedTransaction(message, [funded_keypair])
    failure = send_b64(localnet.url, tx)["error"]
    assert failure["code"] == -32002
    consumed = [line for line in failure["data"]["logs"] if f"Program {PROGRAM} consumed" in line]
    assert consumed and consumed[0].endswith(" of 203000 compute units")


def test_failing_transaction_without_preflight_lands_with_its_error(manual_localnet, clock, fund):
    url = manual_localnet.url
    funded_keypair = fund(url, commitment="processed")
    client = Client(url, "confirmed")
    before = balance(url, funded_keypair.pubkey())
    tx = transfer_tx(funded_keypair, Pubkey.new_unique(), 10**15, latest_blockhash(url))
    signature = client.send_raw_transaction(bytes(tx), TxOpts(skip_preflight=True)).value
    status = client.get_signature_statuses([signature]).value[0]
    assert status.err is not None
    assert balance(url, funded_keypair.pubkey()) == before - 5_000
    advance_slots(clock, 1)
    meta = client.get_transaction(signature).value.transaction.meta
    assert meta.err is not None
    assert meta.fee == 5_000


def test_bad_signature_is_refused(localnet, funded_keypair):
    tx = transfer_tx(funded_keypair, Pubkey.new_unique(), 1, latest_blockhash(localnet.url))
    forged = VersionedTransaction.populate(tx.message, [Signature.new_unique()])
    answer = send_b64(localnet.url, forged)
    # agave 4.2's preflight simulates the failed check: -32002 with an empty result.
    assert answer["error"] == refused_before_loading(
        "Transaction did not pass signature verification", "SignatureFailure"
    )
    assert send_b64(localnet.url, forged, skip_preflight=True)["result"] == str(
        forged.signatures[0]
    )
    assert result(localnet.url, "getSignatureStatuses", [[str(forged.signatures[0])]])["value"] == [
        None
    ]


def _oversize(payer: Keypair, url: str) -> VersionedTransaction:
    memo = Instruction(Pubkey.new_unique(), bytes(1_200), [])
    return transfer_tx(payer, Pubkey.new_unique(), 1, latest_blockhash(url), extra=(memo,))


def test_oversize_transaction_is_refused_like_the_validator(localnet, funded_keypair):
    tx = _oversize(funded_keypair, localnet.url)
    answer = send_b64(localnet.url, tx)["error"]
    assert answer["code"] == -32602
    assert answer["message"] == (
        f"base64 encoded solana_transaction::versioned::VersionedTransaction too large: "
        f"{len(b64(tx))} bytes (max: encoded/raw 1644/1232)"
    )
    encoded = based58.b58encode(bytes(tx)).decode()
    answer = rpc(localnet.url, "sendTransaction", [encoded, {"skipPreflight": True}])["error"]
    assert answer["code"] == -32602
    assert "base58 encoded" in answer["message"] and "1683/1232" in answer["message"]
    with pytest.raises(RPCException):
        Client(localnet.url, "processed").send_transaction(tx)


def test_undecodable_transaction_is_invalid_params(localnet):
    answer = rpc(localnet.url, "sendTransaction", ["AAAA", {"encoding": "base64"}])["error"]
    assert answer["code"] == -32602
    assert answer["message"].startswith("failed to deserialize")


@pytest.mark.parametrize(
    ("encoded", "error"),
    [
        ("not base64!", "InvalidByte(3, 32)"),
        ("@@@", "InvalidByte(0, 64)"),
        ("AAAAA", "InvalidLength(5)"),
        ("AAA", "InvalidPadding"),
        ("AA=A", "InvalidByte(2, 61)"),
        ("AB==", "InvalidLastSymbol(1, 66)"),
        ("AAAé", "InvalidByte(4, 169)"),  # 5 UTF-8 bytes: a lone last one is checked first
    ],
)
def test_bad_base64_is_named_as_the_validators_decoder_names_it(localnet, encoded, error):
    """Rust's base64 0.22 (STANDARD): the first fault, in its DecodeError's debug form."""
    answer = rpc(localnet.url, "sendTransaction", [encoded, {"encoding": "base64"}])["error"]
    assert answer == {"code": -32602, "message": f"invalid base64 encoding: {error}"}


def test_expired_blockhash_is_refused(manual_localnet, clock):
    url = manual_localnet.url
    client = Client(url, "processed")
    payer = Keypair()
    client.request_airdrop(payer.pubkey(), LAMPORTS_PER_SOL)
    blockhash = Hash.from_string(client.get_latest_blockhash().value.blockhash.__str__())
    advance_slots(clock, 151)
    tx = transfer_tx(payer, Pubkey.new_unique(), 1, blockhash)
    answer = send_b64(url, tx)["error"]
    assert answer["code"] == -32002
    assert answer["message"] == "Transaction simulation failed: Blockhash not found"
    assert answer["data"]["err"] == "BlockhashNotFound"
    assert send_b64(url, tx, skip_preflight=True)["result"] == str(tx.signatures[0])
    assert client.get_signature_statuses([tx.signatures[0]]).value == [None]
    assert client.get_balance(payer.pubkey()).value == LAMPORTS_PER_SOL


def test_the_preflight_knows_no_blockhash_newer_than_its_bank(manual_localnet, clock, fund):
    """As agave: sendTransaction's preflight runs in the bank of ``preflightCommitment``
    (finalized by default), which refuses a blockhash newer than itself; the same
    transaction is accepted with the preflight at its blockhash's bank, or without one."""
    url = manual_localnet.url
    advance_slots(clock, 40)  # a finalized bank of its own, 32 slots behind processed
    payer = fund(url, commitment="processed")
    hashes = {
        c: Hash.from_string(
            result(url, "getLatestBlockhash", [{"commitment": c}])["value"]["blockhash"]
        )
        for c in ("processed", "confirmed", "finalized")
    }
    assert len(set(hashes.values())) == 3
    before = balance(url, payer.pubkey())
    to = Pubkey.new_unique()

    def send(lamports: int, blockhash: str, config: dict) -> dict:
        tx = transfer_tx(payer, to, lamports, hashes[blockhash])
        return rpc(url, "sendTransaction", [b64(tx), {"encoding": "base64", **config}])

    refused = refused_before_loading("Blockhash not found", "BlockhashNotFound")
    assert send(RENT, "confirmed", {})["error"] == refused
    assert send(RENT, "processed", {"preflightCommitment": "finalized"})["error"] == refused
    assert send(RENT, "processed", {"preflightCommitment": "confirmed"})["error"] == refused
    assert balance(url, to) == 0 and balance(url, payer.pubkey()) == before  # nothing ran
    assert "result" in send(RENT, "confirmed", {"preflightCommitment": "confirmed"})
    assert "result" in send(RENT + 1, "processed", {"preflightCommitment": "processed"})
    assert "result" in send(RENT + 2, "finalized", {})
    assert "result" in send(RENT + 3, "confirmed", {"skipPreflight": True})
    assert balance(url, to) == 4 * RENT + 6
    # minContextSlot is held against the same bank: processed's without a preflight.
    slot = result(url, "getSlot", [{"commitment": "processed"}])
    behind = send(RENT + 4, "finalized", {"minContextSlot": slot})["error"]
    assert behind["code"] == -32016 and behind["data"] == {"contextSlot": slot - 32}
    skipped = send(RENT + 5, "finalized", {"minContextSlot": slot, "skipPreflight": True})
    assert "result" in skipped


def test_simulate_transaction(localnet, funded_keypair):
    to = Pubkey.new_unique()
    tx = transfer_tx(funded_keypair, to, 7_000_000, latest_blockhash(localnet.url))
    config = {"encoding": "base64", "accounts": {"addresses": [str(to)], "encoding": "base64"}}
    value = result(localnet.url, "simulateTransaction", [b64(tx), config])["value"]
    assert value["err"] is None and value["unitsConsumed"] == 150
    assert value["accounts"][0]["lamports"] == 7_000_000
    assert balance(localnet.url, to) == 0  # a simulation changes nothing
    # What agave 4.2 reports beside it.
    before = balance(localnet.url, funded_keypair.pubkey())
    assert value["fee"] == 5_000
    assert value["loadedAccountsDataSize"] == TRANSFER_TO_NEW_ACCOUNT_LOADS
    assert value["preBalances"] == [before, 0, 1]
    assert value["postBalances"] == [before - 7_005_000, 7_000_000, 1]
    assert value["preTokenBalances"] == value["postTokenBalances"] == []
    assert value["loadedAddresses"] == {"writable": [], "readonly": []}

    too_poor = transfer_tx(funded_keypair, to, 10**15, latest_blockhash(localnet.url))
    failed = result(localnet.url, "simulateTransaction", [b64(too_poor), config])["value"]
    assert failed["err"] == {"InstructionError": [0, {"Custom": 1}]}
    assert failed["accounts"] == [None]  # the validator reports none of a failed run
    assert failed["fee"] == 5_000
    assert failed["postBalances"] == [before - 5_000, 0, 1]  # only the fee is charged
    many = {"encoding": "base64", "accounts": {"addresses": [str(to)] * 4}}
    answer = rpc(localnet.url, "simulateTransaction", [b64(tx), many])["error"]
    assert answer == {"code": -32602, "message": "Too many accounts provided; max 3"}

    stale = transfer_tx(funded_keypair, to, 1, latest_blockhash(localnet.url))
    replaced = result(
        localnet.url,
        "simulateTransaction",
        [b64(stale), {"encoding": "base64", "replaceRecentBlockhash": True}],
    )["value"]
    assert replaced["replacementBlockhash"]["lastValidBlockHeight"] > 0
    refused = rpc(
        localnet.url,
        "simulateTransaction",
        [b64(stale), {"encoding": "base64", "replaceRecentBlockhash": True, "sigVerify": True}],
    )
    assert refused["error"]["code"] == -32602
    client_view = Client(localnet.url, "processed").simulate_transaction(tx).value
    assert client_view.err is None


def test_get_transaction_unknown_versions_and_commitments(manual_localnet, clock, fund):
    url = manual_localnet.url
    client = Client(url, "confirmed")
    assert client.get_transaction(Signature.new_unique()).value is None
    payer = fund(url, commitment="processed")
    tx = transfer_tx(payer, Pubkey.new_unique(), 1_000_000, latest_blockhash(url))
    signature = send_b64(url, tx)["result"]
    confirmed = {"commitment": "confirmed"}
    assert result(url, "getTransaction", [signature, confirmed]) is None  # processed only
    advance_slots(clock, 1)
    for encoding in ("json", "jsonParsed", "base64", "base58"):
        config = {"encoding": encoding, "maxSupportedTransactionVersion": 0, **confirmed}
        answer = result(url, "getTransaction", [signature, config])
        assert answer["version"] == "legacy"
        assert answer["meta"]["computeUnitsConsumed"] == 150
    assert result(url, "getTransaction", [signature]) is None  # not finalized yet
    advance_slots(clock, 31)
    assert result(url, "getTransaction", [signature])["slot"] == tx_slot(url, signature)
    answer = rpc(url, "getTransaction", [signature, {"commitment": "processed"}])
    assert answer["error"] == {
        "code": -32602,
        "message": "Method does not support commitment below `confirmed`",
    }


def tx_slot(url: str, signature: str) -> int:
    return result(url, "getSignatureStatuses", [[signature]])["value"][0]["slot"]


def test_signature_statuses_limit(localnet):
    signatures = [str(Signature.new_unique()) for _ in range(257)]
    answer = rpc(localnet.url, "getSignatureStatuses", [signatures])["error"]
    assert answer == {"code": -32602, "message": "Too many inputs provided; max 256"}
    values = result(
        localnet.url, "getSignatureStatuses", [signatures[:256], {"searchTransactionHistory": True}]
    )
    assert values["value"] == [None] * 256


def test_signature_statuses_refuse_a_malformed_signature(localnet):
    answer = rpc(localnet.url, "getSignatureStatuses", [["abc"]])["error"]
    assert answer == {"code": -32602, "message": "Invalid param: Invalid"}


def test_simulate_reports_an_unknown_blockhash_and_checks_signatures(localnet, funded_keypair):
    stale = transfer_tx(funded_keypair, Pubkey.new_unique(), 1, Hash.new_unique())
    value = result(localnet.url, "simulateTransaction", [b64(stale), {"encoding": "base64"}])
    # Never loaded: no fee, no data, the balances as they are.
    before = balance(localnet.url, funded_keypair.pubkey())
    assert value["value"]["err"] == "BlockhashNotFound"
    assert value["value"]["fee"] is None and value["value"]["loadedAccountsDataSize"] == 0
    assert value["value"]["preBalances"] == value["value"]["postBalances"] == [before, 0, 1]
    fresh = transfer_tx(funded_keypair, Pubkey.new_unique(), 1, latest_blockhash(localnet.url))
    forged = VersionedTransaction.populate(fresh.message, [Signature.new_unique()])
    config = {"encoding": "base64", "sigVerify": True}
    # The validator answers a result whose error is the failed check, not an error.
    forged_value = result(localnet.url, "simulateTransaction", [b64(forged), config])["value"]
    assert forged_value["err"] == "SignatureFailure"
    assert forged_value["logs"] == [] and forged_value["unitsConsumed"] == 0
    assert forged_value["fee"] is None and forged_value["preBalances"] is None
    assert forged_value["loadedAddresses"] == {"writable": [], "readonly": []}


def test_an_unfunded_payer_is_refused_like_the_validator(localnet):
    payer = Keypair()
    tx = transfer_tx(payer, Pubkey.new_unique(), 1, latest_blockhash(localnet.url))
    answer = send_b64(localnet.url, tx)["error"]
    assert answer["code"] == -32002
    assert answer["message"] == (
        "Transaction simulation failed: Attempt to debit an account but found no record of a "
        "prior credit."
    )
    assert answer["data"]["err"] == "AccountNotFound"
    assert send_b64(localnet.url, tx, skip_preflight=True)["result"] == str(tx.signatures[0])
    statuses = result(localnet.url, "getSignatureStatuses", [[str(tx.signatures[0])]])
    assert statuses["value"] == [None]


def test_statuses_climb_from_processed_to_finalized(manual_localnet, clock, fund):
    url = manual_localnet.url
    payer = fund(url, 1, commitment="processed")
    tx = transfer_tx(payer, Pubkey.new_unique(), 10**6, latest_blockhash(url))
    signature = send_b64(url, tx)["result"]
    seen = []
    for slots in (0, 1, 30, 1):
        advance_slots(clock, slots)
        status = result(url, "getSignatureStatuses", [[signature]])["value"][0]
        seen.append((status["confirmationStatus"], status["confirmations"]))
    assert seen == [("processed", 0), ("confirmed", 1), ("confirmed", 31), ("finalized", None)]


TRANSFER_COST = 720 + 2 * 300 + 12 // 4 + 150 + 8
"""agave's cost of a landed transfer: a signature, two writable accounts, 12 bytes of data,
the system program's 150 units, and one 32 KiB page of loaded account data."""


def test_landed_transactions_say_their_cost_place_and_stack_heights(manual_localnet, clock, fund):
    url = manual_localnet.url
    payer = fund(url, commitment="processed")
    recipient = Pubkey.new_unique()
    blockhash = latest_blockhash(url)
    first = send_b64(url, transfer_tx(payer, recipient, 1_000_000, blockhash))["result"]
    second = send_b64(url, transfer_tx(payer, recipient, 2_000_000, blockhash))["result"]
    advance_slots(clock, 1)
    slot = tx_slot(url, first)
    assert tx_slot(url, second) == slot
    block = result(url, "getBlock", [slot, {"commitment": "confirmed"}])
    order = [item["transaction"]["signatures"][0] for item in block["transactions"]]
    place = order.index(first)
    assert order.index(second) == place + 1
    for item in block["transactions"]:  # getBlock says the cost, not the place
        assert "transactionIndex" not in item
        assert item["transaction"]["message"]["instructions"][0]["stackHeight"] == 1
    assert block["transactions"][place]["meta"]["costUnits"] == TRANSFER_COST
    for encoding in ("json", "jsonParsed", "base64"):
        config = {"encoding": encoding, "commitment": "confirmed"}
        answer = result(url, "getTransaction", [first, config])
        assert answer["meta"]["costUnits"] == TRANSFER_COST
        assert answer["transactionIndex"] == place
        if encoding != "base64":
            instructions = answer["transaction"]["message"]["instructions"]
            assert [ix["stackHeight"] for ix in instructions] == [1]
    assert result(url, "getTransaction", [second, {"commitment": "confirmed"}])[
        "transactionIndex"
    ] == (place + 1)
    found = result(url, "getSignaturesForAddress", [str(recipient), {"commitment": "confirmed"}])
    assert [(item["signature"], item["transactionIndex"]) for item in found] == [
        (second, place + 1),
        (first, place),
    ]

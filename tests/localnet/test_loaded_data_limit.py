"""The localnet holds every transaction to a validator's loaded-account-data limit (SIMD-0186).

Over 64 MiB, or over what its SetLoadedAccountsDataSizeLimit asks for, a transaction is
refused before it runs: with preflight, -32002 and nothing charged; without, it lands failed
with MaxLoadedAccountsDataSizeExceeded and pays its whole fee, and a ledger replays it so. A
limit of 0 is InvalidLoadedAccountsDataSizeLimit and never lands.
"""

import time

from localnet_helpers import RENT, balance, latest_blockhash, result, send_b64
from reference_client import Client
from solders.compute_budget import ID as COMPUTE_BUDGET
from solders.compute_budget import (
    set_compute_unit_limit,
    set_compute_unit_price,
)
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, TransferParams, create_account, transfer
from solders.transaction import VersionedTransaction

from curta_chain.constants import MAX_ACCOUNT_SIZE, MAX_LOADED_ACCOUNTS_DATA_SIZE
from curta_chain.localnet import start_in_thread
from curta_chain.localnet.loaded_data import loaded_accounts_data_size
from curta_chain.protocol.compute_budget import set_loaded_accounts_data_size_limit

BIG = 7
"""Seven 10 MiB accounts: 73,400,768 bytes of data, past the 64 MiB (67,108,864) limit."""


def big_accounts(url: str, payer: Keypair) -> list[Pubkey]:
    rent = Client(url).get_minimum_balance_for_rent_exemption(MAX_ACCOUNT_SIZE).value
    keys = []
    for _ in range(BIG):
        new = Keypair()
        params = CreateAccountParams(
            from_pubkey=payer.pubkey(),
            to_pubkey=new.pubkey(),
            lamports=rent,
            space=MAX_ACCOUNT_SIZE,
            owner=Pubkey.default(),
        )
        message = Message.new_with_blockhash(
            [create_account(params)], payer.pubkey(), latest_blockhash(url)
        )
        assert "result" in send_b64(url, VersionedTransaction(message, [payer, new]))
        keys.append(new.pubkey())
    return keys


def naming(payer: Keypair, url: str, keys: list[Pubkey], *budget: Instruction):
    """A transfer (of the least a new account may hold) that also names ``keys`` (read-only):
    they load all the same."""
    pay = transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=keys[0], lamports=RENT))
    extra = [AccountMeta(key, False, False) for key in keys[1:]]
    pay = Instruction(pay.program_id, pay.data, [*pay.accounts, *extra])
    message = Message.new_with_blockhash([*budget, pay], payer.pubkey(), latest_blockhash(url))
    return VersionedTransaction(message, [payer])


def confirmed_transaction(url: str, signature: str) -> dict:
    """getTransaction once the transaction's slot is confirmed (a few slots; a loaded machine
    makes them slow, so the bound is generous)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = result(url, "getTransaction", [signature, {"commitment": "confirmed"}])
        if found is not None:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{signature} was not confirmed")


def status(url: str, signature: str):
    return result(url, "getSignatureStatuses", [[signature]])["value"][0]


def test_over_64_mib_is_refused_before_running_and_a_landed_refusal_pays_its_fee(tmp_path, fund):
    handle = start_in_thread(ledger=tmp_path)
    try:
        url = handle.url
        payer = fund(url, 600)
        keys = big_accounts(url, payer)
        client = Client(url, "processed")
        tx = naming(payer, url, keys)
        loaded = loaded_accounts_data_size(tx.message, lambda k: client.get_account_info(k).value)
        assert loaded > MAX_LOADED_ACCOUNTS_DATA_SIZE
        before = balance(url, payer.pubkey())
        refused = send_b64(url, tx)["error"]
        assert refused["code"] == -32002
        assert refused["message"] == (
            "Transaction simulation failed: Transaction exceeded max loaded accounts data size cap"
        )
        assert refused["data"]["err"] == "MaxLoadedAccountsDataSizeExceeded"
        assert balance(url, payer.pubkey()) == before
        # Without preflight it lands, failed, and pays the whole fee (priority included).
        price = (set_compute_unit_limit(10_000), set_compute_unit_price(10**6))
        priced = naming(payer, url, keys, *price)
        signature = send_b64(url, priced, skip_preflight=True)["result"]
        assert status(url, signature)["err"] == "MaxLoadedAccountsDataSizeExceeded"
        assert balance(url, payer.pubkey()) == before - 15_000
        assert balance(url, keys[0]) == client.get_account_info(keys[0]).value.lamports
        found = confirmed_transaction(url, signature)["meta"]
        assert (found["fee"], found["computeUnitsConsumed"]) == (15_000, 0)
        # Six of them stay within the limit: the same transfer lands.
        ok = naming(payer, url, keys[:6])
        assert "result" in send_b64(url, ok)
        after = balance(url, payer.pubkey())
    finally:
        handle.stop()
    handle = start_in_thread(ledger=tmp_path)  # the ledger replays the refusal as it was
    try:
        assert status(handle.url, signature)["err"] == "MaxLoadedAccountsDataSizeExceeded"
        assert balance(handle.url, payer.pubkey()) == after
    finally:
        handle.stop()


def test_a_requested_limit_holds_to_the_byte_and_zero_is_refused(localnet, funded_keypair):
    url, payer = localnet.url, funded_keypair
    client = Client(url, "processed")
    to = Keypair().pubkey()
    probe = naming(payer, url, [to], set_loaded_accounts_data_size_limit(1))
    exact = loaded_accounts_data_size(probe.message, lambda k: client.get_account_info(k).value)
    # The payer, the system and compute-budget programs (their data is their name); ``to``
    # does not exist yet and counts nothing.
    builtins = [Pubkey.default(), COMPUTE_BUDGET]
    assert exact == 64 + sum(64 + len(client.get_account_info(k).value.data) for k in builtins)

    over = naming(payer, url, [to], set_loaded_accounts_data_size_limit(exact - 1))
    assert send_b64(url, over)["error"]["data"]["err"] == "MaxLoadedAccountsDataSizeExceeded"
    assert "result" in send_b64(
        url, naming(payer, url, [to], set_loaded_accounts_data_size_limit(exact))
    )

    before = balance(url, payer.pubkey())
    zero = naming(payer, url, [to], set_loaded_accounts_data_size_limit(0))
    refused = send_b64(url, zero)["error"]
    assert refused["data"]["err"] == "InvalidLoadedAccountsDataSizeLimit"
    assert refused["message"].endswith(
        "LoadedAccountsDataSizeLimit set for transaction must be greater than 0."
    )
    signature = send_b64(url, zero, skip_preflight=True)["result"]
    assert status(url, signature) is None  # never lands: no fee
    assert balance(url, payer.pubkey()) == before
    assert balance(url, to) == RENT

"""Version-0 transactions whose accounts come from an address lookup table."""

from localnet_helpers import (
    advance_slots,
    balance,
    latest_blockhash,
    result,
    send_b64,
    transfer_tx,
)
from solders.address_lookup_table_account import AddressLookupTableAccount
from solders.keypair import Keypair
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.system_program import (
    TransferParams,
    create_lookup_table,
    extend_lookup_table,
    transfer,
)
from solders.transaction import VersionedTransaction

from curta_chain.localnet import start_in_thread


def send_legacy(url: str, payer: Keypair, instructions: list) -> str:
    message = Message.new_with_blockhash(instructions, payer.pubkey(), latest_blockhash(url))
    answer = send_b64(url, VersionedTransaction(message, [payer]))
    assert "result" in answer, answer
    return answer["result"]


def test_lookup_table_accounts_land_and_survive_a_snapshot(tmp_path, fund, clock):
    handle = start_in_thread(ledger=tmp_path, snapshot_bytes=1, now=clock)
    try:
        url = handle.url
        payer = fund(url, 10, commitment="processed")
        # The documented pattern: a table is created against `getSlot()` (finalized).
        recent = result(url, "getSlot")
        create, table = create_lookup_table(
            {
                "authority_address": payer.pubkey(),
                "payer_address": payer.pubkey(),
                "recent_slot": recent,
            }
        )
        send_legacy(url, payer, [create])
        target = Pubkey.new_unique()
        extend = extend_lookup_table(
            {
                "lookup_table_address": table,
                "authority_address": payer.pubkey(),
                "payer_address": payer.pubkey(),
                "new_addresses": [target],
            }
        )
        send_legacy(url, payer, [extend])
        advance_slots(clock, 1)  # extended addresses are usable from the next slot

        pay = transfer(
            TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=3 * 10**6)
        )
        message = MessageV0.try_compile(
            payer.pubkey(),
            [pay],
            [AddressLookupTableAccount(table, [target])],
            latest_blockhash(url),
        )
        assert message.address_table_lookups
        tx = VersionedTransaction(message, [payer])
        signature = send_b64(url, tx)["result"]
        assert balance(url, target) == 3 * 10**6
        advance_slots(clock, 1)
        config = {"maxSupportedTransactionVersion": 0, "commitment": "confirmed"}
        found = result(url, "getTransaction", [signature, config])
        assert found["version"] == 0
        assert found["meta"]["loadedAddresses"] == {"writable": [str(target)], "readonly": []}
        assert 3 * 10**6 in found["meta"]["postBalances"]
        # agave's cost: a signature, the payer and the looked-up target written, 12 bytes of
        # data, the system program's 150 units, one 32 KiB page (the table counts 8,248).
        assert found["meta"]["costUnits"] == 720 + 2 * 300 + 12 // 4 + 150 + 8
        assert found["transaction"]["message"]["instructions"][0]["stackHeight"] == 1
        assert isinstance(found["transactionIndex"], int)
        # One more write makes the next flush snapshot everything up to the v0 transaction.
        send_b64(url, transfer_tx(payer, Pubkey.new_unique(), 10**6, latest_blockhash(url)))
    finally:  # stop() waits for the snapshot being written
        handle.stop()
    assert list(tmp_path.glob("snapshot-*.bin"))

    handle = start_in_thread(ledger=tmp_path)
    try:
        assert balance(handle.url, target) == 3 * 10**6
        assert handle.call(lambda localnet: localnet.replayed) <= 2
    finally:
        handle.stop()

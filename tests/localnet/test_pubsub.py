"""The PubSub websocket, driven by solana-py's websocket client."""

import asyncio
import json

from localnet_helpers import advance_slots, latest_blockhash, send_b64, transfer_tx
from solana.rpc.async_api import AsyncClient
from solana.rpc.websocket_api import SolanaWsClient
from solders.pubkey import Pubkey
from solders.rpc.config import RpcTransactionLogsFilterMentions
from solders.rpc.responses import (
    AccountNotification,
    SignatureNotification,
    SlotNotification,
)
from solders.system_program import ID as SYSTEM_PROGRAM_ID
from websockets.sync.client import connect as sync_connect

from curta_chain.localnet import start_in_thread


async def next_of(websocket, kind):
    while True:
        message = await asyncio.wait_for(websocket.recv(), 10)
        if isinstance(message, kind):
            return message


def test_signature_and_account_notifications(localnet, funded_keypair):
    async def flow() -> None:
        async with SolanaWsClient(localnet.ws_url) as websocket:
            to = Pubkey.new_unique()
            tx = transfer_tx(funded_keypair, to, 2 * 10**6, latest_blockhash(localnet.url))
            await websocket.signature_subscribe(signature=tx.signatures[0], commitment="confirmed")
            await websocket.account_subscribe(pubkey=to, commitment="processed", encoding="base64")
            async with AsyncClient(localnet.url, "processed") as client:
                await client.send_raw_transaction(bytes(tx))
            # The account changes at once; "confirmed" comes when the slot is over.
            account = await next_of(websocket, AccountNotification)
            assert account.result.value.lamports == 2 * 10**6
            signature = await next_of(websocket, SignatureNotification)
            assert signature.result.value.err is None

            # A signature that landed before the subscription counts as well.
            await websocket.signature_subscribe(signature=tx.signatures[0], commitment="processed")
            assert (await next_of(websocket, SignatureNotification)).result.value.err is None

    asyncio.run(flow())


def test_slot_notifications_and_unsubscribe(manual_localnet, clock):
    async def flow() -> None:
        async with SolanaWsClient(manual_localnet.ws_url) as websocket:
            subscription = await websocket.slot_subscribe()
            advance_slots(clock, 1)
            first = await next_of(websocket, SlotNotification)
            advance_slots(clock, 1)
            second = await next_of(websocket, SlotNotification)
            assert second.result.slot == first.result.slot + 1
            assert first.subscription == subscription.subscription_id
            await websocket.unsubscribe(subscription)

    asyncio.run(flow())


def test_pubsub_errors(localnet):
    with sync_connect(localnet.ws_url) as websocket:
        websocket.send("{not json")
        assert json.loads(websocket.recv())["error"]["code"] == -32700
        websocket.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "blockSubscribe"}))
        assert json.loads(websocket.recv())["error"]["code"] == -32601
        bad = {"jsonrpc": "2.0", "id": 2, "method": "accountSubscribe", "params": ["nope"]}
        websocket.send(json.dumps(bad))
        assert json.loads(websocket.recv())["error"]["code"] == -32602
        gone = {"jsonrpc": "2.0", "id": 3, "method": "slotUnsubscribe", "params": [99]}
        websocket.send(json.dumps(gone))
        assert json.loads(websocket.recv())["error"]["message"] == "Invalid subscription id."


def test_notifications_wait_for_the_ledger(tmp_path, fund):
    handle = start_in_thread(ledger=tmp_path)
    payer = fund(handle.url, 1)

    async def flow() -> None:
        async with SolanaWsClient(handle.ws_url) as websocket:
            tx = transfer_tx(payer, Pubkey.new_unique(), 10**6, latest_blockhash(handle.url))
            await websocket.signature_subscribe(signature=tx.signatures[0], commitment="processed")
            await asyncio.to_thread(send_b64, handle.url, tx)
            notification = await next_of(websocket, SignatureNotification)
            assert notification.result.value.err is None
            assert handle.call(lambda localnet: localnet.ledger.durable_seq) >= 1

    try:
        asyncio.run(flow())
    finally:
        handle.stop()


async def drain(websocket) -> list[str]:
    """The kinds of the notifications that arrive until none comes for 0.8 s."""
    kinds: list[str] = []
    while True:
        try:
            message = await asyncio.wait_for(websocket.recv(), 0.8)
        except TimeoutError:
            return sorted(kinds)
        kinds.append(type(message).__name__)


def test_each_commitment_is_notified_in_its_turn(manual_localnet, clock, fund):
    url = manual_localnet.url
    payer = fund(url, 1, commitment="processed")
    to = Pubkey.new_unique()

    async def flow() -> list[list[str]]:
        async with SolanaWsClient(manual_localnet.ws_url) as websocket:
            tx = transfer_tx(payer, to, 10**6, latest_blockhash(url))
            await websocket.signature_subscribe(signature=tx.signatures[0])  # finalized by default
            for commitment in ("processed", "confirmed", "finalized"):
                await websocket.account_subscribe(pubkey=to, commitment=commitment)
            await asyncio.to_thread(send_b64, url, tx)
            seen = [await drain(websocket)]
            for slots in (1, 30, 1):
                advance_slots(clock, slots)
                seen.append(await drain(websocket))
        return seen

    assert asyncio.run(flow()) == [
        ["AccountNotification"],  # processed: at once
        ["AccountNotification"],  # confirmed: once its slot is over
        [],
        ["AccountNotification", "SignatureNotification"],  # finalized: 32 slots on
    ]


def test_solana_py_subscriptions_logs_program_root_and_null_config(manual_localnet, clock, fund):
    url = manual_localnet.url
    payer = fund(url, 1, commitment="processed")
    to = Pubkey.new_unique()

    async def flow() -> list[str]:
        async with SolanaWsClient(manual_localnet.ws_url) as websocket:
            # solana-py sends "encoding": null here: a validator reads it as absent.
            await websocket.account_subscribe(pubkey=to, commitment="processed")
            mentions = RpcTransactionLogsFilterMentions(to)
            await websocket.logs_subscribe(filter_=mentions, commitment="processed")
            await websocket.program_subscribe(
                program_id=SYSTEM_PROGRAM_ID, commitment="processed", encoding="base64"
            )
            await websocket.root_subscribe()
            await websocket.slots_updates_subscribe()
            tx = transfer_tx(payer, to, 10**6, latest_blockhash(url))
            await asyncio.to_thread(send_b64, url, tx)
            first = await drain(websocket)
            advance_slots(clock, 33)
            return [*first, "|", *await drain(websocket)]

    seen = asyncio.run(flow())
    processed, later = seen[: seen.index("|")], seen[seen.index("|") + 1 :]
    assert processed == [
        "AccountNotification",
        "LogsNotification",
        "ProgramNotification",
        "ProgramNotification",  # the payer and the new account, both system-owned
    ]
    assert "RootNotification" in later and "SlotUpdateNotification" in later


def test_a_notification_gets_no_answer(localnet):
    with sync_connect(localnet.ws_url) as websocket:
        websocket.send(json.dumps({"jsonrpc": "2.0", "method": "ping"}))  # web3.js's keep-alive
        websocket.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "slotSubscribe"}))
        assert json.loads(websocket.recv()) == {"jsonrpc": "2.0", "result": 1, "id": 5}
        logs = {"jsonrpc": "2.0", "id": 6, "method": "logsSubscribe", "params": [{"mentions": []}]}
        websocket.send(json.dumps(logs))
        answer = json.loads(websocket.recv())["error"]
        assert answer == {"code": -32602, "message": "Invalid Request: Only 1 address supported"}
        block = {"jsonrpc": "2.0", "id": 7, "method": "blockSubscribe", "params": ["all"]}
        websocket.send(json.dumps(block))
        assert json.loads(websocket.recv())["error"]["code"] == -32601

"""The validator's PubSub websocket (its RPC port + 1).

Methods: accountSubscribe, programSubscribe, logsSubscribe, signatureSubscribe,
slotSubscribe, slotsUpdatesSubscribe, rootSubscribe and their Unsubscribe methods.
blockSubscribe and voteSubscribe answer -32601, as on a validator started without
``--rpc-pubsub-enable-block-subscription`` / ``--rpc-pubsub-enable-vote-subscription``
(solana-test-validator's default).

Notifications follow the commitment asked ("finalized" by default, as on a validator):

- processed: as soon as a transaction's ledger record is durable (the server hands
  ``publish`` every landed transaction then);
- confirmed: when the transaction's slot is over; finalized: 32 slots later. A slot
  watcher (one task, woken every ``SLOT_POLL_SECONDS``) sends those, and the slot, root
  and slot-update feeds, whenever the clock reaches a new slot.

Account and program notifications carry the account as the commitment's bank shows it
then; a closed account is notified as an empty system account, as the validator does.
A JSON-RPC notification (no ``id``, such as web3.js's ``ping``) gets no answer.
"""

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web
from solders.pubkey import Pubkey

from curta_chain.constants import FINALIZED_DEPTH
from curta_chain.localnet.account_methods import program_filters, ui_account
from curta_chain.localnet.commitment import reached
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.outcomes import Landed
from curta_chain.localnet.params import (
    SOLANA_CORE_VERSION,
    account_encoding_param,
    commitment_param,
    config_at,
    pubkey_param,
    signature_param,
)
from curta_chain.localnet.rpc_errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcMethodError,
    invalid_params,
)

SLOT_POLL_SECONDS = 0.05
"""How often the slot watcher looks at the clock (a slot lasts 0.4 s)."""
_CLOSED_ACCOUNT = {
    "data": ["", "base64"],
    "executable": False,
    "lamports": 0,
    "owner": "11111111111111111111111111111111",
    "rentEpoch": 0,
    "space": 0,
}


@dataclass
class _Subscription:
    socket: web.WebSocketResponse
    kind: str
    key: Any = None
    commitment: str = "finalized"
    encoding: str = "base64"
    checks: list[Callable[[bytes], bool]] = field(default_factory=list)
    received: bool = False
    landed: tuple[int, Any] | None = None
    """For a signature: (slot, error) once it landed, until its commitment is reached."""


class PubSub:
    """Subscriptions over websockets, fed by the server as transactions become durable."""

    def __init__(self, localnet: Localnet):
        self.localnet = localnet
        self._subscriptions: dict[int, _Subscription] = {}
        self._next_id = 0
        self._watcher: asyncio.Task[None] | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self._sending: set[asyncio.Future[None]] = set()
        self._by_slot: dict[int, list[Landed]] = {}
        slot = localnet.tick()
        self._done = {"confirmed": slot - 1, "finalized": slot - FINALIZED_DEPTH}
        self._last_slot = slot

    # -- requests -----------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        """Serve one websocket connection until it closes."""
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.add(socket)
        try:
            async for message in socket:
                if message.type != WSMsgType.TEXT:
                    continue
                answer = self._answer(socket, message.data)
                if answer is not None:
                    await socket.send_str(json.dumps(answer))
        finally:
            self._sockets.discard(socket)
            for number in [n for n, s in self._subscriptions.items() if s.socket is socket]:
                del self._subscriptions[number]
        return socket

    def _answer(self, socket: web.WebSocketResponse, text: str) -> dict[str, Any] | None:
        try:
            request = json.loads(text)
        except ValueError:
            return _error(PARSE_ERROR, "Parse error", None)
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            return _error(INVALID_REQUEST, "Invalid request", None)
        if "id" not in request:
            return None  # a notification (web3.js's ping): nothing to answer
        request_id = request.get("id")
        params = request.get("params")
        params = [] if params is None else params
        handler = self._methods().get(request["method"])
        if handler is None:
            return _error(METHOD_NOT_FOUND, "Method not found", request_id)
        if not isinstance(params, list):
            return _error(INVALID_PARAMS, "Invalid params: expected an array", request_id)
        try:
            result = handler(socket, params)
        except RpcMethodError as exc:
            return {"jsonrpc": "2.0", "error": exc.to_json(), "id": request_id}
        return {"jsonrpc": "2.0", "result": result, "id": request_id}

    def _methods(self) -> dict[str, Callable[[web.WebSocketResponse, list[Any]], Any]]:
        subscribe = {
            "account": self._account_subscribe,
            "program": self._program_subscribe,
            "logs": self._logs_subscribe,
            "signature": self._signature_subscribe,
            "slot": self._feed_subscribe("slot"),
            "slotsUpdates": self._feed_subscribe("slotsUpdates"),
            "root": self._feed_subscribe("root"),
        }
        methods: dict[str, Callable[[web.WebSocketResponse, list[Any]], Any]] = {}
        for kind, handler in subscribe.items():
            methods[f"{kind}Subscribe"] = handler
            methods[f"{kind}Unsubscribe"] = self._unsubscribe
        return methods

    def _add(self, subscription: _Subscription) -> int:
        self._next_id += 1
        self._subscriptions[self._next_id] = subscription
        self._watch()
        return self._next_id

    def _account_subscribe(self, socket: web.WebSocketResponse, params: list[Any]) -> int:
        try:
            pubkey = Pubkey.from_string(params[0])
        except (IndexError, TypeError, ValueError) as exc:
            raise invalid_params("Invalid param: Invalid") from exc
        config = config_at(params, 1)
        return self._add(
            _Subscription(
                socket,
                "account",
                pubkey,
                commitment_param(config),
                account_encoding_param(config, "binary"),
            )
        )

    def _program_subscribe(self, socket: web.WebSocketResponse, params: list[Any]) -> int:
        program = pubkey_param(params[0] if params else None)
        config = config_at(params, 1)
        subscription = _Subscription(
            socket,
            "program",
            program,
            commitment_param(config),
            account_encoding_param(config, "binary"),
            program_filters(config.get("filters")),
        )
        return self._add(subscription)

    def _logs_subscribe(self, socket: web.WebSocketResponse, params: list[Any]) -> int:
        selector = params[0] if params else None
        if selector in ("all", "allWithVotes"):
            key = None
        elif isinstance(selector, dict) and isinstance(selector.get("mentions"), list):
            mentions = selector["mentions"]
            if len(mentions) != 1:
                raise invalid_params("Invalid Request: Only 1 address supported")
            key = pubkey_param(mentions[0])
        else:
            raise invalid_params('Invalid params: expected "all", "allWithVotes" or {mentions}')
        config = config_at(params, 1)
        return self._add(_Subscription(socket, "logs", key, commitment_param(config)))

    def _signature_subscribe(self, socket: web.WebSocketResponse, params: list[Any]) -> int:
        signature = signature_param(params[0] if params else None)
        config = config_at(params, 1)
        subscription = _Subscription(socket, "signature", signature, commitment_param(config))
        subscription.received = bool(config.get("enableReceivedNotification"))
        number = self._add(subscription)
        # A signature that already landed is answered as soon as its commitment allows,
        # right after the subscription id itself.
        subscription.landed = self.localnet.status(signature)
        if subscription.landed is not None:
            asyncio.get_running_loop().call_soon(self._check_signatures)
        return number

    def _feed_subscribe(self, kind: str) -> Callable[[web.WebSocketResponse, list[Any]], int]:
        def subscribe(socket: web.WebSocketResponse, params: list[Any]) -> int:
            return self._add(_Subscription(socket, kind))

        return subscribe

    def _unsubscribe(self, socket: web.WebSocketResponse, params: list[Any]) -> bool:
        number = params[0] if params else None
        subscription = self._subscriptions.get(number) if isinstance(number, int) else None
        if subscription is None or subscription.socket is not socket:
            raise RpcMethodError(INVALID_PARAMS, "Invalid subscription id.")
        assert isinstance(number, int)  # a subscription was found under it
        del self._subscriptions[number]
        return True

    # -- events -------------------------------------------------------------------------

    def publish(self, landed: list[Landed]) -> None:
        """Notify subscribers of transactions that just became durable (processed)."""
        if not self._subscriptions or not landed:
            return
        for item in landed:
            self._by_slot.setdefault(item.slot, []).append(item)
        for number, subscription in list(self._subscriptions.items()):
            if subscription.kind != "signature":
                continue
            for item in landed:
                if item.signature == subscription.key:
                    subscription.landed = (item.slot, item.err)
                    if subscription.received:
                        value = {"context": _context(item.slot), "value": "receivedSignature"}
                        self._send(subscription.socket, "signatureNotification", number, value)
        self._dispatch("processed", landed, self.localnet.tick())
        # Late arrivals for slots whose confirmed/finalized turn has passed go out now.
        for level in ("confirmed", "finalized"):
            late = [item for item in landed if item.slot <= self._done[level]]
            if late:
                self._dispatch(level, late, self._done[level])
        self._check_signatures()

    def _dispatch(self, level: str, landed: list[Landed], slot: int) -> None:
        """Send account, program and logs notifications at ``level`` for ``landed``."""
        written: set[Pubkey] = set()
        for item in landed:
            written.update(item.writable)
        view = self.localnet.commitment_slot(level)
        for number, subscription in list(self._subscriptions.items()):
            if subscription.commitment != level:
                continue
            if subscription.kind == "account" and subscription.key in written:
                account = self.localnet.account_at(subscription.key, view)
                value = (
                    _CLOSED_ACCOUNT
                    if account is None
                    else ui_account(
                        self.localnet,
                        subscription.key,
                        account,
                        subscription.encoding,
                        None,
                        view,
                        notification=True,
                    )
                )
                self._send(
                    subscription.socket,
                    "accountNotification",
                    number,
                    {"context": _context(slot), "value": value},
                )
            elif subscription.kind == "program":
                self._notify_program(number, subscription, written, view, slot)
            elif subscription.kind == "logs":
                for item in landed:
                    if subscription.key is None or subscription.key in item.keys:
                        value = {"signature": item.signature, "err": item.err, "logs": item.logs}
                        self._send(
                            subscription.socket,
                            "logsNotification",
                            number,
                            {"context": _context(item.slot), "value": value},
                        )

    def _notify_program(
        self, number: int, subscription: _Subscription, written: set[Pubkey], view: int, slot: int
    ) -> None:
        for key in sorted(written, key=bytes):
            account = self.localnet.account_at(key, view)
            if account is None or account.owner != subscription.key:
                continue
            if not all(check(account.data) for check in subscription.checks):
                continue
            encoded = ui_account(
                self.localnet, key, account, subscription.encoding, None, view, notification=True
            )
            value = {"pubkey": str(key), "account": encoded}
            self._send(
                subscription.socket,
                "programNotification",
                number,
                {"context": _context(slot), "value": value},
            )

    def _check_signatures(self) -> None:
        """Notify each landed signature whose commitment is reached."""
        slot = self.localnet.tick()
        for number, subscription in list(self._subscriptions.items()):
            if subscription.kind != "signature" or subscription.landed is None:
                continue
            landed_slot, err = subscription.landed
            if not reached(landed_slot, slot, subscription.commitment):
                continue
            del self._subscriptions[number]
            value = {"context": _context(landed_slot), "value": {"err": err}}
            self._send(subscription.socket, "signatureNotification", number, value)

    def _watch(self) -> None:
        if self._watcher is None:
            self._watcher = asyncio.ensure_future(self._watch_slots())

    async def _watch_slots(self) -> None:
        try:
            while self._subscriptions:
                await asyncio.sleep(min(self.localnet.clock.slot_duration, SLOT_POLL_SECONDS))
                slot = self.localnet.tick()
                if slot != self._last_slot:
                    self._new_slot(slot)
        finally:
            self._watcher = None

    def _new_slot(self, slot: int) -> None:
        previous, self._last_slot = self._last_slot, slot
        for level, target in (("confirmed", slot - 1), ("finalized", slot - FINALIZED_DEPTH)):
            for done in range(self._done[level] + 1, target + 1):
                if done in self._by_slot:
                    self._dispatch(level, self._by_slot[done], done)
            self._done[level] = max(self._done[level], target)
        for old in [s for s in self._by_slot if s <= self._done["finalized"]]:
            del self._by_slot[old]
        self._check_signatures()
        root = max(slot - FINALIZED_DEPTH, 0)
        now_ms = int(time.time() * 1000)
        for number, subscription in list(self._subscriptions.items()):
            if subscription.kind == "slot":
                value = {"parent": max(slot - 1, 0), "root": root, "slot": slot}
                self._send(subscription.socket, "slotNotification", number, value)
            elif subscription.kind == "root" and root > max(previous - FINALIZED_DEPTH, 0):
                self._send(subscription.socket, "rootNotification", number, root)
            elif subscription.kind == "slotsUpdates":
                for update in self._slot_updates(previous, slot, now_ms):
                    self._send(subscription.socket, "slotsUpdatesNotification", number, update)

    def _slot_updates(self, previous: int, slot: int, now_ms: int) -> list[dict[str, Any]]:
        frozen = slot - 1
        count = self.localnet.history.count_in(frozen)
        stats = {
            "numTransactionEntries": count,
            "numSuccessfulTransactions": count,
            "numFailedTransactions": 0,
            "maxTransactionsPerEntry": count,
        }
        updates = [
            {"type": "frozen", "slot": frozen, "timestamp": now_ms, "stats": stats},
            {"type": "optimisticConfirmation", "slot": frozen, "timestamp": now_ms},
            {"type": "createdBank", "slot": slot, "parent": frozen, "timestamp": now_ms},
        ]
        if slot - FINALIZED_DEPTH > previous - FINALIZED_DEPTH >= 0:
            updates.append({"type": "root", "slot": slot - FINALIZED_DEPTH, "timestamp": now_ms})
        return updates

    def _send(self, socket: web.WebSocketResponse, method: str, number: int, result: Any) -> None:
        if socket.closed:
            return
        params = {"result": result, "subscription": number}
        body = json.dumps({"jsonrpc": "2.0", "method": method, "params": params})
        task = asyncio.ensure_future(socket.send_str(body))
        self._sending.add(task)  # held until sent: the loop keeps only weak references
        task.add_done_callback(self._sending.discard)

    async def close(self) -> None:
        """Close every websocket and stop the slot watcher."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        for socket in list(self._sockets):
            await socket.close()


def _context(slot: int) -> dict[str, Any]:
    return {"slot": slot, "apiVersion": SOLANA_CORE_VERSION}


def _error(code: int, message: str, request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": request_id}

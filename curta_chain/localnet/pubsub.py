"""The validator's PubSub websocket (its RPC port + 1): signature, account and slot feeds.

Clients that confirm through subscriptions (web3.js ``confirmTransaction``, solana-py's
``websocket_api``) need it. A notification about a transaction goes out only once the
transaction's ledger record is on disk, like every other acknowledgement of the localnet.

Methods: signatureSubscribe (one notification once the transaction reaches the asked
commitment, "finalized" by default as on a validator, then the subscription ends; a
signature that already landed counts too), accountSubscribe (the account after each landed
transaction that could write it), slotSubscribe; and their Unsubscribe methods.
"""

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web
from solders.pubkey import Pubkey

from curta_chain.localnet.codec import encode_account
from curta_chain.localnet.params import SOLANA_CORE_VERSION
from curta_chain.localnet.rpc_errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcMethodError,
)
from curta_chain.localnet.state import Landed, Localnet
from curta_chain.localnet.transaction_methods import confirmation

_SLOT_POLL_SECONDS = 0.05
_RANK = {"processed": 0, "confirmed": 1, "finalized": 2}


@dataclass
class _Subscription:
    socket: web.WebSocketResponse
    kind: str
    key: Any
    encoding: str = "base64"
    commitment: str = "finalized"
    landed: tuple[int, Any] | None = None
    """For a signature: (slot, error) once it landed, until its commitment is reached."""


class PubSub:
    """Subscriptions over websockets, fed by the server as transactions become durable."""

    def __init__(self, localnet: Localnet):
        self.localnet = localnet
        self._subscriptions: dict[int, _Subscription] = {}
        self._next_id = 0
        self._slot_task: asyncio.Task[None] | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self._sending: set[asyncio.Future[None]] = set()

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        """Serve one websocket connection until it closes."""
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.add(socket)
        try:
            async for message in socket:
                if message.type != WSMsgType.TEXT:
                    continue
                await socket.send_str(json.dumps(self._answer(socket, message.data)))
        finally:
            self._sockets.discard(socket)
            for number in [n for n, s in self._subscriptions.items() if s.socket is socket]:
                del self._subscriptions[number]
        return socket

    def _answer(self, socket: web.WebSocketResponse, text: str) -> dict[str, Any]:
        try:
            request = json.loads(text)
        except ValueError:
            return _error(PARSE_ERROR, "Parse error", None)
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            return _error(INVALID_REQUEST, "Invalid request", None)
        request_id = request.get("id")
        params = request.get("params") or []
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
        return {
            "signatureSubscribe": self._signature_subscribe,
            "accountSubscribe": self._account_subscribe,
            "slotSubscribe": self._slot_subscribe,
            "signatureUnsubscribe": self._unsubscribe,
            "accountUnsubscribe": self._unsubscribe,
            "slotUnsubscribe": self._unsubscribe,
        }

    def _add(self, subscription: _Subscription) -> int:
        self._next_id += 1
        self._subscriptions[self._next_id] = subscription
        return self._next_id

    def _signature_subscribe(self, socket: web.WebSocketResponse, params: list[Any]) -> int:
        signature = params[0] if params else None
        if not isinstance(signature, str) or len(signature) > 90:
            raise RpcMethodError(INVALID_PARAMS, "Invalid params: expected a signature")
        config = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
        commitment = config.get("commitment", "finalized")
        if commitment not in _RANK:
            raise RpcMethodError(INVALID_PARAMS, f"Invalid params: unknown variant `{commitment}`")
        subscription = _Subscription(socket, "signature", signature, commitment=commitment)
        number = self._add(subscription)
        # A signature that already landed is answered as soon as its commitment allows,
        # right after the subscription id itself.
        subscription.landed = self.localnet.status(signature)
        if subscription.landed is not None:
            asyncio.get_running_loop().call_soon(self._check_signatures)
        return number

    def _account_subscribe(self, socket: web.WebSocketResponse, params: list[Any]) -> int:
        try:
            pubkey = Pubkey.from_string(params[0])
        except (IndexError, TypeError, ValueError) as exc:
            raise RpcMethodError(INVALID_PARAMS, "Invalid param: Invalid") from exc
        config = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
        encoding = config.get("encoding", "base64")
        if encoding not in ("base58", "base64", "base64+zstd", "jsonParsed"):
            raise RpcMethodError(INVALID_PARAMS, f"Invalid params: unknown variant `{encoding}`")
        return self._add(_Subscription(socket, "account", pubkey, encoding))

    def _slot_subscribe(self, socket: web.WebSocketResponse, params: list[Any]) -> int:
        number = self._add(_Subscription(socket, "slot", None))
        self._watch()
        return number

    def _watch(self) -> None:
        if self._slot_task is None:
            self._slot_task = asyncio.ensure_future(self._watch_slots())

    def _unsubscribe(self, socket: web.WebSocketResponse, params: list[Any]) -> bool:
        number = params[0] if params else None
        subscription = self._subscriptions.get(number) if isinstance(number, int) else None
        if subscription is None or subscription.socket is not socket:
            raise RpcMethodError(INVALID_PARAMS, "Invalid subscription id.")
        del self._subscriptions[number]
        return True

    def publish(self, landed: list[Landed]) -> None:
        """Notify subscribers of transactions that just became durable."""
        if not self._subscriptions or not landed:
            return
        by_signature = {item.signature: item for item in landed}
        written = {key for item in landed for key in item.writable}
        for number, subscription in list(self._subscriptions.items()):
            if subscription.kind == "signature" and subscription.key in by_signature:
                item = by_signature[subscription.key]
                subscription.landed = (item.slot, item.err)
            elif subscription.kind == "account" and subscription.key in written:
                self._notify_account(number, subscription)
        self._check_signatures()

    def _check_signatures(self) -> None:
        """Notify each landed signature whose commitment is reached; watch the others."""
        slot = self.localnet.tick()
        waiting = False
        for number, subscription in list(self._subscriptions.items()):
            if subscription.kind != "signature" or subscription.landed is None:
                continue
            landed_slot, err = subscription.landed
            reached = confirmation(landed_slot, slot)["confirmationStatus"]
            if _RANK[reached] < _RANK[subscription.commitment]:
                waiting = True
                continue
            del self._subscriptions[number]
            value = {"context": _context(landed_slot), "value": {"err": err}}
            self._send(subscription.socket, "signatureNotification", number, value)
        if waiting:
            self._watch()

    def _notify_account(self, number: int, subscription: _Subscription) -> None:
        account = self.localnet.get_account(subscription.key)
        if account is None:
            return
        value = encode_account(account, subscription.encoding, None)
        result = {"context": _context(self.localnet.tick()), "value": value}
        self._send(subscription.socket, "accountNotification", number, result)

    async def _watch_slots(self) -> None:
        last = self.localnet.tick()
        while any(
            s.kind == "slot" or (s.kind == "signature" and s.landed is not None)
            for s in self._subscriptions.values()
        ):
            await asyncio.sleep(min(self.localnet.clock.slot_duration, _SLOT_POLL_SECONDS))
            slot = self.localnet.tick()
            if slot == last:
                continue
            last = slot
            self._check_signatures()
            for number, subscription in list(self._subscriptions.items()):
                if subscription.kind == "slot":
                    value = {"parent": max(slot - 1, 0), "root": max(slot - 32, 0), "slot": slot}
                    self._send(subscription.socket, "slotNotification", number, value)
        self._slot_task = None

    def _send(self, socket: web.WebSocketResponse, method: str, number: int, result: Any) -> None:
        if socket.closed:
            return
        params = {"result": result, "subscription": number}
        body = json.dumps({"jsonrpc": "2.0", "method": method, "params": params})
        task = asyncio.ensure_future(socket.send_str(body))
        self._sending.add(task)  # held until sent: the loop keeps only weak references
        task.add_done_callback(self._sending.discard)

    async def close(self) -> None:
        """Close every websocket and stop the slot feed."""
        if self._slot_task is not None:
            self._slot_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._slot_task
        for socket in list(self._sockets):
            await socket.close()


def _context(slot: int) -> dict[str, Any]:
    return {"slot": slot, "apiVersion": SOLANA_CORE_VERSION}


def _error(code: int, message: str, request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": request_id}

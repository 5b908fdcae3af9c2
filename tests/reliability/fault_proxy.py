"""A fault-injecting JSON-RPC proxy on loopback, between curta-chain and a localnet.

``FaultProxy(upstream).start()`` listens on 127.0.0.1 (a free port, ``.url``) and forwards
every POST to ``upstream`` from a background thread with its own event loop. It speaks
just enough HTTP/1.1 (keep-alive, Content-Length bodies) to control each connection
itself, so it can hurt the client the ways a real RPC path does:

- ``drop_request``: close the connection without forwarding (the node never saw it);
- ``drop_response``: forward, let the node apply it, then close without answering;
- ``delay``: hold the request ``delay_seconds`` before forwarding;
- ``rate_limit``: answer 429 with ``Retry-After`` without forwarding;
- ``server_error``: forward (the node applied it) and answer 500 instead of its answer;
- ``truncate``: forward and send only half of the node's answer under the full
  Content-Length, then close.

It can also behave as a provider and a cluster that is not the localnet (``Provider``):

- ``max_batch``: a batch of more calls is refused whole, as ``batch_refusal`` says (HTTP
  413, HTTP 400, a JSON-RPC error object for the batch, or a list of one error per call);
- ``rps``: past that many calls a second (each call of a batch counted), HTTP 429 with a
  ``Retry-After``, as paid plans do;
- ``lag_seconds``: the node answers behind the cluster: a status is unseen for that long
  after the proxy first saw it, and a read whose ``minContextSlot`` it first met that
  recently is refused with -32016 (the node has not reached the slot); with
  ``lag_spread``, each status and slot is behind for up to that much longer (uniform);
- ``confirm_seconds``: the cluster confirms late: a slot is confirmed that long (plus up to
  ``confirm_spread``) after the proxy first met it, and never before an older slot; until
  then its statuses read ``processed``, and getTransaction and getSignaturesForAddress at
  ``confirmed`` do not know its transactions;
- ``unknown_blockhash``: that share of the sends signed with a fresh blockhash (one the
  node handed out less than ``unknown_blockhash_seconds`` ago) reach a leader that does
  not know it yet: refused with ``BlockhashNotFound`` (not delivered);
- ``forget_statuses``: the node's status cache no longer holds any transaction (what a
  rerun finds for the transactions of a run long past): getSignatureStatuses answers null
  for every signature unless it asks ``searchTransactionHistory``;
- ``hide_statuses``: a node that delivers every transaction but reports none:
  getSignatureStatuses answers null for every signature (history searched or not) and
  getTransaction null for every transaction;
- ``lose``: that share of the transactions in a sendTransaction is answered with its
  signature but never delivered (a leader that drops it).

Each request draws at most one fault from a seeded ``random.Random`` with the rates in
``Faults``. ``down = True`` drops every request (an RPC that stays down), and also, for
good, every request that had arrived before it went down and was still waiting its turn
(what a killed client had queued never reaches the node, even once ``down`` is cleared
again). A node that cannot be reached (killed) drops the client's connection too. With
``serialize`` the proxy forwards one request at a time, so a trigger's counts are exact at
the moment it fires.

A proxy can also lie: ``edits`` maps a JSON-RPC method to a function that rewrites the
node's ``result`` before the client sees it (a node that inflates
getMinimumBalanceForRentExemption, or that claims another genesis hash), and ``patches``
writes bytes over an account's data wherever getAccountInfo or getMultipleAccounts returns
it (at the account's own offsets, whatever slice was asked for). The lies the tests tell
most have names: ``lie_about_prices`` (getRecentPrioritizationFees), ``lie_about_fees``
(getFeeForMessage), ``lie_about_genesis`` (getGenesisHash) and ``patch_account`` (an
account's bytes: a model's section lengths, say).

The proxy also keeps the books the tests need: every transaction it delivers to the node is
decoded and recorded (``sent``) with the curta instruction it carries (under any program
id, known by its Anchor discriminator) or the upgradeable loader's (``loader_write``,
``loader_deploy``, ...), its signature count and, for writes, the account, offset and byte
count (a request the node refused whole, its 429 or a batch's error, is counted in
``node_refused`` instead: nothing of it ran). ``trigger`` runs an action once, the first
time a predicate over those books holds, before a request is forwarded or after the node
answered it (and before the client sees that answer): that is how a test kills the client
or the node at a chosen point with no hook in the product. Below the proxy: reading what
landed straight from the node, and running the real CLI as a process.
"""

import asyncio
import base64
import contextlib
import json
import math
import os
import random
import struct
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import processes
from solders.keypair import Keypair
from solders.transaction import Transaction, VersionedTransaction

from curta_chain.chain.loader import LOADER_V3
from curta_chain.cli.keypairs import write_keypair
from curta_chain.program.idl import load_idl
from curta_chain.protocol.compute_budget import LAMPORTS_PER_SIGNATURE

_KINDS = {ix.discriminator: ix.name for ix in load_idl().instructions}
_WRITE_ARGS = struct.Struct("<II")
_LOADER_KINDS = {
    0: "loader_initialize_buffer",
    1: "loader_write",
    2: "loader_deploy",
    3: "loader_upgrade",
    4: "loader_set_authority",
}
_LOADER_WRITE_ARGS = struct.Struct("<IIQ")
_REASONS = {
    200: "OK",
    400: "Bad Request",
    413: "Content Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
}
_ACCOUNT_READS = ("getAccountInfo", "getMultipleAccounts")
"""The calls whose answers ``patches`` rewrite."""
FAULT_KINDS = ("drop_request", "drop_response", "delay", "rate_limit", "server_error", "truncate")


@dataclass
class Faults:
    """The chance of each fault per request (0..1; their sum at most 1)."""

    drop_request: float = 0.0
    drop_response: float = 0.0
    delay: float = 0.0
    rate_limit: float = 0.0
    server_error: float = 0.0
    truncate: float = 0.0
    delay_seconds: float = 0.3
    retry_after: str = "1"

    def draw(self, rng: random.Random) -> str | None:
        """Pick this request's fault, or None."""
        roll = rng.random()
        for kind in FAULT_KINDS:
            roll -= getattr(self, kind)
            if roll < 0:
                return kind
        return None


@dataclass
class Provider:
    """How the proxy's provider and cluster differ from the localnet (all off by default)."""

    max_batch: int | None = None
    batch_refusal: str = "error"
    """``413``, ``400``, ``error`` (a JSON-RPC error object answering the whole batch) or
    ``per-call`` (a list answering each call with the same error, as some providers do)."""
    rps: float | None = None
    lag_seconds: float = 0.0
    lag_spread: float = 0.0
    confirm_seconds: float = 0.0
    confirm_spread: float = 0.0
    unknown_blockhash: float = 0.0
    unknown_blockhash_seconds: float = 1.0
    lose: float = 0.0
    forget_statuses: bool = False
    hide_statuses: bool = False


@dataclass(frozen=True)
class SentTransaction:
    """A transaction the proxy delivered to the node."""

    signature: str
    kind: str
    """The curta instruction it carries (e.g. ``write_weights``), or ``other``."""
    signatures: int
    account: str = ""
    """For a write: the weight account written."""
    offset: int = 0
    payload_bytes: int = 0
    blockhash: str = ""


@dataclass(frozen=True)
class Request:
    """One JSON-RPC request (a call or a batch) as the proxy saw it."""

    methods: tuple[str, ...]
    transactions: list[SentTransaction]


Predicate = Callable[["FaultProxy", Request], bool]
"""Given the proxy and the request at hand: fire now?"""


@dataclass
class Trigger:
    """An action armed on the proxy.

    ``fired`` once the action ran; ``settled`` is set once the request that fired it has
    been delivered to the node or dropped.
    """

    predicate: Predicate
    action: Callable[[], None]
    stage: str
    fired: bool = False
    settled: threading.Event = field(default_factory=threading.Event)


@dataclass
class FaultProxy:
    """A JSON-RPC proxy on loopback that injects faults and records transactions."""

    upstream: str
    faults: Faults = field(default_factory=Faults)
    provider: Provider = field(default_factory=Provider)
    seed: int = 0
    down: bool = False
    serialize: bool = False
    """Forward one request at a time, in arrival order, so a trigger sees exact counts."""
    url: str = ""
    sent: list[SentTransaction] = field(default_factory=list)
    edits: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    """Method -> how to rewrite the node's result before the client sees it."""
    patches: dict[str, list[tuple[int, bytes]]] = field(default_factory=dict)
    """Account address -> (offset, bytes) written over its data in the node's answers."""
    account_reads: list[tuple[str, int]] = field(default_factory=list)
    """Every account read asked of the node: its address and where the slice asked began."""
    injected: Counter[str] = field(default_factory=Counter)
    node_refused: Counter[str] = field(default_factory=Counter)
    """Requests the node itself refused whole (the busy localnet's ``--rps``, ``--max-batch``)."""
    requests: int = 0
    history_searches: int = 0
    """getSignatureStatuses calls that asked ``searchTransactionHistory`` (a ledger lookup a
    provider bills per signature), and ``status_polls`` those that did not."""
    status_polls: int = 0
    _cut: int = 0
    """Requests that had arrived when the proxy last went down: dropped if still unanswered."""
    _rng: random.Random = field(init=False)
    _triggers: list[Trigger] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _server: asyncio.Server | None = None
    _session: aiohttp.ClientSession | None = None
    _order: asyncio.Lock = field(init=False)
    _calls: deque[tuple[float, int]] = field(default_factory=deque)
    _first_seen: dict[str, float] = field(default_factory=dict)
    """A blockhash: when the proxy first handed it out."""
    _behind_until: dict[str, float] = field(default_factory=dict)
    """A status's signature, or ``slot:N`` for a minContextSlot: until when the node is
    behind on it."""
    _confirmed_at: dict[int, float] = field(default_factory=dict)
    """A slot: when the cluster confirms it (never before an older slot)."""

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "down" and value and not getattr(self, "down", True):
            object.__setattr__(self, "_cut", self.requests)
        object.__setattr__(self, name, value)

    def _cut_off(self, arrival: int) -> bool:
        """Whether a request that arrived ``arrival``-th is dropped now."""
        return self.down or arrival <= self._cut

    # Books.

    def count(self, kind: str) -> int:
        """Transactions of ``kind`` delivered so far (a resend counts again)."""
        return sum(1 for tx in list(self.sent) if tx.kind == kind)

    def write_bytes(self) -> int:
        """Weight bytes carried by every write delivered so far, resends included."""
        return sum(tx.payload_bytes for tx in list(self.sent) if tx.kind == "write_weights")

    def trigger(
        self,
        predicate: Predicate,
        action: Callable[[], None],
        stage: str = "after",
    ) -> Trigger:
        """Run ``action`` once, the first time ``predicate`` holds for a request at ``stage``.

        ``stage="before"``: the request has arrived and is about to be forwarded (an
        action that sets ``down`` drops it: the node died as it arrived);
        ``"after"``: the node answered it and the client has not seen the answer yet.
        The action runs on a worker thread and may block (kill a process and wait).
        """
        assert stage in ("before", "after")
        trigger = Trigger(predicate, action, stage)
        self._triggers.append(trigger)
        return trigger

    # Lies.

    def lie_about_prices(self, price: int) -> None:
        """Every recent slot paid ``price`` micro-lamports a unit (getRecentPrioritizationFees)."""

        def rewrite(result: Any) -> Any:
            slots = [entry["slot"] for entry in result] or [0]
            return [{"slot": slot, "prioritizationFee": price} for slot in slots]

        self.edits["getRecentPrioritizationFees"] = rewrite

    def lie_about_fees(self, lamports: int) -> None:
        """Every message costs ``lamports`` (getFeeForMessage's value)."""
        self.edits["getFeeForMessage"] = lambda result: {**result, "value": lamports}

    def lie_about_genesis(self, genesis_hash: str) -> None:
        """The cluster's genesis hash is ``genesis_hash`` (getGenesisHash)."""
        self.edits["getGenesisHash"] = lambda _: genesis_hash

    def patch_account(self, address: object, offset: int, data: bytes) -> None:
        """Account ``address`` holds ``data`` at ``offset``, as far as the client can tell."""
        self.patches.setdefault(str(address), []).append((offset, data))

    # Life cycle.

    def start(self) -> "FaultProxy":
        """Listen on a free loopback port; return once it accepts connections."""
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._open())
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._close())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the fault proxy did not start")
        return self

    def stop(self) -> None:
        """Stop listening and close every connection."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    async def _open(self) -> None:
        self._order = asyncio.Lock()
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    async def _close(self) -> None:
        assert self._server is not None and self._session is not None
        self._server.close()
        await self._session.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # HTTP.

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                body = await _read_request(reader)
                if body is None or not await self._handle(body, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _handle(self, body: bytes, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; return False to close the connection."""
        self.requests += 1
        arrival = self.requests
        async with self._order if self.serialize else contextlib.nullcontext():
            if self._cut_off(arrival):
                self.injected["down"] += 1
                return False
            refusal = self._provider_refusal(body)
            if refusal is not None:
                status, answer, headers = refusal
                await _respond(writer, status, answer, headers)
                return True
            fault = self.faults.draw(self._rng)
            if fault is not None:
                self.injected[fault] += 1
            if fault == "drop_request":
                return False
            if fault == "rate_limit":
                headers = {"Retry-After": self.faults.retry_after}
                await _respond(writer, 429, b'{"error":"rate limited"}', headers)
                return True
            if fault == "delay":
                await asyncio.sleep(self.faults.delay_seconds)
            body, held = self._hold_sends(body)
            history = self._count_status_calls(body)
            self._book_reads(body)
            request = _parse(body)
            fired = await self._fire("before", request)
            try:
                answered = None if self._cut_off(arrival) else await self._deliver(body, request)
            finally:
                for trigger in fired:
                    trigger.settled.set()
            if answered is None:
                return False
            status, answer = answered
            if held:
                answer = _merge(answer, held)
            if (self.edits and set(request.methods) & set(self.edits)) or (
                self.patches and set(request.methods) & set(_ACCOUNT_READS)
            ):
                answer = self._edit(body, answer)
            provider = self.provider
            if provider.forget_statuses and history is not None:
                answer = _forget_statuses(answer, history)
            if provider.hide_statuses:
                answer = self._hide_statuses(body, answer)
            if provider.lag_seconds or provider.confirm_seconds or provider.unknown_blockhash:
                answer = self._lag(body, answer)
            for trigger in await self._fire("after", request):
                trigger.settled.set()
        if fault == "drop_response":
            return False
        if fault == "server_error":
            await _respond(writer, 500, b"internal error")
            return True
        if fault == "truncate":
            writer.write(_head(status, len(answer), {}) + answer[: len(answer) // 2])
            await writer.drain()
            return False
        await _respond(writer, status, answer)
        return True

    def _hide_statuses(self, body: bytes, answer: bytes) -> bytes:
        """The node's answer with every status and every transaction it read back hidden."""
        try:
            payload, reply = json.loads(body), json.loads(answer)
        except ValueError:
            return answer
        calls = payload if isinstance(payload, list) else [payload]
        methods = {c.get("id"): c.get("method") for c in calls if isinstance(c, dict)}
        for item in reply if isinstance(reply, list) else [reply]:
            method = methods.get(item.get("id")) if isinstance(item, dict) else None
            if method == "getSignatureStatuses" and isinstance(item.get("result"), dict):
                values = item["result"]["value"]
                self.injected["status hidden"] += sum(v is not None for v in values)
                item["result"]["value"] = [None] * len(values)
            elif method == "getTransaction" and item.get("result") is not None:
                self.injected["transaction hidden"] += 1
                item["result"] = None
        return json.dumps(reply).encode()

    def _provider_refusal(self, body: bytes) -> tuple[int, bytes, dict[str, str]] | None:
        """A provider's refusal of the whole request: a batch too long, or past the rate."""
        provider = self.provider
        try:
            payload = json.loads(body)
        except ValueError:
            return None
        calls = len(payload) if isinstance(payload, list) else 1
        if (
            provider.max_batch is not None
            and isinstance(payload, list)
            and calls > provider.max_batch
        ):
            self.injected["batch refused"] += 1
            if provider.batch_refusal in ("413", "400"):
                return int(provider.batch_refusal), b"batch too large", {}
            if provider.batch_refusal == "per-call":
                why = {
                    "code": -32600,
                    "message": f"batch size {calls} over the limit of {provider.max_batch}",
                }
                errors = [{"jsonrpc": "2.0", "id": c.get("id"), "error": why} for c in payload]
                return 200, json.dumps(errors).encode(), {}
            error = {"code": -32600, "message": f"batch of {calls} over {provider.max_batch}"}
            return 200, json.dumps({"jsonrpc": "2.0", "error": error, "id": None}).encode(), {}
        if provider.rps is not None:
            now = time.monotonic()
            while self._calls and self._calls[0][0] <= now - 1.0:
                self._calls.popleft()
            if sum(n for _, n in self._calls) + calls > provider.rps:
                self.injected["rate limited"] += 1
                wait = self._calls[0][0] + 1.0 - now if self._calls else 1.0
                headers = {"Retry-After": str(max(1, math.ceil(wait)))}
                return 429, b'{"error":"rate limited"}', headers
            self._calls.append((now, calls))
        return None

    def _count_status_calls(self, body: bytes) -> dict[Any, bool] | None:
        """Count getSignatureStatuses calls; each one's id -> whether it searched history."""
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            return None
        calls = payload if isinstance(payload, list) else [payload]
        searched: dict[Any, bool] = {}
        for call in calls:
            if isinstance(call, dict) and call.get("method") == "getSignatureStatuses":
                params = call.get("params") or []
                config = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
                searched[call.get("id")] = config.get("searchTransactionHistory") is True
        self.history_searches += sum(searched.values())
        self.status_polls += len(searched) - sum(searched.values())
        return searched or None

    def _book_reads(self, body: bytes) -> None:
        """Book each account a getAccountInfo or getMultipleAccounts call asks for."""
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            return
        for call in payload if isinstance(payload, list) else [payload]:
            if not isinstance(call, dict) or call.get("method") not in _ACCOUNT_READS:
                continue
            params = call.get("params") or []
            config = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
            start = (config.get("dataSlice") or {}).get("offset", 0)
            keys = [params[0]] if call["method"] == "getAccountInfo" else params[0]
            self.account_reads += [(str(key), start) for key in keys]

    def _hold_sends(self, body: bytes) -> tuple[bytes, list[dict[str, Any]]]:
        """Take out the sends the leader will not get: lost ones, and unknown blockhashes'.

        Returns the body to forward and the answers for what was taken out.
        """
        provider = self.provider
        if not (provider.lose or provider.unknown_blockhash):
            return body, []
        try:
            payload = json.loads(body)
        except ValueError:
            return body, []
        calls = payload if isinstance(payload, list) else [payload]
        kept: list[Any] = []
        held: list[dict[str, Any]] = []
        now = time.monotonic()
        for call in calls:
            if not isinstance(call, dict) or call.get("method") != "sendTransaction":
                kept.append(call)
                continue
            tx = _decode(call["params"][0])
            if self._leader_lacks(tx.blockhash, now):
                self.injected["blockhash not found"] += 1
                error = {
                    "code": -32002,
                    "message": "Transaction simulation failed: Blockhash not found",
                    "data": {"err": "BlockhashNotFound", "logs": []},
                }
                held.append({"jsonrpc": "2.0", "error": error, "id": call.get("id")})
            elif self._rng.random() < provider.lose:
                # Each send of the same bytes (a resend) is lost, or not, anew.
                self.injected["lost"] += 1
                held.append({"jsonrpc": "2.0", "result": tx.signature, "id": call.get("id")})
            else:
                kept.append(call)
        if not held:
            return body, []
        if not kept:
            return b"", held
        return json.dumps(kept if isinstance(payload, list) else kept[0]).encode(), held

    def _lag(self, body: bytes, answer: bytes) -> bytes:
        """The node's answer as a node behind (or confirming late) gives it; blockhashes marked."""
        try:
            payload, reply = json.loads(body), json.loads(answer)
        except ValueError:
            return answer
        calls = {c.get("id"): c for c in (payload if isinstance(payload, list) else [payload])}
        items = reply if isinstance(reply, list) else [reply]
        now = time.monotonic()
        lag = self.provider.lag_seconds
        out = []
        for item in items:
            call = calls.get(item.get("id")) if isinstance(item, dict) else None
            method = call.get("method") if isinstance(call, dict) else None
            if method is None or "result" not in item:
                out.append(item)
                continue
            if method == "getLatestBlockhash":
                self._first_seen.setdefault(item["result"]["value"]["blockhash"], now)
            if method == "getSignatureStatuses":
                self._statuses_behind(call["params"][0], item["result"]["value"], now)
            config = call["params"][-1] if call.get("params") else None
            if isinstance(config, dict) and config.get("commitment") == "confirmed":
                item = self._confirmed_view(method, item, now)
            if (
                lag
                and isinstance(config, dict)
                and "minContextSlot" in config
                and self._behind(f"slot:{config['minContextSlot']}", now, lag)
            ):
                self.injected["context slot behind"] += 1
                error = {"code": -32016, "message": "Minimum context slot has not been reached"}
                item = {"jsonrpc": "2.0", "error": error, "id": item["id"]}
            out.append(item)
        return json.dumps(out if isinstance(reply, list) else out[0]).encode()

    def _statuses_behind(self, signatures: list[str], values: list[Any], now: float) -> None:
        """Rewrite getSignatureStatuses' ``values`` as a node behind or confirming late has them."""
        lag = self.provider.lag_seconds
        for i, (signature, value) in enumerate(zip(signatures, values, strict=True)):
            if value is None:
                continue
            confirming = self._confirming(int(value["slot"]), now)
            # Behind: a status is unseen until ``lag`` after the cluster had it.
            if lag and self._behind(signature, now, lag):
                values[i] = None
                self.injected["status behind"] += 1
            elif confirming and value.get("confirmationStatus") in ("confirmed", "finalized"):
                value.update(confirmationStatus="processed", confirmations=0)
                self.injected["status not confirmed yet"] += 1

    def _confirmed_view(self, method: str, item: dict[str, Any], now: float) -> dict[str, Any]:
        """A ``confirmed`` read's answer as a cluster that has not confirmed recent slots has it."""
        result = item["result"]
        if method == "getTransaction" and result and self._confirming(int(result["slot"]), now):
            self.injected["transaction not confirmed yet"] += 1
            return {**item, "result": None}
        if method == "getSignaturesForAddress":
            kept = [entry for entry in result if not self._confirming(int(entry["slot"]), now)]
            if len(kept) < len(result):
                self.injected["transaction not confirmed yet"] += len(result) - len(kept)
                return {**item, "result": kept}
        return item

    def _confirming(self, slot: int, now: float) -> bool:
        """Whether the cluster has not confirmed ``slot`` yet (its clock starts when first met).

        Confirmation is of a slot and its ancestors: a slot's moment is never before an older
        slot's, nor after a newer one's (both already known).
        """
        provider = self.provider
        if not provider.confirm_seconds:
            return False
        at = self._confirmed_at.get(slot)
        if at is None:
            spread = self._rng.uniform(0, provider.confirm_spread) if provider.confirm_spread else 0
            at = now + provider.confirm_seconds + spread
            older = [t for s, t in self._confirmed_at.items() if s < slot]
            newer = [t for s, t in self._confirmed_at.items() if s > slot]
            at = min(max([at, *older]), *newer, math.inf)
            self._confirmed_at[slot] = at
        return now < at

    def _behind(self, key: str, now: float, seconds: float) -> bool:
        """Whether ``key``'s delay (``seconds``, up to ``lag_spread`` more) since first met runs."""
        until = self._behind_until.get(key)
        if until is None:
            spread = self.provider.lag_spread
            # No draw without a spread, so that a seed's faults stay what they were.
            until = now + seconds + (self._rng.uniform(0, spread) if spread else 0.0)
            self._behind_until[key] = until
        return now < until

    def _leader_lacks(self, blockhash: str, now: float) -> bool:
        """Whether a send signed with ``blockhash`` reaches a leader that does not know it yet."""
        rate = self.provider.unknown_blockhash
        handed = self._first_seen.get(blockhash)
        if not rate or handed is None or now - handed >= self.provider.unknown_blockhash_seconds:
            return False
        return rate >= 1 or self._rng.random() < rate

    def _edit(self, body: bytes, answer: bytes) -> bytes:
        """The node's answer with each edited method's result rewritten."""
        try:
            payload, reply = json.loads(body), json.loads(answer)
        except ValueError:
            return answer
        calls = payload if isinstance(payload, list) else [payload]
        by_id = {c.get("id"): c for c in calls if isinstance(c, dict)}
        for item in reply if isinstance(reply, list) else [reply]:
            call = by_id.get(item.get("id")) if isinstance(item, dict) else None
            method = call.get("method") if call is not None else None
            if method in self.edits and "result" in item:
                item["result"] = self.edits[method](item["result"])
                self.injected[f"edited {method}"] += 1
            if method in _ACCOUNT_READS and self.patches and item.get("result"):
                self._patch(call, item["result"])
        return json.dumps(reply).encode()

    def _patch(self, call: dict[str, Any], result: dict[str, Any]) -> None:
        """Write ``patches`` over the accounts of a getAccountInfo or getMultipleAccounts answer."""
        params = call.get("params") or []
        single = call["method"] == "getAccountInfo"
        addresses = [params[0]] if single else list(params[0])
        values = [result["value"]] if single else result["value"]
        config = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
        start = (config.get("dataSlice") or {}).get("offset", 0)
        for address, value in zip(addresses, values, strict=True):
            if value is None or address not in self.patches:
                continue
            data = bytearray(base64.b64decode(value["data"][0]))
            for offset, patch in self.patches[address]:
                at = offset - start
                for i, byte in enumerate(patch):
                    if 0 <= at + i < len(data):
                        data[at + i] = byte
            value["data"][0] = base64.b64encode(bytes(data)).decode()
            self.injected[f"patched {address}"] += 1

    async def _deliver(self, body: bytes, request: Request) -> tuple[int, bytes] | None:
        """Forward to the node and book the transactions; None if the node is gone."""
        if not body:
            return 200, b"[]"  # every call was held back: nothing reaches the node
        try:
            assert self._session is not None
            async with self._session.post(
                self.upstream, data=body, headers={"content-type": "application/json"}
            ) as response:
                answer = response.status, await response.read()
        except aiohttp.ClientConnectorError:
            return None  # no node listening: nothing was delivered, so nothing is booked
        except (TimeoutError, aiohttp.ClientError):
            self.sent.extend(request.transactions)  # delivered; maybe applied
            return None
        refusal = _node_refusal(body, *answer)
        if refusal is not None:
            self.node_refused[refusal] += 1  # refused whole: nothing of it ran
        else:
            self.sent.extend(request.transactions)
        return answer

    async def _fire(self, stage: str, request: Request) -> list[Trigger]:
        fired: list[Trigger] = []
        for trigger in self._triggers:
            if trigger.stage == stage and not trigger.fired and trigger.predicate(self, request):
                trigger.fired = True
                await asyncio.to_thread(trigger.action)
                fired.append(trigger)
        return fired


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    """Read one HTTP/1.1 request; return its body, or None at the end of the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return await reader.readexactly(length)


def _node_refusal(body: bytes, status: int, answer: bytes) -> str | None:
    """How the node refused a request whole (HTTP 429, or one error for a batch), or None."""
    if status == 429:
        return "rate limited"
    if body.lstrip().startswith(b"[") and answer.lstrip().startswith(b"{"):
        return "batch refused"
    return None


def _forget_statuses(answer: bytes, searched: dict[Any, bool]) -> bytes:
    """The statuses a node whose cache holds nothing gives: null unless history was searched."""
    try:
        reply = json.loads(answer)
    except ValueError:
        return answer
    for item in reply if isinstance(reply, list) else [reply]:
        if isinstance(item, dict) and searched.get(item.get("id")) is False and "result" in item:
            values = item["result"]["value"]
            item["result"]["value"] = [None] * len(values)
    return json.dumps(reply).encode()


def _merge(answer: bytes, held: list[dict[str, Any]]) -> bytes:
    """The node's answer with the answers of the calls the proxy held back put in."""
    try:
        reply = json.loads(answer)
    except ValueError:
        return answer
    items = reply if isinstance(reply, list) else [reply]
    merged = [item for item in items if item] + held
    return json.dumps(merged if len(merged) != 1 or isinstance(reply, list) else merged[0]).encode()


def _head(status: int, length: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}"]
    lines += ["Content-Type: application/json", f"Content-Length: {length}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _respond(
    writer: asyncio.StreamWriter, status: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
    writer.write(_head(status, len(body), headers or {}) + body)
    await writer.drain()


def _parse(body: bytes) -> Request:
    """The methods of a JSON-RPC body (a call or a batch), its transactions decoded."""
    try:
        payload = json.loads(body)
    except ValueError:
        return Request((), [])
    calls = [
        c for c in (payload if isinstance(payload, list) else [payload]) if isinstance(c, dict)
    ]
    return Request(
        tuple(str(call.get("method")) for call in calls),
        [_decode(call["params"][0]) for call in calls if call.get("method") == "sendTransaction"],
    )


def _decode(encoded: str) -> SentTransaction:
    raw = base64.b64decode(encoded)
    try:
        tx: Any = Transaction.from_bytes(raw)
    except ValueError:
        tx = VersionedTransaction.from_bytes(raw)
    message = tx.message
    keys = message.account_keys
    signature = str(tx.signatures[0])
    blockhash = str(message.recent_blockhash)
    for ix in message.instructions:
        data = bytes(ix.data)
        if keys[ix.program_id_index] == LOADER_V3 and len(data) >= 4:
            kind = _LOADER_KINDS.get(struct.unpack_from("<I", data)[0], "other")
            if kind == "loader_write":
                _, offset, length = _LOADER_WRITE_ARGS.unpack_from(data)
                account = str(keys[ix.accounts[0]])
                return SentTransaction(
                    signature, kind, len(tx.signatures), account, offset, length, blockhash
                )
            return SentTransaction(signature, kind, len(tx.signatures), blockhash=blockhash)
        kind = _KINDS.get(data[:8], "")
        if not kind:
            continue
        if kind == "write_weights":
            offset, length = _WRITE_ARGS.unpack_from(data, 8)
            account = str(keys[ix.accounts[1]])
            return SentTransaction(
                signature, kind, len(tx.signatures), account, offset, length, blockhash
            )
        return SentTransaction(signature, kind, len(tx.signatures), blockhash=blockhash)
    return SentTransaction(signature, "other", len(tx.signatures), blockhash=blockhash)


# What landed, read from the node directly (never through the proxy), at the commitment the
# CLI confirms at: once a command has exited, everything it did is visible there.


def rpc(url: str, method: str, *params: Any) -> Any:
    """One JSON-RPC call straight to ``url``; return its result."""
    answer = httpx.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}, timeout=30
    ).json()
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


def balance(url: str, pubkey: object) -> int:
    """Lamports held by ``pubkey``."""
    return int(rpc(url, "getBalance", str(pubkey), {"commitment": "confirmed"})["value"])


def fund(url: str, keypair: Keypair, lamports: int, folder: Path) -> Path:
    """Airdrop ``lamports`` to ``keypair`` at ``url``, wait until held; return its file."""
    rpc(url, "requestAirdrop", str(keypair.pubkey()), lamports)
    deadline = time.monotonic() + 60
    while balance(url, keypair.pubkey()) != lamports:
        assert time.monotonic() < deadline, "the airdrop did not land"
        time.sleep(0.05)
    path = folder / "payer.json"
    write_keypair(keypair, path)
    return path


def landed(url: str, sent: list[SentTransaction]) -> dict[str, tuple[SentTransaction, Any]]:
    """Each distinct signature among ``sent`` that the node processed: (transaction, err)."""
    unique = {tx.signature: tx for tx in sent}
    signatures = list(unique)
    out: dict[str, tuple[SentTransaction, Any]] = {}
    for i in range(0, len(signatures), 256):
        part = signatures[i : i + 256]
        statuses = rpc(url, "getSignatureStatuses", part, {"searchTransactionHistory": True})
        for signature, status in zip(part, statuses["value"], strict=True):
            if status is not None:
                out[signature] = (unique[signature], status["err"])
    return out


def wait_confirmed(url: str, sent: list[SentTransaction], within: float = 60) -> None:
    """Return once every transaction among ``sent`` that the node processed is confirmed.

    A rerun reads the chain at ``confirmed``: what a killed run landed in the slot under way
    shows there only once that slot is over.
    """
    deadline = time.monotonic() + within
    signatures = list({tx.signature for tx in sent})
    while True:
        pending = []
        for i in range(0, len(signatures), 256):
            part = signatures[i : i + 256]
            statuses = rpc(url, "getSignatureStatuses", part, {"searchTransactionHistory": True})
            pending += [
                s for s in statuses["value"] if s and s["confirmationStatus"] == "processed"
            ]
        if not pending:
            return
        assert time.monotonic() < deadline, f"{len(pending)} transactions never confirmed"
        time.sleep(0.05)


def fees_paid(url: str, sent: list[SentTransaction]) -> int:
    """Fees paid for what the proxy delivered, per landed signature.

    The CLI sets no priority fee on loopback, so a signature costs the base fee.
    """
    return LAMPORTS_PER_SIGNATURE * sum(tx.signatures for tx, _ in landed(url, sent).values())


def account_states(url: str, keys: list[str]) -> dict[str, tuple[int, str, bytes]]:
    """Each account's lamports, owner and data (whole), straight from the node."""
    out: dict[str, tuple[int, str, bytes]] = {}
    for key in keys:
        config = {"encoding": "base64", "commitment": "confirmed"}
        value = rpc(url, "getAccountInfo", key, config)["value"]
        assert value is not None, f"account {key} is missing"
        out[key] = (value["lamports"], value["owner"], base64.b64decode(value["data"][0]))
    return out


# The client under test: the real CLI, as its own process.


def cli_command(*args: str) -> list[str]:
    """The argv that runs ``curta-chain *args`` with this interpreter."""
    return [sys.executable, "-m", "curta_chain", *args]


def run_cli(*args: str, timeout: float = 300) -> tuple[int, dict[str, Any] | None, str]:
    """Run ``curta-chain *args --output json-compact``; return (exit code, the JSON, stderr)."""
    done = run_plain(*args, "--output", "json-compact", timeout=timeout)
    lines = done.stdout.strip().splitlines()
    return done.returncode, json.loads(lines[-1]) if lines else None, done.stderr


def run_plain(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``curta-chain *args`` as a user would, with no terminal on stdin."""
    return processes.run(
        cli_command(*args),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def start_cli(*args: str) -> subprocess.Popen[str]:
    """Start ``curta-chain *args --output json-compact`` in the background."""
    return processes.start(
        cli_command(*args, "--output", "json-compact"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# Measurements for docs/reliability.md's table (scripts/reliability_report.py collects them).


def record(scenario: str, **numbers: object) -> None:
    """Append one scenario's numbers to ``$CURTA_RELIABILITY_LOG`` (JSON lines), if set."""
    path = os.environ.get("CURTA_RELIABILITY_LOG")
    if path:
        with open(path, "a") as log:
            log.write(json.dumps({"scenario": scenario, **numbers}) + "\n")

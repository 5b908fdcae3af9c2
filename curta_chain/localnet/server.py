"""The HTTP side: JSON-RPC 2.0 over aiohttp (keep-alive), single requests and batches.

One event-loop thread owns the ``Localnet`` (LiteSVM is not thread-safe, and its calls are
short). Requests that change the chain are answered only once their ledger records are
fsynced: a flush task writes everything queued so far in a writer thread while the loop
keeps executing, so one fsync serves every request that arrived meanwhile (group commit).
Starting and stopping (the listening sockets, the chain's lifetime) is ``lifecycle``'s.
"""

import asyncio
import contextlib
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web

from curta_chain.errors import CurtaError, LocalnetError
from curta_chain.localnet.busy import RateLimit
from curta_chain.localnet.methods import METHODS, WRITE_METHODS
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.persistence import begin_snapshot
from curta_chain.localnet.pubsub import PubSub
from curta_chain.localnet.rpc_errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROVIDER_BATCH_SIZE_EXCEEDED,
    PROVIDER_RATE_LIMITED,
    RpcMethodError,
)
from curta_chain.reporting import Reporter

MAX_REQUEST_BYTES = 64 * 1024 * 1024
_SEPARATORS = (",", ":")
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, GET, OPTIONS",
    "Access-Control-Allow-Headers": "content-type, solana-client",
    "Access-Control-Max-Age": "86400",
}
"""What agave's RPC service answers every origin (its CORS policy is "any"): a browser page
on another origin (the `curta-chain web` page, a wallet's) may call the localnet directly."""


@web.middleware
async def cors(request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
    """Answer a browser's preflight, and let any origin read every answer."""
    if request.method == "OPTIONS":
        response: web.StreamResponse = web.Response(status=204)
    else:
        response = await handler(request)
    response.headers.update(CORS_HEADERS)
    return response


def _error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": request_id}


def answer(localnet: Localnet, item: Any) -> tuple[dict[str, Any] | None, bool]:
    """Run one JSON-RPC request against ``localnet``: its response and whether it wrote.

    The response is None for a notification (a request without an id). No HTTP and no
    durability here: ``RpcServer`` adds both (a write is answered once it is on disk).
    """
    if (
        not isinstance(item, dict)
        or item.get("jsonrpc") != "2.0"
        or not isinstance(item.get("method"), str)
    ):
        request_id = item.get("id") if isinstance(item, dict) else None
        return _error(INVALID_REQUEST, "Invalid request", request_id), False
    notification = "id" not in item
    request_id = item.get("id")
    method = METHODS.get(item["method"])
    if method is None:
        response = _error(METHOD_NOT_FOUND, "Method not found", request_id)
        return (None if notification else response), False
    params = item.get("params")
    if params is None:
        params = []
    if not isinstance(params, list):
        response = _error(INVALID_PARAMS, "Invalid params: expected an array", request_id)
        return (None if notification else response), False
    writes = item["method"] in WRITE_METHODS
    try:
        result = method(localnet, params)
    except RpcMethodError as exc:
        response = {"jsonrpc": "2.0", "error": exc.to_json(), "id": request_id}
    except Exception as exc:  # a bug must cost one answer, never the server
        response = _error(INTERNAL_ERROR, f"Internal error: {exc!r}", request_id)
    else:
        response = {"jsonrpc": "2.0", "result": result, "id": request_id}
    return (None if notification else response), writes


class RpcServer:
    """Dispatches JSON-RPC requests to ``METHODS`` and makes writes durable before answering."""

    def __init__(
        self,
        localnet: Localnet,
        reporter: Reporter,
        on_failure: Callable[[], None],
        pubsub: PubSub | None = None,
    ):
        self.localnet = localnet
        self.pubsub = pubsub
        self.reporter = reporter
        self.failure: LocalnetError | None = None
        self._on_failure = on_failure
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger")
        self._flush_task: asyncio.Future[None] | None = None
        self._snapshot_task: asyncio.Future[None] | None = None
        busy = localnet.busy
        self._rate = RateLimit(busy.rps) if busy.rps is not None else None
        self._max_batch = busy.max_batch

    async def handle(self, request: web.Request) -> web.Response:
        """Answer one HTTP POST: a JSON-RPC request or a batch of them."""
        try:
            body = await request.read()
        except ConnectionError:
            # The client left mid-request (Ctrl-C, a timeout): nobody to answer, nothing to log.
            return web.Response(status=499)
        if self.failure is not None:
            # The chain is ahead of its log: nothing more may be served or acknowledged.
            return self._respond(_error(INTERNAL_ERROR, f"Internal error: {self.failure}"), 500)
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return self._respond(_error(PARSE_ERROR, "Parse error"))
        refusal = self._provider_refusal(payload)
        if refusal is not None:
            return refusal
        if isinstance(payload, list):
            if not payload:
                return self._respond(_error(INVALID_REQUEST, "Invalid request"))
            answers = []
            for item in payload:
                answers.append(self._call(item))
                if answers[-1][1]:
                    # A batch of transactions runs for a while: let other clients' calls
                    # in between them, as a validator answers reads while it executes (a
                    # client rerun after Ctrl-C reads at once, its old batch still running).
                    await asyncio.sleep(0)
        else:
            answers = [self._call(payload)]
        # In block mode any request may have produced a block (every call looks at the
        # clock): its notifications go out before an answer can tell of it.
        produced = self.localnet.leader is not None and self.localnet.landed_waiting
        if produced or any(wrote for _, wrote in answers):
            try:
                await self.wait_durable(self.localnet.ledger.seq if self.localnet.ledger else 0)
            except LocalnetError as exc:
                # Nothing queued may be reported as done: fail the whole request.
                return self._respond(_error(INTERNAL_ERROR, f"Internal error: {exc}"), status=500)
            if self.pubsub is not None:
                self.pubsub.publish(self.localnet.take_landed())
        responses = [answer for answer, _ in answers if answer is not None]
        if isinstance(payload, list):
            return self._respond(responses)
        if not responses:  # a notification gets no answer
            return web.Response(status=204)
        return self._respond(responses[0])

    def _provider_refusal(self, payload: Any) -> web.Response | None:
        """Refuse as a paid provider does: a batch past ``max_batch``, calls past ``rps``."""
        calls = len(payload) if isinstance(payload, list) else 1
        if self._max_batch is not None and isinstance(payload, list) and calls > self._max_batch:
            return self._respond(_error(PROVIDER_BATCH_SIZE_EXCEEDED, "Batch Size Exceeded"))
        if self._rate is not None:
            wait = self._rate.admit(calls)
            if wait is not None:
                response = self._respond(_error(PROVIDER_RATE_LIMITED, "Rate Limited"), 429)
                response.headers["Retry-After"] = str(wait)
                return response
        return None

    @staticmethod
    def _respond(body: Any, status: int = 200) -> web.Response:
        return web.Response(
            body=json.dumps(body, separators=_SEPARATORS).encode(),
            status=status,
            content_type="application/json",
        )

    def _call(self, item: Any) -> tuple[dict[str, Any] | None, bool]:
        return answer(self.localnet, item)

    async def wait_durable(self, seq: int) -> None:
        """Return once every ledger record up to ``seq`` is fsynced.

        Raises:
            LocalnetError: the ledger could not be written.
        """
        ledger = self.localnet.ledger
        if ledger is None:
            return
        while ledger.durable_seq < seq:
            if self.failure is not None:
                raise self.failure
            if self._flush_task is None:
                self._flush_task = asyncio.ensure_future(self._flush())
            await asyncio.shield(self._flush_task)

    async def _flush(self) -> None:
        ledger = self.localnet.ledger
        assert ledger is not None
        try:
            pending, upto = ledger.take_pending()
            if pending:
                await asyncio.get_running_loop().run_in_executor(
                    self._writer, ledger.write, pending
                )
            ledger.mark_durable(upto)
        except LocalnetError as exc:
            self.failure = exc
            self._on_failure()
            raise
        finally:
            self._flush_task = None
        if self.localnet.snapshot_due and self._snapshot_task is None:
            self._snapshot_task = asyncio.ensure_future(self._snapshot())

    async def _snapshot(self) -> None:
        ledger = self.localnet.ledger
        assert ledger is not None
        try:
            snapshot = begin_snapshot(self.localnet)
            await self.wait_durable(ledger.seq)
            await asyncio.get_running_loop().run_in_executor(
                self._writer, ledger.write_snapshot, snapshot
            )
        except CurtaError as exc:
            # The log still holds everything; only start-up gets slower.
            self.reporter.line(f"warning: snapshot not written: {exc}")
        finally:
            self._snapshot_task = None

    async def produce_blocks(self) -> None:
        """In block mode: produce each slot's block as the slot begins, then publish it.

        Requests produce blocks too (every read ticks the clock); this task makes sure a
        block is produced, made durable and notified even when nobody asks.
        """
        localnet = self.localnet
        while self.failure is None:
            await asyncio.sleep(localnet.clock.seconds_to_next_slot())
            localnet.tick()
            ledger = localnet.ledger
            if ledger is not None and ledger.durable_seq < ledger.seq:
                try:
                    await self.wait_durable(ledger.seq)
                except LocalnetError:
                    return  # _flush reported it and stopped the server
            if self.pubsub is not None:
                self.pubsub.publish(localnet.take_landed())

    async def drain(self) -> None:
        """Finish queued writes and a running snapshot."""
        if self._snapshot_task is not None:
            with contextlib.suppress(CurtaError):
                await self._snapshot_task
        if self.localnet.ledger is not None and self.failure is None:
            await self.wait_durable(self.localnet.ledger.seq)
        self._writer.shutdown(wait=True)

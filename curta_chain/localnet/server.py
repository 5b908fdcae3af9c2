"""The HTTP side: JSON-RPC 2.0 over aiohttp (keep-alive), single requests and batches.

One event-loop thread owns the ``Localnet`` (LiteSVM is not thread-safe, and its calls are
short). Requests that change the chain are answered only once their ledger records are
fsynced: a flush task writes everything queued so far in a writer thread while the loop
keeps executing, so one fsync serves every request that arrived meanwhile (group commit).
"""

import asyncio
import contextlib
import json
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from curta_chain.errors import CurtaError, LocalnetError
from curta_chain.localnet.clock import SLOT_SECONDS
from curta_chain.localnet.methods import METHODS, WRITE_METHODS
from curta_chain.localnet.pubsub import PubSub
from curta_chain.localnet.rpc_errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcMethodError,
)
from curta_chain.localnet.state import DEFAULT_SNAPSHOT_BYTES, Localnet
from curta_chain.reporting import NullReporter, Reporter

MAX_REQUEST_BYTES = 64 * 1024 * 1024
_JSON = {"separators": (",", ":")}


def _error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": request_id}


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

    async def handle(self, request: web.Request) -> web.Response:
        """Answer one HTTP POST: a JSON-RPC request or a batch of them."""
        body = await request.read()
        if self.failure is not None:
            # The chain is ahead of its log: nothing more may be served or acknowledged.
            return self._respond(_error(INTERNAL_ERROR, f"Internal error: {self.failure}"), 500)
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return self._respond(_error(PARSE_ERROR, "Parse error"))
        if isinstance(payload, list):
            if not payload:
                return self._respond(_error(INVALID_REQUEST, "Invalid request"))
            answers = [self._call(item) for item in payload]
        else:
            answers = [self._call(payload)]
        if any(wrote for _, wrote in answers):
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

    @staticmethod
    def _respond(body: Any, status: int = 200) -> web.Response:
        return web.Response(
            body=json.dumps(body, **_JSON).encode(), status=status, content_type="application/json"
        )

    def _call(self, item: Any) -> tuple[dict[str, Any] | None, bool]:
        """Run one request; return its response (None for a notification) and if it wrote."""
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
            answer = _error(METHOD_NOT_FOUND, "Method not found", request_id)
            return (None if notification else answer), False
        params = item.get("params", [])
        if params is None:
            params = []
        if not isinstance(params, list):
            answer = _error(INVALID_PARAMS, "Invalid params: expected an array", request_id)
            return (None if notification else answer), False
        writes = item["method"] in WRITE_METHODS
        try:
            result = method(self.localnet, params)
        except RpcMethodError as exc:
            answer = {"jsonrpc": "2.0", "error": exc.to_json(), "id": request_id}
        except Exception as exc:  # a bug must cost one answer, never the server
            answer = _error(INTERNAL_ERROR, f"Internal error: {exc!r}", request_id)
        else:
            answer = {"jsonrpc": "2.0", "result": result, "id": request_id}
        return (None if notification else answer), writes

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
            ledger.durable_seq = max(ledger.durable_seq, upto)
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
            snapshot = self.localnet.begin_snapshot()
            await self.wait_durable(ledger.seq)
            await asyncio.get_running_loop().run_in_executor(
                self._writer, ledger.write_snapshot, snapshot
            )
        except CurtaError as exc:
            # The log still holds everything; only start-up gets slower.
            self.reporter.line(f"warning: snapshot not written: {exc}")
        finally:
            self._snapshot_task = None

    async def drain(self) -> None:
        """Finish queued writes and a running snapshot."""
        if self._snapshot_task is not None:
            with contextlib.suppress(CurtaError):
                await self._snapshot_task
        if self.localnet.ledger is not None and self.failure is None:
            await self.wait_durable(self.localnet.ledger.seq)
        self._writer.shutdown(wait=True)


async def _health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _run(
    localnet: Localnet,
    host: str,
    port: int,
    ready: Callable[[str, str | None], None],
    stop: asyncio.Event,
    reporter: Reporter,
) -> None:
    """Serve until ``stop`` is set or the ledger fails.

    JSON-RPC listens on ``port``, the PubSub websocket on ``port + 1`` as on a validator
    (both on free ports when ``port`` is 0); a taken websocket port only costs PubSub.

    Raises:
        LocalnetError: the port is taken, or the ledger could not be written.
    """
    pubsub = PubSub(localnet)
    server = RpcServer(localnet, reporter, stop.set, pubsub)
    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    app.router.add_post("/", server.handle)
    app.router.add_get("/health", _health)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    ws_app = web.Application()
    ws_app.router.add_get("/", pubsub.handle)
    ws_runner = web.AppRunner(ws_app, access_log=None, handle_signals=False)
    await runner.setup()
    await ws_runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            raise LocalnetError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ws_port = bound + 1 if port else 0
        ws_site = web.TCPSite(ws_runner, host, ws_port)
        try:
            await ws_site.start()
            ws_bound = ws_site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ws_url: str | None = f"ws://{host}:{ws_bound}"
        except OSError as exc:
            reporter.line(f"warning: no PubSub websocket: {host}:{ws_port}: {exc.strerror}")
            ws_url = None
        ready(f"http://{host}:{bound}", ws_url)
        await stop.wait()
    finally:
        await pubsub.close()
        await ws_runner.cleanup()
        await runner.cleanup()
        await server.drain()
    if server.failure is not None:
        raise server.failure


def serve(
    port: int = 8899,
    ledger: Path | None = None,
    reset: bool = False,
    host: str = "127.0.0.1",
    reporter: Reporter | None = None,
    slot_duration: float = SLOT_SECONDS,
) -> None:
    """Serve the localnet until Ctrl-C or SIGTERM; report its URL once it accepts requests.

    Raises:
        LocalnetError: the ledger cannot be opened or the port is taken.
    """
    reporter = reporter or NullReporter()
    if ledger is not None:
        reporter.line(f"Ledger {ledger}{' (reset)' if reset else ''}: loading")
    localnet = Localnet(ledger=ledger, reset=reset, slot_duration=slot_duration)
    if ledger is not None:
        reporter.line(f"Ledger {ledger}: {localnet.replayed:,} transactions replayed")
    if localnet.program_binary is None:
        reporter.line("warning: no curta program binary in this install; serving without it")
    else:
        reporter.line(f"Program {localnet.program_id} preloaded from {localnet.program_binary}")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)

        def announce(url: str, ws_url: str | None) -> None:
            if ws_url is not None:
                reporter.line(f"PubSub websocket at {ws_url}")
            reporter.line(f"Localnet ready at {url}")

        await _run(localnet, host, port, announce, stop, reporter)

    try:
        asyncio.run(main())
    finally:
        localnet.close()
    reporter.line("Localnet stopped")


@dataclass
class LocalnetHandle:
    """A localnet serving from a background thread: its ``url``, and ``stop()``.

    ``ws_url`` is its PubSub websocket (None if that port could not be had).
    """

    url: str
    ws_url: str | None
    _thread: threading.Thread
    _loop: asyncio.AbstractEventLoop
    _stop: asyncio.Event
    _localnet: Localnet

    def stop(self) -> None:
        """Stop serving, flush the ledger and release it; safe to call twice."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join()

    def call(self, function: Callable[[Localnet], Any]) -> Any:
        """Run ``function(localnet)`` on the server's thread (LiteSVM is single-threaded)."""
        done = asyncio.run_coroutine_threadsafe(_apply(function, self._localnet), self._loop)
        return done.result()


async def _apply(function: Callable[[Localnet], Any], localnet: Localnet) -> Any:
    return function(localnet)


def start_in_thread(
    port: int = 0,
    ledger: Path | None = None,
    reset: bool = False,
    host: str = "127.0.0.1",
    slot_duration: float = SLOT_SECONDS,
    snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES,
) -> LocalnetHandle:
    """Start a localnet in a daemon thread and return once it accepts requests.

    ``port=0`` picks a free port; the handle's ``url`` names it.

    Raises:
        LocalnetError: the localnet could not start.
    """
    started: dict[str, Any] = {}
    ready = threading.Event()

    def run() -> None:
        try:
            localnet = Localnet(
                ledger=ledger,
                reset=reset,
                slot_duration=slot_duration,
                snapshot_bytes=snapshot_bytes,
            )
        except BaseException as exc:
            started["error"] = exc
            ready.set()
            return

        async def main() -> None:
            stop = asyncio.Event()
            started.update(loop=asyncio.get_running_loop(), stop=stop, localnet=localnet)

            def on_ready(url: str, ws_url: str | None) -> None:
                started["url"], started["ws_url"] = url, ws_url
                ready.set()

            await _run(localnet, host, port, on_ready, stop, NullReporter())

        try:
            asyncio.run(main())
        except BaseException as exc:
            started["error"] = exc
        finally:
            localnet.close()
            ready.set()

    thread = threading.Thread(target=run, name="curta-localnet", daemon=True)
    thread.start()
    ready.wait()
    if "url" not in started:
        thread.join()
        error = started.get("error")
        if isinstance(error, LocalnetError):
            raise error
        raise LocalnetError(f"localnet failed to start: {error}") from error
    return LocalnetHandle(
        started["url"],
        started["ws_url"],
        thread,
        started["loop"],
        started["stop"],
        started["localnet"],
    )

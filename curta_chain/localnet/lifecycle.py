"""One lifecycle for every way the localnet runs: open the chain, listen, serve, close.

``run_localnet`` is it: it opens the ``Localnet`` (replaying its ledger), serves JSON-RPC
on ``port`` and PubSub on ``port + 1`` (both free ports when ``port`` is 0) until ``stop``
is set or the ledger fails, then drains the log and releases the ledger. ``serve`` runs
it in the foreground until Ctrl-C or SIGTERM (``curta-chain localnet``);
``start_in_thread`` runs it in a daemon thread and returns a ``LocalnetHandle`` (tests,
benchmarks).
"""

import asyncio
import contextlib
import errno
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from solders.pubkey import Pubkey

from curta_chain.constants import LOCALNET_PORT
from curta_chain.errors import CurtaError, LocalnetError
from curta_chain.localnet.busy import NOT_BUSY, BusyOptions
from curta_chain.localnet.clock import SLOT_SECONDS
from curta_chain.localnet.features import unknown_feature_warning
from curta_chain.localnet.node import DEFAULT_SNAPSHOT_BYTES, Localnet
from curta_chain.localnet.pubsub import PubSub
from curta_chain.localnet.server import MAX_REQUEST_BYTES, RpcServer, cors
from curta_chain.reporting import NullReporter, Reporter, counted
from curta_chain.user_data import record_local_cluster


@dataclass(frozen=True)
class LocalnetOptions:
    """How to run a localnet (``curta-chain localnet``'s options, and the tests' knobs)."""

    port: int = LOCALNET_PORT
    host: str = "127.0.0.1"
    ledger: Path | None = None
    reset: bool = False
    slot_duration: float = SLOT_SECONDS
    snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES
    now: Callable[[], float] = time.time
    """The time source slots are counted from: a ``ManualClock`` makes tests sleep-free."""
    busy: BusyOptions = NOT_BUSY
    """The busy-cluster behaviours (blocks, loss, limits, providers); none by default."""
    deactivate_features: tuple[Pubkey, ...] = ()
    """Feature ids deactivated at genesis (``--deactivate-feature``); all active by default."""
    genesis_seed: bytes | None = None
    """A memory-only chain's genesis seed (``Localnet``'s): random by default."""


Ready = Callable[[Localnet, str, str | None], None]
"""Called once both servers listen: the chain, the JSON-RPC URL, the PubSub URL or None."""


def open_localnet(options: LocalnetOptions, reporter: Reporter) -> Localnet:
    """Open the chain ``options`` describe, reporting the ledger's replay.

    Raises:
        LocalnetError: the ledger cannot be opened or replayed.
    """
    if options.ledger is not None:
        reset = " (reset)" if options.reset else ""
        reporter.line(f"Ledger {options.ledger}{reset}: loading")
    localnet = Localnet(
        ledger=options.ledger,
        reset=options.reset,
        slot_duration=options.slot_duration,
        snapshot_bytes=options.snapshot_bytes,
        now=options.now,
        busy=options.busy,
        deactivate_features=options.deactivate_features,
        genesis_seed=options.genesis_seed,
    )
    # What solana-test-validator prints (or logs) for the same flags.
    if localnet.deactivation_ignored:
        reporter.line("--deactivate-feature argument ignored, ledger already exists")
    for feature in localnet.unknown_features:
        reporter.line(f"warning: {unknown_feature_warning(feature)}")
    if options.ledger is not None:
        reporter.line(
            f"Ledger {options.ledger}: {counted(localnet.replayed, 'transaction')} replayed"
        )
    if localnet.program_binary is None:
        reporter.line("warning: no curta program binary in this install; serving without it")
    else:
        reporter.line(f"Program {localnet.program_id} preloaded from {localnet.program_binary}")
    return localnet


def run_localnet(
    options: LocalnetOptions,
    ready: Ready,
    reporter: Reporter,
    on_loop: Callable[[asyncio.AbstractEventLoop, asyncio.Event], None] = lambda loop, stop: None,
) -> None:
    """Open the chain, serve until stopped, close the chain; blocks the calling thread.

    ``on_loop`` gets the event loop and the stop event before anything listens (to install
    signal handlers, or to stop from another thread).

    Raises:
        LocalnetError: the ledger cannot be opened or written, or the port is taken.
    """
    if options.port:
        _check_port_free(options.host, options.port)
    localnet = open_localnet(options, reporter)

    async def main() -> None:
        stop = asyncio.Event()
        on_loop(asyncio.get_running_loop(), stop)
        await _serve(localnet, options, ready, stop, reporter)

    try:
        asyncio.run(main())
    finally:
        localnet.close()


def _cannot_listen(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is in use (another localnet or validator?): pick another "
            "with --port, or --port 0 for a free one"
        )
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


def _check_port_free(host: str, port: int) -> None:
    """Refuse a taken port before the chain is opened, so the refusal is the only line.

    Raises:
        LocalnetError: nothing can listen on ``host:port``.
    """
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise LocalnetError(_cannot_listen(host, port, exc)) from exc


def _record(localnet: Localnet, url: str, reporter: Reporter) -> None:
    """Record the chain's genesis hash as a local test cluster of this user's, before serving.

    A client treats the node as one (no spend prompt, the preloaded program by default) only
    once it is recorded; a record that cannot be written leaves it a real cluster to them.
    """
    try:
        record = record_local_cluster(localnet.genesis_hash, "curta-chain localnet", url)
    except CurtaError as exc:
        reporter.line(
            f"warning: {exc}: chain commands will treat this localnet as a real cluster "
            "(--program-id and --yes needed)"
        )
        return
    reporter.line(f"Genesis hash {localnet.genesis_hash} (recorded in {record})")


async def _health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _serve(
    localnet: Localnet,
    options: LocalnetOptions,
    ready: Ready,
    stop: asyncio.Event,
    reporter: Reporter,
) -> None:
    """Listen and serve until ``stop`` is set or the ledger fails.

    A taken PubSub port costs only PubSub.
    """
    pubsub = PubSub(localnet)
    server = RpcServer(localnet, reporter, stop.set, pubsub)
    app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=[cors])
    app.router.add_post("/", server.handle)
    app.router.add_route("OPTIONS", "/", server.handle)  # answered by the cors middleware
    app.router.add_get("/health", _health)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    ws_app = web.Application()
    ws_app.router.add_get("/", pubsub.handle)
    ws_runner = web.AppRunner(ws_app, access_log=None, handle_signals=False)
    await runner.setup()
    await ws_runner.setup()
    host = options.host
    blocks: asyncio.Future[None] | None = None
    try:
        site = web.TCPSite(runner, host, options.port)
        try:
            await site.start()
        except OSError as exc:
            raise LocalnetError(_cannot_listen(host, options.port, exc)) from exc
        bound = runner.addresses[0][1]
        ws_port = bound + 1 if options.port else 0
        ws_site = web.TCPSite(ws_runner, host, ws_port)
        try:
            await ws_site.start()
            ws_bound = ws_runner.addresses[0][1]
            ws_url: str | None = f"ws://{host}:{ws_bound}"
        except OSError as exc:
            reporter.line(f"warning: no PubSub websocket: {host}:{ws_port}: {exc.strerror}")
            ws_url, ws_bound = None, None
        localnet.endpoints = (
            f"{host}:{bound}",
            f"{host}:{ws_bound}" if ws_bound is not None else None,
        )
        url = f"http://{host}:{bound}"
        _record(localnet, url, reporter)
        ready(localnet, url, ws_url)
        if localnet.leader is not None:
            blocks = asyncio.ensure_future(server.produce_blocks())
        await stop.wait()
    finally:
        if blocks is not None:
            blocks.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await blocks
        await pubsub.close()
        await ws_runner.cleanup()
        await runner.cleanup()
        await server.drain()
    if server.failure is not None:
        raise server.failure


def serve(
    port: int = LOCALNET_PORT,
    ledger: Path | None = None,
    reset: bool = False,
    host: str = "127.0.0.1",
    reporter: Reporter | None = None,
    slot_duration: float = SLOT_SECONDS,
    busy: BusyOptions = NOT_BUSY,
    deactivate_features: tuple[Pubkey, ...] = (),
) -> None:
    """Serve the localnet until Ctrl-C or SIGTERM; report its URL once it accepts requests.

    Raises:
        LocalnetError: the ledger cannot be opened or the port is taken.
    """
    reporter = reporter or NullReporter()
    options = LocalnetOptions(
        port=port,
        host=host,
        ledger=ledger,
        reset=reset,
        slot_duration=slot_duration,
        busy=busy,
        deactivate_features=deactivate_features,
    )

    def on_loop(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)

    def announce(localnet: Localnet, url: str, ws_url: str | None) -> None:
        if ws_url is not None:
            reporter.line(f"PubSub websocket at {ws_url}")
        reporter.line(f"Localnet ready at {url}")

    run_localnet(options, announce, reporter, on_loop)
    reporter.line("Localnet stopped")


class LocalnetHandle:
    """A localnet serving from a background thread: its ``url``, ``ws_url`` and ``stop()``.

    ``ws_url`` is its PubSub websocket (None if that port could not be had); ``genesis_hash``
    the chain's, as getGenesisHash answers it (recorded as this user's local cluster).

    Args:
        options: how to run it (``port=0``: free ports).

    Raises:
        LocalnetError: the localnet could not start.
    """

    def __init__(self, options: LocalnetOptions):
        self.url = ""
        self.ws_url: str | None = None
        self.genesis_hash = ""
        self._localnet: Localnet | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(options,), name="curta-localnet", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._localnet is None:
            self._thread.join()
            if isinstance(self._error, LocalnetError):
                raise self._error
            raise LocalnetError(f"localnet failed to start: {self._error}") from self._error

    def _run(self, options: LocalnetOptions) -> None:
        def on_loop(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
            self._loop, self._stop = loop, stop

        def on_ready(localnet: Localnet, url: str, ws_url: str | None) -> None:
            self.url, self.ws_url, self._localnet = url, ws_url, localnet
            self.genesis_hash = localnet.genesis_hash
            self._ready.set()

        try:
            run_localnet(options, on_ready, NullReporter(), on_loop)
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    def stop(self) -> None:
        """Stop serving, flush the ledger and release it; safe to call twice."""
        if self._thread.is_alive() and self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join()

    def call(self, function: Callable[[Localnet], Any]) -> Any:
        """Run ``function(localnet)`` on the server's thread (LiteSVM is single-threaded)."""
        assert self._loop is not None and self._localnet is not None
        localnet = self._localnet

        async def apply() -> Any:
            return function(localnet)

        return asyncio.run_coroutine_threadsafe(apply(), self._loop).result()


def start_in_thread(
    port: int = 0,
    ledger: Path | None = None,
    reset: bool = False,
    host: str = "127.0.0.1",
    slot_duration: float = SLOT_SECONDS,
    snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES,
    now: Callable[[], float] = time.time,
    busy: BusyOptions = NOT_BUSY,
    deactivate_features: tuple[Pubkey, ...] = (),
    genesis_seed: bytes | None = None,
) -> LocalnetHandle:
    """Start a localnet in a daemon thread and return once it accepts requests.

    ``port=0`` picks a free port; the handle's ``url`` names it. ``now`` is the clock
    (pass a ``ManualClock`` to move time by hand); ``busy`` turns on the busy-cluster
    behaviours (``BusyOptions``: blocks, loss, limits, providers); ``deactivate_features``
    starts it with those feature gates off; ``genesis_seed`` gives a memory-only chain the
    genesis of another (``Localnet``).

    Raises:
        LocalnetError: the localnet could not start.
    """
    return LocalnetHandle(
        LocalnetOptions(
            port,
            host,
            ledger,
            reset,
            slot_duration,
            snapshot_bytes,
            now,
            busy,
            deactivate_features,
            genesis_seed,
        )
    )

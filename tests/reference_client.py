"""solana-py's reference client, called from plain (synchronous) code.

solana-py 0.41 ships only ``AsyncClient``. The tests and the benchmarks check the localnet
and the package against it from plain functions and from threads, some while an event loop
runs in the caller's thread; so every call runs on one event loop of its own, in a daemon
thread, and the caller waits for its result. ``Client(url, commitment)`` takes what
``AsyncClient`` takes and offers its methods, each returning what the coroutine returns.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Coroutine
from typing import Any

from solana.rpc.async_api import AsyncClient

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="reference-client", daemon=True).start()
        return _loop


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coroutine`` on the reference client's loop and return its result."""
    return asyncio.run_coroutine_threadsafe(coroutine, _background_loop()).result()


class Client:
    """solana-py's ``AsyncClient``, each method called to completion (HTTP/1.1 only)."""

    def __init__(self, endpoint: str, commitment: str | None = None, **kwargs: Any) -> None:
        # Our localnet speaks HTTP/1.1, as solana-test-validator does.
        kwargs.setdefault("http2", False)
        self.async_client = AsyncClient(endpoint, commitment, **kwargs)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.async_client, name)
        if not inspect.iscoroutinefunction(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            return run(method(*args, **kwargs))

        return call

    def close(self) -> None:
        """Close the client's HTTP connections."""
        run(self.async_client.close())

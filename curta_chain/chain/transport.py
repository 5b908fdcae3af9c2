"""The one place that owns HTTP: JSON-RPC POSTs with keep-alive, retries and rate limits.

A request is retried when the node could not have answered it usefully: the connection
failed or dropped, the body was cut short or was not JSON, the status was 5xx, or the node
said 429 (then we wait what its ``Retry-After`` asks). Retrying is safe for everything
curta-chain sends: reads are idempotent, and a transaction sent twice is one signature
that the cluster processes once.

Waiting is right only for a node that has answered before: one that has never answered
is not there. So until the node's first answer, a host name that does not resolve fails
at once and a refused connection fails after ``FIRST_CONTACT_GRACE`` seconds, each with
one line. Once it has answered, the same failures are a node restarting: the transport
retries for ``give_up_after`` seconds and tells the reporter what it is waiting for.
"""

import asyncio
import contextlib
import json
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import urlparse

import httpx

from curta_chain.chain.cluster import is_loopback
from curta_chain.constants import GIVE_UP_AFTER
from curta_chain.errors import RpcError
from curta_chain.reporting import NullReporter, Reporter, Waiting

DEFAULT_TIMEOUT = 30.0
"""Seconds one HTTP request may take before it counts as a failed attempt."""
FIRST_CONTACT_GRACE = 0.5
"""Seconds a node that has never answered may refuse connections before we give up."""
CONNECT_TIMEOUT = 10.0
"""Seconds to resolve the host and open a connection."""


class HttpTransport:
    """POSTs JSON-RPC payloads to one URL, retrying transient failures with backoff.

    Args:
        url: the node's JSON-RPC URL.
        timeout: seconds one HTTP request may take.
        give_up_after: seconds of failures of a node that answered before.
        max_connections: connections kept open to the node.
        reporter: told what a wait is for.
        http: httpx's transport (tests pass an ``httpx.MockTransport``).
        clock, sleep: monotonic seconds and the backoff's sleep (tests pass fakes).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        give_up_after: float = GIVE_UP_AFTER,
        max_connections: int = 8,
        reporter: Reporter | None = None,
        http: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.url = url
        self._give_up_after = give_up_after
        self._reporter = reporter or NullReporter()
        self._clock, self._sleep = clock, sleep
        self.answered = False
        """Whether the node has ever given a usable answer."""
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            headers={"content-type": "application/json"},
            transport=http,
        )
        self.requests = 0
        self.retries = 0

    async def post(self, payload: dict[str, Any] | list[dict[str, Any]]) -> Any:
        """Send ``payload`` and return the decoded JSON answer.

        Raises:
            RpcError: the node's host does not resolve or refuses connections and it has
                never answered, or it gave no usable answer for ``give_up_after`` seconds.
        """
        body = json.dumps(payload, separators=(",", ":")).encode()
        started = self._clock()
        delay = 0.1
        with contextlib.ExitStack() as stack:
            waiting: Waiting | None = None
            failure: Exception | None = None
            while True:
                self.requests += 1
                try:
                    response = await self._client.post(self.url, content=body)
                    failure = None
                    if response.status_code == 429:
                        wait = _retry_after(response, delay)
                        problem = "HTTP 429 Too Many Requests"
                    elif response.status_code >= 500:
                        wait, problem = delay, f"HTTP {response.status_code}"
                    elif response.status_code != 200:
                        raise RpcError(
                            f"{self.url}: HTTP {response.status_code}: {_brief(response)}"
                        )
                    else:
                        answer = json.loads(response.content)
                        self.answered = True
                        return answer
                except (httpx.TransportError, json.JSONDecodeError, UnicodeDecodeError) as exc:
                    if not self.answered:
                        self._fail_fast(exc, self._clock() - started)
                    wait, problem, failure = delay, _describe(exc), exc
                elapsed = self._clock() - started
                if elapsed + wait > self._give_up_after:
                    if failure is not None and not self.answered:
                        self._fail_fast(failure, float("inf"))
                    raise RpcError(
                        f"{self.url}: no usable answer for {elapsed:.1f} s (last: {problem})"
                    )
                what = f"{urlparse(self.url).netloc or self.url} to answer ({problem})"
                if not self.answered and elapsed < FIRST_CONTACT_GRACE:
                    pass  # the first contact's grace: it fails fast or succeeds, unannounced
                elif waiting is None:
                    waiting = stack.enter_context(self._reporter.waiting(what))
                else:
                    waiting.update(what)
                self.retries += 1
                await self._sleep(wait)
                delay = min(delay * 2, 5.0)

    def _fail_fast(self, exc: Exception, elapsed: float) -> None:
        """Raise at once for a node that is not there, before it has ever answered."""
        host = urlparse(self.url).hostname or self.url
        for cause in _causes(exc):
            if isinstance(cause, socket.gaierror):
                raise RpcError(
                    f"{self.url}: cannot resolve the host {host}: {cause.strerror or cause}"
                ) from exc
            if isinstance(cause, ssl.SSLError) and cause.reason == "WRONG_VERSION_NUMBER":
                # A TLS hello answered in plain text: retrying cannot help.
                plain = "http://" + self.url.split("://", 1)[-1]
                raise RpcError(f"{self.url}: the node speaks HTTP, not HTTPS: try {plain}") from exc
            if isinstance(cause, ConnectionRefusedError) and elapsed >= FIRST_CONTACT_GRACE:
                hint = " (start one with `curta-chain localnet`)" if is_loopback(self.url) else ""
                raise RpcError(
                    f"{self.url}: connection refused: no RPC node is listening there{hint}"
                ) from exc

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()


def _retry_after(response: httpx.Response, fallback: float) -> float:
    """Seconds the node asks us to wait (RFC 9110 delta-seconds), else ``fallback``."""
    try:
        return min(max(float(response.headers.get("retry-after", "")), 0.0), 60.0)
    except ValueError:
        return fallback


def _brief(response: httpx.Response) -> str:
    return response.text.strip().replace("\n", " ")[:200] or response.reason_phrase


def _describe(exc: Exception) -> str:
    """What went wrong, in a few words a person reads at a glance."""
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        return "the answer was not complete JSON"
    for cause in _causes(exc):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "the host name does not resolve"
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it was raised from or during, each once."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)

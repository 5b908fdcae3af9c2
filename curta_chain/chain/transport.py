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

A provider's limits are learnt, per URL, for the command's run (``ProviderLimits``): a 429
is an answer, not a failure, so it never counts toward giving up; it is waited out as its
``Retry-After`` asks and lowers the request rate (the first to what the provider took in
the last second, each later one met while sending near the rate by 15%, at most once a
second), which then grows again by a tenth each second, up to near where the provider last
refused, and past it by a quarter of a call a second each second (multiplicative decrease,
and a growth that plateaus near the last maximum, as CUBIC's). Calls of a batch each count, as
providers count them. A batch the provider refuses (HTTP 413 or 400)
is ``BatchRefusedError``: the client halves the batch and goes on. ``--rpc-rps`` and
``--rpc-batch`` set the two limits outright.
"""

import asyncio
import contextlib
import json
import math
import socket
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx

from curta_chain.chain.cluster import is_loopback
from curta_chain.constants import GIVE_UP_AFTER, LOCALNET_PORT
from curta_chain.errors import RpcError
from curta_chain.reporting import NullReporter, Reporter, Waiting

DEFAULT_TIMEOUT = 30.0
"""Seconds one HTTP request may take before it counts as a failed attempt."""
FIRST_CONTACT_GRACE = 0.5
"""Seconds a node that has never answered may refuse connections before we give up."""
CONNECT_TIMEOUT = 10.0
"""Seconds to resolve the host and open a connection."""
DEFAULT_BATCH = 128
"""Calls per JSON-RPC batch until the provider says it takes fewer."""
MIN_RPS = 1.0
"""The request rate never falls below one call a second, whatever the 429s say."""
FIRST_RPS_FLOOR = 10.0
"""The first learnt rate is never below a public endpoint's 10 calls a second: a 429 met
early (few calls taken yet) says little about the rate."""
SEARCH = 0.1
"""The share the rate grows by each second of traffic without a 429, away from where a
429 last came: it finds the provider's limit within seconds."""
RATE_WINDOW = 1.2
"""Seconds over which the rate is kept: a provider's second, with a margin for the requests'
own latency (two requests a second apart here may reach it less than a second apart)."""
RATE_DECREASE = 0.85
"""What a 429 (after the first) leaves of the rate: a multiplicative decrease. A provider's
limit is a count, not a queue that must drain: a small step back is enough."""
NEAR_RATE = 0.7
"""A 429 lowers the rate only when the calls of the last second were at least this share
of it (sending far below it, a 429 is a provider refusing at random)."""
NEAR_CEILING = 0.9
"""From this share of the rate a 429 last lowered to ``2 - NEAR_CEILING`` of it, the rate
grows by only ``PROBE`` calls a second each second: it climbs back quickly to where the
provider refused, then probes past it gently (each probe that meets a 429 costs its
Retry-After), as CUBIC plateaus near its last maximum; past it, it searches again."""
PROBE = 0.25
CEILING_AFTER = 3.0
"""Seconds after a decrease from which a 429 says where the provider refuses: one sooner
answers requests the rate had sent before it settled."""


class BatchRefusedError(RpcError):
    """The provider refused a batch as a whole (HTTP 413 or 400): send smaller ones."""


@dataclass
class ProviderLimits:
    """What one provider (one URL) allows, learnt during a command's run or set outright.

    Attributes:
        rps: calls per second (None: not limited until the first 429).
        batch: calls per JSON-RPC batch.
        fixed_rps, fixed_batch: set outright (``--rpc-rps``, ``--rpc-batch``): never learnt.
    """

    rps: float | None = None
    batch: int = DEFAULT_BATCH
    fixed_rps: bool = False
    fixed_batch: bool = False
    rate_limited: int = 0
    """429 answers met."""
    ceiling: float | None = None
    """The rate a 429 last lowered (what the provider refused)."""
    batches_refused: int = 0
    _next_free: float = field(default=0.0, repr=False)
    """No request before this (a Retry-After)."""
    _decreased_at: float = field(default=-math.inf, repr=False)
    _recent: deque[tuple[float, int]] = field(default_factory=deque, repr=False)
    """Calls the provider took, when (for the first estimate of its rate)."""
    _booked: list[tuple[float, int]] = field(default_factory=list, repr=False)
    """Calls posted or reserved, when: the sliding second the rate is kept over."""

    @classmethod
    def fixed(cls, rps: float | None = None, batch: int | None = None) -> "ProviderLimits":
        """Limits set outright where given, learnt where not."""
        return cls(
            rps=rps,
            batch=batch or DEFAULT_BATCH,
            fixed_rps=rps is not None,
            fixed_batch=batch is not None,
        )

    def delay(self, calls: int, now: float) -> float:
        """Reserve a moment to post ``calls`` calls; return how long to wait for it.

        The rate holds over every sliding second, as providers count: requests go in the
        order they were booked, each once the calls booked in the second before it leave
        room for its own (a batch larger than the rate goes alone).
        """
        at = max(now, self._next_free, self._booked[-1][0] if self._booked else now)
        if self.rps is not None:
            # Bookings are in time order: the second before ``at`` holds all that counts.
            self._booked = [(t, n) for t, n in self._booked if t > now - RATE_WINDOW]
            window = [(t, n) for t, n in self._booked if t > at - RATE_WINDOW]
            held = sum(n for _, n in window)
            # Wait for the oldest bookings to leave the window until this one fits.
            for t, n in window:
                if held + calls <= max(self.rps, calls):
                    break
                held -= n
                at = max(at, t + RATE_WINDOW)
        self._booked.append((at, calls))
        return at - now

    def succeeded(self, calls: int, now: float) -> None:
        """The rate grows: ``SEARCH`` of itself a second of traffic, ``PROBE`` near the ceiling."""
        self._recent.append((now, calls))
        while self._recent and self._recent[0][0] < now - 1.0:
            self._recent.popleft()
        if self.rps is not None and not self.fixed_rps:
            ceiling = self.ceiling
            near = ceiling is not None and (
                NEAR_CEILING * ceiling <= self.rps <= (2 - NEAR_CEILING) * ceiling
            )
            growth = PROBE if near else max(1.0, SEARCH * self.rps)
            self.rps += growth * calls / self.rps

    def too_many(self, now: float, wait: float, calls: int) -> bool:
        """A 429 for ``calls`` calls: wait as asked, lower the rate; say if it is a batch to split.

        True when the request is a batch larger than a second's allowance.

        Until the first decrease the rate is unknown: a batch refused while the provider
        took fewer calls than it holds in the last second may be over the allowance by
        itself, so it is split first; otherwise the rate becomes what the provider took in
        the last second. Each later 429 lowers it by 15%, at most once a second: 429s within
        a second of a decrease answer requests sent before it (one decrease per congestion
        event, as TCP).
        """
        self.rate_limited += 1
        self._next_free = max(self._next_free, now + wait)
        if self.fixed_rps:
            return calls > 1 and self.rps is not None and calls > self.rps
        taken = sum(n for at, n in self._recent if at >= now - 1.0)
        if self.rps is None:
            if calls > 1 and taken < calls:
                return True
            # What it took in the last second is a floor, not where it refuses: no ceiling.
            self.rps, self._decreased_at = max(FIRST_RPS_FLOOR, float(taken)), now
        elif now - self._decreased_at >= 1.0 and self._attempted(now) >= NEAR_RATE * self.rps:
            # Only a 429 met while sending near the rate is about the rate; one met while
            # sending far below it (a provider refusing at random) is waited out, no more.
            if now - self._decreased_at >= CEILING_AFTER:
                self.ceiling = self.rps
            self.rps, self._decreased_at = max(MIN_RPS, self.rps * RATE_DECREASE), now
        return calls > 1 and calls > self.rps

    def _attempted(self, now: float) -> int:
        """Calls posted in the last second, refused ones included."""
        return sum(n for t, n in self._booked if now - 1.0 < t <= now)

    def refused(self, size: int) -> None:
        """A batch of ``size`` calls was refused: the next ones take at most half of it."""
        self.batches_refused += 1
        self.batch = max(1, min(self.batch, size // 2))


class HttpTransport:
    """POSTs JSON-RPC payloads to one URL, retrying transient failures with backoff.

    Args:
        url: the node's JSON-RPC URL.
        timeout: seconds one HTTP request may take.
        give_up_after: seconds of failures of a node that answered before.
        max_connections: connections kept open to the node.
        reporter: told what a wait is for.
        limits: the provider's request rate and batch size (shared by the run's transports
            to this URL).
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
        limits: ProviderLimits | None = None,
        http: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.url = url
        self._give_up_after = give_up_after
        self._reporter = reporter or NullReporter()
        self._clock, self._sleep = clock, sleep
        self.limits = limits or ProviderLimits()
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
        """HTTP requests posted (retries included)."""
        self.calls = 0
        """JSON-RPC calls posted, each call of a batch and each retry counted: what a
        provider counts against its limit, and bills."""
        self.retries = 0

    async def post(self, payload: dict[str, Any] | list[dict[str, Any]]) -> Any:
        """Send ``payload`` and return the decoded JSON answer.

        Raises:
            BatchRefusedError: the provider refused a batch of several calls as a whole
                (HTTP 413 or 400), or rate-limits it below one batch a second.
            RpcError: the node's host does not resolve or refuses connections and it has
                never answered, or it gave no usable answer for ``give_up_after`` seconds.
        """
        body = json.dumps(payload, separators=(",", ":")).encode()
        calls = len(payload) if isinstance(payload, list) else 1
        started = self._clock()
        delay = 0.1
        with contextlib.ExitStack() as stack:
            waiting: Waiting | None = None
            failure: Exception | None = None
            while True:
                if (pause := self.limits.delay(calls, self._clock())) > 0:
                    await self._sleep(pause)
                self.requests += 1
                self.calls += calls
                try:
                    response = await self._client.post(self.url, content=body)
                    failure = None
                    if response.status_code == 429:
                        # An answer: the provider is there, only slower than we asked.
                        self.answered = True
                        wait = _retry_after(response, delay)
                        if self.limits.too_many(self._clock(), wait, calls):
                            self.limits.refused(calls)  # a batch over a second's allowance
                            raise BatchRefusedError(f"{self.url}: HTTP 429 for {calls} calls")
                        # The rate's next slot is after the wait; it never counts toward
                        # giving up.
                        started = self._clock() + wait
                        wait, problem = 0.0, "HTTP 429 Too Many Requests"
                    elif response.status_code >= 500:
                        wait, problem = delay, f"HTTP {response.status_code}"
                    elif response.status_code in (400, 413) and calls > 1:
                        self.answered = True
                        raise BatchRefusedError(
                            f"{self.url}: HTTP {response.status_code} for a batch of {calls}"
                        )
                    elif response.status_code != 200:
                        raise RpcError(_http_refusal(self.url, response))
                    else:
                        answer = json.loads(response.content)
                        self.answered = True
                        # A batch answered by one object was refused whole: none was taken.
                        whole = isinstance(payload, list) and not isinstance(answer, list)
                        self.limits.succeeded(0 if whole else calls, self._clock())
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
                if wait > 0:
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
                hint = (
                    f" (start one with `{_start_localnet(self.url)}`)"
                    if is_loopback(self.url)
                    else ""
                )
                raise RpcError(
                    f"{self.url}: connection refused: no RPC node is listening there{hint}"
                ) from exc

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()


def _start_localnet(url: str) -> str:
    """The command that starts a localnet answering at ``url`` (this machine's)."""
    port = urlparse(url).port or 80
    return "curta-chain localnet" + ("" if port == LOCALNET_PORT else f" --port {port}")


def _retry_after(response: httpx.Response, fallback: float) -> float:
    """Seconds the node asks us to wait (RFC 9110 delta-seconds), else ``fallback``."""
    try:
        return min(max(float(response.headers.get("retry-after", "")), 0.0), 60.0)
    except ValueError:
        return fallback


def _http_refusal(url: str, response: httpx.Response) -> str:
    """One line for an HTTP answer that is not JSON-RPC's: the status, what it likely is."""
    status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
    body = response.text.strip().replace("\n", " ")[:200]
    # aiohttp and others answer "405: Method Not Allowed": the status line said it already.
    said = body and response.reason_phrase and body.endswith(response.reason_phrase)
    line = f"{url}: {status}" + ("" if not body or said else f": {body}")
    if response.status_code == 405:
        parsed = urlparse(url)
        below = ""
        if parsed.port:
            host = f"[{parsed.hostname}]" if ":" in (parsed.hostname or "") else parsed.hostname
            below = f" (try {parsed._replace(netloc=f'{host}:{parsed.port - 1}').geturl()})"
        line += (
            ": this is not a JSON-RPC endpoint; it is likely a PubSub websocket port, which "
            f"is usually the RPC port plus one{below}"
        )
    return line


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

"""The one place that owns HTTP: JSON-RPC POSTs with keep-alive, retries and rate limits.

A request is retried when the node could not have answered it usefully: the connection
failed or dropped, the body was cut short or was not JSON, the status was 5xx, or the node
said 429 (then we wait what its ``Retry-After`` asks). Retrying is safe for everything
curta-chain sends: reads are idempotent, and a transaction sent twice is one signature
that the cluster processes once.
"""

import asyncio
import json
import time
from typing import Any

import httpx

from curta_chain.errors import RpcError

DEFAULT_TIMEOUT = 30.0
"""Seconds one HTTP request may take before it counts as a failed attempt."""
GIVE_UP_AFTER = 60.0
"""Seconds of consecutive failures after which a call gives up with RpcError."""


class HttpTransport:
    """POSTs JSON-RPC payloads to one URL, retrying transient failures with backoff."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        give_up_after: float = GIVE_UP_AFTER,
        max_connections: int = 8,
    ):
        self.url = url
        self._give_up_after = give_up_after
        self._client = httpx.AsyncClient(
            timeout=timeout,
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            headers={"content-type": "application/json"},
        )
        self.requests = 0
        self.retries = 0

    async def post(self, payload: dict[str, Any] | list[dict[str, Any]]) -> Any:
        """Send ``payload`` and return the decoded JSON answer.

        Raises:
            RpcError: the node gave no usable answer for ``give_up_after`` seconds.
        """
        body = json.dumps(payload, separators=(",", ":")).encode()
        started = time.monotonic()
        delay = 0.1
        while True:
            self.requests += 1
            try:
                response = await self._client.post(self.url, content=body)
                if response.status_code == 429:
                    wait = _retry_after(response, delay)
                    problem = "HTTP 429 Too Many Requests"
                elif response.status_code >= 500:
                    wait, problem = delay, f"HTTP {response.status_code}"
                elif response.status_code != 200:
                    raise RpcError(f"{self.url}: HTTP {response.status_code}: {_brief(response)}")
                else:
                    return json.loads(response.content)
            except (httpx.TransportError, json.JSONDecodeError, UnicodeDecodeError) as exc:
                wait, problem = delay, _describe(exc)
            if time.monotonic() - started + wait > self._give_up_after:
                raise RpcError(
                    f"{self.url}: no usable answer for {time.monotonic() - started:.1f} s "
                    f"(last: {problem})"
                )
            self.retries += 1
            await asyncio.sleep(wait)
            delay = min(delay * 2, 5.0)

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
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        return "the answer was not complete JSON"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

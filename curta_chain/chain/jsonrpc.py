"""JSON-RPC calls and batches over a transport, sized to the provider, patient with lag.

``JsonRpc`` builds request bodies, hands them to a transport (which alone owns HTTP) and
turns each answer into its ``result`` or an ``RpcCallError``. ``rpc.RpcClient`` builds the
typed reads and writes on it, so a provider's limits and a lagging node are handled here,
in one place:

- A batch goes out in pieces of the provider's learnt batch size (``ProviderLimits``); a
  piece the provider refuses (HTTP 413 or 400, an error object for the whole batch, an
  answer that is no list, or a list answering every call with the same batch-size error)
  halves that size and is sent again as two; at size one, calls go out alone, outside any
  batch (providers that take no batches at all).
- A node behind the slot a read asks for (``minContextSlot``) answers -32016; the read
  waits for it, up to ``LAG_WAIT`` seconds, and never reports the old state.
"""

import asyncio
import re
import time
from collections.abc import Sequence
from typing import Any, Protocol

from curta_chain.chain.transport import BatchRefusedError, ProviderLimits
from curta_chain.errors import RpcCallError, RpcError

INVALID_REQUEST = -32600
"""JSON-RPC's code for a request the server will not take (a batch too big, for some)."""
MIN_CONTEXT_SLOT_NOT_REACHED = -32016
"""The node is behind the ``minContextSlot`` a read asked for."""
LAG_WAIT = 60.0
"""Seconds a read waits for a node behind the slot it needs before giving up."""
LAG_POLL = 0.2
"""Seconds between two tries of a read the node is behind for."""


class Transport(Protocol):
    """Anything that POSTs a JSON-RPC payload and returns the decoded answer."""

    url: str

    async def post(self, payload: dict[str, Any] | list[dict[str, Any]]) -> Any:
        """Send ``payload``; return the decoded JSON answer."""

    async def aclose(self) -> None:
        """Release connections."""


class JsonRpc:
    """JSON-RPC calls and batches over an injected transport."""

    def __init__(self, transport: Transport):
        self.transport = transport
        self.url = transport.url
        limits = getattr(transport, "limits", None)
        self.limits: ProviderLimits = limits if limits is not None else ProviderLimits()
        """The provider's batch size (and, in the transport, its rate)."""
        self.lag_waits = 0
        """Reads the node was behind for, and that waited."""
        self.lag_wait = LAG_WAIT
        """Seconds a read waits for a node behind the slot it needs."""
        self.lag_poll = LAG_POLL
        self._next_id = 0

    def _request(self, method: str, params: list[Any]) -> dict[str, Any]:
        self._next_id += 1
        return {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}

    async def call(self, method: str, params: list[Any]) -> Any:
        """Make one call and return its ``result``.

        Raises:
            RpcCallError: the node answered with an error object.
            RpcError: the node gave no usable answer.
        """
        deadline = time.monotonic() + self.lag_wait
        while True:
            answer = await self.transport.post(self._request(method, params))
            try:
                return _result(method, answer)
            except RpcCallError as exc:
                if exc.code != MIN_CONTEXT_SLOT_NOT_REACHED or time.monotonic() > deadline:
                    raise
            self.lag_waits += 1
            await asyncio.sleep(self.lag_poll)

    async def batch(self, calls: Sequence[tuple[str, list[Any]]]) -> list[Any]:
        """Make several calls in JSON-RPC batches; each item is a result or RpcCallError.

        The calls go out in pieces of the provider's batch size, at once; a node behind a
        read's ``minContextSlot`` is waited for (see the module's docstring).
        """
        if not calls:
            return []
        out: list[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        deadline = time.monotonic() + self.lag_wait
        while True:
            results = await self._pieces([calls[i] for i in todo])
            behind = []
            for index, result in zip(todo, results, strict=True):
                out[index] = result
                if isinstance(result, RpcCallError) and result.code == MIN_CONTEXT_SLOT_NOT_REACHED:
                    behind.append(index)
            if not behind or time.monotonic() > deadline:
                return out
            self.lag_waits += 1
            todo = behind
            await asyncio.sleep(self.lag_poll)

    async def _pieces(self, calls: Sequence[tuple[str, list[Any]]]) -> list[Any]:
        """Post ``calls`` in pieces of at most the provider's batch size, concurrently."""
        size = self.limits.batch
        if len(calls) > size:
            parts = await asyncio.gather(
                *(self._pieces(calls[i : i + size]) for i in range(0, len(calls), size))
            )
            return [result for part in parts for result in part]
        if size == 1 and len(calls) == 1:
            # A provider that takes no batches: the call goes out alone.
            method, params = calls[0]
            try:
                return [_result(method, await self.transport.post(self._request(method, params)))]
            except RpcCallError as exc:
                return [exc]
        requests = [self._request(method, params) for method, params in calls]
        try:
            answers = await self.transport.post(requests)
        except BatchRefusedError:
            answers = None
        if not isinstance(answers, list) or _refused_call_by_call(answers, len(calls)):
            # Refused as a whole (an error object, HTTP 413 or 400, no list, or the same
            # refusal for every call): halve it; a single call then goes out alone.
            self.limits.refused(len(calls))
            return await self._pieces(calls)
        by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
        out: list[Any] = []
        for (method, _), request in zip(calls, requests, strict=True):
            answer = by_id.get(request["id"])
            if answer is None:
                raise RpcError(f"{self.url}: the batch answer lacks request {request['id']}")
            try:
                out.append(_result(method, answer))
            except RpcCallError as exc:
                out.append(exc)
        return out

    async def _batch_or_raise(self, calls: Sequence[tuple[str, list[Any]]]) -> list[Any]:
        results = await self.batch(calls)
        for result in results:
            if isinstance(result, RpcCallError):
                raise result
        return results

    async def aclose(self) -> None:
        """Close the transport."""
        await self.transport.aclose()


BATCH_REFUSAL = re.compile(r"\bbatch", re.IGNORECASE)
"""What a provider's per-call error says when it refuses the batch, not the call."""


def _refused_call_by_call(answers: list[Any], calls: int) -> bool:
    """Whether a batch of ``calls`` was refused by answering each call with one error.

    Some providers answer an oversized batch with a list of errors, one per call, all
    alike (``-32600 batch size 128 over the limit of 100``). A list where every call got
    the same error, an invalid request or one naming the batch, is that refusal; one
    call's own error among results is not. (A mistaken halving costs only batch size: at
    one call, calls go out alone and get their own answers.)
    """
    if calls < 2 or not answers:
        return False
    errors = [a.get("error") if isinstance(a, dict) else None for a in answers]
    if not all(isinstance(e, dict) for e in errors):
        return False
    kinds = {(e.get("code"), str(e.get("message", ""))) for e in errors if isinstance(e, dict)}
    if len(kinds) != 1:
        return False
    code, message = kinds.pop()
    return code == INVALID_REQUEST or bool(BATCH_REFUSAL.search(message))


def _result(method: str, answer: Any) -> Any:
    if not isinstance(answer, dict):
        raise RpcError(f"{method}: expected a JSON-RPC answer, got {answer!r:.100}")
    if "error" in answer:
        raise RpcCallError(method, answer["error"] or {})
    if "result" not in answer:
        raise RpcError(f"{method}: the answer has neither result nor error")
    return answer["result"]

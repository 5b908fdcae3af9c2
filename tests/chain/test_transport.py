"""HttpTransport: retries, rate limits and fast failures, on httpx's MockTransport.

Time is a fake clock that only the transport's own sleeps move, so every retry schedule
and give-up is exact and takes no time. ``tests/cli/test_waiting.py`` runs the same
failures end to end against real sockets.
"""

import contextlib
import json
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from curta_chain.chain.transport import (
    FIRST_CONTACT_GRACE,
    BatchRefusedError,
    HttpTransport,
    ProviderLimits,
)
from curta_chain.errors import RpcError

OK = {"jsonrpc": "2.0", "id": 1, "result": "ok"}
OK_RESPONSE = httpx.Response(200, json=OK)
REQUEST = {"jsonrpc": "2.0", "id": 1, "method": "getHealth"}


class FakeTime:
    """A clock that stands still but for the sleeps the transport takes."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Waits:
    """A reporter that records what it was told to wait for."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def waiting(self, what: str) -> Any:
        shown = self.shown

        class Handle:
            def update(self, what: str) -> None:
                shown.append(what)

        @contextlib.contextmanager
        def wait():
            shown.append(what)
            yield Handle()

        return wait()


def transport(
    responses: list[Callable[[httpx.Request], httpx.Response] | httpx.Response],
    url: str = "http://127.0.0.1:8899",
    **options: Any,
) -> tuple[HttpTransport, FakeTime, list[httpx.Request]]:
    """A transport whose node gives ``responses`` in turn (the last one forever)."""
    time, seen = FakeTime(), []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = responses.pop(0) if len(responses) > 1 else responses[0]
        return answer(request) if callable(answer) else answer

    made = HttpTransport(
        url, http=httpx.MockTransport(handler), clock=time, sleep=time.sleep, **options
    )
    return made, time, seen


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("refused", request=request) from ConnectionRefusedError(111, "no")


def unresolvable(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("dns", request=request) from socket.gaierror(-2, "Name unknown")


@pytest.mark.asyncio
async def test_a_post_sends_compact_json_and_returns_the_answer():
    made, time, seen = transport([httpx.Response(200, json=OK)])
    assert await made.post(REQUEST) == OK
    assert seen[0].content == json.dumps(REQUEST, separators=(",", ":")).encode()
    assert seen[0].headers["content-type"] == "application/json"
    assert (made.answered, made.requests, made.retries, time.sleeps) == (True, 1, 0, [])
    await made.aclose()


@pytest.mark.asyncio
async def test_5xx_backs_off_and_429_waits_what_retry_after_asks_without_giving_up():
    made, time, _ = transport(
        [httpx.Response(503), httpx.Response(500), httpx.Response(200, json=OK)]
    )
    assert await made.post(REQUEST) == OK
    assert time.sleeps == [0.1, 0.2]  # the backoff doubles
    # 429s are answers: waited out as asked (a minute at most, "soon" is the backoff),
    # for longer in all than give_up_after, which counts only failures.
    made, time, _ = transport(
        [
            httpx.Response(429, headers={"retry-after": "3"}),
            httpx.Response(429, headers={"retry-after": "soon"}),
            httpx.Response(429, headers={"retry-after": "3600"}),
            httpx.Response(200, json=OK),
        ],
        give_up_after=10.0,
    )
    assert await made.post(REQUEST) == OK
    assert time.now >= 3 + 0.2 + 60
    assert made.limits.rate_limited == 3


@pytest.mark.asyncio
async def test_a_429_sets_the_rate_to_what_was_taken_lowers_it_then_it_grows_back():
    too_many = httpx.Response(429, headers={"retry-after": "1"})
    made, time, _ = transport([*[httpx.Response(200, json=OK)] * 12, too_many, OK_RESPONSE])
    for _ in range(13):  # twelve calls taken in the same instant, then the provider's 429
        await made.post(REQUEST)
    assert made.limits.rps is not None and 12 < made.limits.rps < 12.5  # and one success's
    # One wait: past the Retry-After, until the calls booked at 0 left the rate's 1.2 s.
    assert time.sleeps == [pytest.approx(1.2)]
    rate = made.limits.rps
    assert made.limits.ceiling is None  # what it took is no measure of where it refuses
    for _ in range(40):
        await made.post(REQUEST)
    # Forty calls at twelve to sixteen per 1.2 s: two to four seconds, the rate a tenth
    # higher each second.
    assert 2.0 < time.now - 1.2 < 4.5
    assert rate + 2 < made.limits.rps < rate + 5
    # Once a 429 lowered it, it grows back a tenth a second to 90% of where it was refused,
    # then by a quarter of a call a second (each probe that meets a 429 costs a
    # Retry-After), and past 110% of it by a tenth a second again.
    for rps, grown in ((20.0, 20.25), (14.0, 15.4), (25.0, 27.5), (5.0, 6.0)):
        limits = ProviderLimits(rps=rps, ceiling=20.0)
        limits.succeeded(int(rps), 0.0)
        assert limits.rps == pytest.approx(grown)


@pytest.mark.asyncio
async def test_a_batch_refused_whole_is_no_call_taken_when_the_first_429_sets_the_rate():
    # A provider refusing batches over its size answers them with one error object: those
    # calls never ran, so they are no measure of the rate it takes.
    whole = httpx.Response(200, json={"jsonrpc": "2.0", "error": {"code": -32600}, "id": None})
    too_many = httpx.Response(429, headers={"retry-after": "1"})
    made, _, _ = transport(
        [*[whole] * 4, *[httpx.Response(200, json=OK)] * 12, too_many, OK_RESPONSE]
    )
    for _ in range(4):
        await made.post([REQUEST] * 64)
    for _ in range(13):
        await made.post(REQUEST)
    assert made.limits.rps is not None and 12 < made.limits.rps < 12.5


def test_only_a_429_met_while_sending_near_the_rate_lowers_it_once_a_second():
    limits = ProviderLimits(rps=10.0)
    assert not limits.too_many(5.0, 1.0, 1)  # sending nothing: a 429 at random
    assert limits.rps == 10.0
    assert limits.delay(8, 10.0) == 0.0
    assert not limits.too_many(10.0, 1.0, 1)
    assert limits.rps == pytest.approx(8.5)  # 15% less
    assert limits.ceiling == 10.0  # where it was refused
    assert not limits.too_many(10.5, 1.0, 1)  # within a second of the decrease
    assert limits.rps == pytest.approx(8.5)
    # Sooner than CEILING_AFTER after a decrease, a 429 answers what was sent before the
    # rate settled: it lowers the rate again, and says nothing of where the provider refuses.
    assert limits.delay(6, 11.5) == 0.0
    assert not limits.too_many(11.5, 1.0, 1)
    assert (limits.rps, limits.ceiling) == (pytest.approx(7.225), 10.0)
    assert limits.rate_limited == 4


@pytest.mark.asyncio
async def test_a_rate_set_outright_paces_every_call_of_a_batch_and_is_never_learnt():
    made, time, _ = transport(
        [httpx.Response(429, headers={"retry-after": "1"}), httpx.Response(200, json=[OK])],
        limits=ProviderLimits.fixed(rps=10, batch=5),
    )
    for _ in range(3):
        await made.post([REQUEST] * 5)
    assert made.limits.rps == 10 and made.limits.batch == 5
    assert time.now >= 1.0 + 1.0  # the Retry-After, then 15 calls at 10 a second


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [400, 413])
async def test_a_batch_refused_by_status_is_a_batch_refusal_and_a_call_s_is_an_error(status):
    made, _, _ = transport([httpx.Response(status, text="too big")])
    with pytest.raises(BatchRefusedError, match=f"HTTP {status} for a batch of 2"):
        await made.post([REQUEST, REQUEST])
    with pytest.raises(RpcError, match=f"HTTP {status} [A-Za-z ]+: too big") as single:
        await made.post(REQUEST)
    assert not isinstance(single.value, BatchRefusedError)


@pytest.mark.asyncio
async def test_a_batch_rate_limited_below_its_own_size_is_refused_to_be_split():
    made, _, _ = transport(
        [httpx.Response(429, headers={"retry-after": "1"})],
        limits=ProviderLimits(rps=4.0),
    )
    with pytest.raises(BatchRefusedError, match="HTTP 429 for 6 calls"):
        await made.post([REQUEST] * 6)
    assert made.limits.rps == pytest.approx(3.4) and made.limits.batch == 3


@pytest.mark.asyncio
async def test_a_cut_answer_is_retried_and_another_status_is_no_answer_at_all():
    made, time, _ = transport(
        [httpx.Response(200, content=b'{"jsonrpc": "2.'), httpx.Response(200, json=OK)]
    )
    assert await made.post(REQUEST) == OK and time.sleeps == [0.1]
    made, _, seen = transport([httpx.Response(404, text="no such path\n")])
    with pytest.raises(RpcError) as failed:
        await made.post(REQUEST)
    assert str(failed.value) == "http://127.0.0.1:8899: HTTP 404 Not Found: no such path"
    assert len(seen) == 1


@pytest.mark.asyncio
async def test_a_node_that_answered_then_stopped_is_waited_for_then_given_up_on():
    waits = Waits()
    made, time, _ = transport(
        [httpx.Response(200, json=OK), refused], give_up_after=2.0, reporter=waits
    )
    await made.post(REQUEST)
    with pytest.raises(RpcError) as gave_up:
        await made.post(REQUEST)
    assert str(gave_up.value) == (
        "http://127.0.0.1:8899: no usable answer for 1.5 s (last: connection refused)"
    )
    assert time.sleeps == [0.1, 0.2, 0.4, 0.8]
    assert waits.shown[0] == "127.0.0.1:8899 to answer (connection refused)"


@pytest.mark.asyncio
async def test_a_node_that_never_answered_and_refuses_fails_after_the_grace():
    made, time, _ = transport([refused])
    with pytest.raises(RpcError) as failed:
        await made.post(REQUEST)
    assert str(failed.value) == (
        "http://127.0.0.1:8899: connection refused: no RPC node is listening there "
        "(start one with `curta-chain localnet`)"
    )
    assert FIRST_CONTACT_GRACE <= time.now < FIRST_CONTACT_GRACE + 1 and not made.answered
    made, _, _ = transport([refused], url="https://node.example:443")
    with pytest.raises(RpcError, match=r"no RPC node is listening there$"):
        await made.post(REQUEST)


@pytest.mark.asyncio
async def test_a_host_that_does_not_resolve_fails_at_once():
    made, time, seen = transport([unresolvable], url="http://curta-chain-test.invalid:8899")
    with pytest.raises(RpcError) as failed:
        await made.post(REQUEST)
    assert str(failed.value) == (
        "http://curta-chain-test.invalid:8899: cannot resolve the host "
        "curta-chain-test.invalid: Name unknown"
    )
    assert (len(seen), time.sleeps) == (1, [])


@pytest.mark.asyncio
async def test_a_node_that_never_answers_usefully_is_given_up_on_naming_the_last_problem():
    made, time, _ = transport([httpx.Response(502)], give_up_after=1.0)
    with pytest.raises(RpcError, match=r"no usable answer for 0\.7 s \(last: HTTP 502\)$"):
        await made.post(REQUEST)
    assert time.sleeps == [0.1, 0.2, 0.4]

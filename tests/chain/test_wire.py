"""The sends on the wire: a batch that failed is the send's error, and is never logged later.

An asyncio task whose exception nobody retrieved is logged with its traceback when it is
collected: a give-up would then print a traceback after its one-line error. Both ways a
send ends with failed batches on the wire are held to that: booking them (the first failure
raised, every one taken) and cancelling them (the send ended with an error of its own).
"""

import asyncio
import gc
import socket

import pytest
from solders.keypair import Keypair

from curta_chain.chain.flights import Flight
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.specs import TxSpec
from curta_chain.chain.transport import HttpTransport
from curta_chain.chain.wire import Wire
from curta_chain.errors import RpcError


def dead_url() -> str:
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


async def two_failed_batches() -> tuple[Wire, list[object]]:
    """A wire holding two answered batches, both refused by a node that is down."""
    logged: list[object] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: logged.append(context))
    wire = Wire(RpcClient(HttpTransport(dead_url(), give_up_after=0.2)))
    for index in range(2):
        flight = Flight(TxSpec((), (Keypair(),)), index, signature=f"s{index}", wire=b"\0")
        wire.post([flight], copies=1)
    await asyncio.wait([b.task for b in wire.batches])
    return wire, logged


def collected(logged: list[object]) -> list[object]:
    gc.collect()
    return logged


@pytest.mark.asyncio
async def test_booking_failed_batches_raises_the_first_and_takes_them_all():
    wire, logged = await two_failed_batches()
    with pytest.raises(RpcError, match=r"^http://127\.0\.0\.1:"):
        wire.answered()
    assert wire.batches == []
    del wire
    assert collected(logged) == []


@pytest.mark.asyncio
async def test_cancelling_a_wire_with_failed_batches_takes_their_failures():
    wire, logged = await two_failed_batches()
    wire.cancel()
    del wire
    assert collected(logged) == []


@pytest.mark.asyncio
async def test_the_check_sees_a_failure_left_untaken():
    # Guards the two tests above: a failed batch dropped without a look is logged.
    wire, logged = await two_failed_batches()
    wire.batches.clear()
    del wire
    assert [context["message"] for context in collected(logged)] == [
        "Task exception was never retrieved"
    ] * 2

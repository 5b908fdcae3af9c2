"""Sends on the wire: batches of sendTransaction calls posted and not yet answered.

The sender does not wait for one batch's answers before it posts the next: behind a
provider's rate limit that wait would leave the provider's allowance unused while the
answers travel. It keeps about a second of the rate's calls posted (``Wire.calls``), books
each batch's answers as they come (``Wire.answered``), and signs more as room frees.

A flight whose bytes are on the wire is ``pending``: not looked at, not resent, until its
answer is booked. An answer is booked only for the signing it was sent with: one signed
again meanwhile (its blockhash expired) takes nothing from an old signing's answer.
"""

import asyncio
from dataclasses import dataclass, field

from curta_chain.chain.flights import Flight
from curta_chain.chain.refusals import went
from curta_chain.chain.rpc import RpcClient


@dataclass
class Batch:
    """One group of flights posted together, each as ``copies`` calls of the same bytes."""

    group: list[Flight]
    signatures: list[str]
    """Each flight's signature when it was posted."""
    copies: int
    task: "asyncio.Task[list[object]]"

    def answers(self) -> list[tuple[Flight, object]]:
        """Each flight still signed as posted, with its answer.

        Of a flight's copies, the answer that says it went, else the first refusal.
        """
        results = self.task.result()
        copies = self.copies
        merged = [
            next((a for a in pair if went(a)), pair[0])
            for pair in zip(*(results[i::copies] for i in range(copies)), strict=True)
        ]
        return [
            (flight, answer)
            for flight, signature, answer in zip(self.group, self.signatures, merged, strict=True)
            if flight.signature == signature
        ]


@dataclass
class Wire:
    """The batches a sender has posted and not yet booked."""

    client: RpcClient
    batches: list[Batch] = field(default_factory=list)

    @property
    def calls(self) -> int:
        """The sendTransaction calls posted and not yet answered."""
        return sum(len(b.group) * b.copies for b in self.batches if not b.task.done())

    def post(self, group: list[Flight], copies: int) -> None:
        """Post ``group``'s bytes (each ``copies`` times in one batch); its flights pend."""
        calls = [self.client.send_call(f.wire) for f in group for _ in range(copies)]
        self.client.sends += len(calls)
        for flight in group:
            flight.pending = True
        task = asyncio.ensure_future(self.client.batch(calls))
        self.batches.append(Batch(group, [f.signature for f in group], copies, task))

    def answered(self) -> list[Batch]:
        """The batches whose answers came, taken off the wire (their flights pend no more).

        Raises:
            RpcError: a batch's request failed (the node unreachable).
        """
        done = [b for b in self.batches if b.task.done()]
        self.batches = [b for b in self.batches if not b.task.done()]
        failures = []
        for batch in done:
            for flight, signature in zip(batch.group, batch.signatures, strict=True):
                if flight.signature == signature:
                    flight.pending = False
            if (failure := batch.task.exception()) is not None:
                failures.append(failure)  # each one taken: none is logged when collected
        if failures:
            raise failures[0]  # a failure is the send's
        return done

    async def settle(self, timeout: float) -> None:
        """Wait until a batch is answered, at most ``timeout`` seconds."""
        tasks = [b.task for b in self.batches]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)

    def cancel(self) -> None:
        """Stop waiting for what is on the wire (the send ended).

        A batch that failed meanwhile is not logged later: cancelling a done task marks its
        exception as seen.
        """
        for batch in self.batches:
            batch.task.cancel()
        self.batches = []

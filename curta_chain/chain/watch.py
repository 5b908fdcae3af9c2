"""Rounds of steps: many in flight, a mirror checking the chain while they land.

``seal`` and ``run --on-chain`` send their steps in rounds, each as many as may be in
flight at once, and, while they land, read the account they write every
``OBSERVE_INTERVAL`` seconds to compare the state it is in with their mirror's.
``while_watching`` runs the two together: a mismatch the watch finds stops the sending at
once, and the watch ends when the sending does. ``round_sender`` sets the sender for a
round: its window, and resends every ``ROUND_RESEND`` seconds, since the next round waits
for the last step of this one (a resend is the same bytes: it can never land twice).
``RetriesOnly`` is the progress a round's sender reports to: the bar counts the steps as
the chain holds them (this run's and anyone else's), which the watch reads.
"""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from curta_chain.chain.sender import Sender
from curta_chain.reporting import Progress

T = TypeVar("T")

OBSERVE_INTERVAL = 0.2
"""Seconds between two reads of the account being stepped (about half a slot)."""
ROUND_RESEND = 0.8
"""Seconds between two sends of a step not yet seen: two slots, not the sender's 2 s."""


@contextlib.contextmanager
def round_sender(sender: Sender, window: int) -> Iterator[Sender]:
    """``sender`` with ``window`` steps in flight and quick resends, for one round."""
    before = sender.window, sender.resend_interval
    sender.window, sender.resend_interval = max(1, window), min(ROUND_RESEND, before[1])
    try:
        yield sender
    finally:
        sender.window, sender.resend_interval = before


async def while_watching(work: Awaitable[T], look: Callable[[], Awaitable[None]]) -> T:
    """Await ``work`` while calling ``look`` every ``OBSERVE_INTERVAL`` seconds.

    Returns:
        What ``work`` returned.

    Raises:
        Exception: whatever ``work`` or ``look`` raised first (the other is cancelled).
    """

    async def watch() -> None:
        while True:
            await asyncio.sleep(OBSERVE_INTERVAL)
            await look()

    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(watch())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if watcher.done():
            watcher.result()  # the watch raised: a mismatch, or the node failing
        return await task
    finally:
        for pending in (task, watcher):
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pending


class RetriesOnly:
    """The progress the sender reports to: its resends, not its landings.

    The bar counts the steps as the chain holds them (this invocation's and anyone
    else's, a round a refusal ended included), which the watch reads; the sender's
    landings would count only those it saw confirmed.
    """

    def __init__(self, bar: Progress):
        self.bar = bar

    def advance(self, nbytes: int = 0, transactions: int = 0, units: int = 0) -> None:
        """Counted by the watch instead."""

    def describe(self, where: str) -> None:
        """Said by the watch instead."""

    def retries(self, resent: int, resigned: int) -> None:
        """Show the sender's resends and re-signings."""
        self.bar.retries(resent, resigned)

    def close(self) -> None:
        """The watch closes the bar."""

"""Sending while watching: a mirror checks the chain while transactions land.

``seal`` and ``run --on-chain`` keep many steps in flight and, while they land, read the
account they write every ``OBSERVE_INTERVAL`` seconds to compare the state it is in with
their mirror's. ``while_watching`` runs the two together: a mismatch the watch finds stops
the sending at once, and the watch ends when the sending does.
"""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

OBSERVE_INTERVAL = 0.2
"""Seconds between two reads of the account being stepped (about half a slot)."""


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

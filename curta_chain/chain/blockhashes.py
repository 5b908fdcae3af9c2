"""The blockhash a sender signs with: fresh enough to land, new enough not to be a replay.

A transaction is its signature: the same instructions signed under the same blockhash are
one transaction, which the node processes once. An earlier run (a seal before a reopen, a
publish before the chain's bytes were changed) may have signed these very instructions
under the blockhash current when this one starts, and the node would take ours for a
replay of it; so a sender's first blockhash is the node's next one, for one slot's wait.
After that a blockhash is used for ``BLOCKHASH_MAX_AGE`` seconds of new transactions (it
stays valid for about a minute), and one the leader does not know yet is replaced by the
node's next.
"""

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from solders.hash import Hash

from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.signature_statuses import Clock
from curta_chain.errors import RpcError
from curta_chain.reporting import NullReporter, Reporter

FRESH_BLOCKHASH_WAIT = 60.0
"""Seconds a new sender waits for the node's next blockhash (one slot, normally)."""
BLOCKHASH_MAX_AGE = 10.0
"""Seconds a blockhash is used for new transactions (it stays valid for ~60 s)."""


@dataclass
class Blockhashes:
    """The blockhash new transactions are signed with, and its last valid block height."""

    client: RpcClient
    clock: Clock
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    reporter: Reporter = field(default_factory=NullReporter)
    current: Hash | None = None
    last_valid: int = 0
    fetched_at: float = 0.0

    async def refresh(self, interval: float) -> None:
        """Take the node's next blockhash the first time, then a new one every so often."""
        if self.current is None:
            now_current, _ = await self.client.latest_blockhash()
            await self.after(now_current, interval)
        elif self.clock() - self.fetched_at > BLOCKHASH_MAX_AGE:
            self.current, self.last_valid = await self.client.latest_blockhash()
            self.fetched_at = self.clock()

    async def after(self, old: Hash, interval: float) -> None:
        """Wait for the node's blockhash to be another than ``old``; take it.

        Raises:
            RpcError: it stayed ``old`` for ``FRESH_BLOCKHASH_WAIT`` seconds.
        """
        deadline = self.clock() + FRESH_BLOCKHASH_WAIT
        with self.reporter.waiting("the node's next block (a fresh blockhash)"):
            while True:
                blockhash, last_valid = await self.client.latest_blockhash()
                if blockhash != old:
                    self.current, self.last_valid = blockhash, last_valid
                    self.fetched_at = self.clock()
                    return
                if self.clock() > deadline:
                    raise RpcError(
                        f"{self.client.url}: the blockhash did not change in "
                        f"{FRESH_BLOCKHASH_WAIT:.0f} s: is the node producing blocks?"
                    )
                await self.sleep(interval)

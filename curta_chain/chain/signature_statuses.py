"""Signature statuses: the one place they are read and told apart.

``StatusPoller`` reads statuses (256 signatures a call, through ``rpc.py``) and says which
reached a commitment; the sender's rounds and ``wait_for_signature`` (a transaction the
node sent itself, an airdrop) both use it.

Polls read the node's status cache, which holds every transaction of the last few hundred
slots: all a poll of transactions in flight needs. The ledger's history is searched only for
a signature the cache may no longer hold (``StatusPoller.search``): a transaction whose
blockhash expired unseen, once, before it is called lost; one waited for past its deadline.

Polls: about once a slot off loopback (``POLL_INTERVAL``), backing off to the resend
interval while nothing new lands; a localnet on loopback is polled every
``LOOPBACK_POLL`` seconds, which costs it nothing. Every landed transaction's slot is told
to the client (``RpcClient.landed``), so the reads after it carry that ``minContextSlot``.
"""

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from curta_chain.chain.cluster import is_loopback
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.transaction_reads import SignatureStatus
from curta_chain.constants import COMMITMENT_RANK
from curta_chain.errors import RpcError
from curta_chain.program import transaction_error

CONFIRM_TIMEOUT = 60.0
"""Seconds ``wait_for_signature`` waits for a transaction someone else sent."""
POLL_INTERVAL = 0.4
"""Seconds between two status polls off loopback while nothing new lands: about a slot."""
LOOPBACK_POLL = 0.05
"""The same on loopback: a localnet answers a poll in well under a millisecond."""

Clock = Callable[[], float]


@dataclass
class StatusPoller:
    """Reads signature statuses and says which reached a commitment: the one status poller.

    A status with an error raises it, translated through the program's IDL.
    """

    client: RpcClient
    interval: float = POLL_INTERVAL
    clock: Clock = time.monotonic

    async def read(self, signatures: Sequence[str]) -> tuple[list[SignatureStatus | None], int]:
        """The statuses of ``signatures`` and the block height, the height read first.

        A status read after the height from the same node: one unseen then whose blockhash
        was already past its last valid height can never land.
        """
        height = await self.client.block_height()
        return await self.client.signature_statuses(signatures), height

    async def search(self, signatures: Sequence[str]) -> list[SignatureStatus | None]:
        """The statuses of ``signatures`` from the ledger's history as well as the cache.

        A provider bills a history search per signature the cache lacks: only for
        signatures that may have left the cache, never for a routine poll.
        """
        return await self.client.signature_statuses(signatures, search_history=True)

    async def poll(self, signatures: Sequence[str], wanted: int) -> tuple[list[bool | None], int]:
        """One round: for each signature, None (unseen), False (seen, not yet), True (there).

        Also returns the block height, which tells an unseen transaction's blockhash expired.

        Raises:
            ChainError: a transaction failed (a ``ProgramError`` when the program refused it).
        """
        statuses, height = await self.read(signatures)
        return [_reached(status, wanted) for status in statuses], height

    async def wait(self, signature: str, commitment: str, timeout: float) -> None:
        """Return once ``signature`` reached ``commitment``.

        Raises:
            ChainError: the transaction failed.
            RpcError: it did not reach ``commitment`` within ``timeout`` seconds.
        """
        wanted = COMMITMENT_RANK[commitment]
        deadline = self.clock() + timeout
        while True:
            (status,) = await self.client.signature_statuses([signature])
            late = self.clock() >= deadline
            if late and status is None:
                # Landed long ago (a rerun's transaction), it may have left the status cache.
                (status,) = await self.search([signature])
            if status is not None and _reached(status, wanted):
                self.client.landed(status.slot)
                return
            if late:
                raise RpcError(f"{signature} was not {commitment} within {timeout:.0f} s")
            await asyncio.sleep(self.interval)


def _reached(status: SignatureStatus | None, wanted: int) -> bool | None:
    if status is None:
        return None
    if status.err is not None:
        raise transaction_error(status.err)
    return COMMITMENT_RANK.get(status.confirmation or "processed", 0) >= wanted


def default_poll_interval(url: str) -> float:
    """About a slot for a cluster; ``LOOPBACK_POLL`` for a node on this machine."""
    return LOOPBACK_POLL if is_loopback(url) else POLL_INTERVAL


async def wait_for_signature(
    client: RpcClient, signature: str, timeout: float = CONFIRM_TIMEOUT
) -> None:
    """Wait until a transaction (one the node sent itself, an airdrop) reaches our commitment.

    Raises:
        ChainError: the transaction failed.
        RpcError: it was not confirmed within ``timeout`` seconds.
    """
    await StatusPoller(client, default_poll_interval(client.url)).wait(
        signature, client.commitment, timeout
    )

"""What landed: a send's status polls, its confirmations, expiries and what the chain shows.

``Landings.poll`` looks at the transactions due for a look (``Round.to_poll``: statuses in
full calls of 256), reading the block height first when an unseen one is due or the last
height is old: a status read after it that is unseen, past its blockhash's last valid
height, can never appear. Such a transaction is searched for once in the ledger's history
(it may have landed and left the status cache), then its effect is read on chain
(``hidden.py``); what is still not there is handed back to be signed again. A transaction
seen below the commitment asked for is looked at again about a slot later; one sent again
and again and still unseen has its effect read on chain; a send with nothing confirmed for
blockhash lifetimes reads what the chain shows before it gives up.
"""

from dataclasses import dataclass
from typing import Any

from curta_chain.chain.flights import HIDDEN_AFTER, Flight, Send
from curta_chain.chain.hidden import Hidden
from curta_chain.chain.refusals import funds_failure
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.signature_statuses import Clock, StatusPoller
from curta_chain.chain.timing import Timing
from curta_chain.constants import COMMITMENT_RANK
from curta_chain.errors import ChainError, InsufficientFundsError, SendGaveUpError
from curta_chain.program import transaction_error
from curta_chain.reporting import counted

HEIGHT_MAX_AGE = 5.0
"""Seconds a block height is used for (it tells expiry; an older one, a stall)."""


@dataclass
class Landings:
    """Reads what a sender's transactions did: statuses first, the chain where they hide."""

    client: RpcClient
    timing: Timing
    hidden: Hidden
    clock: Clock

    async def poll(
        self, send: Send, interval: float, max_expiries: int, fund_then: str, resume_hint: str
    ) -> list[Flight]:
        """Look at what is due; confirm what reached the commitment; return what expired.

        ``interval`` is how soon one seen below the commitment, or unseen, is looked at
        again;
        ``fund_then`` and ``resume_hint`` what a failure for funds and a give-up say to do.

        Returns:
            The transactions whose blockhash expired unseen and whose effect the chain does
            not show: to be signed again.

        Raises:
            ProgramError, ChainError: a transaction failed (``InsufficientFundsError`` for
                funds, with ``fund_then``).
            SendGaveUpError: nothing was confirmed for ``max_expiries`` lifetimes.
        """
        state, stats = send.state, send.stats
        now = self.clock()
        flights = state.to_poll(now)
        if now - state.height_at > HEIGHT_MAX_AGE or any(
            not f.seen and f.check_at <= now for f in flights
        ):
            height = await self.client.block_height()
            state.height_at = now = self.clock()
            if height != state.height:
                state.height, state.height_since = height, now
        if state.progress_height is None:
            state.progress_height = state.height
        statuses = await self.client.signature_statuses([f.signature for f in flights])
        now = self.clock()
        context = self.client.status_slot
        self.timing.polled(now, context)
        # Unseen in the cache past its blockhash's last height: one search of the ledger's
        # history before it is called lost (it may have landed and left the cache since).
        gone = [
            i
            for i, (f, status) in enumerate(zip(flights, statuses, strict=True))
            if status is None and state.height > f.last_valid_height
        ]
        if gone:
            poller = StatusPoller(self.client, interval, self.clock)
            found = await poller.search([flights[i].signature for i in gone])
            for i, status in zip(gone, found, strict=True):
                statuses[i] = status
        expired: list[Flight] = []
        unseen: list[Flight] = []
        tail = state.tail()
        for flight, status in zip(flights, statuses, strict=True):
            if status is None:
                if state.height > flight.last_valid_height:
                    del state.in_flight[flight.signature]  # expired unseen: it can never land
                    expired.append(flight)
                    continue
                flight.looked_at = now
                resend = state.resend_at(flight, tail, self.timing)
                # Looked at again a poll's interval later, or when its resend is due.
                again = now + interval
                flight.check_at = min(resend, again) if resend > now else again
                if flight.sends >= HIDDEN_AFTER and resend <= now:
                    unseen.append(flight)  # about to go again, unseen after its resends
                continue
            if status.err is not None:
                raise _failure(flight, status.err, fund_then)
            if not flight.seen:
                flight.seen = True
                state.seen += 1
                self.timing.landed(
                    flight.first_sent_at, flight.resent_at, now, context, status.slot
                )
            if COMMITMENT_RANK.get(status.confirmation or "processed", 0) < send.wanted:
                flight.check_at = now + interval
                continue
            del state.in_flight[flight.signature]
            stats.confirmed += 1
            stats.signatures.append(flight.signature)
            stats.last_slot = max(stats.last_slot, status.slot)
            self.client.landed(status.slot)
            state.progress_height = state.height
            if send.progress is not None:
                send.progress.advance(flight.spec.payload_bytes, 1)
        # Sent again and again and still unseen: the node may hide what landed.
        wait = self.timing.resend_after
        checked = [f for f in unseen if now - f.effect_read_at >= wait]
        for flight in checked:
            flight.effect_read_at = now
        await self.found_on_chain(checked, send)
        landed = await self.found_on_chain(expired, send)
        # Before giving up, what the chain shows of what the node reported nothing for.
        if (why := state.stalled(max_expiries, now)) is not None and not (
            await self.found_on_chain(list(state.in_flight.values()), send)
        ):
            left = len(state.queue) + len(state.in_flight) + len(expired) - len(landed)
            said = self.hidden.said(state, stats.sent, send.effects)
            raise SendGaveUpError(
                f"gave up with {left:,} of {counted(left + stats.confirmed, 'transaction')} "
                f"not confirmed: {why}{said}; {resume_hint}"
            )
        return [f for f in expired if f not in landed]

    async def found_on_chain(self, flights: list[Flight], send: Send) -> list[Flight]:
        """Of unseen ``flights``, count as landed those whose effect the chain shows."""
        unseen = [f for f in flights if not f.seen]
        landed = await self.hidden.on_chain(unseen, send.state, send.effects)
        stats = send.stats
        for flight in landed:
            send.state.in_flight.pop(flight.signature, None)
            stats.confirmed += 1
            stats.hidden += 1
            if send.effects is not None and send.effects.exact:
                stats.signatures.append(flight.signature)
            if send.progress is not None:
                send.progress.advance(flight.spec.payload_bytes, 1)
        if landed:
            send.state.progress_height = send.state.height
        return landed


def _failure(flight: Flight, err: Any, fund_then: str) -> ChainError:
    """The error a landed failure stands for: a shortage of funds, or the program's."""
    short = funds_failure(err, flight.spec)
    if short is not None:
        return InsufficientFundsError(f"a transaction failed: {short}; {fund_then}")
    return transaction_error(err)

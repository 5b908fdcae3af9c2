"""A send's bookkeeping: each transaction in flight, the round they make, and resend timing.

Nodes are asked not to resend (``maxRetries: 0``); the sender resends, the same bytes,
every ``RESEND_INTERVAL`` seconds while the node has not seen a transaction. What the
sender sees makes a transaction overdue sooner, two slots after its send (``OVERDUE``):
when it is among the last few the caller waits for (``TAIL``), or when one sent no earlier
was seen and nothing new was for two slots (once the sender had a loss, whatever was).
``Round.resend_at`` is that rule; ``Round.pause`` how long the sender sleeps meanwhile.
"""

import math
from collections import deque
from dataclasses import dataclass, field

from solders.hash import Hash

from curta_chain.chain.signature_statuses import Clock
from curta_chain.chain.specs import TxSpec

RESEND_INTERVAL = 2.0
"""Seconds between two sends of the same bytes while the node has not seen them."""
OVERDUE = 0.8
"""Seconds (two slots) after which an overdue transaction is resent: one of the tail, or one
the node landed others sent with or after (see ``Round.resend_at``)."""
TAIL = 4
"""Unseen transactions left, nothing more to sign, from which they are resent ``OVERDUE``
after their send and, once the sender has had a loss, go twice a send (two chances against
one loss)."""
BLOCKHASH_LIFETIME = 151
"""Block heights a blockhash is valid for (the validator's MAX_PROCESSING_AGE, plus its own)."""
STALLED_HEIGHT = 120.0
"""Seconds the block height may stand still, with transactions outstanding, before giving up."""


@dataclass
class SendStats:
    """What one ``send`` did (each call returns its own)."""

    confirmed: int = 0
    signatures: list[str] = field(default_factory=list)
    """Every confirmed transaction's signature, in the order they were confirmed."""
    sent: int = 0
    """sendTransaction calls answered, resends included."""
    resent: int = 0
    """Of those, sends of bytes already sent (the same transaction again)."""
    resigned: int = 0
    """Transactions signed again after their blockhash expired unseen."""
    seconds: float = 0.0
    last_slot: int = 0
    """The highest slot a confirmed transaction landed in (0 when none did)."""

    @property
    def last_signature(self) -> str:
        """The last confirmed transaction's signature ("" when none was)."""
        return self.signatures[-1] if self.signatures else ""


@dataclass
class Flight:
    """One transaction of a send: its spec, its signed bytes, and what the node made of it."""

    spec: TxSpec
    signature: str = ""
    wire: bytes = b""
    last_valid_height: int = 0
    signed_with: Hash | None = None
    signer_count: int = 1
    sent_at: float = -math.inf
    """When its bytes last went out (resends are timed from it)."""
    retry_at: float | None = None
    """When set, the next send is due then, whatever the rules say (a blockhash the leader
    did not know yet: the same bytes go again in about a slot)."""
    seen: bool = False
    """The node has a status for it: it landed, only not at our commitment yet."""
    signings: int = 0


@dataclass
class Round:
    """What one ``send`` has going: to sign, in flight, and how it is progressing."""

    queue: deque[Flight]
    in_flight: dict[str, Flight] = field(default_factory=dict)
    height: int = 0
    progress_height: int | None = None
    """The block height when something was last confirmed (or the first one read)."""
    height_since: float = 0.0
    """When the block height was last seen to move."""
    last_refusal: str = ""
    seen_sent_at: float = -math.inf
    """The latest send of a transaction the node has seen: one unseen sent no later is
    overdue two slots after its send, once nothing new was seen for as long."""
    seen_at: float = -math.inf
    """When a transaction was last seen for the first time: a busy leader working through
    more than a block takes lands some every slot, a lost one never."""
    idle: int = 0
    """Polls in a row that confirmed nothing."""

    def tail(self, adding: int = 0) -> bool:
        """Whether the round is down to its last few unseen transactions, nothing to sign."""
        if self.queue:
            return False
        unseen = sum(1 for flight in self.in_flight.values() if not flight.seen)
        return unseen + adding <= TAIL

    def resend_at(
        self, flight: Flight, tail: bool, clock: Clock, resend_interval: float, lossy: bool
    ) -> float:
        """When an unseen transaction's same bytes are due to go again.

        Every resend interval, or two slots after its send (``OVERDUE``) when it is
        overdue by what the sender sees: it is in the tail the caller waits for, or one
        sent no earlier already landed and either nothing new landed for two slots or the
        sender had a loss (``lossy``). Before any loss, the bulk a busy leader is still
        working through (more writes than a block takes, some landing every slot) is never
        resent.
        """
        if flight.retry_at is not None:
            return flight.retry_at
        quiet = clock() - self.seen_at >= OVERDUE
        early = tail or (flight.sent_at <= self.seen_sent_at and (quiet or lossy))
        return flight.sent_at + (min(OVERDUE, resend_interval) if early else resend_interval)

    def pause(self, interval: float, resend_interval: float, clock: Clock, lossy: bool) -> float:
        """A slot's pause while things may land; longer while none do, up to the next resend.

        With nothing seen, the sender is only waiting: for a lost transaction's next resend
        or for its blockhash to expire, and polls back off to the resend interval, never
        past the moment the next resend is due.
        """
        flights = self.in_flight.values()
        if any(flight.seen for flight in flights):
            return interval
        backoff = min(interval * 2 ** max(self.idle - 2, 0), resend_interval)
        tail = self.tail()
        due = min(
            (self.resend_at(f, tail, clock, resend_interval, lossy) for f in flights),
            default=math.inf,
        )
        return max(min(backoff, due - clock()), 0.0)

    def stalled(self, max_expiries: int, now: float) -> str | None:
        """Why the send should give up (time without progress), or None while it should not.

        Nothing confirmed while ``max_expiries`` blockhash lifetimes passed, or the block
        height stood still for ``STALLED_HEIGHT`` seconds; with the node's last refusal.
        """
        assert self.progress_height is not None
        lifetimes = (self.height - self.progress_height) / BLOCKHASH_LIFETIME
        stalled = now - self.height_since
        if lifetimes < max_expiries and stalled < STALLED_HEIGHT:
            return None
        why = (
            f"nothing landed in {max_expiries} blockhash lifetimes "
            f"({self.height - self.progress_height} blocks)"
            if lifetimes >= max_expiries
            else f"the block height stayed at {self.height} for {stalled:.0f} s"
        )
        last = f"; the node's last refusal: {self.last_refusal}" if self.last_refusal else ""
        return f"{why}{last}"

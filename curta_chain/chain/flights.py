"""A send's bookkeeping: each transaction in flight, when to look at it and when to resend it.

Nodes are asked not to resend (``maxRetries: 0``); the sender resends, the same bytes, only
what the node has not seen (no status) once the cluster's confirmation time has passed
since its send (``Timing.resend_after``, learnt from the statuses seen, see ``timing.py``),
and only after a status poll made past that moment found it still unseen. A transaction
the node has seen (``processed``) is never resent. A transaction resent again and again
waits longer each time, up to ``BACKOFF`` times the confirmation time: a node that hides
statuses is not hammered, and its effect on chain is read instead (``HIDDEN_AFTER``).
The last few the caller waits for (``TAIL``) go again two slots after their send
(``OVERDUE``), whatever was learnt: a send waits for its unluckiest transaction.

Statuses are polled for the transactions that are due for a look (``Flight.check_at``): an
unseen one a poll's interval after its send (behind a rate limit, the cluster's usual time
to land), then every interval until its resend moment, a seen one an interval after it was
last seen below the commitment asked for. A poll fills its calls (256 signatures each) with
the oldest others in flight, which cost nothing more. ``Round.poll_due`` says when a poll is
worth its calls.
"""

import math
from collections import deque
from dataclasses import dataclass, field

from solders.hash import Hash

from curta_chain.chain.effects import Effects
from curta_chain.chain.specs import TxSpec
from curta_chain.chain.timing import Timing
from curta_chain.constants import MAX_SIGNATURE_STATUSES
from curta_chain.reporting import Progress

RESEND_INTERVAL = 2.0
"""Seconds an unseen transaction waits for its resend until the cluster's confirmation time
is learnt."""
OVERDUE = 0.8
"""Seconds (two slots) the tail waits for its resend; also the shortest wait learnt."""
TAIL = 4
"""Unseen transactions left, nothing more to sign, from which they are resent ``OVERDUE``
after their send and, once the sender has had a loss, go twice a send (two chances against
one loss)."""
BACKOFF = 4
"""A transaction resent again and again waits at most this many times the resend wait."""
HIDDEN_AFTER = 2
"""Sends of one signing, still unseen after its resend wait, after which its effect is read
on chain (when the caller says how): a node that delivers but hides statuses is found
within seconds."""
BLOCKHASH_LIFETIME = 151
"""Block heights a blockhash is valid for (the validator's MAX_PROCESSING_AGE, plus its own)."""
STALLED_HEIGHT = 120.0
"""Seconds the block height may stand still, with transactions outstanding, before giving up."""


@dataclass
class SendStats:
    """What one ``send`` did (each call returns its own)."""

    confirmed: int = 0
    signatures: list[str] = field(default_factory=list)
    """Every confirmed transaction's signature, in the order they were confirmed (of those
    the chain showed while the node reported no status, only where the chain tells which)."""
    sent: int = 0
    """sendTransaction calls answered, resends included."""
    resent: int = 0
    """Of those, sends of bytes already sent (the same transaction again)."""
    resigned: int = 0
    """Transactions signed again after their blockhash expired unseen."""
    hidden: int = 0
    """Of the confirmed, those the node reported no status for, found landed on chain."""
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
    index: int
    """Its place among the send's specs (what an ``Effects`` check is asked about)."""
    signature: str = ""
    wire: bytes = b""
    last_valid_height: int = 0
    signed_with: Hash | None = None
    signer_count: int = 1
    fee: int = 0
    """Lamports this signing pays if it lands (computed here from its message)."""
    sent_at: float = -math.inf
    """When its bytes last went out (resends are timed from it)."""
    first_sent_at: float = -math.inf
    """When this signing first went out (how long the cluster took is timed from it)."""
    sends: int = 0
    """Times this signing's bytes went out (two copies in one send count once)."""
    resent_at: float | None = None
    """When this signing first went out again (None: it never did)."""
    retry_at: float | None = None
    """When set, the next send is due then, whatever the rules say (a blockhash the leader
    did not know yet: the same bytes go again in about a slot)."""
    check_at: float = -math.inf
    """When its status is next worth a poll."""
    looked_at: float = -math.inf
    """When a poll last found it unseen."""
    effect_read_at: float = -math.inf
    """When its effect was last read on chain (a node reporting no status for it)."""
    seen: bool = False
    """The node has a status for it: it landed, only not at our commitment yet."""
    pending: bool = False
    """Its bytes are on the wire, the send's answer not booked yet (``wire.py``)."""
    signings: int = 0


@dataclass
class Round:
    """What one ``send`` has going: to sign, in flight, and how it is progressing."""

    queue: deque[Flight]
    in_flight: dict[str, Flight] = field(default_factory=dict)
    height: int = 0
    height_at: float = -math.inf
    """When the block height was last read."""
    progress_height: int | None = None
    """The block height when something was last confirmed (or the first one read)."""
    height_since: float = 0.0
    """When the block height was last seen to move."""
    last_refusal: str = ""
    seen: int = 0
    """This send's transactions the node reported a status for."""
    found: int = 0
    """This send's transactions the node reported no status for, found landed on chain."""

    def tail(self, adding: int = 0) -> bool:
        """Whether the round is down to its last few unseen transactions, nothing to sign."""
        if self.queue:
            return False
        unseen = sum(1 for flight in self.in_flight.values() if not flight.seen)
        return unseen + adding <= TAIL

    def resend_at(self, flight: Flight, tail: bool, timing: Timing) -> float:
        """When an unseen transaction's same bytes are due to go again (if still unseen).

        The learnt resend wait after its send, doubled for each earlier send of the same
        signing up to ``BACKOFF`` times; ``OVERDUE`` in the tail.
        """
        if flight.retry_at is not None:
            return flight.retry_at
        wait = timing.resend_after
        if tail:
            return flight.sent_at + min(OVERDUE, wait)
        return flight.sent_at + wait * min(2 ** max(flight.sends - 1, 0), BACKOFF)

    def resend_due(self, flight: Flight, tail: bool, timing: Timing, now: float) -> bool:
        """Whether to send ``flight``'s bytes again now: unseen by a poll made past its moment.

        A blockhash the leader did not know yet (``retry_at``) needs no look at its status
        (it never went), only a block height read since, which says it is still valid.
        """
        if flight.seen or flight.pending or self.height > flight.last_valid_height:
            return False
        due = self.resend_at(flight, tail, timing)
        if flight.retry_at is not None:
            return now >= due and self.height_at >= flight.sent_at
        return now >= due and flight.looked_at >= due

    def to_poll(self, now: float) -> list[Flight]:
        """The flights due for a look, then the oldest others, filling whole status calls."""
        flights = sorted(self.answered(), key=lambda f: f.sent_at)
        due = [f for f in flights if f.check_at <= now]
        if not due:
            return []
        calls = -(-len(due) // MAX_SIGNATURE_STATUSES)
        room = calls * MAX_SIGNATURE_STATUSES - len(due)
        return due + [f for f in flights if f.check_at > now][:room]

    def poll_due(self, now: float, slack: float) -> bool:
        """Whether a status poll is worth its calls now.

        When a whole call's worth of transactions is due, when one has waited ``slack``
        past its moment (what a look may wait to share a call with others), or when
        nothing is left to sign and one is due (the caller waits for the last ones).
        """
        moments = [f.check_at for f in self.answered()]
        due = sum(1 for at in moments if at <= now)
        if not due:
            return False
        return due >= MAX_SIGNATURE_STATUSES or not self.queue or min(moments) <= now - slack

    def next_moment(self, slack: float) -> float:
        """The earliest moment something is to be done: a poll, or a resend that needs none."""
        wait = slack if self.queue else 0.0
        flights = self.answered()
        moments = [f.check_at + wait for f in flights]
        moments += [f.retry_at for f in flights if f.retry_at is not None]
        return min(moments, default=math.inf)

    def answered(self) -> list[Flight]:
        """The flights in flight whose sends were answered (none of their bytes pend)."""
        return [f for f in self.in_flight.values() if not f.pending]

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


@dataclass
class Send:
    """One ``Sender.send`` under way: its round, its counts, and what it waits for."""

    state: Round
    stats: SendStats
    wanted: int
    """The commitment's rank a transaction must reach to be confirmed."""
    progress: Progress | None = None
    effects: Effects | None = None
    """Reads what the send's specs did on chain (None: nothing can)."""

"""How long this cluster takes to land a transaction, learnt from the statuses seen.

A status says the slot its transaction landed in, and a poll's answer the slot it was read
at; with the length of a slot (learnt from the polls' slots and the clock), the moment a
transaction landed is known to within a slot, however late the poll that saw it. So each
transaction seen tells how long the cluster took from its first send to its landing,
whatever the polls' schedule. One seen after a resend of it went out is left out (it may
be the resend that landed: Karn's rule, as TCP's round-trip estimate has it); one that
landed before its resend went says the resend was not needed.

From the last ``SAMPLES`` of them, ``Timing`` says when a first look at a transaction is
worth a poll (``expected``, the median) and how long one unseen waits before it is taken for
lost and sent again (``resend_after``, the 95th percentile with half as much again for
margin, at least ``OVERDUE``): a busy leader working through more than a block of ours, or a
cluster confirming late, makes the wait longer, so what is only queued is not sent twice.
Until ``MIN_SAMPLES`` are seen, the sender's resend interval holds.
"""

import statistics
from collections import deque
from dataclasses import dataclass, field

from curta_chain.constants import SLOT_SECONDS

SAMPLES = 512
"""Landings the estimate is made from (the most recent)."""
MIN_SAMPLES = 8
"""Landings seen before the estimate replaces the sender's resend interval."""
MARGIN = 1.5
"""The resend wait over the 95th percentile of the time to land."""
MIN_WAIT = 0.8
"""The shortest resend wait (two slots): a status is a slot or two behind its landing."""
SLOT_SPAN = 2.0
"""Seconds of polls before the slot's length is taken from them instead of 400 ms."""


@dataclass
class Timing:
    """The cluster's time to land a transaction, learnt during a command's run.

    Attributes:
        initial: the resend wait until ``MIN_SAMPLES`` landings were seen.
        first_look: when a first look is worth it until then (about a slot).
    """

    initial: float
    first_look: float
    samples: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES))
    needless: int = 0
    """Resends found needless: their transaction had landed before they went."""
    _first: tuple[float, int] | None = None
    _last: tuple[float, int] | None = None

    @property
    def slot_seconds(self) -> float:
        """The length of a slot, from the slots polls were answered at (else 400 ms)."""
        if self._first is None or self._last is None:
            return SLOT_SECONDS
        (t0, s0), (t1, s1) = self._first, self._last
        if t1 - t0 < SLOT_SPAN or s1 <= s0:
            return SLOT_SECONDS
        return (t1 - t0) / (s1 - s0)

    def polled(self, now: float, slot: int) -> None:
        """A status poll was answered at ``slot`` (its context) at ``now``."""
        if slot <= 0:
            return
        if self._first is None:
            self._first = (now, slot)
        self._last = (now, slot)

    def landed(
        self, first_sent: float, resent: float | None, now: float, slot: int, landed: int
    ) -> None:
        """A transaction first sent at ``first_sent`` is seen at ``now``, landed at ``landed``.

        ``slot`` is the poll's context slot, ``resent`` when its first resend went (None:
        never resent).
        """
        moment = now - max(slot - landed, 0) * self.slot_seconds if slot else now
        moment = min(max(moment, first_sent), now)
        if resent is not None:
            if moment >= resent:
                return  # the resend may be what landed: no measure of the cluster
            self.needless += 1
        self.samples.append(moment - first_sent)

    @property
    def learnt(self) -> bool:
        """Whether enough landings were seen to go by them."""
        return len(self.samples) >= MIN_SAMPLES

    @property
    def expected(self) -> float:
        """Seconds after a send when a first look at its status is worth it."""
        if not self.learnt:
            return self.first_look
        return max(statistics.median(self.samples), self.first_look)

    @property
    def resend_after(self) -> float:
        """Seconds an unseen transaction waits before it is sent again."""
        if not self.learnt:
            return self.initial
        ordered = sorted(self.samples)
        high = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        return max(MARGIN * high, MIN_WAIT)

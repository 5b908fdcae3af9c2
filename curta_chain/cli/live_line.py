"""The live line's contents: a progress bar with its rate and ETA, and a wait, as text.

``ProgressBar`` counts one piece of work (bytes, transactions, compute units, where it
is) and renders it to fit a width, measuring the rate over a recent window; ``Wait`` says
how long something has been waited for. ``console.ConsoleReporter`` draws them.
"""

from collections import deque
from collections.abc import Callable

WARMUP = 3.0
"""Seconds of progress before a rate and ETA are shown: the first ones mislead."""
RATE_WINDOW = 10.0
"""Seconds of recent progress the rate (and so the ETA) is measured over."""
STALL = 5.0
"""Seconds without progress after which the display says it is stalled."""
TAIL_WIDTH = 36
"""Columns kept for the numbers after the bar (amount, rate, ETA)."""


def duration(seconds: float) -> str:
    """``seconds`` as a person reads it: 0.4s, 17s, 3m05s, 1h02m."""
    if seconds < 10:
        return f"{max(seconds, 0.0):.1f}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _size(n: int, total: int) -> str:
    """``n`` bytes in the unit that suits ``total``."""
    if total >= 1_000_000:
        return f"{n / 1_000_000:.1f}"
    if total >= 1_000:
        return f"{n / 1_000:.0f}"
    return f"{n}"


def _unit(total: int) -> str:
    return "MB" if total >= 1_000_000 else "kB" if total >= 1_000 else "B"


def _units(n: int) -> str:
    """A count of compute units in a few columns: 950, 12k, 3.4M, 1.2G."""
    for size, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n / size:.1f}{suffix}" if n < 10 * size else f"{n // size:,}{suffix}"
    return str(n)


def fit(text: str, width: int) -> str:
    """``text``, cut to ``width`` columns with "..." where it was cut."""
    return text if len(text) <= width else text[: width - 3] + "..."


class ProgressBar:
    """One progress display's counts and the rate measured over a recent window."""

    def __init__(
        self,
        label: str,
        total_bytes: int,
        total_tx: int,
        done_bytes: int,
        done_tx: int,
        clock: Callable[[], float],
    ):
        self.label = label
        self.total_bytes, self.total_tx = total_bytes, total_tx
        self.bytes, self.tx = done_bytes, done_tx
        self.units = 0
        self.where: str | None = None
        self.resent = self.resigned = 0
        self._clock = clock
        self.started = clock()
        self.first_advance: float | None = None
        self.last_advance = self.started
        self._samples: deque[tuple[float, int]] = deque()

    def retried(self) -> str | None:
        """The retries so far ("resent 12, signed again 3"), or None when there were none."""
        parts = [f"resent {self.resent:,}"] if self.resent else []
        parts += [f"signed again {self.resigned:,}"] if self.resigned else []
        return ", ".join(parts) or None

    def advance(self, nbytes: int, transactions: int, units: int = 0) -> None:
        """Count work done now."""
        now = self._clock()
        if self.first_advance is None:
            self.first_advance = now
            self._samples.append((now, self.tx))
        self.bytes += nbytes
        self.tx += transactions
        self.units += units
        self.last_advance = now

    def sample(self, now: float) -> None:
        """Record the count now (the timer calls this) and forget what left the window."""
        if self.first_advance is None:
            return
        self._samples.append((now, self.tx))
        while len(self._samples) > 2 and now - self._samples[1][0] >= RATE_WINDOW:
            self._samples.popleft()

    def rate(self, now: float) -> float | None:
        """Transactions per second over the window, or None during the warm-up."""
        if self.first_advance is None or now - self.first_advance < WARMUP or not self._samples:
            return None
        since, count = self._samples[0]
        return (self.tx - count) / max(now - since, 1e-9)

    def fraction(self) -> float:
        """How much is done, 0 to 1: by bytes when they are counted, else transactions."""
        if self.total_bytes:
            return min(self.bytes / self.total_bytes, 1.0)
        return min(self.tx / self.total_tx, 1.0) if self.total_tx else 1.0

    def eta(self, now: float) -> str:
        """The time part: ETA 12s, stalled 7s, or ETA ... while warming up."""
        idle = now - self.last_advance
        if self.tx >= self.total_tx and self.bytes >= self.total_bytes:
            return f"in {duration(now - self.started)}"
        if idle >= STALL:
            return f"stalled {duration(idle)}"
        rate = self.rate(now)
        if rate is None or rate <= 0:
            return "ETA ..."
        return f"ETA {duration((self.total_tx - self.tx) / rate)}"

    def render(self, width: int, now: float, waiting: str | None) -> str:
        """The live line, at most ``width`` characters."""
        head = f"{self.label} {self.fraction() * 100:3.0f}%"
        amount = (
            f"{_size(self.bytes, self.total_bytes)}/{_size(self.total_bytes, self.total_bytes)} "
            f"{_unit(self.total_bytes)}"
            if self.total_bytes
            else f"{self.tx:,}/{self.total_tx:,} tx"
        )
        if self.units:
            amount += f" {_units(self.units)} CU"
        rate = self.rate(now)
        tails = ([self.where] if self.where else []) + [amount]
        if (retried := self.retried()) is not None:
            tails.append(retried)
        if waiting is not None:
            tails.append(waiting)
        else:
            if rate is not None and now - self.last_advance < STALL:
                tails.append(f"{rate:,.0f} tx/s")
            tails.append(self.eta(now))
        while True:
            # Padded to a steady width, so the bar does not jump as the numbers change.
            tail = "  ".join(tails).ljust(min(TAIL_WIDTH, width // 2))
            room = width - len(head) - len(tail) - 4  # spaces and brackets
            if room >= 10 or len(tails) == 1:
                break
            if len(tails) > 2 and len(head) + 1 + len(tail.rstrip()) <= width:
                return f"{head} {tail}".rstrip()  # the numbers say more than a short bar
            # Drop the least useful field first: the rate, then the amount.
            tails.pop(-2 if waiting is None and len(tails) > 2 else 0)
        if room < 4:
            return fit(f"{head} {tail}".rstrip(), width)
        filled = int(self.fraction() * room)
        return f"{head} [{'#' * filled}{'.' * (room - filled)}] {tail}"[:width].rstrip()

    def plain(self, now: float, waiting: str | None) -> str:
        """The line printed every few seconds off a terminal."""
        counts = (
            f"{self.bytes:,} of {self.total_bytes:,} bytes, " if self.total_bytes else ""
        ) + f"{self.tx:,} of {self.total_tx:,} transaction{'' if self.total_tx == 1 else 's'}"
        if self.units:
            counts += f", {self.units:,} compute units"
        if self.where:
            counts = f"{self.where}; {counts}"
        rate = self.rate(now)
        speed = f", {rate:,.0f} tx/s" if rate is not None and waiting is None else ""
        retried = f", {text}" if (text := self.retried()) is not None else ""
        tail = waiting if waiting is not None else self.eta(now)
        return f"{self.label}: {self.fraction() * 100:.0f}% ({counts}){speed}{retried}, {tail}"


class Wait:
    """Something waited for, since when, and when it was last printed (off a terminal)."""

    def __init__(self, what: str, clock: Callable[[], float]):
        self.what = what
        self.started = clock()
        self.printed_at: float | None = None

    def text(self, now: float) -> str:
        """``waiting 3.2s for <what>``."""
        # The time first: a narrow terminal cuts the end of the line.
        return f"waiting {duration(now - self.started)} for {self.what}"

"""How the library talks to a person: only through a Reporter the caller hands in.

The library never prints. A command hands its work a ``Reporter`` (the CLI makes one with
``curta_chain.cli.options.make_reporter``); tests and library callers pass
``NullReporter``. A reporter does four things:

- ``line(text)``: one line of the command's result (stdout, display output only);
- ``note(text)``: something a person watching should know (stderr): "resuming ...";
- ``progress(label, total_bytes, total_transactions, done_bytes=, done_transactions=)``:
  a progress display for work counted in bytes and transactions, the ``done_`` part
  already finished before this run (a resume);
- ``waiting(what)``: a context manager that says what is being waited for while its block
  runs (a confirmation, a node that stopped answering), if the wait lasts.

``ConsoleReporter`` draws progress and waits on stderr. On a terminal it keeps one live
line, fitted to the terminal's width and redrawn on a timer (so a stall shows as a stall,
not a frozen bar), with a rate and ETA only after a warm-up. Off a terminal it prints a
plain line every few seconds instead, so a log never goes silent.
"""

import contextlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Protocol, TextIO

from curta_chain.constants import LAMPORTS_PER_SOL

TICK = 0.25
"""Seconds between redraws of the live line on a terminal."""
HEARTBEAT = 5.0
"""Seconds between progress lines when stderr is not a terminal."""
WARMUP = 3.0
"""Seconds of progress before a rate and ETA are shown: the first ones mislead."""
RATE_WINDOW = 10.0
"""Seconds of recent progress the rate (and so the ETA) is measured over."""
STALL = 5.0
"""Seconds without progress after which the display says it is stalled."""
TAIL_WIDTH = 36
"""Columns kept for the numbers after the bar (amount, rate, ETA)."""
WAIT_QUIET = 1.0
"""Seconds a wait may last before a terminal shows it: short waits are normal."""
WAIT_QUIET_OFF_TERMINAL = 3.0
"""Seconds before a wait is printed off a terminal, where a line cannot be taken back."""


class Progress(Protocol):
    """A running count of work done, in bytes and transactions."""

    def advance(self, nbytes: int = 0, transactions: int = 0) -> None:
        """Record that ``nbytes`` bytes and ``transactions`` transactions are done."""

    def retries(self, resent: int, resigned: int) -> None:
        """Show how many sends were resends and how many transactions were signed again."""

    def close(self) -> None:
        """Finish the display."""


class Waiting(Protocol):
    """What is being waited for, while a ``with reporter.waiting(...)`` block runs."""

    def update(self, what: str) -> None:
        """Say that what is being waited for is now ``what``."""


class Reporter(Protocol):
    """Where the library's messages and progress go."""

    def line(self, text: str) -> None:
        """Show one line of the result."""

    def note(self, text: str) -> None:
        """Tell a person watching something that is not part of the result."""

    def progress(
        self,
        label: str,
        total_bytes: int,
        total_transactions: int,
        *,
        done_bytes: int = 0,
        done_transactions: int = 0,
    ) -> Progress:
        """Start a progress display; ``done_*`` were finished before this run."""

    def waiting(self, what: str) -> contextlib.AbstractContextManager[Waiting]:
        """Say what is being waited for while the block runs, if it lasts."""


class _NullProgress:
    def advance(self, nbytes: int = 0, transactions: int = 0) -> None:
        pass

    def retries(self, resent: int, resigned: int) -> None:
        pass

    def close(self) -> None:
        pass


class _NullWaiting:
    def update(self, what: str) -> None:
        pass


class NullReporter:
    """Says nothing: for tests and library use."""

    def line(self, text: str) -> None:
        """Drop the line."""

    def note(self, text: str) -> None:
        """Drop the note."""

    def progress(
        self,
        label: str,
        total_bytes: int,
        total_transactions: int,
        *,
        done_bytes: int = 0,
        done_transactions: int = 0,
    ) -> Progress:
        """Return a display that shows nothing."""
        return _NullProgress()

    @contextlib.contextmanager
    def waiting(self, what: str) -> Iterator[Waiting]:
        """Wait without a word."""
        yield _NullWaiting()


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, plural unless one: "1 write", "16,404 writes"."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def sol(lamports: int) -> str:
    """``lamports`` in SOL to the lamport: "1.500000000 SOL"."""
    return f"{lamports / LAMPORTS_PER_SOL:.9f} SOL"


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


def _fit(text: str, width: int) -> str:
    """``text``, cut to ``width`` columns with "..." where it was cut."""
    return text if len(text) <= width else text[: width - 3] + "..."


class _Bar:
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
        self._clock = clock
        self.started = clock()
        self.first_advance: float | None = None
        self.last_advance = self.started
        self._samples: deque[tuple[float, int]] = deque()
        self.resent = self.resigned = 0

    def retried(self) -> str | None:
        """The retries so far ("resent 12, signed again 3"), or None when there were none."""
        parts = [f"resent {self.resent:,}"] if self.resent else []
        parts += [f"signed again {self.resigned:,}"] if self.resigned else []
        return ", ".join(parts) or None

    def advance(self, nbytes: int, transactions: int) -> None:
        now = self._clock()
        if self.first_advance is None:
            self.first_advance = now
            self._samples.append((now, self.tx))
        self.bytes += nbytes
        self.tx += transactions
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
        rate = self.rate(now)
        tails = [amount]
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
            # Drop the least useful field first: the rate, then the amount.
            tails.pop(-2 if waiting is None and len(tails) > 2 else 0)
        if room < 4:
            return _fit(f"{head} {tail}".rstrip(), width)
        filled = int(self.fraction() * room)
        return f"{head} [{'#' * filled}{'.' * (room - filled)}] {tail}"[:width].rstrip()

    def plain(self, now: float, waiting: str | None) -> str:
        """The line printed every few seconds off a terminal."""
        counts = (
            f"{self.bytes:,} of {self.total_bytes:,} bytes, " if self.total_bytes else ""
        ) + f"{self.tx:,} of {self.total_tx:,} transactions"
        rate = self.rate(now)
        speed = f", {rate:,.0f} tx/s" if rate is not None and waiting is None else ""
        retried = f", {text}" if (text := self.retried()) is not None else ""
        tail = waiting if waiting is not None else self.eta(now)
        return f"{self.label}: {self.fraction() * 100:.0f}% ({counts}){speed}{retried}, {tail}"


class _Wait:
    def __init__(self, what: str, clock: Callable[[], float]):
        self.what = what
        self.started = clock()
        self.printed_at: float | None = None

    def text(self, now: float) -> str:
        # The time first: a narrow terminal cuts the end of the line.
        return f"waiting {duration(now - self.started)} for {self.what}"


class _ConsoleProgress:
    def __init__(self, reporter: "ConsoleReporter", bar: _Bar):
        self._reporter, self._bar = reporter, bar

    def advance(self, nbytes: int = 0, transactions: int = 0) -> None:
        self._bar.advance(nbytes, transactions)

    def retries(self, resent: int, resigned: int) -> None:
        self._bar.resent, self._bar.resigned = resent, resigned

    def close(self) -> None:
        self._reporter._finish(self._bar)


class _ConsoleWaiting:
    def __init__(self, wait: _Wait):
        self._wait = wait

    def update(self, what: str) -> None:
        self._wait.what = what


class ConsoleReporter:
    """Result lines on stdout; notes, progress and waits on stderr.

    Args:
        out, err: the streams (default: ``sys.stdout`` and ``sys.stderr`` at call time).
        results: print ``line`` text (False for JSON output, whose document is the result).
        chatty_off_terminal: when stderr is not a terminal, still print notes, progress
            lines every few seconds and long waits (False for JSON output: a machine reads).
        terminal: whether stderr is a terminal (default: ask it).
        clock, timer: injected for tests; ``timer=False`` draws only on ``refresh()``.
    """

    def __init__(
        self,
        out: TextIO | None = None,
        err: TextIO | None = None,
        *,
        results: bool = True,
        chatty_off_terminal: bool = True,
        terminal: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        timer: bool = True,
    ):
        self._out_stream, self._err_stream = out, err
        self._results = results
        self._terminal = terminal
        self._chatty = chatty_off_terminal
        self._clock = clock
        self._timer = timer
        self._lock = threading.RLock()
        self._bars: list[_Bar] = []
        self._waits: list[_Wait] = []
        self._drawn = False
        self._last_heartbeat = 0.0
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    # Streams are looked up at call time, so a redirected sys.stdout (capsys) is honoured.
    @property
    def _out(self) -> TextIO:
        return self._out_stream or sys.stdout

    @property
    def _err(self) -> TextIO:
        return self._err_stream or sys.stderr

    @property
    def on_terminal(self) -> bool:
        """Whether the live display is drawn (stderr is a terminal)."""
        if self._terminal is None:
            try:
                self._terminal = self._err.isatty()
            except (AttributeError, ValueError):
                self._terminal = False
        return self._terminal

    def _shows(self) -> bool:
        return self.on_terminal or self._chatty

    def line(self, text: str) -> None:
        """Print one line of the result to stdout (nothing for JSON output)."""
        if not self._results:
            return
        with self._lock:
            self._clear()
            print(text, file=self._out, flush=True)
            self._draw()

    def note(self, text: str) -> None:
        """Print a note to stderr, above the live line."""
        if not self._shows():
            return
        with self._lock:
            self._clear()
            print(text, file=self._err, flush=True)
            self._draw()

    def progress(
        self,
        label: str,
        total_bytes: int,
        total_transactions: int,
        *,
        done_bytes: int = 0,
        done_transactions: int = 0,
    ) -> Progress:
        """Start a progress display on stderr; say so first if part was done before."""
        if not self._shows():
            return _NullProgress()
        bar = _Bar(
            label, total_bytes, total_transactions, done_bytes, done_transactions, self._clock
        )
        with self._lock:
            self._bars.append(bar)
            self._last_heartbeat = self._clock()
        self._start_timer()
        return _ConsoleProgress(self, bar)

    @contextlib.contextmanager
    def waiting(self, what: str) -> Iterator[Waiting]:
        """Show ``waiting Ns for <what>`` once the wait has lasted a while (``WAIT_QUIET``)."""
        if not self._shows():
            yield _NullWaiting()
            return
        wait = _Wait(what, self._clock)
        with self._lock:
            self._waits.append(wait)
        self._start_timer()
        try:
            yield _ConsoleWaiting(wait)
        finally:
            with self._lock:
                self._waits.remove(wait)
                if not self.on_terminal and wait.printed_at is not None:
                    print(f"done waiting for {wait.what}", file=self._err, flush=True)
                self._clear()
                self._draw()

    def refresh(self) -> None:
        """Redraw the live line (terminal) or print a due heartbeat line (not a terminal)."""
        now = self._clock()
        with self._lock:
            for bar in self._bars:
                bar.sample(now)
            if self.on_terminal:
                self._clear()
                self._draw()
            else:
                self._heartbeat(now)

    # Internals: every one runs under self._lock.

    def _current_wait(self, now: float) -> _Wait | None:
        quiet = WAIT_QUIET if self.on_terminal else WAIT_QUIET_OFF_TERMINAL
        for wait in reversed(self._waits):
            if now - wait.started >= quiet:
                return wait
        return None

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self._err.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = int(os.environ.get("COLUMNS", "80") or 80)
        # One column short: writing the last column makes some terminals wrap.
        return max(columns - 1, 20)

    def _live_text(self, now: float) -> str | None:
        wait = self._current_wait(now)
        waiting = wait.text(now) if wait else None
        if self._bars:
            return self._bars[-1].render(self._width(), now, waiting)
        return _fit(waiting, self._width()) if waiting else None

    def _draw(self) -> None:
        if not self.on_terminal:
            return
        text = self._live_text(self._clock())
        if text:
            self._err.write("\r" + text)
            self._err.flush()
            self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self._err.write("\r\x1b[2K")
            self._err.flush()
            self._drawn = False

    def _heartbeat(self, now: float) -> None:
        wait = self._current_wait(now)
        waiting = wait.text(now) if wait else None
        if self._bars:
            if now - self._last_heartbeat >= HEARTBEAT:
                self._last_heartbeat = now
                print(self._bars[-1].plain(now, waiting), file=self._err, flush=True)
        elif wait is not None and (wait.printed_at is None or now - wait.printed_at >= HEARTBEAT):
            wait.printed_at = now
            print(wait.text(now), file=self._err, flush=True)

    def _finish(self, bar: _Bar) -> None:
        now = self._clock()
        with self._lock:
            if bar not in self._bars:
                return
            if self.on_terminal:
                self._clear()
                self._err.write(bar.render(self._width(), now, None) + "\n")
                self._err.flush()
            elif self._heartbeats_printed(bar) and bar.fraction() >= 1.0:
                # Off a terminal, a run long enough to have been reported ends with a line
                # too; a short or failed one adds none, so an error after it is one line.
                print(bar.plain(now, None), file=self._err, flush=True)
            self._bars.remove(bar)
            self._draw()

    def _heartbeats_printed(self, bar: _Bar) -> bool:
        return self._last_heartbeat - bar.started >= HEARTBEAT

    def _start_timer(self) -> None:
        if not self._timer:
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run_timer, daemon=True)
            self._thread.start()

    def _run_timer(self) -> None:
        while True:
            self._wake.wait(TICK)
            with self._lock:
                if not self._bars and not self._waits:
                    self._thread = None
                    return
            self.refresh()

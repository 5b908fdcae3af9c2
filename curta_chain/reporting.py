"""How the library talks to a person: only through a Reporter the caller hands in.

The library never prints. The CLI passes a ``ConsoleReporter``; tests and JSON output
pass ``NullReporter``.
"""

import sys
import time
from typing import Protocol, TextIO


class Progress(Protocol):
    """A running count of work done, in bytes and transactions."""

    def advance(self, nbytes: int = 0, transactions: int = 0) -> None:
        """Record that ``nbytes`` bytes and ``transactions`` transactions are done."""

    def close(self) -> None:
        """Finish the bar."""


class Reporter(Protocol):
    """Where the library's messages and progress go."""

    def line(self, text: str) -> None:
        """Show one line of information."""

    def progress(self, label: str, total_bytes: int, total_transactions: int) -> Progress:
        """Start a progress bar for ``total_bytes`` bytes in ``total_transactions`` transactions."""


class _NullProgress:
    def advance(self, nbytes: int = 0, transactions: int = 0) -> None:
        pass

    def close(self) -> None:
        pass


class NullReporter:
    """Says nothing: for JSON output, tests and library use."""

    def line(self, text: str) -> None:
        """Drop the line."""

    def progress(self, label: str, total_bytes: int, total_transactions: int) -> Progress:
        """Return a bar that shows nothing."""
        return _NullProgress()


class _ConsoleProgress:
    """A one-line bar: bytes, transactions per second and ETA, redrawn at most 10 times/s."""

    def __init__(self, stream: TextIO, label: str, total_bytes: int, total_tx: int):
        self._stream, self._label = stream, label
        self._total_bytes, self._total_tx = total_bytes, total_tx
        self._bytes = self._tx = 0
        self._start = self._drawn = time.monotonic()

    def advance(self, nbytes: int = 0, transactions: int = 0) -> None:
        self._bytes += nbytes
        self._tx += transactions
        now = time.monotonic()
        if now - self._drawn >= 0.1:
            self._drawn = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self._tx / elapsed
        left = max(self._total_tx - self._tx, 0)
        eta = f"{left / rate:5.0f}s" if rate > 0 else "    ?"
        frac = self._bytes / self._total_bytes if self._total_bytes else 1.0
        bar = "#" * int(frac * 30)
        self._stream.write(
            f"\r{self._label} [{bar:<30}] {self._bytes:>11,}/{self._total_bytes:,} B"
            f"  {self._tx:,}/{self._total_tx:,} tx  {rate:7.0f} tx/s  ETA {eta}"
        )
        self._stream.flush()

    def close(self) -> None:
        self._draw(time.monotonic())
        self._stream.write("\n")
        self._stream.flush()


class ConsoleReporter:
    """Writes lines to stdout and draws progress bars on stderr when it is a terminal."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None):
        # Resolved at call time, so a redirected sys.stdout (pytest's capsys) is honoured.
        self._out, self._err = out or sys.stdout, err or sys.stderr

    def line(self, text: str) -> None:
        """Print one line to stdout."""
        print(text, file=self._out, flush=True)

    def progress(self, label: str, total_bytes: int, total_transactions: int) -> Progress:
        """Draw a bar on stderr if it is a terminal; otherwise stay quiet."""
        if not self._err.isatty():
            return _NullProgress()
        return _ConsoleProgress(self._err, label, total_bytes, total_transactions)

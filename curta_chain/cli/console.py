"""The console reporter: progress, waits and notes drawn on stderr, results on stdout.

``ConsoleReporter`` is the CLI's ``Reporter`` (``curta_chain.reporting``). On a terminal it
keeps one live line, fitted to the terminal's width and redrawn on a timer (so a stall shows
as a stall, not a frozen bar), with a rate and ETA only after a warm-up. Off a terminal it
prints a plain line every few seconds instead, so a log never goes silent. A line that
meets text streamed to the same terminal or file (``run``'s tokens; ``> log 2>&1``) starts
on a line of its own.
"""

import contextlib
import os
import re
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from typing import TextIO

from curta_chain.cli.live_line import ProgressBar, Wait, fit
from curta_chain.reporting import NullProgress, NullWaiting, Progress, Waiting

TICK = 0.25
"""Seconds between redraws of the live line on a terminal."""
HEARTBEAT = 5.0
"""Seconds between progress lines when stderr is not a terminal."""
WAIT_QUIET = 1.0
"""Seconds a wait may last before a terminal shows it: short waits are normal."""
WAIT_QUIET_OFF_TERMINAL = 3.0
"""Seconds before a wait is printed off a terminal, where a line cannot be taken back."""


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters a model's text may hold (tab and newline aside): as llama2.c's
``safe_printf``, they are not written to a terminal, where they would move the cursor,
ring the bell or start an escape sequence."""
_INLINE_GAP = "  "
_INLINE_MIN = 24
"""Columns the live line needs to be drawn after streamed text on its line."""


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _same_file(a: TextIO, b: TextIO) -> bool:
    """Whether two streams write to one file (``> log 2>&1``, one pipe, one terminal)."""
    if a is b:
        return True
    try:
        first, second = os.fstat(a.fileno()), os.fstat(b.fileno())
    except (AttributeError, ValueError, OSError):
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def _column_after(column: int, text: str, width: int) -> int:
    """The screen column after writing ``text`` from ``column`` on a ``width``-column line."""
    for char in text:
        if char == "\n":
            column = 0
        elif char == "\t":
            column += 8 - column % 8
        else:
            column += 2 if unicodedata.east_asian_width(char) in "WF" else 1
        if column >= width:
            column %= width
    return column


class _ConsoleProgress:
    def __init__(self, reporter: "ConsoleReporter", bar: ProgressBar):
        self._reporter, self._bar = reporter, bar

    def advance(self, nbytes: int = 0, transactions: int = 0, units: int = 0) -> None:
        self._bar.advance(nbytes, transactions, units)

    def describe(self, where: str) -> None:
        self._bar.where = where

    def retries(self, resent: int, resigned: int) -> None:
        self._bar.resent, self._bar.resigned = resent, resigned

    def close(self) -> None:
        self._reporter._finish(self._bar)


class _ConsoleWaiting:
    def __init__(self, wait: Wait):
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
        self._bars: list[ProgressBar] = []
        self._waits: list[Wait] = []
        self._drawn = False
        self._drawn_inline = 0
        """Columns of live text drawn after streamed text on its line (0: none)."""
        self._column = 0
        """Where streamed text stands on the screen stderr shares (0: a line's start)."""
        self._text_open = False
        """Streamed text's last line is not ended (on a terminal: its column is not 0)."""
        self._text_broken = False
        """A line written since the last text ended the text's line already."""
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
            self._break_text_line(self._out)
            print(text, file=self._out, flush=True)
            self._draw()

    def note(self, text: str) -> None:
        """Print a note to stderr, above the live line (and below streamed text)."""
        if not self._shows():
            return
        with self._lock:
            self._clear()
            self._break_text_line(self._err)
            print(text, file=self._err, flush=True)
            self._draw()

    def text(self, piece: str) -> None:
        """Stream ``piece`` of generated text to stdout (always), control characters left out.

        The live line is drawn after the text on its line while there is room, and a note
        or result line starts on a line of its own, as llama2.c's output would show.
        """
        shown = _CONTROL.sub("", piece)
        if not shown:
            return
        with self._lock:
            self._clear()
            sys.stdout.write(shown)
            sys.stdout.flush()
            self._text_broken = False
            if self.on_terminal and _isatty(sys.stdout):
                self._column = _column_after(self._column, shown, self._width() + 1)
                self._text_open = self._column != 0
            else:
                self._text_open = not shown.endswith("\n")
            self._draw()

    def end_text(self) -> None:
        """End the streamed text with a newline, unless a line after it ended it already."""
        with self._lock:
            self._clear()
            if not self._text_broken:
                sys.stdout.write("\n")
                sys.stdout.flush()
            self._column = 0
            self._text_open = self._text_broken = False
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
            return NullProgress()
        bar = ProgressBar(
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
            yield NullWaiting()
            return
        wait = Wait(what, self._clock)
        with self._lock:
            self._waits.append(wait)
        self._start_timer()
        try:
            yield _ConsoleWaiting(wait)
        finally:
            with self._lock:
                self._waits.remove(wait)
                if not self.on_terminal and wait.printed_at is not None:
                    self._break_text_line(self._err)
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

    def _current_wait(self, now: float) -> Wait | None:
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

    def _live_text(self, now: float, width: int | None = None) -> str | None:
        width = self._width() if width is None else width
        wait = self._current_wait(now)
        waiting = wait.text(now) if wait else None
        if self._bars:
            return self._bars[-1].render(width, now, waiting)
        return fit(waiting, width) if waiting else None

    def _draw(self) -> None:
        if not self.on_terminal:
            return
        if self._column:
            # After streamed text on its line: a carriage return would draw over the text.
            room = self._width() - self._column - len(_INLINE_GAP)
            text = self._live_text(self._clock(), room) if room >= _INLINE_MIN else None
            if text:
                self._err.write(_INLINE_GAP + text)
                self._err.flush()
                self._drawn_inline = len(_INLINE_GAP) + len(text)
            return
        text = self._live_text(self._clock())
        if text:
            self._err.write("\r" + text)
            self._err.flush()
            self._drawn = True

    def _clear(self) -> None:
        if self._drawn_inline:
            self._err.write(f"\x1b[{self._drawn_inline}D\x1b[K")
            self._err.flush()
            self._drawn_inline = 0
        if self._drawn:
            self._err.write("\r\x1b[2K")
            self._err.flush()
            self._drawn = False

    def _break_text_line(self, stream: TextIO) -> None:
        """Before a full line on ``stream``: end the streamed text's line where they meet.

        They meet on a terminal and in one file (stdout and stderr to one log): there a
        line would otherwise run on from the story's last word.
        """
        if self._text_open and (self._column or _same_file(stream, sys.stdout)):
            stream.write("\n")
            self._column = 0
            self._text_open = False
            self._text_broken = True

    def _heartbeat(self, now: float) -> None:
        wait = self._current_wait(now)
        waiting = wait.text(now) if wait else None
        if self._bars:
            if now - self._last_heartbeat >= HEARTBEAT:
                self._last_heartbeat = now
                self._break_text_line(self._err)
                print(self._bars[-1].plain(now, waiting), file=self._err, flush=True)
        elif wait is not None and (wait.printed_at is None or now - wait.printed_at >= HEARTBEAT):
            wait.printed_at = now
            self._break_text_line(self._err)
            print(wait.text(now), file=self._err, flush=True)

    def _finish(self, bar: ProgressBar) -> None:
        now = self._clock()
        with self._lock:
            if bar not in self._bars:
                return
            if self.on_terminal:
                self._clear()
                self._break_text_line(self._err)
                self._err.write(bar.render(self._width(), now, None) + "\n")
                self._err.flush()
            elif self._heartbeats_printed(bar) and bar.fraction() >= 1.0:
                # Off a terminal, a run long enough to have been reported ends with a line
                # too; a short or failed one adds none, so an error after it is one line.
                self._break_text_line(self._err)
                print(bar.plain(now, None), file=self._err, flush=True)
            self._bars.remove(bar)
            self._draw()

    def _heartbeats_printed(self, bar: ProgressBar) -> bool:
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

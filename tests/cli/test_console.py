"""The console reporter: a live line that fits, redraws on a timer, and never goes silent.

Most tests drive the reporter with a fake clock and no timer thread (``timer=False``),
calling ``refresh()`` where the timer would; one runs the real timer.
"""

import io
import re
import threading

import pytest

from curta_chain.cli.console import HEARTBEAT, WAIT_QUIET, WAIT_QUIET_OFF_TERMINAL, ConsoleReporter
from curta_chain.cli.live_line import STALL, WARMUP, duration
from curta_chain.reporting import NullReporter, sol

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


def frames(text: str) -> list[str]:
    """What a terminal shows, redraw by redraw: the text between carriage returns/newlines."""
    return [f for f in re.split(r"[\r\n]", ANSI.sub("", text)) if f]


def reporter(width: int = 80, terminal: bool = True, **kwargs):
    out, err, clock = io.StringIO(), io.StringIO(), Clock()
    console = ConsoleReporter(out, err, terminal=terminal, clock=clock, timer=False, **kwargs)
    console._width = lambda: width - 1  # type: ignore[method-assign]
    return console, out, err, clock


def upload(console, clock, total_tx=16_403, seconds=20, per_second=1_000, done_bytes=0):
    """Advance a 16.5 MB upload at ``per_second`` transactions a second for ``seconds``."""
    bar = console.progress(
        "upload", 16_563_208 + done_bytes, total_tx, done_bytes=done_bytes, done_transactions=0
    )
    for _ in range(seconds * 4):
        clock.tick(0.25)
        bar.advance(per_second // 4 * 1_010, per_second // 4)
        console.refresh()
    return bar


@pytest.mark.parametrize("width", [40, 60, 80, 100, 132, 200])
def test_every_frame_fits_the_terminal_width(width):
    console, _, err, clock = reporter(width)
    bar = upload(console, clock, seconds=10)
    clock.tick(STALL + 1)  # a stall, then a wait shown in the bar
    console.refresh()
    with console.waiting("http://127.0.0.1:8899 to answer (last: ConnectError)"):
        clock.tick(WAIT_QUIET + 1)
        console.refresh()
    bar.close()
    shown = frames(err.getvalue())
    assert shown and all(len(frame) < width for frame in shown), max(shown, key=len)
    assert err.getvalue().count("\n") == 1  # redraws stay on one line; close ends it


def test_the_bar_keeps_its_width_as_the_numbers_change():
    console, _, err, clock = reporter(80)
    upload(console, clock, seconds=10)
    bars = {frame.index("]") for frame in frames(err.getvalue()) if "]" in frame}
    assert len(bars) == 1


def test_no_eta_during_the_warm_up_then_an_eta_from_the_recent_rate():
    console, _, err, clock = reporter()
    bar = console.progress("upload", 16_563_208, 16_403)
    clock.tick(0.5)
    bar.advance(1_010, 1)  # the first confirmation: a rate from it would be nonsense
    console.refresh()
    assert frames(err.getvalue())[-1].endswith("ETA ...")
    for _ in range(int(WARMUP * 4) + 8):
        clock.tick(0.25)
        bar.advance(250 * 1_010, 250)
        console.refresh()
    last = frames(err.getvalue())[-1]
    rate = int(re.search(r"([\d,]+) tx/s", last)[1].replace(",", ""))
    assert 900 <= rate <= 1_000
    eta = re.search(r"ETA (\d+)s", last)
    assert eta and 8 <= int(eta[1]) <= 14  # ~11,900 left at ~1,000/s


def test_a_stall_is_shown_as_a_stall_not_a_frozen_bar():
    console, _, err, clock = reporter()
    upload(console, clock, seconds=5)
    clock.tick(STALL + 2)
    console.refresh()
    assert re.search(r"stalled 7\.0s$", frames(err.getvalue())[-1])


def test_a_resumed_bar_starts_where_the_chain_is():
    console, _, err, clock = reporter()
    bar = console.progress("seal", 16_563_208, 256, done_bytes=8_388_608, done_transactions=128)
    console.refresh()
    assert frames(err.getvalue())[-1].startswith("seal  51% [")
    for _ in range(128):
        clock.tick(0.05)
        bar.advance(65_536, 1)
    bar.close()
    assert frames(err.getvalue())[-1].startswith("seal 100% [")


def test_off_a_terminal_a_line_every_few_seconds_then_a_summary():
    console, _, err, clock = reporter(terminal=False)
    bar = upload(console, clock, seconds=12, per_second=500)
    lines = err.getvalue().splitlines()
    assert len(lines) == 12 // HEARTBEAT  # 2: at 5 s and 10 s
    assert lines[0].startswith("upload: 15% (2,525,000 of 16,563,208 bytes, 2,500 of 16,403")
    assert "\r" not in err.getvalue() and "\x1b" not in err.getvalue()
    bar.advance(16_563_208, 16_403)
    bar.close()
    assert err.getvalue().splitlines()[-1].startswith("upload: 100% (")


def test_the_sender_s_resends_and_re_signings_show_on_the_line_once_there_are_any():
    console, _, err, clock = reporter(width=132)
    bar = upload(console, clock, seconds=2)
    assert "resent" not in frames(err.getvalue())[-1]
    bar.retries(12, 3)
    console.refresh()
    assert "resent 12, signed again 3" in frames(err.getvalue())[-1]
    plain, _, plain_err, plain_clock = reporter(terminal=False)
    bar = upload(plain, plain_clock, seconds=2)
    bar.retries(7, 0)
    plain_clock.tick(HEARTBEAT)
    plain.refresh()
    assert ", resent 7, " in plain_err.getvalue().splitlines()[-1]


def test_a_short_or_failed_run_off_a_terminal_leaves_no_summary_line():
    console, _, err, clock = reporter(terminal=False)
    bar = upload(console, clock, seconds=2)
    bar.close()  # incomplete: the error line that follows says what happened
    short = console.progress("write", 100, 1)
    short.advance(100, 1)
    short.close()  # done before the first heartbeat: nothing to add
    assert err.getvalue() == ""


def test_a_short_wait_says_nothing_a_long_one_says_what_it_waits_for():
    console, _, err, clock = reporter()
    with console.waiting("the airdrop to be confirmed"):
        clock.tick(WAIT_QUIET / 2)
        console.refresh()
    assert err.getvalue() == ""
    with console.waiting("the airdrop to be confirmed") as wait:
        clock.tick(WAIT_QUIET + 2)
        console.refresh()
        assert frames(err.getvalue())[-1] == "waiting 3.0s for the airdrop to be confirmed"
        wait.update("the airdrop to be finalized")
        console.refresh()
        assert "finalized" in frames(err.getvalue())[-1]
    assert err.getvalue().endswith("\r\x1b[2K")  # the wait's line is cleared when it ends


def test_off_a_terminal_a_long_wait_is_printed_and_repeated():
    console, _, err, clock = reporter(terminal=False)
    with console.waiting("http://x to answer"):
        for _ in range(int((WAIT_QUIET_OFF_TERMINAL + 2 * HEARTBEAT) * 4) + 1):
            clock.tick(0.25)
            console.refresh()
    lines = err.getvalue().splitlines()
    assert lines[0] == f"waiting {duration(WAIT_QUIET_OFF_TERMINAL)} for http://x to answer"
    assert len(lines) == 4 and lines[-1] == "done waiting for http://x to answer"


def test_json_output_off_a_terminal_is_silent_on_stderr():
    console, out, err, clock = reporter(terminal=False, results=False, chatty_off_terminal=False)
    console.line("a result line")
    console.note("resuming")
    upload(console, clock, seconds=12).close()
    with console.waiting("x"):
        clock.tick(30)
        console.refresh()
    assert out.getvalue() == "" and err.getvalue() == ""


def test_a_result_line_is_printed_above_the_live_line():
    console, out, err, clock = reporter()
    upload(console, clock, seconds=1)
    drawn = err.getvalue()
    console.line("created model X")
    assert out.getvalue() == "created model X\n"
    assert err.getvalue().startswith(drawn + "\r\x1b[2K\r")  # cleared, then drawn again


class TerminalStream(io.StringIO):
    """A terminal's stderr that counts the redraws (carriage returns) written to it."""

    def __init__(self, redraws_wanted: int = 0) -> None:
        super().__init__()
        self.wanted, self.redrawn = redraws_wanted, threading.Event()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.wanted and self.getvalue().count("\r") >= self.wanted:
            self.redrawn.set()
        return written


def test_the_timer_redraws_while_nothing_advances():
    err = TerminalStream(redraws_wanted=3)
    console = ConsoleReporter(io.StringIO(), err)
    bar = console.progress("seal", 100, 10)
    try:
        # Nothing advances the bar: only the timer thread draws (a tick is ~0.25 s; the
        # wait ends on the third draw, the deadline only bounds a broken timer).
        assert err.redrawn.wait(timeout=60)
    finally:
        bar.close()


def test_durations_read_as_a_person_reads_them():
    assert [duration(s) for s in (0.44, 9.96, 17.4, 185, 3_725)] == [
        "0.4s",
        "10.0s",
        "17s",
        "3m05s",
        "1h02m",
    ]


def test_the_null_reporter_takes_everything_and_says_nothing(capsys):
    null = NullReporter()
    null.line("x")
    null.note("y")
    bar = null.progress("z", 1, 1, done_bytes=1)
    bar.advance(1, 1)
    bar.close()
    with null.waiting("w") as wait:
        wait.update("v")
    assert capsys.readouterr() == ("", "")


def test_sol_is_exact_to_the_lamport_at_any_size():
    # A float divides 9,007,199.254740993 SOL to ...992: integers do not.
    assert sol(9_007_199_254_740_993) == "9007199.254740993 SOL"
    assert sol(2**64 - 1) == "18446744073.709551615 SOL"
    assert sol(1) == "0.000000001 SOL" and sol(-1_500_000_000) == "-1.500000000 SOL"
    assert sol(1_500_000_000, short=True) == "1.5 SOL" and sol(2 * 10**9, short=True) == "2 SOL"


class Screen(io.StringIO):
    """A terminal's stdout (stderr is drawn to the same screen)."""

    def isatty(self) -> bool:
        return True


def test_streamed_text_meets_notes_and_the_live_line_on_lines_of_their_own(monkeypatch):
    screen = Screen()
    monkeypatch.setattr("sys.stdout", screen)
    console, _, err, clock = reporter(80)
    # Control characters are left out, as llama2.c's safe_printf leaves them out: what
    # follows an escape is only text then.
    console.text("Once\x1b[2J upon a\x07 time\r\x00\x9b")
    assert screen.getvalue() == "Once[2J upon a time"
    # The live line is drawn after the text on its line, never over it with a carriage return.
    bar = console.progress("run", 0, 300)
    bar.describe("token 4/50")
    clock.tick(0.25)
    bar.advance(transactions=12, units=3_400_000)
    console.refresh()
    drawn = err.getvalue()
    # Too little room for a bar: the numbers say more.
    assert drawn == "  run   4% token 4/50  12/300 tx 3.4M CU  ETA ..."
    assert "\r" not in drawn and len(drawn) <= 79 - len("Once[2J upon a time")
    # A note after the text starts a line of its own; the text goes on below it.
    console.note("resuming run X at step 12")
    after = err.getvalue()[len(drawn) :]
    assert after.startswith(f"\x1b[{len(drawn)}D\x1b[K\nresuming run X at step 12\n")
    console.text(", there")
    console.end_text()
    assert screen.getvalue() == "Once[2J upon a time, there\n"


def test_text_off_a_terminal_is_left_alone_but_its_control_characters(monkeypatch, capsys):
    console, _, err, _ = reporter(80, terminal=False)
    console.text("a\tb\nc\x1b")
    console.note("note")
    assert capsys.readouterr().out == "a\tb\nc" and err.getvalue() == "note\n"


def test_resends_and_resignings_are_shown_on_and_off_a_terminal():
    for terminal in (True, False):
        console, _, err, clock = reporter(80, terminal=terminal)
        bar = console.progress("upload", 0, 100)
        bar.advance(transactions=10)
        bar.retries(12, 3)
        clock.tick(HEARTBEAT)
        console.refresh()
        assert "resent 12, signed again 3" in err.getvalue(), (terminal, err.getvalue())

"""How the library talks to a person: only through a Reporter the caller hands in.

The library never prints. A command hands its work a ``Reporter`` (the CLI makes one with
``curta_chain.cli.options.make_reporter``, drawn by ``curta_chain.cli.console``); tests and
library callers pass ``NullReporter``. A reporter does four things:

- ``line(text)``: one line of the command's result (stdout, display output only);
- ``note(text)``: something a person watching should know (stderr): "resuming ...";
- ``progress(label, total_bytes, total_transactions, done_bytes=, done_transactions=)``:
  a progress display for work counted in bytes and transactions, the ``done_`` part
  already finished before this run (a resume);
- ``waiting(what)``: a context manager that says what is being waited for while its block
  runs (a confirmation, a node that stopped answering), if the wait lasts.

``counted`` and ``sol`` are the words and amounts every message shares.
"""

import contextlib
from collections.abc import Iterator
from typing import Protocol

from curta_chain.constants import LAMPORTS_PER_SOL


class Progress(Protocol):
    """A running count of work done, in bytes and transactions."""

    def advance(self, nbytes: int = 0, transactions: int = 0, units: int = 0) -> None:
        """Record that ``nbytes`` bytes and ``transactions`` transactions are done.

        ``units``: the compute units those transactions used, when the work counts them
        (``run --on-chain``'s steps).
        """

    def describe(self, where: str) -> None:
        """Say where the work is now, in a few words: a phase or a position ("token 4/50")."""

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


class NullProgress:
    """A progress display that shows nothing."""

    def advance(self, nbytes: int = 0, transactions: int = 0, units: int = 0) -> None:
        """Count nothing."""

    def describe(self, where: str) -> None:
        """Say nothing of it."""

    def retries(self, resent: int, resigned: int) -> None:
        """Show no retries."""

    def close(self) -> None:
        """Finish nothing."""


class NullWaiting:
    """A wait that says nothing."""

    def update(self, what: str) -> None:
        """Say nothing of it."""


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
        return NullProgress()

    @contextlib.contextmanager
    def waiting(self, what: str) -> Iterator[Waiting]:
        """Wait without a word."""
        yield NullWaiting()


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, plural unless one: "1 write", "16,404 writes"."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def sol(lamports: int, short: bool = False) -> str:
    """``lamports`` in SOL to the lamport: "1.500000000 SOL" (integers: exact at any size).

    ``short``: without trailing zeros, as ``solana balance`` prints it ("1.5 SOL").
    """
    whole, part = divmod(abs(lamports), LAMPORTS_PER_SOL)
    fraction = f"{part:09d}".rstrip("0") if short else f"{part:09d}"
    return f"{'-' if lamports < 0 else ''}{whole}{'.' if fraction else ''}{fraction} SOL"

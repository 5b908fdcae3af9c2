"""Accounts as each commitment level sees them, keeping only what changed.

A validator answers a read at the bank of the commitment asked: "processed" is the
current slot, "confirmed" the end of the slot before it (one node: its own vote confirms a
slot as soon as the slot is over), "finalized" the end of the slot ``FINALIZED_DEPTH`` (32)
slots back. LiteSVM holds only the latest state, which is "processed"; this module keeps
what is needed to go back:

- ``base``: for each account written in the last 33 slots, its state at the end of the
  last closed slot (the "confirmed" view), captured from LiteSVM before its first write
  in the window and refreshed when a slot that wrote it closes;
- per closed slot, an undo record for each account that slot wrote: the metadata and the
  bytes its transactions overwrote, found by comparing 512-byte blocks. Applying the undo
  records of the slots after the finalized one, newest first, to ``base`` gives the
  finalized view.

So a 1,010-byte write into a 10 MiB account costs about 1.5 KB of history, not 10 MiB.
Memory is bounded by one copy of each account written within the last 33 slots (13 s)
plus the bytes overwritten in that time; accounts not written in the window take nothing
and read the same at every level. Reads at "processed" never come here.
"""

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from solders.pubkey import Pubkey

from curta_chain.constants import FINALIZED_DEPTH

BLOCK_BYTES = 512
"""Granularity of the compare: a 1,010-byte write keeps at most 2-3 blocks."""
_WORDS = BLOCK_BYTES // 8


@dataclass(frozen=True, slots=True)
class AccountState:
    """An account at one point in time (the fields a read reports)."""

    lamports: int
    owner: Pubkey
    executable: bool
    rent_epoch: int
    data: bytes


@dataclass(frozen=True, slots=True)
class _Undo:
    """How to turn an account's state at the end of a slot into the one before that slot."""

    before: AccountState | None
    """The whole earlier state, when the size changed or the account was created/closed."""
    meta: tuple[int, Pubkey, bool, int] | None
    """The earlier lamports, owner, executable, rent epoch (same size)."""
    patches: tuple[tuple[int, bytes], ...]
    """(offset, earlier bytes) of the blocks that changed (same size)."""

    @property
    def size(self) -> int:
        if self.before is not None:
            return len(self.before.data)
        return sum(len(chunk) for _, chunk in self.patches)

    def apply(self, after: AccountState | None) -> AccountState | None:
        if self.meta is None:
            return self.before
        assert after is not None
        data = after.data
        if self.patches:
            buffer = bytearray(data)
            for offset, chunk in self.patches:
                buffer[offset : offset + len(chunk)] = chunk
            data = bytes(buffer)
        lamports, owner, executable, rent_epoch = self.meta
        return AccountState(lamports, owner, executable, rent_epoch, data)


def changed_blocks(old: bytes, new: bytes) -> list[tuple[int, int]]:
    """Return the (start, end) byte ranges where two equal-length buffers differ.

    Ranges are whole ``BLOCK_BYTES`` blocks (the last one may be shorter), adjacent
    changed blocks merged.
    """
    if old == new:
        return []
    size = len(old)
    whole = size // BLOCK_BYTES
    ranges: list[tuple[int, int]] = []
    if whole:
        count = whole * _WORDS
        a = np.frombuffer(old, dtype=np.uint64, count=count).reshape(whole, _WORDS)
        b = np.frombuffer(new, dtype=np.uint64, count=count).reshape(whole, _WORDS)
        changed = np.flatnonzero((a != b).any(axis=1))
        if len(changed):
            # Split where consecutive changed block numbers are not adjacent.
            breaks = np.flatnonzero(np.diff(changed) != 1)
            starts = np.concatenate(([changed[0]], changed[breaks + 1]))
            ends = np.concatenate((changed[breaks], [changed[-1]])) + 1
            ranges = [
                (int(s) * BLOCK_BYTES, int(e) * BLOCK_BYTES)
                for s, e in zip(starts, ends, strict=True)
            ]
    tail = whole * BLOCK_BYTES
    if tail < size and old[tail:] != new[tail:]:
        if ranges and ranges[-1][1] == tail:
            ranges[-1] = (ranges[-1][0], size)
        else:
            ranges.append((tail, size))
    return ranges


def undo_between(before: AccountState | None, after: AccountState | None) -> _Undo:
    """Return the undo record that turns ``after`` back into ``before``."""
    if before is None or after is None or len(before.data) != len(after.data):
        return _Undo(before, None, ())
    patches = tuple(
        (start, before.data[start:end]) for start, end in changed_blocks(before.data, after.data)
    )
    meta = (before.lamports, before.owner, before.executable, before.rent_epoch)
    return _Undo(None, meta, patches)


class BankHistory:
    """The confirmed and finalized views of recently written accounts.

    Args:
        read: returns an account's current (processed) state, or None if it does not exist.
        depth: slots between the confirmed and the finalized view's slots, less one.
    """

    LIVE = object()
    """``view`` answers this when the account reads the same at every level."""

    def __init__(
        self,
        read: Callable[[Pubkey], AccountState | None],
        depth: int = FINALIZED_DEPTH,
    ):
        self._read = read
        self._depth = depth
        self._base: dict[Pubkey, AccountState | None] = {}
        self._closed: deque[tuple[int, dict[Pubkey, _Undo]]] = deque()
        self._open_slot = -1
        self._open: set[Pubkey] = set()
        self._current = 0
        self.undo_bytes = 0
        """Bytes held in undo records (account data overwritten within the window)."""
        self.base_bytes = 0
        """Bytes held in the confirmed copies of recently written accounts."""

    @property
    def bytes(self) -> int:
        """Account data bytes the history holds."""
        return self.undo_bytes + self.base_bytes

    def will_write(self, slot: int, keys: Iterable[Pubkey]) -> None:
        """Note that a transaction of ``slot`` (the current one) is about to write ``keys``."""
        self.advance(slot)
        self._open_slot = slot
        for key in keys:
            if key not in self._base:
                state = self._read(key)
                self._base[key] = state
                self.base_bytes += len(state.data) if state is not None else 0
            self._open.add(key)

    def advance(self, slot: int) -> None:
        """Close the open slot once ``slot`` is past it, and forget what is finalized."""
        if slot <= self._current:
            return
        self._current = slot
        if self._open and self._open_slot < slot:
            self._close()
        self._prune(slot - self._depth)

    def _close(self) -> None:
        undos: dict[Pubkey, _Undo] = {}
        for key in self._open:
            before = self._base[key]
            after = self._read(key)
            undo = undo_between(before, after)
            undos[key] = undo
            self.undo_bytes += undo.size
            self.base_bytes += (len(after.data) if after else 0) - (
                len(before.data) if before else 0
            )
            self._base[key] = after
        self._closed.append((self._open_slot, undos))
        self._open = set()

    def _prune(self, finalized: int) -> None:
        while self._closed and self._closed[0][0] <= finalized:
            _, undos = self._closed.popleft()
            for key, undo in undos.items():
                self.undo_bytes -= undo.size
                forget = key in self._base and key not in self._open
                if forget and self._last_write(key) <= finalized:
                    state = self._base.pop(key)
                    self.base_bytes -= len(state.data) if state is not None else 0

    def _last_write(self, key: Pubkey) -> int:
        for slot, undos in reversed(self._closed):
            if key in undos:
                return slot
        return -1

    def view(self, key: Pubkey, slot: int) -> "AccountState | object | None":
        """Return ``key``'s state at the end of ``slot`` (before the current slot).

        Returns ``LIVE`` when the account was not written since ``slot``: its processed
        state is then its state at ``slot`` too.
        """
        if key not in self._base:
            return self.LIVE
        state = self._base[key]
        for closed_slot, undos in reversed(self._closed):
            if closed_slot <= slot:
                break
            undo = undos.get(key)
            if undo is not None:
                state = undo.apply(state)
        return state

    def keys(self) -> list[Pubkey]:
        """Return the accounts whose earlier views may differ from their current state."""
        return list(self._base)

    def written_in(self, slot: int) -> set[Pubkey]:
        """Return the accounts transactions of closed slot ``slot`` wrote."""
        for closed_slot, undos in reversed(self._closed):
            if closed_slot == slot:
                return set(undos)
            if closed_slot < slot:
                break
        return set()

    def clear(self) -> None:
        """Forget everything: every level sees the current state (after a restore)."""
        self._base.clear()
        self._closed.clear()
        self._open = set()
        self.undo_bytes = self.base_bytes = 0

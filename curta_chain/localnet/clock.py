"""Slots, block heights and blockhashes that advance with wall-clock time, as on a validator.

LiteSVM has no blocks. The localnet derives them: slot ``n`` starts ``n * slot_duration``
seconds after genesis, every slot holds a block (so block height equals slot), and the
blockhash of slot ``n`` is ``sha256(genesis_hash || n as u64 LE)``. Blockhashes are
therefore the same after a restart, and a blockhash is valid while the current block
height is at most its own plus ``MAX_PROCESSING_AGE`` (150), which is the validator's rule
and also what ``lastValidBlockHeight`` reports.
"""

import hashlib
import time
from collections.abc import Callable

import based58
from solders.clock import DEFAULT_SLOTS_PER_EPOCH, MAX_PROCESSING_AGE

from curta_chain.constants import SLOT_SECONDS

SLOTS_PER_EPOCH = DEFAULT_SLOTS_PER_EPOCH
# Blockhashes are kept for twice their validity window so isBlockhashValid can answer
# "expired" (known but too old) as well as "valid".
_KEPT_BLOCKHASHES = 2 * MAX_PROCESSING_AGE


class SlotClock:
    """The current slot from wall-clock time, and the blockhash of each recent slot.

    Args:
        genesis_hash: the chain's 32-byte genesis hash, the seed of every blockhash.
        genesis_time: Unix time of slot 0.
        slot_duration: seconds per slot; tests shorten it to expire blockhashes quickly.
        now: the time source (``time.time``).
    """

    def __init__(
        self,
        genesis_hash: bytes,
        genesis_time: float,
        slot_duration: float = SLOT_SECONDS,
        now: Callable[[], float] = time.time,
    ):
        self._genesis_hash = genesis_hash
        self.genesis_time = genesis_time
        self.slot_duration = slot_duration
        self._now = now
        self._slot = -1
        self._recent: dict[str, int] = {}
        self._floor = 0

    def hold_at_least(self, slot: int) -> None:
        """Never report a slot below ``slot`` (a replayed ledger's last slot, say)."""
        self._floor = max(self._floor, slot)

    def current_slot(self) -> int:
        """Return the slot the chain is at now; it never goes backwards."""
        # The tolerance keeps whole slots whole: 2.4 s of 0.4 s slots is slot 6, not 5.99.
        elapsed = (self._now() - self.genesis_time) / self.slot_duration
        slot = max(int(elapsed + 1e-6), self._floor)
        if slot > self._slot:
            self._advance(slot)
        return self._slot

    def seconds_to_next_slot(self) -> float:
        """Return the seconds until the next slot begins (at most one slot)."""
        elapsed = (self._now() - self.genesis_time) / self.slot_duration
        return (int(elapsed + 1e-6) + 1 - elapsed) * self.slot_duration

    def _advance(self, slot: int) -> None:
        first = max(self._slot + 1, slot - _KEPT_BLOCKHASHES)
        for n in range(first, slot + 1):
            self._recent[self.blockhash(n)] = n
        if len(self._recent) > 2 * _KEPT_BLOCKHASHES:
            oldest = slot - _KEPT_BLOCKHASHES
            self._recent = {h: n for h, n in self._recent.items() if n >= oldest}
        self._slot = slot

    def blockhash_bytes(self, slot: int) -> bytes:
        """Return the 32-byte blockhash of ``slot``."""
        return hashlib.sha256(self._genesis_hash + slot.to_bytes(8, "little")).digest()

    def blockhash(self, slot: int) -> str:
        """Return the base58 blockhash of ``slot``."""
        return based58.b58encode(self.blockhash_bytes(slot)).decode()

    def slot_of(self, blockhash: str) -> int | None:
        """Return the slot of a recent blockhash, or None if it is not one of ours or too old."""
        self.current_slot()
        return self._recent.get(blockhash)

    def age_ok(self, blockhash: str) -> bool:
        """Whether a transaction with this blockhash may still be processed."""
        slot = self.slot_of(blockhash)
        return slot is not None and self._slot - slot <= MAX_PROCESSING_AGE

    def valid_at(self, blockhash: str, slot: int) -> bool:
        """Whether the bank of ``slot`` (a recent one) accepts this blockhash."""
        made = self.slot_of(blockhash)
        return made is not None and made <= slot and slot - made <= MAX_PROCESSING_AGE

    def unix_timestamp(self, slot: int) -> int:
        """Return the block time of ``slot`` in whole seconds."""
        return int(self.genesis_time + slot * self.slot_duration)

    @staticmethod
    def last_valid_block_height(slot: int) -> int:
        """Return the last block height at which the blockhash of ``slot`` is accepted."""
        return slot + MAX_PROCESSING_AGE


class ManualClock:
    """A time source that moves only when told to: ``Localnet(now=clock)`` in tests.

    Args:
        start: the Unix time it starts at (now, by default).
    """

    def __init__(self, start: float | None = None):
        self.time = time.time() if start is None else start

    def __call__(self) -> float:
        """Return the current (manual) time."""
        return self.time

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``."""
        self.time += seconds

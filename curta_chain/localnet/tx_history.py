"""What the localnet remembers of landed transactions: statuses, details, blocks, addresses.

- Statuses (slot, error) of every transaction that landed, kept for as long as the chain
  (a duplicate must stay AlreadyProcessed; snapshots carry them).
- Details (what getTransaction and getBlock report) of the most recent
  ``KEPT_TRANSACTION_DETAILS`` transactions. When the oldest are dropped, their blocks go
  too: ``first_available_slot`` (getFirstAvailableBlock, minimumLedgerSlot) moves past
  them, as a validator's ledger does when it is cleaned up.
- Per address, the signatures of those transactions (getSignaturesForAddress, newest first).
"""

from collections import deque
from dataclasses import dataclass
from typing import Any

from solders.pubkey import Pubkey
from solders.transaction_metadata import TransactionMetadata

KEPT_TRANSACTION_DETAILS = 20_000
"""getTransaction/getBlock/getSignaturesForAddress answer for this many recent transactions
(about 3 KB each)."""


@dataclass(frozen=True)
class TransactionDetails:
    """What getTransaction reports about a landed transaction (``meta`` is LiteSVM's)."""

    signature: str
    raw: bytes
    slot: int
    err: Any
    meta: TransactionMetadata
    fee: int
    keys: list[Pubkey]
    """Every account the transaction loaded: static keys, then lookup-table ones."""
    pre_balances: list[int]
    post_balances: list[int]
    loaded_writable: list[Pubkey]
    loaded_readonly: list[Pubkey]
    pre_token_balances: list[dict[str, Any]]
    post_token_balances: list[dict[str, Any]]
    memo: str | None
    cost_units: int
    transaction_index: int
    """Its place among its block's transactions, from 0 (``transactionIndex``)."""
    """agave's cost of the transaction as it ran (``meta.costUnits``)."""


class TransactionHistory:
    """Statuses, recent details, blocks and the address index."""

    def __init__(self, kept: int = KEPT_TRANSACTION_DETAILS):
        self._kept = kept
        self.statuses: dict[str, tuple[int, Any, int]] = {}
        """signature -> (slot, error JSON, ledger sequence number)."""
        self._details: dict[str, TransactionDetails] = {}
        self._blocks: dict[int, list[str]] = {}
        self._by_address: dict[Pubkey, deque[str]] = {}
        self._per_slot: deque[tuple[int, int]] = deque()
        self.count = 0
        """Transactions landed since genesis (getTransactionCount)."""
        self.first_available_slot = 0

    def restore_status(self, signature: str, slot: int, err: Any) -> None:
        """Add a status from a snapshot (its details are gone)."""
        self.statuses[signature] = (slot, err, 0)
        self.count += 1
        self.first_available_slot = max(self.first_available_slot, slot + 1)

    def record(self, details: TransactionDetails, seq: int) -> None:
        """Remember a transaction that landed."""
        signature = details.signature
        self.statuses[signature] = (details.slot, details.err, seq)
        self.count += 1
        if self._per_slot and self._per_slot[-1][0] == details.slot:
            self._per_slot[-1] = (details.slot, self._per_slot[-1][1] + 1)
        else:
            self._per_slot.append((details.slot, 1))
            if len(self._per_slot) > 4 * 150:
                self._per_slot.popleft()
        self._details[signature] = details
        block = self._blocks.get(details.slot)
        if block is None:
            self._blocks[details.slot] = block = []
        block.append(signature)
        by_address = self._by_address
        for key in details.keys:  # a sanitized transaction lists each account once
            signatures = by_address.get(key)
            if signatures is None:
                by_address[key] = signatures = deque()
            signatures.append(signature)
        if len(self._details) > self._kept:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        """Drop the oldest transaction's whole block (a block is served whole or not at all)."""
        oldest_slot = self._details[next(iter(self._details))].slot
        while self._blocks and next(iter(self._blocks)) <= oldest_slot:
            slot = next(iter(self._blocks))
            for signature in self._blocks.pop(slot):
                # Details were recorded in order: each is the oldest left for its addresses.
                old = self._details.pop(signature)
                for key in old.keys:
                    signatures = self._by_address.get(key)
                    if signatures and signatures[0] == signature:
                        signatures.popleft()
                        if not signatures:
                            del self._by_address[key]
            self.first_available_slot = max(self.first_available_slot, slot + 1)

    def details(self, signature: str) -> TransactionDetails | None:
        """Return a recent transaction's details."""
        return self._details.get(signature)

    def next_index(self, slot: int) -> int:
        """Return the ``transaction_index`` of the next transaction to land in ``slot``."""
        return len(self._blocks.get(slot, ()))

    def block(self, slot: int) -> list[TransactionDetails]:
        """Return the transactions of ``slot`` in the order they landed."""
        return [self._details[s] for s in self._blocks.get(slot, ())]

    def slots_with_transactions(self, first: int, last: int) -> list[int]:
        """Return the slots in [first, last] that hold transactions."""
        return sorted(s for s in self._blocks if first <= s <= last)

    def signatures_for(self, address: Pubkey) -> list[str]:
        """Return the recent signatures that loaded ``address``, newest first."""
        return list(reversed(self._by_address.get(address, ())))

    def count_at(self, slot: int) -> int:
        """Return the transaction count at the end of ``slot`` (a recent one)."""
        later = sum(count for s, count in self._per_slot if s > slot)
        return self.count - later

    def count_in(self, slot: int) -> int:
        """Return how many transactions landed in ``slot`` (a recent one)."""
        return sum(count for s, count in self._per_slot if s == slot)

"""The busy-cluster mode: blocks, the leader's order, the scheduler's limits, loss, load.

Off by default (``BusyOptions()`` changes nothing). With ``blocks``, ``Localnet`` hands each
accepted transaction to the ``Leader`` here instead of running it; at the first tick of
every new slot the leader picks the block: the queued transactions and the other users'
(background) ones by compute-unit price, highest first, equal prices in a shuffle seeded
by ``seed`` and the slot, each taken if the block and every account it writes still have
room for its cost (``scheduling_cost``, the validator's cost model), else left for a later
block. One whose blockhash is too old for the block is dropped: it never lands. The chain
then runs the picked ones in that order, in that slot (``BlockProduction._produce``).

With slots shorter (or longer) than 400 ms (``--slot-ms``), the per-slot limits scale as
SIMD-0525 scales them (``BusyOptions.at_slot_ms``): block and writable-account compute units,
and with them the background load, each ``trunc(value at 400 ms * slot_ms / 400)``: at
200 ms, 50 M units a block and 20 M a writable account.

Background transactions are counted, not run: each takes its compute units of the block,
and the prices of those the block held are what getRecentPrioritizationFees reports (with
the real ones'). docs/localnet.md describes the whole mode and its flags.
"""

import math
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from operator import itemgetter
from typing import TYPE_CHECKING

from solders.message import Message, MessageV0, MessageV1
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from curta_chain.constants import ACCOUNT_CU_LIMIT, ACCOUNT_WRITE_LIMIT, BLOCK_CU_LIMIT
from curta_chain.localnet.loaded_data import loaded_accounts_data_size_limit
from curta_chain.protocol.compute_budget import DEFAULT_INSTRUCTION_COMPUTE_UNITS

if TYPE_CHECKING:
    from curta_chain.localnet.outcomes import TransactionAccounts

BUSY_DROP_RATE = 0.1
BUSY_BACKGROUND_LOAD = BLOCK_CU_LIMIT // 2
BUSY_RPS = 50
"""Requests a second of Helius's Developer plan (docs/localnet.md cites it)."""
BUSY_MAX_BATCH = 100
BASELINE_SLOT_MS = 400
"""The slot time the per-slot limits are given for (SIMD-0525 scales them from it)."""

# agave's cost model (cost-model/src/block_cost_limits.rs, cost_model.rs).
SIGNATURE_COST = 720
WRITE_LOCK_UNITS = 300
INSTRUCTION_DATA_BYTES_COST = 4
"""Instruction data bytes per compute unit (140 bytes a microsecond / 30 units a microsecond)."""
LOADED_DATA_PAGE_BYTES = 32 * 1024
LOADED_DATA_PAGE_COST = 8
BACKGROUND_TRANSACTION_UNITS = DEFAULT_INSTRUCTION_COMPUTE_UNITS
"""Each background transaction asks for the default limit of one instruction."""
BACKGROUND_PRICE_DECADES = 6
"""Background prices are log-uniform from 1 to 10**6 micro-lamports a compute unit."""
KEPT_FEE_SLOTS = 150
"""getRecentPrioritizationFees answers for this many recent slots, as the validator does."""


@dataclass(frozen=True)
class BusyOptions:
    """How busy the localnet's cluster is: every field off by default (today's localnet).

    ``curta-chain localnet``'s flags set the same fields (``--blocks``, ``--seed``,
    ``--drop-rate``, ``--block-cu-limit``, ``--account-cu-limit``,
    ``--account-write-limit``, ``--background-load``, ``--rps``, ``--max-batch``;
    ``--profile busy`` is ``BusyOptions.busy()``). Pass one as ``start_in_thread(busy=...)``.
    The limits and the background load act only with ``blocks``.
    """

    blocks: bool = False
    """Run accepted transactions in the block of the next slot, not inside sendTransaction."""
    seed: int = 0
    """Seeds the drops, the shuffle among equal prices and the background load."""
    drop_rate: float = 0.0
    """The share of accepted transactions that never reach the leader."""
    block_cu_limit: int = BLOCK_CU_LIMIT
    account_cu_limit: int = ACCOUNT_CU_LIMIT
    account_write_limit: int = ACCOUNT_WRITE_LIMIT
    background_load: int = 0
    """Compute units of other users' transactions offered to each block."""
    rps: int | None = None
    """JSON-RPC calls a second past which HTTP 429 answers (each call of a batch counts)."""
    max_batch: int | None = None
    """The longest JSON-RPC batch served; a longer one is refused whole."""

    @classmethod
    def busy(cls, seed: int = 0) -> "BusyOptions":
        """Return ``--profile busy``: a realistic mix of every behaviour."""
        return cls(
            blocks=True,
            seed=seed,
            drop_rate=BUSY_DROP_RATE,
            background_load=BUSY_BACKGROUND_LOAD,
            rps=BUSY_RPS,
            max_batch=BUSY_MAX_BATCH,
        )

    def problem(self) -> str | None:
        """Return what is wrong with these options in one line, or None."""
        if not 0.0 <= self.drop_rate <= 1.0:
            return f"drop rate {self.drop_rate}: expected a fraction from 0 to 1"
        for name in ("block_cu_limit", "account_cu_limit", "account_write_limit"):
            if getattr(self, name) < 1:
                return f"{name} {getattr(self, name)}: expected at least 1"
        if self.background_load < 0:
            return f"background_load {self.background_load}: expected at least 0"
        for name in ("rps", "max_batch"):
            value = getattr(self, name)
            if value is not None and value < 1:
                return f"{name} {value}: expected at least 1"
        return None

    def at_slot_ms(self, slot_ms: float) -> "BusyOptions":
        """These options with their per-slot limits scaled to ``slot_ms`` slots (SIMD-0525).

        The block and writable-account compute-unit limits and the background load (given
        for 400 ms slots) become ``trunc(value * slot_ms / 400)``, so that a second of wall
        clock holds as much work at any slot time.
        """
        return replace(
            self,
            block_cu_limit=slot_scaled(self.block_cu_limit, slot_ms),
            account_cu_limit=slot_scaled(self.account_cu_limit, slot_ms),
            background_load=slot_scaled(self.background_load, slot_ms),
        )

    @property
    def changes_sending(self) -> bool:
        """Whether sendTransaction does anything but run the transaction at once."""
        return self.blocks or self.drop_rate > 0


def slot_scaled(value: int, slot_ms: float) -> int:
    """A per-slot limit at 400 ms scaled to ``slot_ms`` slots, truncated, as SIMD-0525 does."""
    return math.floor(value * Fraction(slot_ms) / BASELINE_SLOT_MS)


def describe(options: BusyOptions) -> str:
    """Return the busy-cluster settings in one line (what ``curta-chain localnet`` says)."""
    parts = []
    if options.blocks:
        parts.append(
            f"blocks of {options.block_cu_limit:,} CU, {options.account_cu_limit:,} CU and "
            f"{options.account_write_limit} writes per account"
        )
        if options.background_load:
            parts.append(f"background load {options.background_load:,} CU a block")
    if options.drop_rate:
        parts.append(f"{options.drop_rate * 100:g}% of transactions lost")
    if options.rps is not None:
        parts.append(f"{options.rps} requests a second")
    if options.max_batch is not None:
        parts.append(f"batches of at most {options.max_batch}")
    return f"{'; '.join(parts) or 'nothing changed'} (seed {options.seed})"


NOT_BUSY = BusyOptions()
"""Today's localnet: every transaction runs inside its sendTransaction, nothing is lost."""


def scheduling_cost(message: Message | MessageV0 | MessageV1, writable: int, limit: int) -> int:
    """Return the compute units the leader reserves for ``message`` in a block.

    agave's cost model for scheduling (``transaction_cost``) with the requested compute-unit
    ``limit`` (not the units it will consume) and its loaded-accounts-data limit (not the
    data it will load).
    """
    # None (compute-budget instructions that do not decode) never reaches the leader's queue.
    return transaction_cost(message, writable, limit, loaded_accounts_data_size_limit(message) or 0)


def transaction_cost(
    message: Message | MessageV0 | MessageV1, writable: int, units: int, loaded_bytes: int
) -> int:
    """Return agave's cost of ``message`` in compute units (its ``costUnits`` once landed).

    720 per signature, 300 per writable account, one per 4 bytes of instruction data, the
    programs' compute ``units`` and 8 per 32 KiB page of ``loaded_bytes`` (account data).
    """
    signatures = message.header.num_required_signatures
    data_bytes = sum(len(instruction.data) for instruction in message.instructions)
    pages = -(-loaded_bytes // LOADED_DATA_PAGE_BYTES)
    return (
        SIGNATURE_COST * signatures
        + WRITE_LOCK_UNITS * writable
        + data_bytes // INSTRUCTION_DATA_BYTES_COST
        + units
        + LOADED_DATA_PAGE_COST * pages
    )


@dataclass(slots=True)
class Pending:
    """An accepted transaction waiting in the leader's queue."""

    signature: str
    raw: bytes
    tx: VersionedTransaction
    message: Message | MessageV0 | MessageV1
    blockhash: str
    price: int
    """Micro-lamports a compute unit."""
    priority: int
    """The priority fee in lamports."""
    cost: int
    writable: Sequence[Pubkey]
    accounts: "TransactionAccounts | None"
    """What it loads, when that cannot change before it runs (no lookup tables)."""
    faucet: bool = False
    """The localnet's own airdrop: first in its block, and not in the fee statistics (as
    votes are not), so that airdrops land however full the blocks are."""


@dataclass
class BlockFees:
    """The lowest compute-unit price a block held, overall and per account it wrote."""

    lowest: int
    by_account: dict[Pubkey, int] = field(default_factory=dict)


class Leader:
    """The leader's queue and block scheduler (which transactions, in which order).

    Args:
        options: the limits, the background load and the seed.
    """

    def __init__(self, options: BusyOptions):
        self.options = options
        self.queue: dict[str, Pending] = {}
        self._fees: dict[int, BlockFees] = {}
        self._fee_slots: deque[int] = deque()

    def enqueue(self, pending: Pending) -> None:
        """Queue ``pending`` unless the same transaction is queued already."""
        self.queue.setdefault(pending.signature, pending)

    def _background(self, slot: int) -> list[int]:
        """Return the prices of the background transactions offered to ``slot``'s block."""
        count = self.options.background_load // BACKGROUND_TRANSACTION_UNITS
        if not count:
            return []
        rng = random.Random(f"{self.options.seed}:{slot}:background")
        return [int(10 ** (rng.random() * BACKGROUND_PRICE_DECADES)) for _ in range(count)]

    def plan(self, slot: int, valid: Callable[[str, int], bool]) -> list[Pending]:
        """Pick ``slot``'s block from the queue, in the order it runs; take them out.

        Queued transactions whose blockhash ``valid`` refuses for ``slot`` are dropped;
        those that do not fit stay queued. The fees of the background transactions held
        are recorded; ``record`` adds the real ones that landed.
        """
        options = self.options
        rng = random.Random(f"{options.seed}:{slot}")
        offered: list[tuple[float, float, Pending | None]] = []
        for signature, queued in list(self.queue.items()):
            if not valid(queued.blockhash, slot):
                del self.queue[signature]
                continue
            price = math.inf if queued.faucet else queued.price
            offered.append((-price, rng.random(), queued))
        for price in self._background(slot):
            offered.append((-price, rng.random(), None))
        offered.sort(key=itemgetter(0, 1))
        room = options.block_cu_limit
        account_units: dict[Pubkey, int] = {}
        account_writes: dict[Pubkey, int] = {}
        chosen: list[Pending] = []
        lowest_background: int | None = None
        for negative_price, _, pending in offered:
            if pending is None:
                if room >= BACKGROUND_TRANSACTION_UNITS:
                    room -= BACKGROUND_TRANSACTION_UNITS
                    lowest_background = -int(negative_price)
                continue
            cost = pending.cost
            if cost > room or not self._fits(pending, account_units, account_writes):
                continue
            room -= cost
            for key in pending.writable:
                account_units[key] = account_units.get(key, 0) + cost
                account_writes[key] = account_writes.get(key, 0) + 1
            chosen.append(pending)
            del self.queue[pending.signature]
        if lowest_background is not None:
            self._keep_fees(slot, BlockFees(lowest_background))
        return chosen

    def _fits(
        self, pending: Pending, account_units: dict[Pubkey, int], account_writes: dict[Pubkey, int]
    ) -> bool:
        options = self.options
        for key in pending.writable:
            if account_units.get(key, 0) + pending.cost > options.account_cu_limit:
                return False
            if account_writes.get(key, 0) >= options.account_write_limit:
                return False
        return True

    def record(self, slot: int, landed: Sequence[Pending]) -> None:
        """Add the prices of the transactions of ``slot``'s block that landed."""
        landed = [pending for pending in landed if not pending.faucet]
        if not landed:
            return
        fees = self._fees.get(slot)
        lowest = min(pending.price for pending in landed)
        if fees is None:
            fees = BlockFees(lowest)
            self._keep_fees(slot, fees)
        else:
            fees.lowest = min(fees.lowest, lowest)
        for pending in landed:
            for key in pending.writable:
                known = fees.by_account.get(key)
                if known is None or pending.price < known:
                    fees.by_account[key] = pending.price

    def _keep_fees(self, slot: int, fees: BlockFees) -> None:
        self._fees[slot] = fees
        self._fee_slots.append(slot)
        while len(self._fee_slots) > KEPT_FEE_SLOTS:
            self._fees.pop(self._fee_slots.popleft(), None)

    def prioritization_fee(self, slot: int, accounts: Sequence[Pubkey]) -> int:
        """Return getRecentPrioritizationFees' answer for ``slot`` (a recent, produced one).

        The lowest price the block held; with ``accounts``, the highest of that and the
        lowest price paid by the block's transactions that wrote each, as the validator's
        prioritization-fee cache answers.
        """
        fees = self._fees.get(slot)
        if fees is None:
            # No queued transaction reached this block: it held background load alone.
            prices = sorted(self._background(slot), reverse=True)
            held = prices[: self.options.block_cu_limit // BACKGROUND_TRANSACTION_UNITS]
            fees = BlockFees(held[-1] if held else 0)
            if held:
                self._keep_fees(slot, fees)
        fee = fees.lowest
        for key in accounts:
            fee = max(fee, fees.by_account.get(key, 0))
        return fee


class RateLimit:
    """A provider's requests-a-second limit over a sliding one-second window.

    Each JSON-RPC call counts, a batch's calls one each; a request that would pass the
    limit is refused whole and counts nothing.

    Args:
        per_second: calls allowed in any one second.
        now: the time source (``time.monotonic``): providers count wall-clock time.
    """

    WINDOW = 1.0

    def __init__(self, per_second: int, now: Callable[[], float] = time.monotonic):
        self.per_second = per_second
        self._now = now
        self._calls: deque[tuple[float, int]] = deque()
        self._counted = 0

    def admit(self, calls: int) -> int | None:
        """Count ``calls`` and return None, or return the whole seconds to wait (Retry-After)."""
        now = self._now()
        while self._calls and self._calls[0][0] <= now - self.WINDOW:
            self._counted -= self._calls.popleft()[1]
        if self._counted + calls <= self.per_second:
            self._calls.append((now, calls))
            self._counted += calls
            return None
        # Wait until enough of the window's calls have aged out (at least one second).
        freed, wait = self._counted, self.WINDOW
        for at, count in self._calls:
            freed -= count
            wait = at + self.WINDOW - now
            if freed + calls <= self.per_second:
                break
        return max(1, math.ceil(wait))

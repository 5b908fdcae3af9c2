"""The localnet's chain model: LiteSVM plus the bookkeeping a validator does and LiteSVM does not.

``Localnet`` owns one ``LiteSVM`` and adds: slots and blockhashes that advance with a clock
(``SlotClock``), the 150-block blockhash window, fees, the faucet, and the views each
commitment level reads (``BankHistory``), the transaction history (``TransactionHistory``)
and an index of accounts by owner. Persistence (ledger replay and snapshots) is in
``persistence``.

Sending returns a value, as LiteSVM does: ``Landed`` (in a block, with or without an
error: the fee was paid) or ``Refused`` (never landed, nothing charged), each with its
error, logs and compute units. The RPC layer (``transaction_methods``) turns those into
JSON-RPC answers; nothing here knows JSON-RPC.

LiteSVM is not thread-safe; a ``Localnet`` must be used from one thread (the server's
event loop). Signatures are verified here rather than by LiteSVM so that a preflight
failure can be told apart from a runtime one, and so replay can skip them.
"""

import hashlib
import random
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solders.account import Account
from solders.address_lookup_table_account import LOOKUP_TABLE_META_SIZE
from solders.clock import MAX_PROCESSING_AGE, Clock
from solders.compute_budget import set_compute_unit_limit
from solders.epoch_schedule import EpochSchedule
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.litesvm import FeatureSet, LiteSVM
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata, TransactionMetadata

from curta_chain.constants import (
    FINALIZED_DEPTH,
    LAMPORTS_PER_SOL,
    LOCALNET_GENESIS_HASH,
    LOCALNET_PROGRAM_ID,
    MAX_COMPUTE_UNITS,
)
from curta_chain.errors import LocalnetError
from curta_chain.localnet.bank_history import AccountState, BankHistory
from curta_chain.localnet.busy import NOT_BUSY, BusyOptions, Leader, Pending, scheduling_cost
from curta_chain.localnet.clock import SLOT_SECONDS, SLOTS_PER_EPOCH, SlotClock
from curta_chain.localnet.codec import transaction_error_json
from curta_chain.localnet.fees import (
    compute_budget,
    priority_fee,
    priority_lamports,
    transaction_fee,
)
from curta_chain.localnet.ledger import RECORD_TRANSACTION, Ledger
from curta_chain.localnet.load_limit import loads_too_much, refused_before_running
from curta_chain.localnet.owner_index import OwnerIndex
from curta_chain.localnet.parsed import (
    CLOCK_SYSVAR,
    GENESIS_ACCOUNTS,
    SYSVAR_OWNER,
    memo_of,
    token_balances,
)
from curta_chain.localnet.program_binary import find_program_binary
from curta_chain.localnet.tx_history import TransactionDetails, TransactionHistory

FAUCET_SEED = b"curta-chain localnet faucet"
IDENTITY_SEED = b"curta-chain localnet identity"
VOTE_SEED = b"curta-chain localnet vote account"
FAUCET_LAMPORTS = 500_000_000 * LAMPORTS_PER_SOL
DEFAULT_SNAPSHOT_BYTES = 16 * 1024 * 1024
"""Log bytes after which a snapshot is taken: bounds a restart's replay to about 13,000
writes, some 10 s when every write goes to a 10 MiB account (LiteSVM copies it)."""
MAX_SLOT_HASHES = 512
"""Entries in the SlotHashes sysvar."""
READ_CACHE_BYTES = 64 * 1024 * 1024
"""Account data kept between writes, so slices of one 10 MiB account cost one copy."""
DISABLE_NEW_LOADER_V3_DEPLOYMENTS = Pubkey.from_string(
    "EmhbpdVtZ2hWRGFWBDjn2i3SJD8Z36z4mpMcZJEnebnP"
)
"""agave's feature ``disable_new_loader_v3_deployments`` (SIMD-0167), by its id: solders
names no features. Active, it refuses DeployWithMaxDataLen; no public cluster has it on, so
the localnet runs every other feature with this one off and takes real deploys."""


def new_svm() -> LiteSVM:
    """LiteSVM as ``LiteSVM()`` makes it, but with new upgradeable deployments allowed.

    Every feature, the builtins, sysvars and SPL programs, as on a cluster, where
    ``disable_new_loader_v3_deployments`` is not active.
    """
    active = FeatureSet.all_enabled().active
    active.pop(DISABLE_NEW_LOADER_V3_DEPLOYMENTS)
    features = FeatureSet(active, {DISABLE_NEW_LOADER_V3_DEPLOYMENTS})
    return (
        LiteSVM.default()
        .with_builtins(features)
        .with_precompiles(features)
        .with_sysvars()
        .with_spl_programs()
    )


STAKE_PROGRAM = Pubkey.from_string("Stake11111111111111111111111111111111111111")
_GET_MINIMUM_DELEGATION = (13).to_bytes(4, "little")


@dataclass(frozen=True)
class Landed:
    """A transaction in a block: ``err`` is None or its runtime error; its fee was paid.

    ``seq`` is its ledger record (0 without a ledger): it may be reported once durable.
    ``logs`` and ``units`` are read from LiteSVM's metadata when asked (most never are).
    """

    signature: str
    slot: int
    err: Any
    meta: TransactionMetadata
    seq: int
    keys: list[Pubkey]
    writable: list[Pubkey]

    @property
    def logs(self) -> list[str]:
        """The program log lines."""
        return self.meta.logs()

    @property
    def units(self) -> int:
        """The compute units consumed."""
        return self.meta.compute_units_consumed()


@dataclass(frozen=True)
class Refused:
    """A transaction that did not land and changed nothing: why, with its logs and units.

    ``err`` is a ``TransactionError`` in the validator's JSON form ("BlockhashNotFound",
    "SignatureFailure", {"InstructionError": [...]}, ...). For "AlreadyProcessed", ``seq``
    is the ledger record of the earlier copy that did land.
    """

    signature: str
    err: Any
    logs: list[str]
    units: int
    seq: int = 0


@dataclass(frozen=True)
class Queued:
    """A transaction accepted for a later block (or lost on its way to the leader)."""

    signature: str


SendOutcome = Landed | Refused | Queued


@dataclass(frozen=True)
class TransactionAccounts:
    """The accounts a transaction loads, in the runtime's order, and which it may write."""

    keys: list[Pubkey]
    writable: list[Pubkey]
    loaded_writable: list[Pubkey]
    loaded_readonly: list[Pubkey]


def writable_keys(message: Message | MessageV0) -> list[Pubkey]:
    """Return the static account keys ``message`` may write, from its header."""
    header = message.header
    keys = message.account_keys
    signed = header.num_required_signatures
    writable_signed = signed - header.num_readonly_signed_accounts
    writable_unsigned = len(keys) - header.num_readonly_unsigned_accounts
    return [
        key
        for index, key in enumerate(keys)
        if index < writable_signed or signed <= index < writable_unsigned
    ]


def _state(account: Account | None) -> AccountState | None:
    if account is None or account.lamports == 0:
        return None
    return AccountState(
        account.lamports, account.owner, account.executable, account.rent_epoch, account.data
    )


class Localnet:
    """A Solana chain in-process: LiteSVM with the curta program preloaded and a faucet.

    Args:
        ledger: a folder to persist the chain in (None: memory only).
        reset: start a new chain in ``ledger``, deleting the old one.
        slot_duration: seconds per slot (a validator's 0.4 s by default).
        program_binary: the program to preload at ``LOCALNET_PROGRAM_ID``; by default
            the packaged ``curta.so`` when there is one.
        snapshot_bytes: log bytes after which ``snapshot_due`` turns true.
        now: the time source slots are counted from (``time.time``; tests pass a
            ``ManualClock``).
        busy: the busy-cluster behaviours (``busy``; none by default).

    Raises:
        LocalnetError: the ledger cannot be opened or replayed, or the program not loaded.
    """

    def __init__(
        self,
        ledger: Path | None = None,
        reset: bool = False,
        slot_duration: float = SLOT_SECONDS,
        program_binary: Path | None = None,
        snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES,
        now: Callable[[], float] = time.time,
        busy: BusyOptions = NOT_BUSY,
    ):
        binary = program_binary if program_binary is not None else find_program_binary()
        program = binary.read_bytes() if binary is not None else None
        self.program_binary = binary
        self.program_id = Pubkey.from_string(LOCALNET_PROGRAM_ID)
        self.faucet = Keypair.from_seed(hashlib.sha256(FAUCET_SEED).digest())
        self.identity = Keypair.from_seed(hashlib.sha256(IDENTITY_SEED).digest()).pubkey()
        self.vote_account = Keypair.from_seed(hashlib.sha256(VOTE_SEED).digest()).pubkey()
        self.snapshot_bytes = snapshot_bytes
        self.busy = busy
        self.leader = Leader(busy) if busy.blocks else None
        """The block scheduler in block mode (None: transactions run inside the send)."""
        self._drops = random.Random(busy.seed) if busy.drop_rate else None
        self.ledger: Ledger | None = None
        self.svm = self._new_svm(program)
        self.svm.set_account(
            self.faucet.pubkey(), Account(FAUCET_LAMPORTS, b"", SYSTEM_PROGRAM_ID, False, 0)
        )
        self.history = TransactionHistory()
        self.banks = BankHistory(self._read_state)
        self._read_cache: dict[Pubkey, Account | None] = {}
        self._read_cache_bytes = 0
        self._landed: list[Landed] = []
        self._observed = False
        self._owners = OwnerIndex()
        self._slot_hashes: list[tuple[int, Hash]] = []
        self._hashed_upto = -1
        self._clock_slot = -1
        self._rent_exempt: dict[int, int] = {}
        self.replayed = 0
        """Log records replayed at start-up (after the newest snapshot)."""
        self.endpoints: tuple[str | None, str | None] = (None, None)
        """host:port of the JSON-RPC and PubSub servers, once they listen."""
        self._stake_minimum: int | None = None
        self._genesis = frozenset([*GENESIS_ACCOUNTS, self.program_id])
        self._track([*self._genesis, self.faucet.pubkey()])

        # Slot 0 is the genesis bank, rooted from the start: a new chain starts at slot 1.
        def genesis_time() -> float:
            return now() - slot_duration

        if ledger is None:
            genesis_hash = hashlib.sha256(Keypair().secret()).digest()
            self.clock = SlotClock(genesis_hash, genesis_time(), slot_duration, now)
        else:
            from curta_chain.localnet.persistence import restore

            sha = hashlib.sha256(program).hexdigest() if program is not None else None
            self.ledger = Ledger(ledger, reset=reset, program_sha256=sha, now=genesis_time)
            meta = self.ledger.meta
            self.clock = SlotClock(meta.genesis_hash, meta.genesis_time, slot_duration, now)
            try:
                restore(self, self.ledger)
            except BaseException:
                self.ledger.close()
                raise
        # Every embedded localnet reports this one genesis hash: it is how clients tell the
        # embedded localnet from any other cluster. Blockhashes are seeded per chain (the
        # ledger's own seed), so two localnets never share them.
        self.genesis_hash = LOCALNET_GENESIS_HASH
        self._observed = True  # replayed transactions are history, not news
        self.banks.clear()  # what was restored reads the same at every level
        self.tick()

    def _new_svm(self, program: bytes | None) -> LiteSVM:
        """Return LiteSVM with the runtime settings of this chain and the program loaded."""
        # Signatures are checked in send_transaction; LiteSVM's own blockhash check only
        # knows its latest hash, so the 150-block window is enforced here instead.
        svm = new_svm().with_sigverify(False).with_blockhash_check(False)
        svm.with_transaction_history(0)
        # solana-test-validator's genesis: 432,000-slot epochs from slot 0, no warmup.
        svm.set_epoch_schedule(EpochSchedule.without_warmup())
        if program is not None:
            try:
                svm.add_program(self.program_id, program)
            except Exception as exc:  # LiteSVM raises its own error types for a bad ELF
                raise LocalnetError(
                    f"{self.program_binary}: LiteSVM cannot load the program: {exc}"
                ) from exc
        return svm

    # -- time -------------------------------------------------------------------------

    def tick(self) -> int:
        """Bring LiteSVM's clock and the commitment views to the current slot; return it."""
        slot = self.clock.current_slot()
        if slot != self._clock_slot:
            if self.leader is not None and self.leader.queue:
                self._produce(slot)
            self.set_slot(slot)
            self.banks.advance(slot)
        return slot

    def _produce(self, upto: int) -> None:
        """Produce the blocks of the slots after the last one up to ``upto`` (block mode).

        The block of slot ``n`` holds what the leader picked from its queue when ``n``
        began, run in its order at slot ``n``: visible at processed from then on.
        """
        assert self.leader is not None
        for slot in range(self._clock_slot + 1, upto + 1):
            if not self.leader.queue:
                return
            self.set_slot(slot)
            self.banks.advance(slot)
            landed = []
            for pending in self.leader.plan(slot, self.clock.valid_at):
                if self._run_in_block(pending, slot) is not None:
                    landed.append(pending)
            self.leader.record(slot, landed)

    def set_slot(self, slot: int) -> None:
        """Set LiteSVM's Clock and SlotHashes sysvars for ``slot``."""
        epoch = slot // SLOTS_PER_EPOCH
        self.svm.set_clock(
            Clock(
                slot=slot,
                epoch_start_timestamp=self.clock.unix_timestamp(epoch * SLOTS_PER_EPOCH),
                epoch=epoch,
                leader_schedule_epoch=epoch + 1,
                unix_timestamp=self.clock.unix_timestamp(slot),
            )
        )
        self._clock_slot = slot
        # SlotHashes lists the slots before this one, newest first, as a validator's does;
        # address lookup tables are created against it.
        first = max(self._hashed_upto + 1, slot - MAX_SLOT_HASHES)
        if first < slot:
            new = [(n, Hash(self.clock.blockhash_bytes(n))) for n in range(slot - 1, first - 1, -1)]
            self._slot_hashes = (new + self._slot_hashes)[:MAX_SLOT_HASHES]
            self._hashed_upto = slot - 1
            self.svm.set_slot_hashes(self._slot_hashes)

    def clock_state(self, slot: int) -> AccountState:
        """Return the Clock sysvar as the bank of ``slot`` held it."""
        epoch = slot // SLOTS_PER_EPOCH
        data = struct.pack(
            "<QqQQq",
            slot,
            self.clock.unix_timestamp(epoch * SLOTS_PER_EPOCH),
            epoch,
            epoch + 1,
            self.clock.unix_timestamp(slot),
        )
        return AccountState(self.rent_exempt_minimum(len(data)), SYSVAR_OWNER, False, 0, data)

    def commitment_slot(self, commitment: str) -> int:
        """Return the slot whose end the bank of ``commitment`` shows.

        processed: the current slot; confirmed: the one before (a single node votes a
        slot as soon as it is over); finalized: 32 slots before the current one.
        """
        slot = self.tick()
        if commitment == "processed":
            return slot
        if commitment == "confirmed":
            return max(slot - 1, 0)
        return max(slot - FINALIZED_DEPTH, 0)

    # -- reads ------------------------------------------------------------------------

    def get_account(self, pubkey: Pubkey) -> Account | None:
        """Return the account at ``pubkey`` now (processed); None if it has no lamports.

        LiteSVM copies an account's whole data on every read; reads between two writes
        share one copy (a client reading a 10 MiB account in 1 MiB slices, say).
        """
        if pubkey in self._read_cache:
            return self._read_cache[pubkey]
        account = self.svm.get_account(pubkey)
        if account is None or account.lamports == 0:
            account = None
        elif account.owner == SYSVAR_OWNER:
            # LiteSVM funds sysvars with 1 lamport; a validator keeps them rent-exempt.
            size = len(account.data)
            account = Account(
                max(account.lamports, self.rent_exempt_minimum(size)),
                account.data,
                account.owner,
                account.executable,
                account.rent_epoch,
            )
        size = len(account.data) if account is not None else 0
        if self._read_cache_bytes + size > READ_CACHE_BYTES:
            self._read_cache.clear()
            self._read_cache_bytes = 0
        self._read_cache[pubkey] = account
        self._read_cache_bytes += size
        return account

    def _read_state(self, pubkey: Pubkey) -> AccountState | None:
        return _state(self.svm.get_account(pubkey))

    def account_at(self, pubkey: Pubkey, slot: int) -> Account | AccountState | None:
        """Return the account at the end of ``slot`` (``commitment_slot``'s answer)."""
        if slot < self._clock_slot:
            if pubkey == CLOCK_SYSVAR:
                return self.clock_state(slot)
            state = self.banks.view(pubkey, slot)
            if state is not BankHistory.LIVE:
                return state  # type: ignore[return-value]
        return self.get_account(pubkey)

    def balance_at(self, pubkey: Pubkey, slot: int) -> int:
        """Return the lamports of ``pubkey`` at the end of ``slot`` (0 if absent)."""
        if slot >= self._clock_slot or self.banks.view(pubkey, slot) is BankHistory.LIVE:
            return self.svm.get_balance(pubkey) or 0
        account = self.account_at(pubkey, slot)
        return account.lamports if account is not None else 0

    def program_accounts(
        self, owner: Pubkey, slot: int
    ) -> list[tuple[Pubkey, Account | AccountState]]:
        """Return every account ``owner`` owns at the end of ``slot``, ordered by address."""
        candidates = set(self._owners.owned_by(owner))
        if slot < self._clock_slot:
            candidates.update(self.banks.keys())
        found = []
        for pubkey in sorted(candidates, key=bytes):
            account = self.account_at(pubkey, slot)
            if account is not None and account.owner == owner:
                found.append((pubkey, account))
        return found

    def balances(self, slot: int) -> list[tuple[Pubkey, int]]:
        """Return (address, lamports) of every account with lamports at the end of ``slot``."""
        keys = set(self._owners) | set(self.banks.keys())
        found = [(key, self.balance_at(key, slot)) for key in keys]
        return [(key, lamports) for key, lamports in found if lamports]

    def stake_minimum_delegation(self) -> int:
        """Return the stake program's minimum delegation (asked of the program itself)."""
        if self._stake_minimum is None:
            instruction = Instruction(STAKE_PROGRAM, _GET_MINIMUM_DELEGATION, [])
            blockhash = Hash.from_string(self.clock.blockhash(self.tick()))
            message = Message.new_with_blockhash([instruction], self.faucet.pubkey(), blockhash)
            result = self.svm.simulate_transaction(VersionedTransaction(message, [self.faucet]))
            data = result.meta().return_data().data
            self._stake_minimum = int.from_bytes(bytes(data), "little")
        return self._stake_minimum

    def rent_exempt_minimum(self, size: int) -> int:
        """Return the lamports that make an account of ``size`` bytes rent-exempt."""
        if size not in self._rent_exempt:
            self._rent_exempt[size] = self.svm.minimum_balance_for_rent_exemption(size)
        return self._rent_exempt[size]

    def status(self, signature: str) -> tuple[int, Any] | None:
        """Return (slot, error JSON) of a landed transaction whose record is durable."""
        entry = self.history.statuses.get(signature)
        if entry is None or (self.ledger is not None and entry[2] > self.ledger.durable_seq):
            return None
        return entry[0], entry[1]

    def details(self, signature: str) -> TransactionDetails | None:
        """Return getTransaction's data for a recent durable transaction."""
        if self.status(signature) is None:
            return None
        return self.history.details(signature)

    def fee_for(self, message: Message | MessageV0) -> int:
        """Return the fee this chain charges for ``message`` (signatures and priority)."""
        return transaction_fee(message)

    # -- writes -----------------------------------------------------------------------

    def send_transaction(
        self, raw: bytes, tx: VersionedTransaction, preflight: bool = True
    ) -> SendOutcome:
        """Process a transaction as a validator's sendTransaction would.

        With ``preflight``, a transaction that would fail is ``Refused`` and changes
        nothing. Without it, one that fails at execution lands with its error and pays its
        fee; one that could never land (bad signature, unknown blockhash) is refused. In
        the busy mode (``busy``), one accepted is ``Queued``: lost at the drop rate, else
        left to the leader's next blocks (or, without blocks, run at once).
        """
        if not self.busy.changes_sending:
            return self._send_now(raw, tx, preflight)
        return self._accept(raw, tx, preflight)

    def _send_now(self, raw: bytes, tx: VersionedTransaction, preflight: bool) -> SendOutcome:
        slot = self.tick()
        signature = str(tx.signatures[0])
        message = tx.message  # solders copies the message on each access: once is enough
        accounts = self._accounts_of(message)
        payer_before = self.svm.get_account(accounts.keys[0])
        priority = priority_fee(message)
        fee = transaction_fee(message, priority)
        refusal = self._refusal_before_execution(
            tx, message, signature, accounts, payer_before, fee
        )
        if refusal is not None:
            return refusal
        return self._run(raw, tx, message, accounts, payer_before, priority, slot, preflight)

    def _run(
        self,
        raw: bytes,
        tx: VersionedTransaction,
        message: Message | MessageV0,
        accounts: TransactionAccounts,
        payer_before: Account | None,
        priority: int,
        slot: int,
        preflight: bool,
    ) -> Landed | Refused:
        """Execute a transaction that passed the checks before execution, in ``slot``."""
        signature = str(tx.signatures[0])
        payer = accounts.keys[0]
        fee = transaction_fee(message, priority)
        self.banks.will_write(slot, accounts.writable)
        pre = [self.svm.get_balance(key) or 0 for key in accounts.keys]
        pre_tokens = token_balances(accounts.keys, self.get_account)
        result, landed = self._execute(tx, accounts, payer_before, priority)
        if isinstance(result, FailedTransactionMetadata):
            meta = result.meta()
            err = transaction_error_json(result.err())
            if (preflight or not landed) and payer_before is not None:
                # A refused transaction charges nothing, as a validator's preflight does.
                self.svm.set_account(payer, payer_before)
                self._forget_reads()
            if preflight or not landed:
                return Refused(signature, err, meta.logs(), meta.compute_units_consumed())
        else:
            meta, err = result, None
        seq = 0
        if self.ledger is not None:
            seq = self.ledger.append(RECORD_TRANSACTION, slot, raw)
        return self._land(
            signature, raw, message, fee, slot, meta, err, accounts, pre, pre_tokens, seq
        )

    def _accept(
        self, raw: bytes, tx: VersionedTransaction, preflight: bool, faucet: bool = False
    ) -> SendOutcome:
        """Send in the busy mode: check, preflight at once, then drop or queue."""
        slot = self.tick()
        signature = str(tx.signatures[0])
        message = tx.message
        accounts = self._accounts_of(message)
        payer_before = self.svm.get_account(accounts.keys[0])
        units, price = compute_budget(message)
        priority = priority_lamports(units, price)
        fee = transaction_fee(message, priority)
        refusal = self._refusal_before_execution(
            tx, message, signature, accounts, payer_before, fee
        )
        if refusal is None and preflight:
            refusal = self._simulate(tx, message, signature, accounts, payer_before, priority)
        if refusal is not None:
            return refusal
        if not faucet and self._drops is not None and self._drops.random() < self.busy.drop_rate:
            return Queued(signature)  # lost on its way to the leader
        if self.leader is None:
            return self._run(raw, tx, message, accounts, payer_before, priority, slot, False)
        cost = scheduling_cost(message, len(accounts.writable), units)
        blockhash = str(message.recent_blockhash)
        # Static keys cannot change before the block: only lookups are resolved again then.
        lookups = isinstance(message, MessageV0) and bool(message.address_table_lookups)
        known = None if lookups else accounts
        self.leader.enqueue(
            Pending(
                signature,
                raw,
                tx,
                message,
                blockhash,
                price,
                priority,
                cost,
                accounts.writable,
                known,
                faucet,
            )
        )
        return Queued(signature)

    def _simulate(
        self,
        tx: VersionedTransaction,
        message: Message | MessageV0,
        signature: str,
        accounts: TransactionAccounts,
        payer_before: Account | None,
        priority: int,
    ) -> Refused | None:
        """Preflight against the current bank without changing it: why it would fail, or None."""
        charge = priority if payer_before is not None else 0
        if payer_before is not None:
            looked_up = [*accounts.loaded_writable, *accounts.loaded_readonly]
            owner = self._owners.owner
            if loads_too_much(message, accounts.keys, looked_up, self.get_account, owner):
                return Refused(signature, "MaxLoadedAccountsDataSizeExceeded", [], 0)
            if charge:
                # The priority fee is charged before the transaction runs, as _execute does.
                self.svm.set_account(accounts.keys[0], _with_lamports(payer_before, charge))
        try:
            result = self.svm.simulate_transaction(tx)
        finally:
            if charge and payer_before is not None:
                self.svm.set_account(accounts.keys[0], payer_before)
                self._forget_reads()
        if isinstance(result, FailedTransactionMetadata):
            meta = result.meta()
            err = transaction_error_json(result.err())
            return Refused(signature, err, meta.logs(), meta.compute_units_consumed())
        return None

    def _run_in_block(self, pending: Pending, slot: int) -> Landed | None:
        """Run a queued transaction in the block of ``slot``; None if it cannot land."""
        tx, message = pending.tx, pending.message
        if pending.signature in self.history.statuses:
            return None  # the same transaction landed meanwhile
        accounts = pending.accounts or self._accounts_of(message)
        payer_before = self.svm.get_account(accounts.keys[0])
        priority = pending.priority
        if payer_before is None or payer_before.lamports < transaction_fee(message, priority):
            return None  # a leader drops what cannot pay its fee
        outcome = self._run(pending.raw, tx, message, accounts, payer_before, priority, slot, False)
        return outcome if isinstance(outcome, Landed) else None

    def _refusal_before_execution(
        self,
        tx: VersionedTransaction,
        message: Message | MessageV0,
        signature: str,
        accounts: TransactionAccounts,
        payer_before: Account | None,
        fee: int,
    ) -> Refused | None:
        """Return why ``tx`` may not run at all, checked in the validator's order.

        Signatures, the blockhash's age, the status cache (a duplicate), then what loading
        needs: a payer that can pay the fee. These refusals never land and charge nothing.
        """
        if not all(tx.verify_with_results()):
            return Refused(signature, "SignatureFailure", [], 0)
        if not self.clock.age_ok(str(message.recent_blockhash)):
            return Refused(signature, "BlockhashNotFound", [], 0)
        seen = self.history.statuses.get(signature)
        if seen is not None:
            return Refused(signature, "AlreadyProcessed", [], 0, seen[2])
        if payer_before is not None and payer_before.lamports < fee:
            return Refused(signature, "InsufficientFundsForFee", [], 0)
        return None

    def _land(
        self,
        signature: str,
        raw: bytes,
        message: Message | MessageV0,
        fee: int,
        slot: int,
        meta: TransactionMetadata,
        err: Any,
        accounts: TransactionAccounts,
        pre: list[int],
        pre_tokens: list[dict[str, Any]],
        seq: int,
    ) -> Landed:
        details = TransactionDetails(
            signature=signature,
            raw=raw,
            slot=slot,
            err=err,
            meta=meta,
            fee=fee,
            keys=accounts.keys,
            pre_balances=pre,
            post_balances=[self.svm.get_balance(key) or 0 for key in accounts.keys],
            loaded_writable=accounts.loaded_writable,
            loaded_readonly=accounts.loaded_readonly,
            pre_token_balances=pre_tokens,
            post_token_balances=token_balances(accounts.keys, self.get_account),
            memo=memo_of(message, accounts.keys),
        )
        self.history.record(details, seq)
        self._track(accounts.writable)
        landed = Landed(signature, slot, err, meta, seq, accounts.keys, accounts.writable)
        if self._observed:
            self._landed.append(landed)
        return landed

    @property
    def landed_waiting(self) -> bool:
        """Whether transactions landed that ``take_landed`` has not handed out yet."""
        return bool(self._landed)

    def take_landed(self) -> list[Landed]:
        """Return and forget the transactions landed since the last call that are durable."""
        durable = self.ledger.durable_seq if self.ledger is not None else 0
        count = 0
        while count < len(self._landed) and self._landed[count].seq <= durable:
            count += 1
        taken, self._landed = self._landed[:count], self._landed[count:]
        return taken

    def _accounts_of(self, message: Message | MessageV0) -> TransactionAccounts:
        """Return every account ``message`` loads: static keys, then lookup-table ones.

        Addresses are resolved from the tables before execution, as the runtime does; a
        lookup that cannot resolve yields none (the runtime then refuses the transaction).
        """
        static = message.account_keys
        writable = writable_keys(message)
        lookups = message.address_table_lookups if isinstance(message, MessageV0) else []
        if not lookups:
            return TransactionAccounts(static, writable, [], [])
        loaded_writable: list[Pubkey] = []
        loaded_readonly: list[Pubkey] = []
        for lookup in lookups:
            table = self.get_account(lookup.account_key)
            if table is None:
                return TransactionAccounts(static, writable, [], [])
            data = table.data
            count = (len(data) - LOOKUP_TABLE_META_SIZE) // 32
            indexes = [*lookup.writable_indexes, *lookup.readonly_indexes]
            if any(index >= count for index in indexes):
                return TransactionAccounts(static, writable, [], [])

            def address(index: int, data: bytes = data) -> Pubkey:
                start = LOOKUP_TABLE_META_SIZE + 32 * index
                return Pubkey.from_bytes(data[start : start + 32])

            loaded_writable += [address(i) for i in lookup.writable_indexes]
            loaded_readonly += [address(i) for i in lookup.readonly_indexes]
        return TransactionAccounts(
            [*static, *loaded_writable, *loaded_readonly],
            [*writable, *loaded_writable],
            loaded_writable,
            loaded_readonly,
        )

    def _execute(
        self,
        tx: VersionedTransaction,
        accounts: TransactionAccounts,
        payer_before: Account | None,
        fee: int,
    ) -> tuple[TransactionMetadata | FailedTransactionMetadata, bool]:
        """Run ``tx`` in LiteSVM after charging its priority ``fee``; say if it landed.

        A failed transaction landed if it paid its fee (LiteSVM charged the signature fee),
        which is how the runtime tells an executed failure from one that never loaded. One
        that loads more account data than its limit is refused here, before it runs, with
        its whole fee charged, as a validator does (LiteSVM does not count loaded data).
        """
        payer = accounts.keys[0]
        looked_up = [*accounts.loaded_writable, *accounts.loaded_readonly]
        if payer_before is not None and loads_too_much(
            tx.message, accounts.keys, looked_up, self.get_account, self._owners.owner
        ):
            self.svm.set_account(payer, _with_lamports(payer_before, self.fee_for(tx.message)))
            self._forget_reads()
            return refused_before_running(tx, "MaxLoadedAccountsDataSizeExceeded"), True
        charged = payer_before.lamports if payer_before is not None else 0
        if fee and payer_before is not None:
            charged -= fee
            self.svm.set_account(payer, _with_lamports(payer_before, fee))
        result = self.svm.send_transaction(tx)
        self._forget_reads()
        if not isinstance(result, FailedTransactionMetadata):
            return result, True
        landed = payer_before is not None and (self.svm.get_balance(payer) or 0) != charged
        return result, landed

    def _forget_reads(self) -> None:
        if self._read_cache:
            self._read_cache.clear()
            self._read_cache_bytes = 0

    def _track(self, keys: Iterable[Pubkey]) -> None:
        """Update the owner index for accounts a transaction may have changed.

        Reading an account copies its data, so a program-owned account already indexed
        (a 10 MiB weight account written 1 KB at a time) is only checked for having been
        closed; wallets and accounts seen for the first time are read in full, which is
        where owners change (create_account, assign).
        """
        for key in keys:
            known = self._owners.owner(key)
            if known is not None and known != SYSTEM_PROGRAM_ID:
                if not self.svm.get_balance(key):
                    self._owners.forget(key)
                continue
            account = self.get_account(key)
            if account is None:
                self._owners.forget(key)
            elif account.owner != known:
                self._owners.record(key, account.owner)

    def track_restored(self, pubkey: Pubkey, owner: Pubkey) -> None:
        """Index an account a snapshot restored."""
        self._owners.record(pubkey, owner)

    def replay(self, raw: bytes, slot: int) -> None:
        """Apply a transaction from the ledger's log at the slot it first landed in."""
        tx = VersionedTransaction.from_bytes(raw)
        if slot != self._clock_slot:
            self.set_slot(slot)
        message = tx.message
        accounts = self._accounts_of(message)
        payer = accounts.keys[0]
        pre = [self.svm.get_balance(key) or 0 for key in accounts.keys]
        pre_tokens = token_balances(accounts.keys, self.get_account)
        priority = priority_fee(message)
        result, _ = self._execute(tx, accounts, self.svm.get_account(payer), priority)
        if isinstance(result, FailedTransactionMetadata):
            meta, err = result.meta(), transaction_error_json(result.err())
        else:
            meta, err = result, None
        signature = str(tx.signatures[0])
        fee = transaction_fee(message, priority)
        self._land(signature, raw, message, fee, slot, meta, err, accounts, pre, pre_tokens, 0)
        self.replayed += 1

    def indexed_accounts(self) -> list[Pubkey]:
        """Return the accounts a snapshot saves.

        Every indexed account but the genesis programs and sysvars, which every start
        creates anew.
        """
        return [key for key in self._owners if key not in self._genesis]

    def airdrop(self, pubkey: Pubkey, lamports: int) -> SendOutcome:
        """Send ``lamports`` from the faucet to ``pubkey`` in a real transfer transaction.

        Two equal requests in one slot would sign the same transaction: the faucet then
        signs with an older (still valid) blockhash, and past those adds a compute-unit
        limit that changes nothing but the signature, so every request lands.
        """
        slot = self.tick()
        payer = self.faucet.pubkey()
        instruction = transfer(
            TransferParams(from_pubkey=payer, to_pubkey=pubkey, lamports=lamports)
        )
        hashes = min(slot, MAX_PROCESSING_AGE) + 1
        attempt = 0
        while True:
            blockhash = Hash.from_string(self.clock.blockhash(slot - attempt % hashes))
            variant = attempt // hashes
            extra = [set_compute_unit_limit(MAX_COMPUTE_UNITS - variant)] if variant else []
            message = Message.new_with_blockhash([*extra, instruction], payer, blockhash)
            tx = VersionedTransaction(message, [self.faucet])
            signature = str(tx.signatures[0])
            queued = self.leader is not None and signature in self.leader.queue
            if signature not in self.history.statuses and not queued:
                break
            attempt += 1
        if not self.busy.changes_sending:
            return self._send_now(bytes(tx), tx, preflight=True)
        # The faucet is the localnet's own: its transfers go through blocks, first in
        # theirs, and are never lost.
        return self._accept(bytes(tx), tx, preflight=True, faucet=True)

    # -- ledger -----------------------------------------------------------------------

    @property
    def snapshot_due(self) -> bool:
        """Whether the log has grown enough since the last snapshot to take another."""
        return self.ledger is not None and self.ledger.segment_bytes >= self.snapshot_bytes

    def close(self) -> None:
        """Flush the log (unless writing it failed) and release the ledger folder."""
        if self.ledger is not None:
            if self.ledger.failure is None:
                self.ledger.flush()
            self.ledger.close()
            self.ledger = None


def _with_lamports(account: Account, charge: int) -> Account:
    """``account`` less ``charge`` lamports."""
    lamports = account.lamports - charge
    return Account(lamports, account.data, account.owner, account.executable, account.rent_epoch)

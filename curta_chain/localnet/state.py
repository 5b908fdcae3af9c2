"""The localnet's chain: LiteSVM plus the bookkeeping a validator does and LiteSVM does not.

``Localnet`` owns one ``LiteSVM`` and adds: slots and blockhashes that advance with time
(``SlotClock``), the 150-block blockhash window, the signature status cache (a duplicate
is AlreadyProcessed and never runs twice), preflight semantics (a refused transaction
charges no fee), an index of accounts by owner for getProgramAccounts, and the ledger.

LiteSVM is not thread-safe; a ``Localnet`` must be used from one thread (the server's
event loop). Signatures are verified here rather than by LiteSVM so that a preflight
failure can be told apart from a runtime one, and so replay can skip them.
"""

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solders.account import Account
from solders.address_lookup_table_account import LOOKUP_TABLE_META_SIZE
from solders.clock import MAX_PROCESSING_AGE, Clock
from solders.compute_budget import set_compute_unit_limit
from solders.hash import Hash
from solders.keypair import Keypair
from solders.litesvm import FeatureSet, LiteSVM
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata, TransactionMetadata

from curta_chain.constants import (
    LAMPORTS_PER_SOL,
    LOCALNET_GENESIS_HASH,
    LOCALNET_PROGRAM_ID,
    MAX_COMPUTE_UNITS,
)
from curta_chain.errors import LocalnetError
from curta_chain.localnet.clock import SLOT_SECONDS, SLOTS_PER_EPOCH, SlotClock
from curta_chain.localnet.codec import preflight_failure, transaction_error_json
from curta_chain.localnet.fees import priority_fee, transaction_fee
from curta_chain.localnet.ledger import (
    RECORD_TRANSACTION,
    Ledger,
    Snapshot,
    SnapshotAccount,
)
from curta_chain.localnet.load_limit import loads_too_much, refused_before_running
from curta_chain.localnet.owner_index import OwnerIndex
from curta_chain.localnet.program_binary import find_program_binary
from curta_chain.localnet.rpc_errors import (
    INTERNAL_ERROR,
    TRANSACTION_SIGNATURE_VERIFICATION_FAILURE,
    RpcMethodError,
)

FAUCET_SEED = b"curta-chain localnet faucet"
IDENTITY_SEED = b"curta-chain localnet identity"
FAUCET_LAMPORTS = 500_000_000 * LAMPORTS_PER_SOL
DEFAULT_SNAPSHOT_BYTES = 16 * 1024 * 1024
"""Log bytes after which a snapshot is taken: bounds a restart's replay to about 13,000
writes, some 10 s when every write goes to a 10 MiB account (LiteSVM copies it)."""
KEPT_TRANSACTION_DETAILS = 20_000
"""getTransaction answers for this many most recent transactions (about 2 KB each)."""
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


@dataclass(frozen=True)
class SendResult:
    """A transaction accepted for the chain: its signature and the log record to wait for."""

    signature: str
    seq: int


@dataclass(frozen=True)
class TransactionDetails:
    """What getTransaction reports about a landed transaction (``meta`` is LiteSVM's)."""

    raw: bytes
    slot: int
    err: Any
    meta: TransactionMetadata
    fee: int
    pre_balances: list[int]
    post_balances: list[int]
    loaded_writable: list[Pubkey]
    loaded_readonly: list[Pubkey]


@dataclass(frozen=True)
class Landed:
    """A transaction that landed, for subscribers: notify once ``seq`` is durable."""

    signature: str
    slot: int
    err: Any
    writable: list[Pubkey]
    seq: int


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


class Localnet:
    """A Solana chain in-process: LiteSVM with the curta program preloaded and a faucet.

    Args:
        ledger: a folder to persist the chain in (None: memory only).
        reset: start a new chain in ``ledger``, deleting the old one.
        slot_duration: seconds per slot (a validator's 0.4 s by default).
        program_binary: the program to preload at ``LOCALNET_PROGRAM_ID``; by default
            the packaged ``curta.so`` when there is one.
        snapshot_bytes: log bytes after which ``snapshot_due`` turns true.

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
    ):
        binary = program_binary if program_binary is not None else find_program_binary()
        program = binary.read_bytes() if binary is not None else None
        self.program_binary = binary
        self.program_id = Pubkey.from_string(LOCALNET_PROGRAM_ID)
        self.faucet = Keypair.from_seed(hashlib.sha256(FAUCET_SEED).digest())
        self.identity = Keypair.from_seed(hashlib.sha256(IDENTITY_SEED).digest()).pubkey()
        self.snapshot_bytes = snapshot_bytes
        self.ledger: Ledger | None = None
        # Signatures are checked in send_transaction; LiteSVM's own blockhash check only
        # knows its latest hash, so the 150-block window is enforced here instead.
        self.svm = new_svm().with_sigverify(False).with_blockhash_check(False)
        self.svm.with_transaction_history(0)
        if program is not None:
            try:
                self.svm.add_program(self.program_id, program)
            except Exception as exc:  # LiteSVM raises its own error types for a bad ELF
                raise LocalnetError(f"{binary}: LiteSVM cannot load the program: {exc}") from exc
        self.svm.set_account(
            self.faucet.pubkey(), Account(FAUCET_LAMPORTS, b"", SYSTEM_PROGRAM_ID, False, 0)
        )
        self._statuses: dict[str, tuple[int, Any, int]] = {}
        self._details: dict[str, TransactionDetails] = {}
        self._read_cache: dict[Pubkey, Account | None] = {}
        self._landed: list[Landed] = []
        self._observed = False
        self._read_cache_bytes = 0
        self._owners = OwnerIndex()
        self._slot_hashes: list[tuple[int, Hash]] = []
        self._hashed_upto = -1
        self.transaction_count = 0
        self.replayed = 0
        """Log records replayed at start-up (after the newest snapshot)."""
        self._clock_slot = -1
        if ledger is None:
            seed = hashlib.sha256(Keypair().secret()).digest()
            self.clock = SlotClock(seed, time.time(), slot_duration)
        else:
            sha = hashlib.sha256(program).hexdigest() if program is not None else None
            self.ledger = Ledger(ledger, reset=reset, program_sha256=sha)
            meta = self.ledger.meta
            self.clock = SlotClock(meta.genesis_hash, meta.genesis_time, slot_duration)
            try:
                self._restore()
            except BaseException:
                self.ledger.close()
                raise
        # Every embedded localnet reports this one genesis hash: it is how clients tell the
        # embedded localnet from any other cluster. Blockhashes are seeded per chain (the
        # ledger's own seed), so two localnets never share them.
        self.genesis_hash = LOCALNET_GENESIS_HASH
        self._observed = True  # replayed transactions are history, not news
        self._track([self.faucet.pubkey()])
        self.tick()

    # -- time -------------------------------------------------------------------------

    def tick(self) -> int:
        """Bring LiteSVM's clock to the current slot; return the slot."""
        slot = self.clock.current_slot()
        if slot != self._clock_slot:
            self._set_clock(slot)
        return slot

    def _set_clock(self, slot: int) -> None:
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

    # -- reads ------------------------------------------------------------------------

    def get_account(self, pubkey: Pubkey) -> Account | None:
        """Return the account at ``pubkey``; None if it does not exist (or has no lamports).

        LiteSVM copies an account's whole data on every read; reads between two writes
        share one copy (a client reading a 10 MiB account in 1 MiB slices, say).
        """
        if pubkey in self._read_cache:
            return self._read_cache[pubkey]
        account = self.svm.get_account(pubkey)
        if account is None or account.lamports == 0:
            account = None
        size = len(account.data) if account is not None else 0
        if self._read_cache_bytes + size > READ_CACHE_BYTES:
            self._read_cache.clear()
            self._read_cache_bytes = 0
        self._read_cache[pubkey] = account
        self._read_cache_bytes += size
        return account

    def program_accounts(self, owner: Pubkey) -> list[tuple[Pubkey, Account]]:
        """Return every account ``owner`` owns, ordered by address."""
        found = []
        for pubkey in self._owners.owned_by(owner):
            account = self.get_account(pubkey)
            if account is not None and account.owner == owner:
                found.append((pubkey, account))
        return found

    def status(self, signature: str) -> tuple[int, Any] | None:
        """Return (slot, error JSON) of a landed transaction whose record is durable."""
        entry = self._statuses.get(signature)
        if entry is None or (self.ledger is not None and entry[2] > self.ledger.durable_seq):
            return None
        return entry[0], entry[1]

    def details(self, signature: str) -> TransactionDetails | None:
        """Return getTransaction's data for a recent durable transaction."""
        if self.status(signature) is None:
            return None
        return self._details.get(signature)

    def fee_for(self, message: Message | MessageV0) -> int:
        """Return the fee this chain charges for ``message`` (signatures and priority)."""
        return transaction_fee(message)

    # -- writes -----------------------------------------------------------------------

    def send_transaction(
        self, raw: bytes, tx: VersionedTransaction, preflight: bool = True
    ) -> SendResult:
        """Process a transaction as a validator's sendTransaction would.

        With ``preflight``, a transaction that would fail changes nothing and raises the
        validator's -32002/-32003 error. Without it, the signature is returned whatever
        happens; a transaction that fails at execution lands with its error and pays its
        fee, one that could never land (bad signature, unknown blockhash) is dropped.

        Raises:
            RpcMethodError: preflight refused the transaction.
        """
        slot = self.tick()
        signature = str(tx.signatures[0])
        if not all(tx.verify_with_results()):
            if preflight:
                raise RpcMethodError(
                    TRANSACTION_SIGNATURE_VERIFICATION_FAILURE,
                    "Transaction signature verification failure",
                )
            return SendResult(signature, 0)
        message = tx.message
        if not self.clock.age_ok(str(message.recent_blockhash)):
            if preflight:
                raise preflight_failure("BlockhashNotFound", [], 0)
            return SendResult(signature, 0)
        seen = self._statuses.get(signature)
        if seen is not None:
            if preflight:
                raise preflight_failure("AlreadyProcessed", [], 0)
            return SendResult(signature, seen[2])
        accounts = self._accounts_of(message)
        payer = accounts.keys[0]
        payer_before = self.svm.get_account(payer)
        pre = [self.svm.get_balance(key) or 0 for key in accounts.keys]
        if payer_before is not None and payer_before.lamports < self.fee_for(message):
            if preflight:
                raise preflight_failure("InsufficientFundsForFee", [], 0)
            return SendResult(signature, 0)
        result, landed = self._execute(tx, accounts, payer_before)
        if isinstance(result, FailedTransactionMetadata):
            meta = result.meta()
            err = transaction_error_json(result.err())
            if (preflight or not landed) and payer_before is not None:
                # A refused transaction charges nothing, as a validator's preflight does.
                self.svm.set_account(payer, payer_before)
                self._forget_reads()
            if preflight:
                raise preflight_failure(err, meta.logs(), meta.compute_units_consumed())
            if not landed:
                return SendResult(signature, 0)
        else:
            meta, err = result, None
        seq = 0
        if self.ledger is not None:
            seq = self.ledger.append(RECORD_TRANSACTION, slot, raw)
        self._land(signature, raw, tx, slot, meta, err, accounts, pre, seq)
        return SendResult(signature, seq)

    def _land(
        self,
        signature: str,
        raw: bytes,
        tx: VersionedTransaction,
        slot: int,
        meta: TransactionMetadata,
        err: Any,
        accounts: TransactionAccounts,
        pre: list[int],
        seq: int,
    ) -> None:
        message = tx.message
        self._statuses[signature] = (slot, err, seq)
        self.transaction_count += 1
        self._details[signature] = TransactionDetails(
            raw=raw,
            slot=slot,
            err=err,
            meta=meta,
            fee=self.fee_for(message),
            pre_balances=pre,
            post_balances=[self.svm.get_balance(key) or 0 for key in accounts.keys],
            loaded_writable=accounts.loaded_writable,
            loaded_readonly=accounts.loaded_readonly,
        )
        if len(self._details) > KEPT_TRANSACTION_DETAILS:
            del self._details[next(iter(self._details))]
        self._track(accounts.writable)
        if self._observed:
            self._landed.append(Landed(signature, slot, err, accounts.writable, seq))

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
        self, tx: VersionedTransaction, accounts: TransactionAccounts, payer_before: Account | None
    ) -> tuple[TransactionMetadata | FailedTransactionMetadata, bool]:
        """Run ``tx`` in LiteSVM after charging its priority fee; say if it landed.

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
        fee = priority_fee(tx.message)
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

    def airdrop(self, pubkey: Pubkey, lamports: int) -> SendResult:
        """Send ``lamports`` from the faucet to ``pubkey`` in a real transfer transaction.

        Two equal requests in one slot would sign the same transaction: the faucet then
        signs with an older (still valid) blockhash, and past those adds a compute-unit
        limit that changes nothing but the signature, so every request lands.

        Raises:
            RpcMethodError: -32603, as the validator answers when the faucet cannot pay.
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
            if str(tx.signatures[0]) not in self._statuses:
                break
            attempt += 1
        try:
            return self.send_transaction(bytes(tx), tx, preflight=True)
        except RpcMethodError as exc:
            raise RpcMethodError(INTERNAL_ERROR, "Internal error") from exc

    # -- ledger -----------------------------------------------------------------------

    @property
    def snapshot_due(self) -> bool:
        """Whether the log has grown enough since the last snapshot to take another."""
        return self.ledger is not None and self.ledger.segment_bytes >= self.snapshot_bytes

    def begin_snapshot(self) -> Snapshot:
        """Close the current log segment and capture the state it ends with.

        The caller writes the snapshot (``ledger.write_snapshot``) once every record of
        the closed segment is durable, possibly off the loop thread.
        """
        if self.ledger is None:
            raise LocalnetError("this localnet has no ledger to snapshot")
        segment = self.ledger.rotate()
        accounts = []
        for pubkey in self._owners:
            account = self.get_account(pubkey)
            if account is not None:
                accounts.append(
                    SnapshotAccount(
                        bytes(pubkey),
                        account.lamports,
                        bytes(account.owner),
                        account.executable,
                        account.rent_epoch,
                        account.data,
                    )
                )
        statuses = {
            sig: (slot, json.dumps(err) if err is not None else None)
            for sig, (slot, err, _) in self._statuses.items()
        }
        return Snapshot(segment, self.tick(), accounts, statuses)

    def flush(self) -> None:
        """Write and fsync every queued log record (for callers without the server)."""
        if self.ledger is not None:
            pending, upto = self.ledger.take_pending()
            self.ledger.write(pending)
            self.ledger.durable_seq = upto

    def close(self) -> None:
        """Flush the log (unless writing it failed) and release the ledger folder."""
        if self.ledger is not None:
            if self.ledger.failure is None:
                self.flush()
            self.ledger.close()
            self.ledger = None

    def _restore(self) -> None:
        ledger = self.ledger
        assert ledger is not None
        snapshot = ledger.load_snapshot()
        after = 0
        last_slot = 0
        if snapshot is not None:
            after, last_slot = snapshot.segment, snapshot.last_slot
            # An upgradeable program loads from its program data when it is set: data first.
            for item in sorted(snapshot.accounts, key=lambda a: a.executable):
                pubkey = Pubkey.from_bytes(item.pubkey)
                owner = Pubkey.from_bytes(item.owner)
                account = Account(item.lamports, item.data, owner, item.executable, item.rent_epoch)
                self.svm.set_account(pubkey, account)
                self._owners.record(pubkey, owner)
            for sig, (slot, err) in snapshot.statuses.items():
                self._statuses[sig] = (slot, json.loads(err) if err is not None else None, 0)
            self.transaction_count = len(snapshot.statuses)
        for kind, slot, payload in ledger.replay(after):
            if kind != RECORD_TRANSACTION:
                raise LocalnetError(f"{ledger.folder}: unknown log record kind {kind}")
            self._replay(payload, slot)
            self.replayed += 1
            last_slot = max(last_slot, slot)
        # Slots keep counting from where the chain was, even if the wall clock says less.
        self.clock.hold_at_least(last_slot + 1)

    def _replay(self, raw: bytes, slot: int) -> None:
        tx = VersionedTransaction.from_bytes(raw)
        if slot != self._clock_slot:
            self._set_clock(slot)
        accounts = self._accounts_of(tx.message)
        pre = [self.svm.get_balance(key) or 0 for key in accounts.keys]
        result, _ = self._execute(tx, accounts, self.svm.get_account(accounts.keys[0]))
        if isinstance(result, FailedTransactionMetadata):
            meta, err = result.meta(), transaction_error_json(result.err())
        else:
            meta, err = result, None
        self._land(str(tx.signatures[0]), raw, tx, slot, meta, err, accounts, pre, 0)


def _with_lamports(account: Account, charge: int) -> Account:
    """``account`` less ``charge`` lamports."""
    lamports = account.lamports - charge
    return Account(lamports, account.data, account.owner, account.executable, account.rent_epoch)

"""Executing a transaction in LiteSVM and keeping its results: statuses, details, the log.

A transaction that passed the checks before execution (``_refusal_before_execution``:
signatures, the blockhash's age, a duplicate, a payer that can pay) runs in LiteSVM, which
charges its whole fee (``_execute``); one that landed is recorded in the
transaction history, appended to the ledger's log and handed to the PubSub server
(``take_landed``) once durable. Signatures are verified here rather than by LiteSVM so
that a preflight failure can be told apart from a runtime one, and so replay can skip
them.

LiteSVM reads no v1 ``TransactionConfig`` (it gives a v1 transaction the compute budget of
a legacy one with the same instructions), and without a SetComputeUnitLimit it gives 200,000
units to every instruction, builtins included, where the validator gives a builtin's 3,000
(SIMD-0170). So the localnet sets LiteSVM's compute budget itself for every transaction: the
limit and heap ``compute_budget`` reads, as the validator does (``_use_budget``). LiteSVM's
fee already follows SIMD-0170.

Simulating a transaction without keeping anything (simulateTransaction, the busy mode's
preflight) is the next layer's, ``simulation``.
"""

from typing import Any

from solders.account import Account
from solders.address_lookup_table_account import LOOKUP_TABLE_META_SIZE
from solders.compute_budget import ComputeBudget
from solders.litesvm import LiteSVM
from solders.message import MessageV0, MessageV1
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata, TransactionMetadata

from curta_chain.localnet.busy import transaction_cost
from curta_chain.localnet.codec import AnyMessage, transaction_error_json
from curta_chain.localnet.current_bank import CurrentBank, less_lamports
from curta_chain.localnet.features import ENABLE_TX_V1, RAISE_CPI_NESTING_LIMIT_TO_8, Features
from curta_chain.localnet.ledger import RECORD_TRANSACTION, Ledger
from curta_chain.localnet.load_limit import loads_too_much, refused_before_running
from curta_chain.localnet.loaded_data import loaded_data_size
from curta_chain.localnet.outcomes import Landed, Refused, TransactionAccounts, writable_keys
from curta_chain.localnet.parsed import memo_of, token_balances
from curta_chain.localnet.tx_history import TransactionDetails, TransactionHistory
from curta_chain.protocol.compute_budget import compute_budget, priority_fee, transaction_fee


class Execution(CurrentBank):
    """Runs transactions in the current bank and records those that land.

    Args:
        svm: the LiteSVM the chain runs in.
    """

    features: Features
    """The chain's feature gates; ``Localnet`` sets them before building LiteSVM."""

    def __init__(self, svm: LiteSVM):
        super().__init__(svm)
        self._budget: tuple[int, int] | None = None
        """The (units, heap) compute budget last set in LiteSVM; None until one is."""
        self.history = TransactionHistory()
        self.ledger: Ledger | None = None
        self._landed: list[Landed] = []
        self._observed = False
        self.replayed = 0
        """Log records replayed at start-up (after the newest snapshot)."""

    # -- results ----------------------------------------------------------------------

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

    def fee_for(self, message: AnyMessage) -> int:
        """Return the fee this chain charges for ``message`` (signatures and priority)."""
        return transaction_fee(message)

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

    # -- execution --------------------------------------------------------------------

    def _run(
        self,
        raw: bytes,
        tx: VersionedTransaction,
        message: AnyMessage,
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
        loaded = self._loaded_bytes(message, accounts)
        result, landed = self._execute(tx, accounts, payer_before)
        if isinstance(result, FailedTransactionMetadata):
            meta = result.meta()
            err = transaction_error_json(result.err())
            if (preflight or not landed) and payer_before is not None:
                # A refused transaction charges nothing, as a validator's preflight does.
                self.svm.set_account(payer, payer_before)
                self._forget_reads()
            if preflight or not landed:
                return self._refused_after_running(signature, message, accounts, err, meta, landed)
        else:
            meta, err = result, None
        seq = 0
        if self.ledger is not None:
            seq = self.ledger.append(RECORD_TRANSACTION, slot, raw)
        return self._land(
            signature, raw, message, fee, slot, meta, err, accounts, pre, pre_tokens, loaded, seq
        )

    def _refused_after_running(
        self,
        signature: str,
        message: AnyMessage,
        accounts: TransactionAccounts,
        err: Any,
        meta: TransactionMetadata,
        charged: bool,
    ) -> Refused:
        """A run that failed and is not kept: its fee and loaded data when it was ``charged``.

        Accounts are read after the run, which a failure leaves as they were but for the
        payer's lamports: the data sizes are those loaded.
        """
        logs, units = meta.logs(), meta.compute_units_consumed()
        if not charged:
            return Refused(signature, err, logs, units)
        loaded = self._loaded_bytes(message, accounts)
        return Refused(signature, err, logs, units, fee=self.fee_for(message), loaded_size=loaded)

    def _refusal_before_execution(
        self,
        tx: VersionedTransaction,
        message: AnyMessage,
        signature: str,
        accounts: TransactionAccounts,
        payer_before: Account | None,
        fee: int,
        preflight_slot: int | None,
    ) -> Refused | None:
        """Return why ``tx`` may not run at all, checked in the validator's order.

        Signatures, the version (v1 needs ``enable_tx_v1``), the blockhash's age, the status
        cache (a duplicate), then what loading needs: a payer that can pay the fee. These
        refusals never land and charge nothing. With a preflight, the blockhash must be
        known to the bank of ``preflight_slot`` too: the validator simulates in the bank of
        the request's ``preflightCommitment``, which is behind a newer blockhash.
        """
        if not all(tx.verify_with_results()):
            return Refused(signature, "SignatureFailure", [], 0)
        if isinstance(message, MessageV1) and not self.features.is_active(ENABLE_TX_V1):
            return Refused(signature, "UnsupportedVersion", [], 0)
        blockhash = str(message.recent_blockhash)
        if preflight_slot is not None and not self.clock.valid_at(blockhash, preflight_slot):
            return Refused(signature, "BlockhashNotFound", [], 0)
        if not self.clock.age_ok(blockhash):
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
        message: AnyMessage,
        fee: int,
        slot: int,
        meta: TransactionMetadata,
        err: Any,
        accounts: TransactionAccounts,
        pre: list[int],
        pre_tokens: list[dict[str, Any]],
        loaded: int,
        seq: int,
    ) -> Landed:
        """Record a transaction that landed; ``loaded`` is the account data it loaded."""
        units = meta.compute_units_consumed()
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
            cost_units=transaction_cost(message, len(accounts.writable), units, loaded),
            transaction_index=self.history.next_index(slot),
        )
        self.history.record(details, seq)
        self._track(accounts.writable)
        landed = Landed(signature, slot, err, meta, seq, accounts.keys, accounts.writable)
        if self._observed:
            self._landed.append(landed)
        return landed

    def _loaded_bytes(self, message: AnyMessage, accounts: TransactionAccounts) -> int:
        """Return the account data ``message`` loads before it runs (its cost counts it)."""
        looked_up = [*accounts.loaded_writable, *accounts.loaded_readonly]
        return loaded_data_size(message, self.loaded_shape, looked_up)

    def _accounts_of(self, message: AnyMessage) -> TransactionAccounts:
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
    ) -> tuple[TransactionMetadata | FailedTransactionMetadata, bool]:
        """Run ``tx`` in LiteSVM, which charges its fee; say if it landed.

        A failed transaction landed if it paid its fee (LiteSVM charges the signature and
        priority fees, but a v1 one's priority fee, which the localnet charges first), which
        is how the runtime tells an executed failure from one that never loaded. One that
        loads more account data than its limit is refused here, before it runs, with its
        whole fee charged, as a validator does (LiteSVM does not count loaded data).
        """
        payer = accounts.keys[0]
        looked_up = [*accounts.loaded_writable, *accounts.loaded_readonly]
        message = tx.message
        if payer_before is not None and loads_too_much(
            message, accounts.keys, looked_up, self.get_account, self._owners.owner
        ):
            fee = self.fee_for(message)
            self.svm.set_account(payer, less_lamports(payer_before, fee))
            self._forget_reads()
            return refused_before_running(tx, "MaxLoadedAccountsDataSizeExceeded", fee), True
        self._use_budget(message)
        charged = payer_before.lamports if payer_before is not None else 0
        unpaid = unpaid_priority(message)
        if unpaid and payer_before is not None:
            charged -= unpaid
            self.svm.set_account(payer, less_lamports(payer_before, unpaid))
        result = self.svm.send_transaction(tx)
        self._forget_reads()
        if not isinstance(result, FailedTransactionMetadata):
            return result, True
        landed = payer_before is not None and (self.svm.get_balance(payer) or 0) != charged
        return result, landed

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
        loaded = self._loaded_bytes(message, accounts)
        priority = priority_fee(message)
        result, _ = self._execute(tx, accounts, self.svm.get_account(payer))
        if isinstance(result, FailedTransactionMetadata):
            meta, err = result.meta(), transaction_error_json(result.err())
        else:
            meta, err = result, None
        signature = str(tx.signatures[0])
        fee = transaction_fee(message, priority)
        self._land(
            signature, raw, message, fee, slot, meta, err, accounts, pre, pre_tokens, loaded, 0
        )
        self.replayed += 1

    def _use_budget(self, message: AnyMessage) -> None:
        """Give LiteSVM the compute budget ``message`` runs with on the validator.

        A v1 message's comes from its config, a legacy or v0 one's from its compute-budget
        instructions or the default (``compute_budget``); LiteSVM keeps what it was given
        last, so it is set again only when it changes.
        """
        wanted = compute_budget(message)
        # Compute-budget instructions that fail the transaction: LiteSVM refuses it unrun.
        budget = (0, 32 * 1024) if wanted is None else (wanted.unit_limit, wanted.heap_frame)
        if budget != self._budget:
            limits = ComputeBudget(self.features.is_active(RAISE_CPI_NESTING_LIMIT_TO_8))
            limits.compute_unit_limit, limits.heap_size = budget
            self.svm._inner.set_compute_budget(limits)
            self._budget = budget


def unpaid_priority(message: AnyMessage) -> int:
    """The part of ``message``'s fee LiteSVM does not charge: a v1 message's priority fee."""
    return priority_fee(message) if isinstance(message, MessageV1) else 0

"""The busy mode's sending: check and preflight at once, then lose, queue or run; blocks.

With ``BusyOptions.changes_sending``, ``sendTransaction`` checks a transaction and runs its
preflight against the current bank at once (``_accept``), then loses it at the drop rate
or, with blocks, hands it to the leader's queue (``busy.Leader``). Each new slot's first
tick produces the blocks that came due (``_produce``): the leader picks them, and each
picked transaction runs then, in its block's slot (``_run_in_block``).
"""

import random

from solders.account import Account
from solders.litesvm import LiteSVM
from solders.message import MessageV0
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata

from curta_chain.localnet.busy import BusyOptions, Leader, Pending, scheduling_cost
from curta_chain.localnet.codec import AnyMessage, transaction_error_json
from curta_chain.localnet.load_limit import loads_too_much
from curta_chain.localnet.outcomes import Landed, Queued, Refused, SendOutcome, TransactionAccounts
from curta_chain.localnet.simulation import Simulator, charges_fee
from curta_chain.protocol.compute_budget import compute_budget, priority_fee, transaction_fee


class BlockProduction(Simulator):
    """Sending in the busy mode, and the blocks of the leader's queue.

    Args:
        svm: the LiteSVM the chain runs in.
        busy: the busy-cluster behaviours (``busy``).
    """

    def __init__(self, svm: LiteSVM, busy: BusyOptions):
        super().__init__(svm)
        self.busy = busy
        self.leader = Leader(busy) if busy.blocks else None
        """The block scheduler in block mode (None: transactions run inside the send)."""
        self._drops = random.Random(busy.seed) if busy.drop_rate else None

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

    def _accept(
        self,
        slot: int,
        raw: bytes,
        tx: VersionedTransaction,
        preflight_slot: int | None,
        faucet: bool = False,
    ) -> SendOutcome:
        """Send in the busy mode in ``slot`` (now): check, preflight at once, then drop or queue.

        ``preflight_slot`` is the slot of the preflight's bank (None: no preflight).
        """
        signature = str(tx.signatures[0])
        message = tx.message
        accounts = self._accounts_of(message)
        payer_before = self.svm.get_account(accounts.keys[0])
        budget = compute_budget(message)
        # Compute-budget instructions that fail the transaction: LiteSVM refuses it unpaid.
        units, price = (0, 0) if budget is None else (budget.unit_limit, budget.unit_price)
        priority = priority_fee(message)
        fee = transaction_fee(message, priority)
        refusal = self._refusal_before_execution(
            tx, message, signature, accounts, payer_before, fee, preflight_slot
        )
        if refusal is None and preflight_slot is not None:
            refusal = self._simulate(tx, message, signature, accounts, payer_before)
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
        message: AnyMessage,
        signature: str,
        accounts: TransactionAccounts,
        payer_before: Account | None,
    ) -> Refused | None:
        """Preflight against the current bank without changing it: why it would fail, or None.

        LiteSVM's simulation charges the whole fee, as its execution does.
        """
        if payer_before is not None:
            looked_up = [*accounts.loaded_writable, *accounts.loaded_readonly]
            owner = self._owners.owner
            if loads_too_much(message, accounts.keys, looked_up, self.get_account, owner):
                return Refused(signature, "MaxLoadedAccountsDataSizeExceeded", [], 0)
        result = self.simulate(tx)
        if isinstance(result, FailedTransactionMetadata):
            err = transaction_error_json(result.err())
            charged = charges_fee(message, err)
            return self._refused_after_running(
                signature, message, accounts, err, result.meta(), charged
            )
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

"""Simulating a transaction as a validator's simulateTransaction does: nothing is kept.

The layer above ``execution`` (whose account resolution, loaded-data count, fee and
compute budget it reuses): LiteSVM's simulation with the budget and fee the transaction
would run with (``simulate``), and what the RPC method answers beside it (``simulation``):
balances before and after, token balances, the fee and the account data loaded, or none of
them when the validator would not load the transaction (``charges_fee``).
"""

from dataclasses import replace
from typing import Any, Final

from solders.account import Account
from solders.litesvm import SimulateResult
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata

from curta_chain.localnet.codec import AnyMessage, transaction_error_json
from curta_chain.localnet.current_bank import less_lamports
from curta_chain.localnet.execution import Execution, unpaid_priority
from curta_chain.localnet.outcomes import Simulation
from curta_chain.localnet.parsed import token_balances
from curta_chain.protocol.compute_budget import compute_budget


class Simulator(Execution):
    """Simulates transactions in the current bank, changing nothing.

    Args:
        svm: the LiteSVM the chain runs in.
    """

    def simulation(self, tx: VersionedTransaction, sig_verify: bool = False) -> Simulation:
        """Simulate ``tx`` as a validator's simulateTransaction does; change nothing.

        Beside LiteSVM's result: the balances before and after (a failed run charges only
        its fee), the token balances, the fee and the account data loaded, or no fee and no
        data when the validator would not load the transaction (``charges_fee``). With
        ``sig_verify``, a bad signature is the error, with no balances at all.
        """
        message = tx.message
        accounts = self._accounts_of(message)
        if sig_verify and not all(tx.verify_with_results()):
            return Simulation(
                accounts, "SignatureFailure", None, None, 0, None, None, None, None, {}
            )
        keys = accounts.keys
        pre = [self.svm.get_balance(key) or 0 for key in keys]
        pre_tokens = token_balances(keys, self.get_account)
        unrun = Simulation(accounts, None, None, None, 0, pre, pre, pre_tokens, pre_tokens, {})
        if not self.clock.age_ok(str(message.recent_blockhash)):
            return replace(unrun, err="BlockhashNotFound")
        result = self.simulate(tx)
        if isinstance(result, FailedTransactionMetadata):
            err, meta = transaction_error_json(result.err()), result.meta()
            if not charges_fee(message, err):
                return replace(unrun, err=err, meta=meta)
            fee = self.fee_for(message)
            return replace(
                unrun,
                err=err,
                meta=meta,
                fee=fee,
                loaded_size=self._loaded_bytes(message, accounts),
                post_balances=[max(pre[0] - fee, 0), *pre[1:]],
            )
        post_accounts = dict(result.post_accounts())
        post = [
            post_accounts[key].lamports if key in post_accounts else balance
            for key, balance in zip(keys, pre, strict=True)
        ]

        def after(key: Pubkey) -> Account | None:
            return post_accounts[key] if key in post_accounts else self.get_account(key)

        return replace(
            unrun,
            meta=result.meta(),
            fee=self.fee_for(message),
            loaded_size=self._loaded_bytes(message, accounts),
            post_balances=post,
            post_token_balances=token_balances(keys, after),
            post_accounts=post_accounts,
        )

    def simulate(self, tx: VersionedTransaction) -> SimulateResult:
        """Simulate ``tx`` in LiteSVM with the budget and fee it runs with; change nothing."""
        message = tx.message
        self._use_budget(message)
        unpaid = unpaid_priority(message)
        payer = message.account_keys[0]
        before = self.svm.get_account(payer) if unpaid else None
        if before is not None and before.lamports >= unpaid:
            self.svm.set_account(payer, less_lamports(before, unpaid))
        try:
            return self.svm.simulate_transaction(tx)
        finally:
            if before is not None and before.lamports >= unpaid:
                self.svm.set_account(payer, before)
                self._forget_reads()


NOT_LOADED: Final = frozenset(
    {
        "AccountNotFound",
        "AlreadyProcessed",
        "BlockhashNotFound",
        "InsufficientFundsForFee",
        "InvalidAccountForFee",
        "InvalidLoadedAccountsDataSizeLimit",
        "SignatureFailure",
        "UnsupportedVersion",
    }
)
"""Errors the validator finds before it loads a transaction's accounts: it charges no fee."""


def charges_fee(message: AnyMessage, err: Any) -> bool:
    """Whether a validator charges ``message``'s fee when it fails with ``err`` (JSON).

    It does once the transaction is loaded, whether a program or the loading then fails;
    not for the errors checked before (``NOT_LOADED``), nor for compute-budget
    instructions that fail it.
    """
    if isinstance(err, str) and err in NOT_LOADED:
        return False
    return compute_budget(message) is not None

"""The JSON-RPC method table: each method takes the ``Localnet`` and the request's params.

Parameter and result shapes are the validator's (agave ``rpc.rs``, ``rpc-client-api``), so
solana-py's ``Client``/``AsyncClient`` and other Solana clients parse every answer. Methods
that change the chain are listed in ``WRITE_METHODS``: the server answers them only after
the ledger records they appended are on disk.
"""

from collections.abc import Callable
from typing import Any

from curta_chain.localnet.account_methods import (
    get_account_info,
    get_balance,
    get_multiple_accounts,
    get_program_accounts,
)
from curta_chain.localnet.cluster_methods import (
    get_block_height,
    get_block_time,
    get_epoch_info,
    get_fee_for_message,
    get_genesis_hash,
    get_health,
    get_identity,
    get_latest_blockhash,
    get_minimum_balance_for_rent_exemption,
    get_recent_prioritization_fees,
    get_slot,
    get_transaction_count,
    get_version,
    is_blockhash_valid,
)
from curta_chain.localnet.params import Params
from curta_chain.localnet.state import Localnet
from curta_chain.localnet.transaction_methods import (
    get_signature_statuses,
    get_transaction,
    request_airdrop,
    send_transaction,
    simulate_transaction,
)

METHODS: dict[str, Callable[[Localnet, Params], Any]] = {
    "getHealth": get_health,
    "getVersion": get_version,
    "getGenesisHash": get_genesis_hash,
    "getSlot": get_slot,
    "getBlockHeight": get_block_height,
    "getEpochInfo": get_epoch_info,
    "getTransactionCount": get_transaction_count,
    "getIdentity": get_identity,
    "getBlockTime": get_block_time,
    "getRecentPrioritizationFees": get_recent_prioritization_fees,
    "getLatestBlockhash": get_latest_blockhash,
    "isBlockhashValid": is_blockhash_valid,
    "getFeeForMessage": get_fee_for_message,
    "getMinimumBalanceForRentExemption": get_minimum_balance_for_rent_exemption,
    "getBalance": get_balance,
    "getAccountInfo": get_account_info,
    "getMultipleAccounts": get_multiple_accounts,
    "getProgramAccounts": get_program_accounts,
    "requestAirdrop": request_airdrop,
    "sendTransaction": send_transaction,
    "simulateTransaction": simulate_transaction,
    "getSignatureStatuses": get_signature_statuses,
    "getTransaction": get_transaction,
}
WRITE_METHODS = frozenset({"requestAirdrop", "sendTransaction"})

"""The JSON-RPC method table: each method takes the ``Localnet`` and the request's params.

Parameter and result shapes are the validator's (agave ``rpc.rs``, ``rpc-client-api``), so
solana-py's ``Client``/``AsyncClient``, web3.js, @solana/kit and Anchor parse every
answer. Methods that change the chain are listed in ``WRITE_METHODS``: the server answers
them only after the ledger records they appended are on disk. The methods agave 2.0
removed (getConfirmedBlock, getFees, getRecentBlockhash, getFeeCalculatorForBlockhash,
getFeeRateGovernor, getSnapshotSlot, getStakeActivation, ...) answer -32601 here as they
do on a 2.x validator.
"""

from collections.abc import Callable
from typing import Any

import curta_chain.localnet.account_methods as account_methods
import curta_chain.localnet.block_methods as block_methods
import curta_chain.localnet.cluster_methods as cluster_methods
import curta_chain.localnet.token_methods as token_methods
import curta_chain.localnet.transaction_methods as transaction_methods
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.params import Params

Method = Callable[[Localnet, Params], Any]

METHODS: dict[str, Method] = {
    # cluster, clock and economics
    "getHealth": cluster_methods.get_health,
    "getVersion": cluster_methods.get_version,
    "getGenesisHash": cluster_methods.get_genesis_hash,
    "getIdentity": cluster_methods.get_identity,
    "getClusterNodes": cluster_methods.get_cluster_nodes,
    "getSlot": cluster_methods.get_slot,
    "getBlockHeight": cluster_methods.get_block_height,
    "getEpochInfo": cluster_methods.get_epoch_info,
    "getEpochSchedule": cluster_methods.get_epoch_schedule,
    "getSlotLeader": cluster_methods.get_slot_leader,
    "getSlotLeaders": cluster_methods.get_slot_leaders,
    "getLeaderSchedule": cluster_methods.get_leader_schedule,
    "getVoteAccounts": cluster_methods.get_vote_accounts,
    "getTransactionCount": cluster_methods.get_transaction_count,
    "getSupply": cluster_methods.get_supply,
    "getLargestAccounts": cluster_methods.get_largest_accounts,
    "getInflationGovernor": cluster_methods.get_inflation_governor,
    "getInflationRate": cluster_methods.get_inflation_rate,
    "getInflationReward": cluster_methods.get_inflation_reward,
    "getStakeMinimumDelegation": cluster_methods.get_stake_minimum_delegation,
    "getHighestSnapshotSlot": cluster_methods.get_highest_snapshot_slot,
    "getMaxRetransmitSlot": cluster_methods.get_max_retransmit_slot,
    "getMaxShredInsertSlot": cluster_methods.get_max_shred_insert_slot,
    "getRecentPrioritizationFees": cluster_methods.get_recent_prioritization_fees,
    "getLatestBlockhash": cluster_methods.get_latest_blockhash,
    "isBlockhashValid": cluster_methods.is_blockhash_valid,
    "getFeeForMessage": cluster_methods.get_fee_for_message,
    "getMinimumBalanceForRentExemption": cluster_methods.get_minimum_balance_for_rent_exemption,
    # blocks and history
    "getBlock": block_methods.get_block,
    "getBlocks": block_methods.get_blocks,
    "getBlocksWithLimit": block_methods.get_blocks_with_limit,
    "getBlockTime": block_methods.get_block_time,
    "getBlockCommitment": block_methods.get_block_commitment,
    "getBlockProduction": block_methods.get_block_production,
    "getFirstAvailableBlock": block_methods.get_first_available_block,
    "minimumLedgerSlot": block_methods.minimum_ledger_slot,
    "getSignaturesForAddress": block_methods.get_signatures_for_address,
    "getRecentPerformanceSamples": block_methods.get_recent_performance_samples,
    # accounts
    "getBalance": account_methods.get_balance,
    "getAccountInfo": account_methods.get_account_info,
    "getMultipleAccounts": account_methods.get_multiple_accounts,
    "getProgramAccounts": account_methods.get_program_accounts,
    # tokens
    "getTokenAccountsByOwner": token_methods.get_token_accounts_by_owner,
    "getTokenAccountsByDelegate": token_methods.get_token_accounts_by_delegate,
    "getTokenAccountBalance": token_methods.get_token_account_balance,
    "getTokenSupply": token_methods.get_token_supply,
    "getTokenLargestAccounts": token_methods.get_token_largest_accounts,
    # transactions
    "requestAirdrop": transaction_methods.request_airdrop,
    "sendTransaction": transaction_methods.send_transaction,
    "simulateTransaction": transaction_methods.simulate_transaction,
    "getSignatureStatuses": transaction_methods.get_signature_statuses,
    "getTransaction": transaction_methods.get_transaction,
}
WRITE_METHODS = frozenset({"requestAirdrop", "sendTransaction"})

"""Cluster, clock and economics methods.

Version, genesis, slots, blockhashes, fees, rent, the one node's identity, leader and
epoch schedules, supply and inflation.

The localnet is a one-node cluster: one identity leads every slot, and LiteSVM has no
vote or stake accounts, so there are no vote accounts and no stake; supply counts the
lamports of every account the chain holds (all circulating).
"""

import base64
import binascii
from typing import Any

from solders.clock import MAX_PROCESSING_AGE
from solders.message import from_bytes_versioned

from curta_chain.localnet.clock import SLOTS_PER_EPOCH
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.params import (
    SOLANA_CORE_VERSION,
    Params,
    config_at,
    context_slot,
    optional,
    pubkey_param,
    required,
    uint_param,
    with_context,
)
from curta_chain.localnet.rpc_errors import NO_SNAPSHOT, RpcMethodError, invalid_params
from curta_chain.protocol.limits import MAX_PRIORITIZATION_ADDRESSES

FEATURE_SET = 3_640_012_085
MAX_SLOT_LEADERS = 5_000
MAX_LARGEST_ACCOUNTS = 20
MAX_INFLATION_REWARD_ADDRESSES = 32
SHRED_VERSION = 1
INFLATION = {"initial": 0.08, "terminal": 0.015, "taper": 0.15, "foundation": 0.05}
FOUNDATION_TERM = 7.0


def get_health(localnet: Localnet, params: Params) -> str:
    """``getHealth``: this node is always up to date with itself."""
    return "ok"


def get_version(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getVersion``."""
    return {"solana-core": SOLANA_CORE_VERSION, "feature-set": FEATURE_SET}


def get_genesis_hash(localnet: Localnet, params: Params) -> str:
    """``getGenesisHash``."""
    return localnet.genesis_hash


def get_slot(localnet: Localnet, params: Params) -> int:
    """``getSlot``: the slot of the bank at the commitment asked."""
    return context_slot(localnet, config_at(params, 0))


def get_block_height(localnet: Localnet, params: Params) -> int:
    """``getBlockHeight``: every slot has a block, so it equals the slot."""
    return context_slot(localnet, config_at(params, 0))


def get_epoch_info(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getEpochInfo``."""
    slot = context_slot(localnet, config_at(params, 0))
    return {
        "absoluteSlot": slot,
        "blockHeight": slot,
        "epoch": slot // SLOTS_PER_EPOCH,
        "slotIndex": slot % SLOTS_PER_EPOCH,
        "slotsInEpoch": SLOTS_PER_EPOCH,
        "transactionCount": localnet.history.count_at(slot),
    }


def get_epoch_schedule(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getEpochSchedule``: LiteSVM's EpochSchedule sysvar (no warmup, as the test validator)."""
    schedule = localnet.svm.get_epoch_schedule()
    return {
        "slotsPerEpoch": schedule.slots_per_epoch,
        "leaderScheduleSlotOffset": schedule.leader_schedule_slot_offset,
        "warmup": schedule.warmup,
        "firstNormalEpoch": schedule.first_normal_epoch,
        "firstNormalSlot": schedule.first_normal_slot,
    }


def get_transaction_count(localnet: Localnet, params: Params) -> int:
    """``getTransactionCount``."""
    slot = context_slot(localnet, config_at(params, 0))
    return localnet.history.count_at(slot)


def get_identity(localnet: Localnet, params: Params) -> dict[str, str]:
    """``getIdentity``: the node's identity key (fixed, as there is one node)."""
    return {"identity": str(localnet.identity)}


def get_slot_leader(localnet: Localnet, params: Params) -> str:
    """``getSlotLeader``: the one node leads every slot."""
    context_slot(localnet, config_at(params, 0))
    return str(localnet.identity)


def get_slot_leaders(localnet: Localnet, params: Params) -> list[str]:
    """``getSlotLeaders``: ``limit`` (at most 5,000) leaders from ``startSlot``."""
    uint_param(required(params, 0, "startSlot"), "startSlot")
    limit = uint_param(required(params, 1, "limit"), "limit")
    if limit > MAX_SLOT_LEADERS:
        raise invalid_params(f"Invalid limit; max {MAX_SLOT_LEADERS}")
    return [str(localnet.identity)] * limit


def get_leader_schedule(localnet: Localnet, params: Params) -> dict[str, list[int]] | None:
    """``getLeaderSchedule``: every slot index of the epoch, for the one identity."""
    first = optional(params, 0)
    config_index = 0 if isinstance(first, dict) else 1
    config = config_at(params, config_index)
    current = context_slot(localnet, config)
    slot = current if first is None or isinstance(first, dict) else uint_param(first, "slot")
    if slot // SLOTS_PER_EPOCH > current // SLOTS_PER_EPOCH + 1:
        return None
    identity = str(localnet.identity)
    wanted = config.get("identity")
    if wanted is not None and wanted != identity:
        return {}
    return {identity: list(range(SLOTS_PER_EPOCH))}


def get_cluster_nodes(localnet: Localnet, params: Params) -> list[dict[str, Any]]:
    """``getClusterNodes``: this node, with its RPC and PubSub addresses (no gossip, TPU)."""
    rpc, pubsub = localnet.endpoints
    return [
        {
            "pubkey": str(localnet.identity),
            "gossip": None,
            "tvu": None,
            "tpu": None,
            "tpuQuic": None,
            "tpuForwards": None,
            "tpuForwardsQuic": None,
            "tpuVote": None,
            "serveRepair": None,
            "rpc": rpc,
            "pubsub": pubsub,
            "version": SOLANA_CORE_VERSION,
            "featureSet": FEATURE_SET,
            "shredVersion": SHRED_VERSION,
        }
    ]


def get_vote_accounts(localnet: Localnet, params: Params) -> dict[str, list[Any]]:
    """``getVoteAccounts``: LiteSVM runs no vote program accounts, so there are none."""
    config_at(params, 0)
    return {"current": [], "delinquent": []}


def get_supply(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getSupply``: the lamports of every account, all circulating."""
    config = config_at(params, 0)
    slot = context_slot(localnet, config)
    total = sum(lamports for _, lamports in localnet.balances(slot))
    value: dict[str, Any] = {"total": total, "circulating": total, "nonCirculating": 0}
    value["nonCirculatingAccounts"] = []
    return with_context(slot, value)


def get_largest_accounts(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getLargestAccounts``: the 20 largest balances (``filter``: circulating or not)."""
    config = config_at(params, 0)
    slot = context_slot(localnet, config)
    kind = config.get("filter")
    if kind not in (None, "circulating", "nonCirculating"):
        raise invalid_params(f"Invalid params: unknown variant `{kind}`")
    if kind == "nonCirculating":
        return with_context(slot, [])
    largest = sorted(localnet.balances(slot), key=lambda item: -item[1])[:MAX_LARGEST_ACCOUNTS]
    return with_context(
        slot, [{"lamports": lamports, "address": str(key)} for key, lamports in largest]
    )


def get_inflation_governor(localnet: Localnet, params: Params) -> dict[str, float]:
    """``getInflationGovernor``: the default genesis inflation."""
    config_at(params, 0)
    return {**INFLATION, "foundationTerm": FOUNDATION_TERM}


def get_inflation_rate(localnet: Localnet, params: Params) -> dict[str, float]:
    """``getInflationRate``: this epoch's rates (the first year's, on a young chain)."""
    slot = localnet.tick()
    total = INFLATION["initial"]
    foundation = total * INFLATION["foundation"]
    return {
        "total": total,
        "validator": total - foundation,
        "foundation": foundation,
        "epoch": slot // SLOTS_PER_EPOCH,
    }


def get_inflation_reward(localnet: Localnet, params: Params) -> list[None]:
    """``getInflationReward``: no staking here, so no address was ever rewarded."""
    addresses = required(params, 0, "addresses")
    if not isinstance(addresses, list):
        raise invalid_params("Invalid params: addresses must be an array")
    if len(addresses) > MAX_INFLATION_REWARD_ADDRESSES:
        raise invalid_params(f"Too many inputs provided; max {MAX_INFLATION_REWARD_ADDRESSES}")
    for address in addresses:
        pubkey_param(address)
    context_slot(localnet, config_at(params, 1))
    return [None] * len(addresses)


def get_stake_minimum_delegation(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getStakeMinimumDelegation``: what the stake program itself returns."""
    slot = context_slot(localnet, config_at(params, 0))
    return with_context(slot, localnet.stake_minimum_delegation())


def get_highest_snapshot_slot(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getHighestSnapshotSlot``: the newest ledger snapshot (-32008 without one)."""
    slot = localnet.ledger.snapshot_slot() if localnet.ledger is not None else None
    if slot is None:
        raise RpcMethodError(NO_SNAPSHOT, "No snapshot")
    return {"full": slot, "incremental": None}


def get_max_retransmit_slot(localnet: Localnet, params: Params) -> int:
    """``getMaxRetransmitSlot``: the current slot (the node makes every shred itself)."""
    return localnet.tick()


def get_max_shred_insert_slot(localnet: Localnet, params: Params) -> int:
    """``getMaxShredInsertSlot``: the current slot."""
    return localnet.tick()


def get_recent_prioritization_fees(localnet: Localnet, params: Params) -> list[dict[str, int]]:
    """``getRecentPrioritizationFees``: the last 150 slots.

    Without blocks no transaction ever needed a price: every slot answers 0. In block mode,
    each block answers what it held (``Leader.prioritization_fee``).
    """
    addresses = optional(params, 0) or []
    if not isinstance(addresses, list) or len(addresses) > MAX_PRIORITIZATION_ADDRESSES:
        raise invalid_params(
            f"Invalid params: expected at most {MAX_PRIORITIZATION_ADDRESSES} addresses"
        )
    keys = [pubkey_param(address) for address in addresses]
    slot = localnet.tick()
    first = max(slot - MAX_PROCESSING_AGE + 1, 0)
    leader = localnet.leader
    if leader is None:
        return [{"slot": n, "prioritizationFee": 0} for n in range(first, slot + 1)]
    # A block is whole from the start of its slot: the current one is answered too.
    return [
        {"slot": n, "prioritizationFee": leader.prioritization_fee(n, keys)}
        for n in range(first, slot + 1)
    ]


def get_latest_blockhash(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getLatestBlockhash``: the blockhash of the commitment's slot, and its last height."""
    slot = context_slot(localnet, config_at(params, 0))
    return with_context(
        slot,
        {
            "blockhash": localnet.clock.blockhash(slot),
            "lastValidBlockHeight": localnet.clock.last_valid_block_height(slot),
        },
    )


def is_blockhash_valid(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``isBlockhashValid``: true while the blockhash is at most 150 blocks old."""
    blockhash = required(params, 0, "blockhash")
    if not isinstance(blockhash, str):
        raise invalid_params("Invalid params: invalid type: expected a base58 blockhash string")
    slot = context_slot(localnet, config_at(params, 1))
    return with_context(slot, localnet.clock.valid_at(blockhash, slot))


def get_fee_for_message(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getFeeForMessage``: the fee, or null when the message's blockhash is not valid."""
    encoded = required(params, 0, "message")
    slot = context_slot(localnet, config_at(params, 1))
    if not isinstance(encoded, str):
        raise invalid_params("Invalid params: message must be a base64 string")
    try:
        message = from_bytes_versioned(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise invalid_params(f"invalid message: {exc}") from exc
    if not localnet.clock.valid_at(str(message.recent_blockhash), slot):
        return with_context(slot, None)
    return with_context(slot, localnet.fee_for(message))


def get_minimum_balance_for_rent_exemption(localnet: Localnet, params: Params) -> int:
    """``getMinimumBalanceForRentExemption``."""
    size = uint_param(required(params, 0, "dataLength"), "dataLength")
    context_slot(localnet, config_at(params, 1))
    return localnet.rent_exempt_minimum(size)

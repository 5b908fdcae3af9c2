"""Cluster and clock methods: version, genesis, slots, blockhashes, fees, rent."""

import base64
import binascii
from typing import Any

from solders.clock import MAX_PROCESSING_AGE
from solders.message import from_bytes_versioned

from curta_chain.localnet.clock import SLOTS_PER_EPOCH
from curta_chain.localnet.params import (
    SOLANA_CORE_VERSION,
    Params,
    config_at,
    context_slot,
    required,
    uint_param,
    with_context,
)
from curta_chain.localnet.rpc_errors import BLOCK_NOT_AVAILABLE, RpcMethodError, invalid_params
from curta_chain.localnet.state import Localnet

FEATURE_SET = 3_640_012_085
MAX_PRIORITIZATION_ADDRESSES = 128


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
    """``getSlot``: slots advance with wall-clock time."""
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
        "transactionCount": localnet.transaction_count,
    }


def get_transaction_count(localnet: Localnet, params: Params) -> int:
    """``getTransactionCount``."""
    context_slot(localnet, config_at(params, 0))
    return localnet.transaction_count


def get_identity(localnet: Localnet, params: Params) -> dict[str, str]:
    """``getIdentity``: the node's identity key (fixed, as there is one node)."""
    return {"identity": str(localnet.identity)}


def get_block_time(localnet: Localnet, params: Params) -> int:
    """``getBlockTime``: every slot up to the current one has a block and a time."""
    slot = uint_param(required(params, 0, "slot"), "slot")
    if slot > localnet.tick():
        raise RpcMethodError(BLOCK_NOT_AVAILABLE, f"Block not available for slot {slot}")
    return localnet.clock.unix_timestamp(slot)


def get_recent_prioritization_fees(localnet: Localnet, params: Params) -> list[dict[str, int]]:
    """``getRecentPrioritizationFees``: no slot here ever needed a price to land."""
    addresses = params[0] if params else []
    if not isinstance(addresses, list) or len(addresses) > MAX_PRIORITIZATION_ADDRESSES:
        raise invalid_params(
            f"Invalid params: expected at most {MAX_PRIORITIZATION_ADDRESSES} addresses"
        )
    slot = localnet.tick()
    first = max(slot - MAX_PROCESSING_AGE, 0)
    return [{"slot": n, "prioritizationFee": 0} for n in range(first, slot + 1)]


def get_latest_blockhash(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getLatestBlockhash``, with ``lastValidBlockHeight``."""
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
    return with_context(slot, localnet.clock.age_ok(blockhash))


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
    if not localnet.clock.age_ok(str(message.recent_blockhash)):
        return with_context(slot, None)
    return with_context(slot, localnet.fee_for(message))


def get_minimum_balance_for_rent_exemption(localnet: Localnet, params: Params) -> int:
    """``getMinimumBalanceForRentExemption``."""
    size = uint_param(required(params, 0, "dataLength"), "dataLength")
    return localnet.svm.minimum_balance_for_rent_exemption(size)

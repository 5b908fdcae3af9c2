"""Cluster and clock methods: version, genesis, slots, blockhashes, fees, rent."""

import base64
import binascii
from typing import Any

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
from curta_chain.localnet.rpc_errors import invalid_params
from curta_chain.localnet.state import Localnet

FEATURE_SET = 3_640_012_085


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

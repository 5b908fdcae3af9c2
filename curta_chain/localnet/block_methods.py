"""Blocks and history: getBlock and its siblings, getSignaturesForAddress.

Methods: getBlock, getBlocks, getBlocksWithLimit, getBlockTime, getFirstAvailableBlock,
minimumLedgerSlot, getSignaturesForAddress, getBlockCommitment, getBlockProduction,
getRecentPerformanceSamples.

Every slot holds a block (block height = slot; a one-node cluster skips none), with the
transactions that landed in it. Blocks are served from ``first_available_slot`` (the
oldest whose transactions are still kept) up to the slot of the commitment asked
(confirmed or finalized: a block is not served while it is only processed).
"""

from typing import Any

from curta_chain.constants import FINALIZED_DEPTH
from curta_chain.localnet.clock import SLOTS_PER_EPOCH
from curta_chain.localnet.commitment import confirmation
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.params import (
    Params,
    commitment_param,
    config_at,
    context_slot,
    optional,
    pubkey_param,
    required,
    signature_param,
    uint_param,
    with_context,
)
from curta_chain.localnet.rpc_errors import (
    BLOCK_CLEANED_UP,
    BLOCK_NOT_AVAILABLE,
    RpcMethodError,
    invalid_params,
)
from curta_chain.localnet.transaction_json import transaction_with_meta
from curta_chain.localnet.transaction_methods import transaction_config
from curta_chain.localnet.tx_history import TransactionDetails

MAX_BLOCK_RANGE = 500_000
"""getBlocks / getBlocksWithLimit span at most this many slots (agave's limit)."""
MAX_SIGNATURES_FOR_ADDRESS = 1_000
MAX_PERFORMANCE_SAMPLES = 720
PERFORMANCE_SAMPLE_SECONDS = 60
TRANSACTION_DETAILS = ("full", "signatures", "none", "accounts")
GENESIS_PARENT = "11111111111111111111111111111111"


def _confirmed_config(params: Params, index: int) -> tuple[dict[str, Any], str]:
    config = config_at(params, index)
    commitment = commitment_param(config)
    if commitment == "processed":
        raise invalid_params("Method does not support commitment below `confirmed`")
    return config, commitment


def _check_available(localnet: Localnet, slot: int, last: int) -> None:
    first = localnet.history.first_available_slot
    if slot < first:
        raise RpcMethodError(
            BLOCK_CLEANED_UP,
            f"Block {slot} cleaned up, does not exist on node. First available block: {first}",
        )
    if slot > last:
        raise RpcMethodError(BLOCK_NOT_AVAILABLE, f"Block not available for slot {slot}")


def get_block(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getBlock``: full, signatures, accounts or no transaction details, any encoding."""
    slot = uint_param(required(params, 0, "slot"), "slot")
    config, encoding, max_version = transaction_config(params, 1)
    details_kind = config.get("transactionDetails", "full")
    if details_kind not in TRANSACTION_DETAILS:
        raise invalid_params(f"Invalid params: unknown variant `{details_kind}`")
    rewards = bool(config.get("rewards", True))
    last = context_slot(localnet, config)
    _check_available(localnet, slot, last)
    block: dict[str, Any] = {
        "blockHeight": slot,
        "blockTime": localnet.clock.unix_timestamp(slot),
        "blockhash": localnet.clock.blockhash(slot),
        "parentSlot": max(slot - 1, 0),
        # The genesis block has no parent: its previous blockhash is all zeros.
        "previousBlockhash": localnet.clock.blockhash(slot - 1) if slot else GENESIS_PARENT,
    }
    transactions = localnet.history.block(slot)
    if details_kind == "full":
        block["transactions"] = [
            transaction_with_meta(details, encoding, max_version, show_rewards=True)
            for details in transactions
        ]
    elif details_kind == "signatures":
        block["signatures"] = [details.signature for details in transactions]
    elif details_kind == "accounts":
        block["transactions"] = [_accounts_only(details, max_version) for details in transactions]
    if rewards:
        block["rewards"] = []
    return block


def _accounts_only(details: TransactionDetails, max_version: int | None) -> dict[str, Any]:
    full = transaction_with_meta(details, "jsonParsed", max_version)
    message = full["transaction"]["message"]
    meta = full["meta"]
    entry: dict[str, Any] = {
        "transaction": {
            "signatures": full["transaction"]["signatures"],
            "accountKeys": message["accountKeys"],
        },
        "meta": {
            key: meta[key]
            for key in (
                "err",
                "status",
                "fee",
                "preBalances",
                "postBalances",
                "preTokenBalances",
                "postTokenBalances",
            )
        },
    }
    if "version" in full:
        entry["version"] = full["version"]
    return entry


def _last_slot(localnet: Localnet, params: Params, config_index: int) -> int:
    config, _ = _confirmed_config(params, config_index)
    return context_slot(localnet, config)


def get_blocks(localnet: Localnet, params: Params) -> list[int]:
    """``getBlocks``: the slots with a block in [start, end] (end: the commitment's slot)."""
    start = uint_param(required(params, 0, "startSlot"), "startSlot")
    end = optional(params, 1)
    if isinstance(end, dict):  # getBlocks(start, config): the end slot left out
        end, last = None, _last_slot(localnet, params, 1)
    else:
        last = _last_slot(localnet, params, 2)
    end = last if end is None else uint_param(end, "endSlot")
    if end - start > MAX_BLOCK_RANGE:
        raise invalid_params(f"Slot range too large; max {MAX_BLOCK_RANGE}")
    first = max(start, localnet.history.first_available_slot)
    return list(range(first, min(end, last) + 1))


def get_blocks_with_limit(localnet: Localnet, params: Params) -> list[int]:
    """``getBlocksWithLimit``: at most ``limit`` slots with a block from ``start`` on."""
    start = uint_param(required(params, 0, "startSlot"), "startSlot")
    limit = uint_param(required(params, 1, "limit"), "limit")
    if limit > MAX_BLOCK_RANGE:
        raise invalid_params(f"Limit too large; max {MAX_BLOCK_RANGE}")
    last = _last_slot(localnet, params, 2)
    first = max(start, localnet.history.first_available_slot)
    return list(range(first, min(first + limit - 1, last) + 1)) if limit else []


def get_block_time(localnet: Localnet, params: Params) -> int:
    """``getBlockTime``: the time of each confirmed block."""
    slot = uint_param(required(params, 0, "slot"), "slot")
    _check_available(localnet, slot, localnet.commitment_slot("confirmed"))
    return localnet.clock.unix_timestamp(slot)


def get_first_available_block(localnet: Localnet, params: Params) -> int:
    """``getFirstAvailableBlock``."""
    return localnet.history.first_available_slot


def minimum_ledger_slot(localnet: Localnet, params: Params) -> int:
    """``minimumLedgerSlot``: the lowest slot the node has data for."""
    return localnet.history.first_available_slot


def get_signatures_for_address(localnet: Localnet, params: Params) -> list[dict[str, Any]]:
    """``getSignaturesForAddress``: newest first, ``limit`` (1,000), ``before``, ``until``."""
    address = pubkey_param(required(params, 0, "address"))
    config, _ = _confirmed_config(params, 1)
    limit = uint_param(config.get("limit", MAX_SIGNATURES_FOR_ADDRESS), "limit")
    if not 1 <= limit <= MAX_SIGNATURES_FOR_ADDRESS:
        raise invalid_params(f"Invalid limit; max {MAX_SIGNATURES_FOR_ADDRESS}")
    before = config.get("before")
    until = config.get("until")
    for value in (before, until):
        if value is not None:
            signature_param(value)
    last = context_slot(localnet, config)
    current = localnet.tick()
    found: list[dict[str, Any]] = []
    started = before is None
    for signature in localnet.history.signatures_for(address):
        if not started:
            started = signature == before
            continue
        if signature == until:
            break
        details = localnet.details(signature)
        if details is None or details.slot > last:
            continue
        found.append(
            {
                "signature": signature,
                "slot": details.slot,
                "err": details.err,
                "memo": details.memo,
                "blockTime": localnet.clock.unix_timestamp(details.slot),
                "confirmationStatus": confirmation(details.slot, current)["confirmationStatus"],
                "transactionIndex": details.transaction_index,
            }
        )
        if len(found) == limit:
            break
    return found


def get_block_commitment(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getBlockCommitment``: no stake votes here (LiteSVM has no vote accounts)."""
    slot = uint_param(required(params, 0, "slot"), "slot")
    current = localnet.tick()
    depth = current - slot
    commitment = None
    if 0 < depth < FINALIZED_DEPTH:
        commitment = [0] * FINALIZED_DEPTH
    return {"commitment": commitment, "totalStake": 0}


def get_block_production(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getBlockProduction``: one leader, who produced every block of the range."""
    config = config_at(params, 0)
    last = context_slot(localnet, config)
    span = config.get("range") or {}
    if not isinstance(span, dict):
        raise invalid_params("Invalid params: range must be {firstSlot, lastSlot}")
    first = uint_param(
        span.get("firstSlot", last // SLOTS_PER_EPOCH * SLOTS_PER_EPOCH), "firstSlot"
    )
    end = span.get("lastSlot")
    end = last if end is None else uint_param(end, "lastSlot")
    if end < first:
        raise invalid_params(f"lastSlot, {end}, cannot be less than firstSlot, {first}")
    end = min(end, last)
    identity = str(localnet.identity)
    wanted = config.get("identity")
    count = max(end - first + 1, 0)
    by_identity = {identity: [count, count]} if wanted in (None, identity) else {}
    return with_context(
        last, {"byIdentity": by_identity, "range": {"firstSlot": first, "lastSlot": end}}
    )


def get_recent_performance_samples(localnet: Localnet, params: Params) -> list[dict[str, int]]:
    """``getRecentPerformanceSamples``: one sample per 60 s, newest first, from recent slots."""
    limit = optional(params, 0)
    limit = MAX_PERFORMANCE_SAMPLES if limit is None else uint_param(limit, "limit")
    if limit > MAX_PERFORMANCE_SAMPLES:
        raise invalid_params(f"Invalid limit; max {MAX_PERFORMANCE_SAMPLES}")
    slots = max(round(PERFORMANCE_SAMPLE_SECONDS / localnet.clock.slot_duration), 1)
    current = localnet.tick()
    samples: list[dict[str, int]] = []
    end = current - 1
    while end - slots + 1 >= 0 and len(samples) < limit and end >= current - 4 * 150:
        start = end - slots + 1
        count = localnet.history.count_at(end) - localnet.history.count_at(start - 1)
        samples.append(
            {
                "slot": end,
                "numTransactions": count,
                "numNonVoteTransactions": count,
                "numSlots": slots,
                "samplePeriodSecs": PERFORMANCE_SAMPLE_SECONDS,
            }
        )
        end -= slots
    return samples

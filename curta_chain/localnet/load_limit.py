"""The loaded-accounts-data limit (SIMD-0186), which LiteSVM does not enforce.

``Localnet`` asks ``loads_too_much`` before it runs a transaction and, when it does, lands it
failed with ``refused_before_running``'s metadata and its whole fee charged, as a validator
does. The counting itself is ``loaded_data``'s.
"""

import json
from collections.abc import Callable, Sequence

from solders.account import Account
from solders.message import Message, MessageV0, MessageV1
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata

from curta_chain.constants import MAX_ACCOUNT_SIZE
from curta_chain.localnet.loaded_data import (
    TRANSACTION_ACCOUNT_BASE_SIZE,
    loaded_accounts_data_size,
    loaded_accounts_data_size_limit,
)
from curta_chain.protocol.loader import LOADER_V3

ACCOUNT_BOUND = TRANSACTION_ACCOUNT_BASE_SIZE + MAX_ACCOUNT_SIZE
"""The most one account can count for; a program of the upgradeable loader counts twice
(itself and its program data)."""


def loads_too_much(
    message: Message | MessageV0 | MessageV1,
    keys: Sequence[Pubkey],
    looked_up: Sequence[Pubkey],
    account: Callable[[Pubkey], Account | None],
    owner: Callable[[Pubkey], Pubkey | None],
) -> bool:
    """Whether ``message`` loads more account data than its limit.

    A limit of 0 asked by a legacy or v0 message, invalid compute-budget instructions and
    lookups that do not resolve are LiteSVM's to refuse: it does, before loading anything,
    and charges nothing. A v1 message's limit of 0 (one it did not set) is exceeded by any
    account it loads.

    Reading an account copies its data, and most transactions here name a 10 MiB weight
    account, so the count starts from an upper bound: a key whose owner is on record
    (``owner``) counts at most 64 bytes plus 10 MiB, twice for the upgradeable loader's (a
    program brings its program data); every other key is read and counted exactly. Only
    when that bound passes the limit is every account read.

    Args:
        message: the transaction's message.
        keys: every key it loads, static then looked up (``looked_up`` among them).
        looked_up: the addresses its lookup tables resolved to.
        account: the account at a key now (None when there is none).
        owner: the owner on record for a key, without reading it (None when unknown).
    """
    limit = loaded_accounts_data_size_limit(message)
    tables = message.address_table_lookups if isinstance(message, MessageV0) else []
    wanted = sum(len(t.writable_indexes) + len(t.readonly_indexes) for t in tables)
    if limit is None or len(looked_up) != wanted:
        return False
    if not limit:
        return isinstance(message, MessageV1)
    owners = {key: owner(key) for key in keys}
    bound = sum(
        ACCOUNT_BOUND * (2 if key_owner == LOADER_V3 else 1)
        for key_owner in owners.values()
        if key_owner is not None
    )
    rest = loaded_accounts_data_size(
        message, lambda key: None if owners.get(key) is not None else account(key), looked_up
    )
    if rest + bound <= limit:
        return False
    return loaded_accounts_data_size(message, account, looked_up) > limit


def refused_before_running(
    tx: VersionedTransaction, error: str, fee: int
) -> FailedTransactionMetadata:
    """The metadata of ``tx`` refused with ``error`` while loading: its ``fee``, no logs."""
    meta = {
        "signature": str(tx.signatures[0]),
        "logs": [],
        "inner_instructions": [],
        "compute_units_consumed": 0,
        "return_data": {"program_id": [0] * 32, "data": []},
        "fee": fee,
    }
    return FailedTransactionMetadata.from_json(json.dumps({"err": error, "meta": meta}))

"""Account reads: getBalance, getAccountInfo, getMultipleAccounts, getProgramAccounts.

Each reads the bank of the commitment asked (``Localnet.account_at``): "processed" costs
what a read of LiteSVM costs; "confirmed" and "finalized" differ from it only for
accounts written in the last 33 slots.
"""

import base64
import binascii
from collections.abc import Callable
from typing import Any

import based58
from solders.pubkey import Pubkey

from curta_chain.localnet.codec import encode_account
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.params import (
    Params,
    account_encoding_param,
    config_at,
    context_slot,
    data_slice_param,
    pubkey_param,
    required,
    uint_param,
    with_context,
)
from curta_chain.localnet.parsed import NotParsable, parse_account
from curta_chain.localnet.rpc_errors import invalid_params

MAX_MULTIPLE_ACCOUNTS = 100
MAX_PROGRAM_ACCOUNT_FILTERS = 4
MAX_MEMCMP_BASE58 = 175


def ui_account(
    localnet: Localnet,
    pubkey: Pubkey,
    account: Any,
    encoding: str,
    data_slice: dict[str, int] | None,
    slot: int,
    notification: bool = False,
) -> dict[str, Any]:
    """Return ``account`` as the validator's ``UiAccount``, parsed for jsonParsed.

    ``notification``: for PubSub, where oversized base58 data is replaced by a message.
    """
    parsed = None
    if encoding == "jsonParsed" and data_slice is None:
        try:
            parsed = parse_account(
                pubkey, account.owner, account.data, lambda key: localnet.account_at(key, slot)
            )
        except NotParsable:
            parsed = None
    return encode_account(account, encoding, data_slice, parsed, notification)


def get_balance(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getBalance``."""
    pubkey = pubkey_param(required(params, 0, "pubkey"))
    slot = context_slot(localnet, config_at(params, 1))
    return with_context(slot, localnet.balance_at(pubkey, slot))


def get_account_info(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getAccountInfo``: binary/base58/base64/base64+zstd, jsonParsed as base64; dataSlice."""
    pubkey = pubkey_param(required(params, 0, "pubkey"))
    config = config_at(params, 1)
    encoding = account_encoding_param(config, "binary")
    data_slice = data_slice_param(config)
    slot = context_slot(localnet, config)
    account = localnet.account_at(pubkey, slot)
    value = (
        None
        if account is None
        else ui_account(localnet, pubkey, account, encoding, data_slice, slot)
    )
    return with_context(slot, value)


def get_multiple_accounts(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getMultipleAccounts``: at most 100 addresses."""
    keys = required(params, 0, "pubkeys")
    if not isinstance(keys, list):
        raise invalid_params("Invalid params: pubkeys must be an array")
    if len(keys) > MAX_MULTIPLE_ACCOUNTS:
        raise invalid_params(f"Too many inputs provided; max {MAX_MULTIPLE_ACCOUNTS}")
    pubkeys = [pubkey_param(key) for key in keys]
    config = config_at(params, 1)
    encoding = account_encoding_param(config, "base64")
    data_slice = data_slice_param(config)
    slot = context_slot(localnet, config)
    values = []
    for pubkey in pubkeys:
        account = localnet.account_at(pubkey, slot)
        values.append(
            None
            if account is None
            else ui_account(localnet, pubkey, account, encoding, data_slice, slot)
        )
    return with_context(slot, values)


def program_filters(filters: Any) -> list[Callable[[bytes], bool]]:
    """Return a check per getProgramAccounts filter (dataSize, memcmp), at most 4."""
    if filters is None:
        return []
    if not isinstance(filters, list):
        raise invalid_params("Invalid params: filters must be an array")
    if len(filters) > MAX_PROGRAM_ACCOUNT_FILTERS:
        raise invalid_params(f"Too many filters provided; max {MAX_PROGRAM_ACCOUNT_FILTERS}")
    checks: list[Callable[[bytes], bool]] = []
    for item in filters:
        if isinstance(item, dict) and set(item) == {"dataSize"}:
            size = uint_param(item["dataSize"], "dataSize")
            checks.append(_of_size(size))
        elif isinstance(item, dict) and set(item) == {"memcmp"}:
            checks.append(_memcmp(item["memcmp"]))
        else:
            raise invalid_params(f"Invalid params: unknown filter {item!r}")
    return checks


def _of_size(size: int) -> Callable[[bytes], bool]:
    return lambda data: len(data) == size


def _memcmp(memcmp: Any) -> Callable[[bytes], bool]:
    if not isinstance(memcmp, dict) or not isinstance(memcmp.get("bytes"), str):
        raise invalid_params("Invalid params: memcmp must be {offset, bytes, encoding}")
    offset = uint_param(memcmp.get("offset"), "memcmp.offset")
    encoding = memcmp.get("encoding", "base58")
    text = memcmp["bytes"]
    try:
        if encoding == "base58":
            if len(text) > MAX_MEMCMP_BASE58:
                raise invalid_params("Invalid param: DataTooLarge")
            wanted = based58.b58decode(text.encode())
        elif encoding == "base64":
            wanted = base64.b64decode(text, validate=True)
        else:
            raise invalid_params(f"Invalid params: unknown variant `{encoding}`")
    except (ValueError, binascii.Error) as exc:
        raise invalid_params("Invalid param: DecodeError") from exc
    return lambda data: data[offset : offset + len(wanted)] == wanted


def get_program_accounts(localnet: Localnet, params: Params) -> Any:
    """``getProgramAccounts`` with dataSize and memcmp filters, dataSlice and withContext."""
    owner = pubkey_param(required(params, 0, "programId"))
    config = config_at(params, 1)
    encoding = account_encoding_param(config, "binary")
    data_slice = data_slice_param(config)
    checks = program_filters(config.get("filters"))
    slot = context_slot(localnet, config)
    found = [
        {
            "pubkey": str(pubkey),
            "account": ui_account(localnet, pubkey, account, encoding, data_slice, slot),
        }
        for pubkey, account in localnet.program_accounts(owner, slot)
        if all(check(account.data) for check in checks)
    ]
    return with_context(slot, found) if config.get("withContext") else found

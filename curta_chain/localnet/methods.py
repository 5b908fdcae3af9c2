"""The JSON-RPC methods: each takes the ``Localnet`` and the request's params, returns a result.

Parameter and result shapes are the validator's (agave ``rpc.rs``, ``rpc-client-api``), so
solana-py's ``Client``/``AsyncClient`` and other Solana clients parse every answer. Methods
that change the chain are listed in ``WRITE_METHODS``: the server answers them only after
the ledger records they appended are on disk.
"""

import base64
import binascii
from collections.abc import Callable
from typing import Any

import based58
from solders.hash import Hash
from solders.message import Message, MessageV0, from_bytes_versioned
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import VersionedTransaction

from curta_chain.localnet.clock import SLOTS_PER_EPOCH
from curta_chain.localnet.codec import (
    decode_transaction,
    encode_account,
    inner_instructions_json,
    preflight_failure,
    return_data_json,
    transaction_error_json,
)
from curta_chain.localnet.rpc_errors import (
    MIN_CONTEXT_SLOT_NOT_REACHED,
    TRANSACTION_SIGNATURE_VERIFICATION_FAILURE,
    UNSUPPORTED_TRANSACTION_VERSION,
    RpcMethodError,
    invalid_params,
)
from curta_chain.localnet.state import Localnet, writable_keys

SOLANA_CORE_VERSION = "2.2.0"
"""The agave line LiteSVM 0.6 (inside solders 0.26) runs; reported by getVersion."""
FEATURE_SET = 3_640_012_085
MAX_MULTIPLE_ACCOUNTS = 100
MAX_SIGNATURE_STATUSES = 256
MAX_PROGRAM_ACCOUNT_FILTERS = 4
MAX_MEMCMP_BASE58 = 175
Params = list[Any]


# -- parameter parsing ----------------------------------------------------------------


def _arg(params: Params, index: int, name: str) -> Any:
    if len(params) <= index:
        raise invalid_params(f"Invalid params: missing parameter `{name}`")
    return params[index]


def _config(params: Params, index: int) -> dict[str, Any]:
    config = params[index] if len(params) > index else None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise invalid_params("Invalid params: configuration must be an object")
    return config


def _pubkey(value: Any) -> Pubkey:
    if not isinstance(value, str):
        raise invalid_params("Invalid params: invalid type: expected a base58 public key string")
    try:
        return Pubkey.from_string(value)
    except ValueError as exc:
        raise invalid_params("Invalid param: Invalid") from exc


def _signature(value: Any) -> str:
    if not isinstance(value, str):
        raise invalid_params("Invalid params: invalid type: expected a base58 signature string")
    try:
        Signature.from_string(value)
    except ValueError as exc:
        raise invalid_params("Invalid param: Invalid") from exc
    return value


def _uint(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise invalid_params(f"Invalid params: `{name}` must be an unsigned integer")
    return value


def _slot(localnet: Localnet, config: dict[str, Any]) -> int:
    slot = localnet.tick()
    min_slot = config.get("minContextSlot")
    if min_slot is not None and _uint(min_slot, "minContextSlot") > slot:
        raise RpcMethodError(
            MIN_CONTEXT_SLOT_NOT_REACHED,
            "Minimum context slot has not been reached",
            {"contextSlot": slot},
        )
    return slot


def _context(slot: int, value: Any) -> dict[str, Any]:
    return {"context": {"slot": slot, "apiVersion": SOLANA_CORE_VERSION}, "value": value}


def _data_slice(config: dict[str, Any]) -> dict[str, int] | None:
    data_slice = config.get("dataSlice")
    if data_slice is None:
        return None
    if not isinstance(data_slice, dict):
        raise invalid_params("Invalid params: `dataSlice` must be {offset, length}")
    return {
        "offset": _uint(data_slice.get("offset"), "dataSlice.offset"),
        "length": _uint(data_slice.get("length"), "dataSlice.length"),
    }


def _account_encoding(config: dict[str, Any], default: str) -> str:
    encoding = config.get("encoding", default)
    if encoding not in ("binary", "base58", "base64", "base64+zstd", "jsonParsed"):
        raise invalid_params(f"Invalid params: unknown variant `{encoding}`")
    return encoding


# -- cluster and time -----------------------------------------------------------------


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
    return _slot(localnet, _config(params, 0))


def get_block_height(localnet: Localnet, params: Params) -> int:
    """``getBlockHeight``: every slot has a block, so it equals the slot."""
    return _slot(localnet, _config(params, 0))


def get_epoch_info(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getEpochInfo``."""
    slot = _slot(localnet, _config(params, 0))
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
    _slot(localnet, _config(params, 0))
    return localnet.transaction_count


def get_latest_blockhash(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getLatestBlockhash``, with ``lastValidBlockHeight``."""
    slot = _slot(localnet, _config(params, 0))
    return _context(
        slot,
        {
            "blockhash": localnet.clock.blockhash(slot),
            "lastValidBlockHeight": localnet.clock.last_valid_block_height(slot),
        },
    )


def is_blockhash_valid(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``isBlockhashValid``: true while the blockhash is at most 150 blocks old."""
    blockhash = _arg(params, 0, "blockhash")
    if not isinstance(blockhash, str):
        raise invalid_params("Invalid params: invalid type: expected a base58 blockhash string")
    slot = _slot(localnet, _config(params, 1))
    return _context(slot, localnet.clock.age_ok(blockhash))


def get_fee_for_message(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getFeeForMessage``: the fee, or null when the message's blockhash is not valid."""
    encoded = _arg(params, 0, "message")
    slot = _slot(localnet, _config(params, 1))
    if not isinstance(encoded, str):
        raise invalid_params("Invalid params: message must be a base64 string")
    try:
        message = from_bytes_versioned(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise invalid_params(f"invalid message: {exc}") from exc
    if not localnet.clock.age_ok(str(message.recent_blockhash)):
        return _context(slot, None)
    return _context(slot, localnet.fee_for(message))


def get_minimum_balance_for_rent_exemption(localnet: Localnet, params: Params) -> int:
    """``getMinimumBalanceForRentExemption``."""
    size = _uint(_arg(params, 0, "dataLength"), "dataLength")
    return localnet.svm.minimum_balance_for_rent_exemption(size)


# -- accounts -------------------------------------------------------------------------


def get_balance(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getBalance``."""
    pubkey = _pubkey(_arg(params, 0, "pubkey"))
    slot = _slot(localnet, _config(params, 1))
    return _context(slot, localnet.svm.get_balance(pubkey) or 0)


def get_account_info(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getAccountInfo``: binary/base58/base64/base64+zstd, jsonParsed as base64; dataSlice."""
    pubkey = _pubkey(_arg(params, 0, "pubkey"))
    config = _config(params, 1)
    encoding = _account_encoding(config, "binary")
    data_slice = _data_slice(config)
    slot = _slot(localnet, config)
    account = localnet.get_account(pubkey)
    value = None if account is None else encode_account(account, encoding, data_slice)
    return _context(slot, value)


def get_multiple_accounts(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getMultipleAccounts``: at most 100 addresses."""
    keys = _arg(params, 0, "pubkeys")
    if not isinstance(keys, list):
        raise invalid_params("Invalid params: pubkeys must be an array")
    if len(keys) > MAX_MULTIPLE_ACCOUNTS:
        raise invalid_params(f"Too many inputs provided; max {MAX_MULTIPLE_ACCOUNTS}")
    pubkeys = [_pubkey(key) for key in keys]
    config = _config(params, 1)
    encoding = _account_encoding(config, "base64")
    data_slice = _data_slice(config)
    slot = _slot(localnet, config)
    values = []
    for pubkey in pubkeys:
        account = localnet.get_account(pubkey)
        values.append(None if account is None else encode_account(account, encoding, data_slice))
    return _context(slot, values)


def _program_filters(filters: Any) -> list[Callable[[bytes], bool]]:
    if filters is None:
        return []
    if not isinstance(filters, list):
        raise invalid_params("Invalid params: filters must be an array")
    if len(filters) > MAX_PROGRAM_ACCOUNT_FILTERS:
        raise invalid_params(f"Too many filters provided; max {MAX_PROGRAM_ACCOUNT_FILTERS}")
    checks = []
    for item in filters:
        if isinstance(item, dict) and set(item) == {"dataSize"}:
            size = _uint(item["dataSize"], "dataSize")
            checks.append(lambda data, size=size: len(data) == size)
        elif isinstance(item, dict) and set(item) == {"memcmp"}:
            checks.append(_memcmp(item["memcmp"]))
        else:
            raise invalid_params(f"Invalid params: unknown filter {item!r}")
    return checks


def _memcmp(memcmp: Any) -> Callable[[bytes], bool]:
    if not isinstance(memcmp, dict) or not isinstance(memcmp.get("bytes"), str):
        raise invalid_params("Invalid params: memcmp must be {offset, bytes, encoding}")
    offset = _uint(memcmp.get("offset"), "memcmp.offset")
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
    owner = _pubkey(_arg(params, 0, "programId"))
    config = _config(params, 1)
    encoding = _account_encoding(config, "binary")
    data_slice = _data_slice(config)
    checks = _program_filters(config.get("filters"))
    slot = _slot(localnet, config)
    found = [
        {"pubkey": str(pubkey), "account": encode_account(account, encoding, data_slice)}
        for pubkey, account in localnet.program_accounts(owner)
        if all(check(account.data) for check in checks)
    ]
    return _context(slot, found) if config.get("withContext") else found


# -- transactions ---------------------------------------------------------------------


def request_airdrop(localnet: Localnet, params: Params) -> str:
    """``requestAirdrop``: a transfer from the faucet; returns its signature."""
    pubkey = _pubkey(_arg(params, 0, "pubkey"))
    lamports = _uint(_arg(params, 1, "lamports"), "lamports")
    _slot(localnet, _config(params, 2))
    return localnet.airdrop(pubkey, lamports).signature


def _binary_encoding(config: dict[str, Any]) -> str:
    encoding = config.get("encoding", "base58")
    if encoding not in ("base58", "base64"):
        raise invalid_params(
            f"Invalid params: unsupported encoding: {encoding}. Supported encodings: base58, base64"
        )
    return encoding


def send_transaction(localnet: Localnet, params: Params) -> str:
    """``sendTransaction``: base58 or base64, with or without preflight."""
    encoded = _arg(params, 0, "transaction")
    config = _config(params, 1)
    raw, tx = decode_transaction(encoded, _binary_encoding(config))
    _slot(localnet, config)
    try:
        tx.sanitize()
    except ValueError as exc:
        raise invalid_params(f"invalid transaction: {exc}") from exc
    return localnet.send_transaction(raw, tx, preflight=not config.get("skipPreflight")).signature


def simulate_transaction(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``simulateTransaction``: sigVerify, replaceRecentBlockhash, accounts, innerInstructions."""
    encoded = _arg(params, 0, "transaction")
    config = _config(params, 1)
    _, tx = decode_transaction(encoded, _binary_encoding(config))
    slot = _slot(localnet, config)
    sig_verify = bool(config.get("sigVerify"))
    replace = bool(config.get("replaceRecentBlockhash"))
    if sig_verify and replace:
        raise invalid_params("sigVerify may not be used with replaceRecentBlockhash")
    if sig_verify and not all(tx.verify_with_results()):
        raise RpcMethodError(
            TRANSACTION_SIGNATURE_VERIFICATION_FAILURE, "Transaction signature verification failure"
        )
    replacement = None
    if replace:
        tx = _with_blockhash(tx, localnet.clock.blockhash(slot))
        replacement = {
            "blockhash": localnet.clock.blockhash(slot),
            "lastValidBlockHeight": localnet.clock.last_valid_block_height(slot),
        }
    addresses, account_encoding = _simulation_accounts(config)
    if not localnet.clock.age_ok(str(tx.message.recent_blockhash)):
        return _context(slot, {**preflight_failure("BlockhashNotFound", [], 0).data})
    result = localnet.svm.simulate_transaction(tx)
    if hasattr(result, "err"):
        meta, err, post = result.meta(), transaction_error_json(result.err()), {}
    else:
        meta, err, post = result.meta(), None, dict(result.post_accounts())
    accounts = None
    if addresses is not None:
        accounts = []
        for pubkey in addresses:
            account = post.get(pubkey) or localnet.get_account(pubkey)
            ok = account is not None and account.lamports > 0
            accounts.append(encode_account(account, account_encoding, None) if ok else None)
    return _context(
        slot,
        {
            "err": err,
            "logs": meta.logs(),
            "accounts": accounts,
            "unitsConsumed": meta.compute_units_consumed(),
            "returnData": return_data_json(meta),
            "innerInstructions": inner_instructions_json(meta)
            if config.get("innerInstructions")
            else None,
            "replacementBlockhash": replacement,
        },
    )


def _simulation_accounts(config: dict[str, Any]) -> tuple[list[Pubkey] | None, str]:
    accounts = config.get("accounts")
    if accounts is None:
        return None, "base64"
    if not isinstance(accounts, dict) or not isinstance(accounts.get("addresses"), list):
        raise invalid_params("Invalid params: accounts must be {addresses, encoding}")
    encoding = _account_encoding(accounts, "base64")
    if encoding in ("binary", "base58"):
        raise invalid_params("base58 encoding not supported")
    return [_pubkey(a) for a in accounts["addresses"]], encoding


def _with_blockhash(tx: VersionedTransaction, blockhash: str) -> VersionedTransaction:
    message = tx.message
    new_hash = Hash.from_string(blockhash)
    if isinstance(message, MessageV0):
        replaced: Message | MessageV0 = MessageV0(
            message.header,
            message.account_keys,
            new_hash,
            message.instructions,
            message.address_table_lookups,
        )
    else:
        header = message.header
        replaced = Message.new_with_compiled_instructions(
            header.num_required_signatures,
            header.num_readonly_signed_accounts,
            header.num_readonly_unsigned_accounts,
            message.account_keys,
            new_hash,
            message.instructions,
        )
    return VersionedTransaction.populate(replaced, tx.signatures)


def get_signature_statuses(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getSignatureStatuses``: up to 256 signatures; landed ones are final at once."""
    signatures = _arg(params, 0, "signatures")
    if not isinstance(signatures, list):
        raise invalid_params("Invalid params: signatures must be an array")
    if len(signatures) > MAX_SIGNATURE_STATUSES:
        raise invalid_params(f"Too many inputs provided; max {MAX_SIGNATURE_STATUSES}")
    slot = _slot(localnet, _config(params, 1))
    values = []
    for value in signatures:
        status = localnet.status(_signature(value))
        if status is None:
            values.append(None)
            continue
        landed_slot, err = status
        # One node, no forks: a landed transaction whose record is on disk is final.
        values.append(
            {
                "slot": landed_slot,
                "confirmations": None,
                "err": err,
                "status": {"Ok": None} if err is None else {"Err": err},
                "confirmationStatus": "finalized",
            }
        )
    return _context(slot, values)


def get_transaction(localnet: Localnet, params: Params) -> dict[str, Any] | None:
    """``getTransaction``: json, jsonParsed, base58 and base64 encodings."""
    signature = _signature(_arg(params, 0, "signature"))
    config = params[1] if len(params) > 1 else None
    if isinstance(config, str):  # the deprecated form: the encoding alone
        config = {"encoding": config}
    config = _config([config], 0)
    if config.get("commitment") == "processed":
        raise invalid_params("Method does not support commitment below `confirmed`")
    encoding = config.get("encoding", "json")
    if encoding not in ("json", "jsonParsed", "base58", "base64"):
        raise invalid_params(f"Invalid params: unknown variant `{encoding}`")
    max_version = config.get("maxSupportedTransactionVersion")
    _slot(localnet, config)
    details = localnet.details(signature)
    if details is None:
        return None
    tx = VersionedTransaction.from_bytes(details.raw)
    is_v0 = isinstance(tx.message, MessageV0)
    if is_v0 and max_version is None:
        raise RpcMethodError(
            UNSUPPORTED_TRANSACTION_VERSION,
            "Transaction version (0) is not supported by the requesting client. Please try the "
            "request again with the following configuration parameter: "
            '"maxSupportedTransactionVersion": 0',
        )
    if encoding == "base64":
        transaction: Any = [base64.b64encode(details.raw).decode(), "base64"]
    elif encoding == "base58":
        transaction = [based58.b58encode(details.raw).decode(), "base58"]
    else:
        transaction = _transaction_json(tx, parsed=encoding == "jsonParsed")
    meta = {
        "err": details.err,
        "status": {"Ok": None} if details.err is None else {"Err": details.err},
        "fee": details.fee,
        "preBalances": details.pre_balances,
        "postBalances": details.post_balances,
        "innerInstructions": inner_instructions_json(details.meta),
        "logMessages": details.meta.logs(),
        "preTokenBalances": [],
        "postTokenBalances": [],
        "rewards": [],
        "loadedAddresses": {
            "writable": [str(key) for key in details.loaded_writable],
            "readonly": [str(key) for key in details.loaded_readonly],
        },
        "computeUnitsConsumed": details.meta.compute_units_consumed(),
    }
    return_data = return_data_json(details.meta)
    if return_data is not None:
        meta["returnData"] = return_data
    result: dict[str, Any] = {
        "slot": details.slot,
        "blockTime": localnet.clock.unix_timestamp(details.slot),
        "transaction": transaction,
        "meta": meta,
    }
    if max_version is not None:
        result["version"] = 0 if is_v0 else "legacy"
    return result


def _transaction_json(tx: VersionedTransaction, parsed: bool) -> dict[str, Any]:
    message = tx.message
    header = message.header
    keys = [str(key) for key in message.account_keys]
    if parsed:
        writable = {str(key) for key in writable_keys(message)}
        account_keys: list[Any] = [
            {
                "pubkey": key,
                "signer": index < header.num_required_signatures,
                "writable": key in writable,
                "source": "transaction",
            }
            for index, key in enumerate(keys)
        ]
        instructions = [
            {
                "programId": keys[ix.program_id_index],
                "accounts": [keys[i] for i in ix.accounts],
                "data": based58.b58encode(bytes(ix.data)).decode(),
                "stackHeight": None,
            }
            for ix in message.instructions
        ]
    else:
        account_keys = keys
        instructions = [
            {
                "programIdIndex": ix.program_id_index,
                "accounts": list(ix.accounts),
                "data": based58.b58encode(bytes(ix.data)).decode(),
                "stackHeight": None,
            }
            for ix in message.instructions
        ]
    body: dict[str, Any] = {
        "accountKeys": account_keys,
        "recentBlockhash": str(message.recent_blockhash),
        "instructions": instructions,
    }
    if not parsed:
        body["header"] = {
            "numRequiredSignatures": header.num_required_signatures,
            "numReadonlySignedAccounts": header.num_readonly_signed_accounts,
            "numReadonlyUnsignedAccounts": header.num_readonly_unsigned_accounts,
        }
    if isinstance(message, MessageV0):
        body["addressTableLookups"] = [
            {
                "accountKey": str(lookup.account_key),
                "writableIndexes": list(lookup.writable_indexes),
                "readonlyIndexes": list(lookup.readonly_indexes),
            }
            for lookup in message.address_table_lookups
        ]
    return {"signatures": [str(s) for s in tx.signatures], "message": body}


METHODS: dict[str, Callable[[Localnet, Params], Any]] = {
    "getHealth": get_health,
    "getVersion": get_version,
    "getGenesisHash": get_genesis_hash,
    "getSlot": get_slot,
    "getBlockHeight": get_block_height,
    "getEpochInfo": get_epoch_info,
    "getTransactionCount": get_transaction_count,
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

"""Transactions: requestAirdrop, sendTransaction, simulateTransaction, statuses, getTransaction."""

import base64
from typing import Any

import based58
from solders.hash import Hash
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from curta_chain.localnet.codec import (
    decode_transaction,
    encode_account,
    inner_instructions_json,
    preflight_failure,
    return_data_json,
    transaction_error_json,
)
from curta_chain.localnet.params import (
    Params,
    account_encoding_param,
    config_at,
    context_slot,
    pubkey_param,
    required,
    signature_param,
    uint_param,
    with_context,
)
from curta_chain.localnet.rpc_errors import (
    TRANSACTION_SIGNATURE_VERIFICATION_FAILURE,
    UNSUPPORTED_TRANSACTION_VERSION,
    RpcMethodError,
    invalid_params,
)
from curta_chain.localnet.state import Localnet, writable_keys

MAX_SIGNATURE_STATUSES = 256


FINALIZED_DEPTH = 32
"""Slots on top of a transaction's before it is finalized (MAX_LOCKOUT_HISTORY + 1)."""


def request_airdrop(localnet: Localnet, params: Params) -> str:
    """``requestAirdrop``: a transfer from the faucet; returns its signature."""
    pubkey = pubkey_param(required(params, 0, "pubkey"))
    lamports = uint_param(required(params, 1, "lamports"), "lamports")
    context_slot(localnet, config_at(params, 2))
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
    encoded = required(params, 0, "transaction")
    config = config_at(params, 1)
    raw, tx = decode_transaction(encoded, _binary_encoding(config))
    context_slot(localnet, config)
    try:
        tx.sanitize()
    except ValueError as exc:
        raise invalid_params(f"invalid transaction: {exc}") from exc
    return localnet.send_transaction(raw, tx, preflight=not config.get("skipPreflight")).signature


def simulate_transaction(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``simulateTransaction``: sigVerify, replaceRecentBlockhash, accounts, innerInstructions."""
    encoded = required(params, 0, "transaction")
    config = config_at(params, 1)
    _, tx = decode_transaction(encoded, _binary_encoding(config))
    slot = context_slot(localnet, config)
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
        return with_context(slot, {**preflight_failure("BlockhashNotFound", [], 0).data})
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
    return with_context(
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
    encoding = account_encoding_param(accounts, "base64")
    if encoding in ("binary", "base58"):
        raise invalid_params("base58 encoding not supported")
    return [pubkey_param(a) for a in accounts["addresses"]], encoding


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
    """``getSignatureStatuses``: up to 256 signatures, confirmed as a validator confirms them."""
    signatures = required(params, 0, "signatures")
    if not isinstance(signatures, list):
        raise invalid_params("Invalid params: signatures must be an array")
    if len(signatures) > MAX_SIGNATURE_STATUSES:
        raise invalid_params(f"Too many inputs provided; max {MAX_SIGNATURE_STATUSES}")
    slot = context_slot(localnet, config_at(params, 1))
    values = []
    for value in signatures:
        status = localnet.status(signature_param(value))
        if status is None:
            values.append(None)
            continue
        landed_slot, err = status
        values.append(
            {
                "slot": landed_slot,
                **confirmation(landed_slot, slot),
                "err": err,
                "status": {"Ok": None} if err is None else {"Err": err},
            }
        )
    return with_context(slot, values)


def confirmation(landed_slot: int, current_slot: int) -> dict[str, Any]:
    """How confirmed a transaction of ``landed_slot`` is at ``current_slot``.

    As on a validator: "processed" within its own slot, "confirmed" once that slot is
    over (a single node's vote), "finalized" once 32 slots are rooted on top of it.
    """
    depth = current_slot - landed_slot
    if depth >= FINALIZED_DEPTH:
        return {"confirmations": None, "confirmationStatus": "finalized"}
    return {
        "confirmations": depth,
        "confirmationStatus": "processed" if depth == 0 else "confirmed",
    }


def get_transaction(localnet: Localnet, params: Params) -> dict[str, Any] | None:
    """``getTransaction``: json, jsonParsed, base58 and base64 encodings."""
    signature = signature_param(required(params, 0, "signature"))
    config = params[1] if len(params) > 1 else None
    if isinstance(config, str):  # the deprecated form: the encoding alone
        config = {"encoding": config}
    config = config_at([config], 0)
    if config.get("commitment") == "processed":
        raise invalid_params("Method does not support commitment below `confirmed`")
    encoding = config.get("encoding", "json")
    if encoding not in ("json", "jsonParsed", "base58", "base64"):
        raise invalid_params(f"Invalid params: unknown variant `{encoding}`")
    max_version = config.get("maxSupportedTransactionVersion")
    context_slot(localnet, config)
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

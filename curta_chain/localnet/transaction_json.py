"""A landed transaction as getTransaction and getBlock answer it, in each encoding.

``json`` gives the compiled message (indexes), ``jsonParsed`` account keys with their
signer/writable/source flags and each instruction parsed where a parser exists
(``parsed_instructions``), ``base58``/``base64`` the wire bytes. The ``meta`` member is
agave's ``UiTransactionStatusMeta``.
"""

import base64
from typing import Any

import based58
from solders.message import MessageV0, MessageV1
from solders.transaction import VersionedTransaction

from curta_chain.localnet.codec import (
    inner_instructions_json,
    inner_items,
    return_data_json,
)
from curta_chain.localnet.outcomes import writable_keys
from curta_chain.localnet.parsed_instructions import parse_instruction
from curta_chain.localnet.rpc_errors import UNSUPPORTED_TRANSACTION_VERSION, RpcMethodError
from curta_chain.localnet.tx_history import TransactionDetails

TRANSACTION_ENCODINGS = ("json", "jsonParsed", "base58", "base64")


def check_version(details: TransactionDetails, max_version: int | None) -> str | int | None:
    """Return the version field for this transaction (None: leave it out), as agave 4.3 does.

    Raises:
        RpcMethodError: -32015, a versioned transaction newer than the client asked for (or
            any, without ``maxSupportedTransactionVersion``).
    """
    message = VersionedTransaction.from_bytes(details.raw).message
    version = 1 if isinstance(message, MessageV1) else 0 if isinstance(message, MessageV0) else None
    if version is None:
        return None if max_version is None else "legacy"
    if max_version is None or version > max_version:
        raise RpcMethodError(
            UNSUPPORTED_TRANSACTION_VERSION,
            f"Transaction version ({version}) is not supported by the requesting client. Please "
            "try the request again with the following configuration parameter: "
            f'"maxSupportedTransactionVersion": {version}',
        )
    return version


def transaction_with_meta(
    details: TransactionDetails, encoding: str, max_version: int | None, show_rewards: bool = True
) -> dict[str, Any]:
    """Return ``{"transaction", "meta", "version"?}`` for getTransaction and getBlock."""
    version = check_version(details, max_version)
    if encoding == "base64":
        transaction: Any = [base64.b64encode(details.raw).decode(), "base64"]
    elif encoding == "base58":
        transaction = [based58.b58encode(details.raw).decode(), "base58"]
    else:
        tx = VersionedTransaction.from_bytes(details.raw)
        transaction = message_json(tx, details, parsed=encoding == "jsonParsed")
    result: dict[str, Any] = {
        "transaction": transaction,
        "meta": meta_json(details, parsed=encoding == "jsonParsed", show_rewards=show_rewards),
    }
    if version is not None:
        result["version"] = version
    return result


def _keys(details: TransactionDetails) -> list[str]:
    return [str(key) for key in details.keys]


def meta_json(
    details: TransactionDetails, parsed: bool, show_rewards: bool = True
) -> dict[str, Any]:
    """Return the ``meta`` member (``UiTransactionStatusMeta``)."""
    meta: dict[str, Any] = {
        "err": details.err,
        "status": {"Ok": None} if details.err is None else {"Err": details.err},
        "fee": details.fee,
        "preBalances": details.pre_balances,
        "postBalances": details.post_balances,
        "innerInstructions": _inner_parsed(details)
        if parsed
        else inner_instructions_json(details.meta),
        "logMessages": details.meta.logs(),
        "preTokenBalances": details.pre_token_balances,
        "postTokenBalances": details.post_token_balances,
        "computeUnitsConsumed": details.meta.compute_units_consumed(),
        "costUnits": details.cost_units,
    }
    if show_rewards:
        meta["rewards"] = []
    if not parsed:
        meta["loadedAddresses"] = {
            "writable": [str(key) for key in details.loaded_writable],
            "readonly": [str(key) for key in details.loaded_readonly],
        }
    return_data = return_data_json(details.meta)
    if return_data is not None:
        meta["returnData"] = return_data
    return meta


def _inner_parsed(details: TransactionDetails) -> list[dict[str, Any]]:
    keys = _keys(details)
    out = []
    for index, inner in enumerate(details.meta.inner_instructions()):
        if inner:
            out.append(
                {
                    "index": index,
                    "instructions": [
                        parse_instruction(
                            keys[ix.program_id_index],
                            [keys[i] for i in ix.accounts],
                            bytes(ix.data),
                            height,
                        )
                        for ix, height in inner_items(inner)
                    ],
                }
            )
    return out


def message_json(
    tx: VersionedTransaction, details: TransactionDetails | None, parsed: bool
) -> dict[str, Any]:
    """Return ``{"signatures", "message"}`` in json or jsonParsed form.

    Top-level instructions are at stack height 1 in every version, as agave 4.2's
    solana-test-validator answers them (2.2 gave null); a v1 message has no
    ``addressTableLookups`` and has its ``transactionConfig``.
    """
    message = tx.message
    height = 1
    header = message.header
    static = [str(key) for key in message.account_keys]
    if parsed:
        writable = {str(key) for key in writable_keys(message)}
        account_keys: list[Any] = [
            {
                "pubkey": key,
                "signer": index < header.num_required_signatures,
                "writable": key in writable,
                "source": "transaction",
            }
            for index, key in enumerate(static)
        ]
        keys = static
        if details is not None:
            keys = _keys(details)
            loaded_writable = {str(key) for key in details.loaded_writable}
            account_keys += [
                {
                    "pubkey": key,
                    "signer": False,
                    "writable": key in loaded_writable,
                    "source": "lookupTable",
                }
                for key in keys[len(static) :]
            ]
        instructions = [
            parse_instruction(
                keys[ix.program_id_index],
                [keys[i] for i in ix.accounts if i < len(keys)],
                bytes(ix.data),
                height,
            )
            for ix in message.instructions
        ]
    else:
        account_keys = static
        instructions = [
            {
                "programIdIndex": ix.program_id_index,
                "accounts": list(ix.accounts),
                "data": based58.b58encode(bytes(ix.data)).decode(),
                "stackHeight": height,
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
    if isinstance(message, MessageV1):
        config = message.config
        body["transactionConfig"] = {
            "priorityFee": config.priority_fee,
            "computeUnitLimit": config.compute_unit_limit,
            "loadedAccountsDataSizeLimit": config.loaded_accounts_data_size_limit,
            "heapSize": config.heap_size,
        }
    return {"signatures": [str(s) for s in tx.signatures], "message": body}

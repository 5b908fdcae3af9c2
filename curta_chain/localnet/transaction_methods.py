"""Transactions: requestAirdrop, sendTransaction, simulateTransaction, statuses, getTransaction.

The chain model answers a send with a value (``Landed`` or ``Refused``); this module maps
it to what a validator answers: the signature, or the -32002 preflight error with the
simulation's error, logs, units, fee and loaded data (a bad signature included, as agave's
preflight reports it).
"""

from typing import Any

from solders.hash import Hash
from solders.message import Message, MessageV0, MessageV1
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from curta_chain.constants import MAX_SIGNATURE_STATUSES
from curta_chain.localnet.account_methods import ui_account
from curta_chain.localnet.codec import (
    AnyMessage,
    decode_transaction,
    inner_instructions_json,
    preflight_failure,
    return_data_json,
)
from curta_chain.localnet.commitment import confirmation
from curta_chain.localnet.features import ENABLE_TX_V1
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.outcomes import Refused, SendOutcome, Simulation
from curta_chain.localnet.params import (
    Params,
    account_encoding_param,
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
from curta_chain.localnet.rpc_errors import INTERNAL_ERROR, RpcMethodError, invalid_params
from curta_chain.localnet.transaction_json import TRANSACTION_ENCODINGS, transaction_with_meta


def send_answer(outcome: SendOutcome, preflight: bool) -> str:
    """Return the signature a validator answers for ``outcome``.

    Raises:
        RpcMethodError: with ``preflight``, a refusal: -32002 carrying the simulation's
            error, logs, units, fee and loaded data.
    """
    if isinstance(outcome, Refused) and preflight:
        raise preflight_failure(
            outcome.err, outcome.logs, outcome.units, outcome.fee, outcome.loaded_size
        )
    return outcome.signature


def request_airdrop(localnet: Localnet, params: Params) -> str:
    """``requestAirdrop``: a transfer from the faucet; returns its signature."""
    pubkey = pubkey_param(required(params, 0, "pubkey"))
    lamports = uint_param(required(params, 1, "lamports"), "lamports")
    context_slot(localnet, config_at(params, 2))
    outcome = localnet.airdrop(pubkey, lamports)
    if isinstance(outcome, Refused):
        raise RpcMethodError(INTERNAL_ERROR, "Internal error")  # the faucet cannot pay
    return outcome.signature


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
    preflight = not config.get("skipPreflight")
    # As agave: the bank of preflightCommitment (processed without a preflight) is the one
    # minContextSlot is held against and whose blockhashes the preflight knows.
    commitment = config.get("preflightCommitment", "finalized") if preflight else "processed"
    bank_config = {"commitment": commitment, "minContextSlot": config.get("minContextSlot")}
    slot = context_slot(localnet, bank_config)
    try:
        tx.sanitize()
    except ValueError as exc:
        raise invalid_params(f"invalid transaction: {exc}") from exc
    outcome = localnet.send_transaction(raw, tx, slot if preflight else None)
    return send_answer(outcome, preflight)


def simulate_transaction(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``simulateTransaction``: sigVerify, replaceRecentBlockhash, accounts, innerInstructions.

    A bad signature (with ``sigVerify``) or blockhash is the result's ``err``, as on the
    validator, not an error answer.
    """
    encoded = required(params, 0, "transaction")
    config = config_at(params, 1)
    _, tx = decode_transaction(encoded, _binary_encoding(config))
    slot = context_slot(localnet, config)
    sig_verify = bool(config.get("sigVerify"))
    replace = bool(config.get("replaceRecentBlockhash"))
    if sig_verify and replace:
        raise invalid_params("sigVerify may not be used with replaceRecentBlockhash")
    replacement = None
    if replace:
        tx = _with_blockhash(tx, localnet.clock.blockhash(slot))
        replacement = {
            "blockhash": localnet.clock.blockhash(slot),
            "lastValidBlockHeight": localnet.clock.last_valid_block_height(slot),
        }
    addresses, account_encoding = _simulation_accounts(config)
    # Simulation runs on the latest (processed) bank whatever the commitment: see
    # docs/limitations.md.
    if isinstance(tx.message, MessageV1) and not localnet.features.is_active(ENABLE_TX_V1):
        return with_context(slot, {**preflight_failure("UnsupportedVersion", [], 0).data})
    simulated = localnet.simulation(tx, sig_verify)
    accounts = None
    if addresses is not None:
        loaded = len(simulated.accounts.keys)
        if len(addresses) > loaded:
            raise invalid_params(f"Too many accounts provided; max {loaded}")
        # The validator reports no account of a simulation that failed.
        accounts = [
            None
            if simulated.err is not None
            else _simulated_account(localnet, simulated, pubkey, account_encoding, slot)
            for pubkey in addresses
        ]
    # What ran: nothing when the validator would not load it.
    meta = simulated.meta if simulated.fee is not None else None
    return with_context(
        slot,
        {
            "err": simulated.err,
            "logs": [] if meta is None else meta.logs(),
            "accounts": accounts,
            "unitsConsumed": 0 if meta is None else meta.compute_units_consumed(),
            "loadedAccountsDataSize": simulated.loaded_size,
            "returnData": None if meta is None else return_data_json(meta),
            "innerInstructions": inner_instructions_json(meta)
            if meta is not None and config.get("innerInstructions")
            else None,
            "replacementBlockhash": replacement,
            "fee": simulated.fee,
            "preBalances": simulated.pre_balances,
            "postBalances": simulated.post_balances,
            "preTokenBalances": simulated.pre_token_balances,
            "postTokenBalances": simulated.post_token_balances,
            "loadedAddresses": {
                "writable": [str(key) for key in simulated.accounts.loaded_writable],
                "readonly": [str(key) for key in simulated.accounts.loaded_readonly],
            },
        },
    )


def _simulated_account(
    localnet: Localnet, simulated: Simulation, pubkey: Pubkey, encoding: str, slot: int
) -> dict[str, Any] | None:
    """An account as a successful simulation leaves it; None when it has no lamports."""
    account = simulated.post_accounts.get(pubkey) or localnet.get_account(pubkey)
    if account is None or account.lamports == 0:
        return None
    return ui_account(localnet, pubkey, account, encoding, None, slot)


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
        replaced: AnyMessage = MessageV0(
            message.header,
            message.account_keys,
            new_hash,
            message.instructions,
            message.address_table_lookups,
        )
    elif isinstance(message, MessageV1):
        replaced = MessageV1(
            message.header, message.config, new_hash, message.account_keys, message.instructions
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
    config = config_at(params, 1)
    slot = context_slot(localnet, {**config, "commitment": "processed"})
    values: list[dict[str, Any] | None] = []
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


def transaction_config(params: Params, index: int) -> tuple[dict[str, Any], str, int | None]:
    """Return a getTransaction/getBlock config, its encoding and max supported version.

    Raises:
        RpcMethodError: -32602 for processed commitment, an unknown encoding, or base58
            with ``maxSupportedTransactionVersion`` 1 or more.
    """
    config = optional(params, index)
    if isinstance(config, str):  # the deprecated form: the encoding alone
        config = {"encoding": config}
    config = config_at([config], 0)
    encoding = config.get("encoding", "json")
    if encoding not in TRANSACTION_ENCODINGS:
        raise invalid_params(f"Invalid params: unknown variant `{encoding}`")
    max_version = config.get("maxSupportedTransactionVersion")
    if max_version is not None:
        uint_param(max_version, "maxSupportedTransactionVersion")
    # agave 4.3: base58 is deprecated and not grown for v1 (whatever the transaction is).
    if encoding == "base58" and max_version is not None and max_version >= 1:
        raise invalid_params(
            "base58 encoding is not supported with maxSupportedTransactionVersion >= 1"
        )
    if commitment_param(config) == "processed":
        raise invalid_params("Method does not support commitment below `confirmed`")
    return config, encoding, max_version


def get_transaction(localnet: Localnet, params: Params) -> dict[str, Any] | None:
    """``getTransaction``: json, jsonParsed, base58 and base64, at confirmed or finalized."""
    signature = signature_param(required(params, 0, "signature"))
    config, encoding, max_version = transaction_config(params, 1)
    slot = context_slot(localnet, config)
    details = localnet.details(signature)
    if details is None or details.slot > slot:
        return None
    return {
        "slot": details.slot,
        "blockTime": localnet.clock.unix_timestamp(details.slot),
        **transaction_with_meta(details, encoding, max_version),
        "transactionIndex": details.transaction_index,
    }

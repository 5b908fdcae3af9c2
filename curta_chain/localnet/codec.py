"""The wire forms the validator uses: encoded transactions, encoded accounts, error JSON.

Limits and messages follow agave's ``rpc.rs`` so a client that matches on them (solana-py,
web3.js, the Solana CLI) behaves here as it does against ``solana-test-validator``.
"""

import base64
import json
import re
from typing import Any

import based58
import zstandard
from solders.message import Message, MessageV0, MessageV1
from solders.rpc.responses import RpcSimulateTransactionResult
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import TransactionMetadata
from solders.transaction_status import TransactionErrorType

from curta_chain.constants import MAX_TRANSACTION_SIZE, MAX_V1_TRANSACTION_SIZE
from curta_chain.localnet.rpc_errors import (
    INVALID_REQUEST,
    SEND_TRANSACTION_PREFLIGHT_FAILURE,
    RpcMethodError,
    invalid_params,
)

AnyMessage = Message | MessageV0 | MessageV1
"""A message of any version the localnet runs: legacy, v0 or v1 (SIMD-0385)."""
# The longest encodings the validator reads before decoding (agave 4.3's rpc.rs): base58 is
# deprecated and stays at one packet; base64 reads up to 4,096 bytes when its first two
# characters say a v1 message (first byte 0x81 and up: "gQ" and up), else one packet.
MAX_BASE58_TRANSACTION = 1_683
MAX_BASE64_TRANSACTION = 1_644
MAX_BASE64_V1_TRANSACTION = 5_464
_V1_BASE64_PREFIX = "gQ"
MAX_BASE58_ACCOUNT_BYTES = 128
_TRANSACTION_TYPE = "solana_transaction::versioned::VersionedTransaction"
_ZSTD = zstandard.ZstdCompressor(level=1)


_BASE64_VALUES: dict[int, int] = {
    symbol: value
    for value, symbol in enumerate(
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    )
}
_PAD = ord("=")
_NOT_BASE64 = re.compile(rb"[^A-Za-z0-9+/]")


def decode_base64(text: str) -> bytes:
    """Decode standard, padded base64 as the validator's decoder does, errors included.

    The validator (Rust ``base64`` 0.22, ``STANDARD``: canonical padding, no trailing bits)
    names the first thing wrong in its ``DecodeError``'s debug form, which its message
    quotes. Its order: a last symbol that stands alone (length 4n + 1) when it is not in the
    alphabet, then every byte before the last 1 to 4 in turn, then those: padding in the
    first two places or followed by a symbol, a symbol outside the alphabet, fewer than two
    symbols, padding that does not complete the quad, and bits left in the last symbol.

    Raises:
        ValueError: ``InvalidByte(offset, byte)``, ``InvalidLength(n)``, ``InvalidPadding``
            or ``InvalidLastSymbol(offset, byte)``; offsets and bytes are of the UTF-8 text.
    """
    data = text.encode()
    rem = len(data) % 4
    if rem == 1 and data[-1] != _PAD and data[-1] not in _BASE64_VALUES:
        raise ValueError(f"InvalidByte({len(data) - 1}, {data[-1]})")
    start = max(len(data) - rem - (4 if rem == 0 else 0), 0)
    bad = _NOT_BASE64.search(data, 0, start)
    if bad is not None:
        raise ValueError(f"InvalidByte({bad.start()}, {data[bad.start()]})")
    morsels: list[int] = []
    padding = first_padding = last_symbol = 0
    for index, byte in enumerate(data[start:]):
        if byte == _PAD:
            if index < 2:
                raise ValueError(f"InvalidByte({start + index}, {byte})")
            if not padding:
                first_padding = index
            padding += 1
            continue
        if padding:
            raise ValueError(f"InvalidByte({start + first_padding}, {_PAD})")
        if byte not in _BASE64_VALUES:
            raise ValueError(f"InvalidByte({start + index}, {byte})")
        last_symbol = byte
        morsels.append(_BASE64_VALUES[byte])
    if data and len(morsels) < 2:
        raise ValueError(f"InvalidLength({start + len(morsels)})")
    if (padding + len(morsels)) % 4:
        raise ValueError("InvalidPadding")
    bits = sum(morsel << (18 - 6 * i) for i, morsel in enumerate(morsels))
    if bits & ((1 << (24 - len(morsels) * 6 // 8 * 8)) - 1):
        raise ValueError(f"InvalidLastSymbol({start + len(morsels) - 1}, {last_symbol})")
    return base64.b64decode(data)


def decode_transaction(encoded: Any, encoding: str) -> tuple[bytes, VersionedTransaction]:
    """Decode a sendTransaction/simulateTransaction payload as the validator does.

    Returns:
        The wire bytes and the parsed transaction.

    Raises:
        RpcMethodError: -32602 for a payload that is too large, badly encoded or not a
            transaction, with the validator's message.
    """
    if not isinstance(encoded, str):
        raise invalid_params("Invalid params: transaction must be an encoded string")
    if encoding == "base58":
        max_raw = MAX_TRANSACTION_SIZE
        if len(encoded) > MAX_BASE58_TRANSACTION:
            raise invalid_params(
                f"base58 encoded {_TRANSACTION_TYPE} too large: {len(encoded)} bytes "
                f"(max: encoded/raw {MAX_BASE58_TRANSACTION}/{max_raw})"
            )
        try:
            raw = based58.b58decode(encoded.encode())
        except ValueError as exc:
            raise invalid_params(f"invalid base58 encoding: {exc}") from exc
    elif encoding == "base64":
        # Compared as the validator does: the first two characters, byte by byte.
        if len(encoded) >= 2 and encoded[:2] >= _V1_BASE64_PREFIX:
            max_encoded, max_raw = MAX_BASE64_V1_TRANSACTION, MAX_V1_TRANSACTION_SIZE
        else:
            max_encoded, max_raw = MAX_BASE64_TRANSACTION, MAX_TRANSACTION_SIZE
        if len(encoded) > max_encoded:
            raise invalid_params(
                f"base64 encoded {_TRANSACTION_TYPE} too large: {len(encoded)} bytes "
                f"(max: encoded/raw {max_encoded}/{max_raw})"
            )
        try:
            raw = decode_base64(encoded)
        except ValueError as exc:
            raise invalid_params(f"invalid base64 encoding: {exc}") from exc
    else:
        raise invalid_params(
            f"unsupported encoding: {encoding}. Supported encodings: base58, base64"
        )
    if len(raw) > max_raw:
        raise invalid_params(
            f"decoded {_TRANSACTION_TYPE} too large: {len(raw)} bytes (max: {max_raw} bytes)"
        )
    try:
        tx = VersionedTransaction.from_bytes(raw)
    except ValueError as exc:
        raise invalid_params(f"failed to deserialize {_TRANSACTION_TYPE}: {exc}") from exc
    return raw, tx


BASE58_TOO_LARGE = "error: data too large for bs58 encoding"
RENT_EXEMPT_RENT_EPOCH = 2**64 - 1
"""The rent epoch a current validator reports for every account (all are rent-exempt)."""


def encode_account(
    account: Any,
    encoding: str,
    data_slice: dict[str, int] | None,
    parsed: dict[str, Any] | None = None,
    notification: bool = False,
) -> dict:
    """Return the validator's ``UiAccount`` JSON for ``account``.

    ``account`` has ``lamports``, ``owner``, ``executable`` and ``data`` (a solders
    ``Account`` or a history ``AccountState``). For ``jsonParsed``, ``parsed`` is the
    account's parsed ``data`` member; without one the data goes out in base64, as the
    validator does for accounts it has no parser for. In a ``notification`` base58 data
    over 128 bytes is replaced by the validator's "error: data too large for bs58
    encoding" text, as PubSub does, instead of refusing.

    Raises:
        RpcMethodError: -32600 for base58 data over 128 bytes or a sliced jsonParsed read.
    """
    data = account.data
    if encoding == "jsonParsed" and data_slice is not None:
        raise RpcMethodError(
            INVALID_REQUEST,
            "Sliced account data can only be encoded using binary (base 58) or base64 encoding.",
        )
    if data_slice is not None:
        offset, length = data_slice["offset"], data_slice["length"]
        data = data[offset : offset + length]
    if encoding == "jsonParsed" and parsed is not None:
        encoded: Any = parsed
    elif encoding in ("base64", "jsonParsed"):
        encoded = [base64.b64encode(data).decode(), "base64"]
    elif encoding == "base64+zstd":
        encoded = [base64.b64encode(_ZSTD.compress(data)).decode(), "base64+zstd"]
    elif encoding in ("base58", "binary"):
        if len(data) > MAX_BASE58_ACCOUNT_BYTES and notification:
            text = BASE58_TOO_LARGE
            encoded = text if encoding == "binary" else [text, "base58"]
        elif len(data) > MAX_BASE58_ACCOUNT_BYTES:
            raise RpcMethodError(
                INVALID_REQUEST,
                f"Encoded binary (base 58) data should be less than {MAX_BASE58_ACCOUNT_BYTES} "
                "bytes, please use Base64 encoding.",
            )
        else:
            text = based58.b58encode(data).decode()
            encoded = text if encoding == "binary" else [text, "base58"]
    else:
        raise invalid_params(f"Invalid params: unknown variant `{encoding}`")
    return {
        "data": encoded,
        "executable": account.executable,
        "lamports": account.lamports,
        "owner": str(account.owner),
        "rentEpoch": RENT_EXEMPT_RENT_EPOCH,
        "space": len(account.data),
    }


def transaction_error_json(err: TransactionErrorType) -> Any:
    """Return a runtime ``TransactionError`` in the validator's JSON form."""
    return json.loads(RpcSimulateTransactionResult(err=err).to_json())["err"]


_TRANSACTION_ERRORS = {
    "AccountInUse": "Account in use",
    "AccountLoadedTwice": "Account loaded twice",
    "AccountNotFound": "Attempt to debit an account but found no record of a prior credit.",
    "ProgramAccountNotFound": "Attempt to load a program that does not exist",
    "InsufficientFundsForFee": "Insufficient funds for fee",
    "InvalidAccountForFee": "This account may not be used to pay transaction fees",
    "AlreadyProcessed": "This transaction has already been processed",
    "BlockhashNotFound": "Blockhash not found",
    "CallChainTooDeep": "Loader call chain is too deep",
    "MissingSignatureForFee": "Transaction requires a fee but has no signature present",
    "InvalidAccountIndex": "Transaction contains an invalid account reference",
    "SignatureFailure": "Transaction did not pass signature verification",
    "InvalidProgramForExecution": "This program may not be used for executing instructions",
    "SanitizeFailure": "Transaction failed to sanitize accounts offsets correctly",
    "MaxLoadedAccountsDataSizeExceeded": "Transaction exceeded max loaded accounts data size cap",
    "InvalidLoadedAccountsDataSizeLimit": (
        "LoadedAccountsDataSizeLimit set for transaction must be greater than 0."
    ),
    "UnsupportedVersion": "Transaction version is unsupported",
}
_INSTRUCTION_ERRORS = {
    "GenericError": "generic instruction error",
    "InvalidArgument": "invalid program argument",
    "InvalidInstructionData": "invalid instruction data",
    "InvalidAccountData": "invalid account data for instruction",
    "AccountDataTooSmall": "account data too small for instruction",
    "InsufficientFunds": "insufficient funds for instruction",
    "IncorrectProgramId": "incorrect program id for instruction",
    "MissingRequiredSignature": "missing required signature for instruction",
    "AccountAlreadyInitialized": "instruction requires an uninitialized account",
    "UninitializedAccount": "instruction requires an initialized account",
    "UnbalancedInstruction": "sum of account balances before and after instruction do not match",
    "ModifiedProgramId": "instruction illegally modified the program id of an account",
    "ExternalAccountLamportSpend": (
        "instruction spent from the balance of an account it does not own"
    ),
    "ExternalAccountDataModified": "instruction modified data of an account it does not own",
    "ReadonlyLamportChange": "instruction changed the balance of a read-only account",
    "ReadonlyDataModified": "instruction modified data of a read-only account",
    "NotEnoughAccountKeys": "insufficient account keys for instruction",
    "AccountNotExecutable": "instruction expected an executable account",
    "ComputationalBudgetExceeded": "Computational budget exceeded",
    "PrivilegeEscalation": "Cross-program invocation with unauthorized signer or writable account",
    "ProgramFailedToComplete": "Program failed to complete",
    "ProgramFailedToCompile": "Program failed to compile",
    "InvalidRealloc": "Failed to reallocate account data",
}


def transaction_error_message(err_json: Any) -> str:
    """Return the validator's display text of a ``TransactionError`` JSON value."""
    if isinstance(err_json, str):
        return _TRANSACTION_ERRORS.get(err_json, err_json)
    if isinstance(err_json, dict) and "InstructionError" in err_json:
        index, inner = err_json["InstructionError"]
        if isinstance(inner, dict) and "Custom" in inner:
            text = f"custom program error: {inner['Custom']:#x}"
        elif isinstance(inner, dict) and "BorshIoError" in inner:
            text = f"Failed to serialize or deserialize account data: {inner['BorshIoError']}"
        else:
            text = _INSTRUCTION_ERRORS.get(str(inner), str(inner))
        return f"Error processing Instruction {index}: {text}"
    if isinstance(err_json, dict) and "InsufficientFundsForRent" in err_json:
        index = err_json["InsufficientFundsForRent"]["account_index"]
        return f"Transaction results in an account ({index}) with insufficient funds for rent"
    return json.dumps(err_json)


def inner_instructions_json(meta: TransactionMetadata) -> list[dict]:
    """Return LiteSVM's inner instructions in the validator's ``innerInstructions`` form."""
    out = []
    for index, inner in enumerate(meta.inner_instructions()):
        if inner:
            out.append(
                {
                    "index": index,
                    "instructions": [
                        {
                            "programIdIndex": ix.program_id_index,
                            "accounts": list(ix.accounts),
                            "data": based58.b58encode(bytes(ix.data)).decode(),
                            "stackHeight": height,
                        }
                        for ix, height in inner_items(inner)
                    ],
                }
            )
    return out


def inner_items(inner: list[Any]) -> list[tuple[Any, int]]:
    """Return (compiled instruction, stack height) of LiteSVM's inner instructions."""
    return [(item.instruction(), item.stack_height()) for item in inner]


def return_data_json(meta: TransactionMetadata) -> dict | None:
    """Return the validator's ``returnData`` for ``meta``, None when the program set none."""
    data = meta.return_data()
    if not data.data:
        return None
    encoded = base64.b64encode(data.data).decode()
    return {"programId": str(data.program_id), "data": [encoded, "base64"]}


def preflight_failure(
    err: Any, logs: list[str], units: int, fee: int | None = None, loaded_size: int = 0
) -> RpcMethodError:
    """Return the -32002 error a validator answers when preflight simulation fails.

    Its data is a simulation result without balances or loaded addresses (agave leaves
    them out of a preflight failure); ``fee`` and ``loaded_size`` are None and 0 for a
    transaction that never loaded.
    """
    return RpcMethodError(
        SEND_TRANSACTION_PREFLIGHT_FAILURE,
        f"Transaction simulation failed: {transaction_error_message(err)}",
        {
            "err": err,
            "logs": logs,
            "accounts": None,
            "unitsConsumed": units,
            "loadedAccountsDataSize": loaded_size,
            "returnData": None,
            "innerInstructions": None,
            "replacementBlockhash": None,
            "fee": fee,
            "preBalances": None,
            "postBalances": None,
            "preTokenBalances": None,
            "postTokenBalances": None,
            "loadedAddresses": None,
        },
    )

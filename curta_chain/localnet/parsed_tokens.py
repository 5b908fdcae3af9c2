"""SPL Token and Token-2022 in ``jsonParsed``: mints, token accounts, multisigs, balances.

Shapes are agave's ``account-decoder`` (``parse_token``) and its transaction status
(``preTokenBalances``/``postTokenBalances``). Token amounts come as ``UiTokenAmount``
(``amount`` and ``uiAmountString`` as strings, ``uiAmount`` as a float).
"""

import struct
from collections.abc import Sequence
from typing import Any

from solders.pubkey import Pubkey

from curta_chain.localnet.parsed_programs import TOKEN_PROGRAMS, AccountReader, NotParsable

TOKEN_ACCOUNT_SIZE = 165
MINT_SIZE = 82
MULTISIG_SIZE = 355
_ACCOUNT_TYPE_MINT = 1
_ACCOUNT_TYPE_ACCOUNT = 2
_TOKEN_STATES = ("uninitialized", "initialized", "frozen")


def ui_amount(amount: int, decimals: int) -> dict[str, Any]:
    """Return agave's ``UiTokenAmount`` for ``amount`` base units."""
    text = str(amount).rjust(decimals + 1, "0")
    if decimals:
        whole, fraction = text[:-decimals], text[-decimals:].rstrip("0")
        text = f"{whole}.{fraction}" if fraction else whole
    return {
        "amount": str(amount),
        "decimals": decimals,
        "uiAmount": amount / 10**decimals,
        "uiAmountString": text,
    }


def _option_key(data: bytes, offset: int) -> str | None:
    (tag,) = struct.unpack_from("<I", data, offset)
    return str(Pubkey.from_bytes(data[offset + 4 : offset + 36])) if tag == 1 else None


def token_account_type(data: bytes) -> str | None:
    """Return "account", "mint" or "multisig" for SPL Token (or Token-2022) data."""
    size = len(data)
    if size == TOKEN_ACCOUNT_SIZE:
        return "account"
    if size == MINT_SIZE:
        return "mint"
    if size == MULTISIG_SIZE:
        return "multisig"
    if size > TOKEN_ACCOUNT_SIZE:
        kind = data[TOKEN_ACCOUNT_SIZE]
        if kind == _ACCOUNT_TYPE_ACCOUNT:
            return "account"
        if kind == _ACCOUNT_TYPE_MINT:
            return "mint"
    return None


def mint_decimals(mint: Pubkey, read: AccountReader) -> int | None:
    """Return the decimals of ``mint``, or None if it is not a token mint."""
    account = read(mint)
    if account is None or account.owner not in TOKEN_PROGRAMS:
        return None
    data = account.data
    if token_account_type(data) != "mint":
        return None
    return data[44]


def parse_mint(data: bytes) -> dict[str, Any]:
    """Return a mint's ``info`` (``mintAuthority``, ``supply``, ``decimals``, ...)."""
    if not data[45]:
        raise NotParsable("uninitialized mint")
    info: dict[str, Any] = {
        "mintAuthority": _option_key(data, 0),
        "supply": str(struct.unpack_from("<Q", data, 36)[0]),
        "decimals": data[44],
        "isInitialized": True,
        "freezeAuthority": _option_key(data, 46),
    }
    extensions = _extensions(data, _ACCOUNT_TYPE_MINT)
    if extensions:
        info["extensions"] = extensions
    return info


def token_amount_of(data: bytes) -> int:
    """Return a token account's amount."""
    return struct.unpack_from("<Q", data, 64)[0]


def parse_token_account(data: bytes, decimals: int) -> dict[str, Any]:
    """Return a token account's ``info`` given its mint's decimals."""
    state = data[108]
    if state == 0:
        raise NotParsable("uninitialized token account")
    native_tag, native = struct.unpack_from("<IQ", data, 109)
    delegate = _option_key(data, 72)
    info: dict[str, Any] = {
        "isNative": native_tag == 1,
        "mint": str(Pubkey.from_bytes(data[0:32])),
        "owner": str(Pubkey.from_bytes(data[32:64])),
        "state": _TOKEN_STATES[state] if state < len(_TOKEN_STATES) else "uninitialized",
        "tokenAmount": ui_amount(token_amount_of(data), decimals),
    }
    if delegate is not None:
        info["delegate"] = delegate
        info["delegatedAmount"] = ui_amount(struct.unpack_from("<Q", data, 121)[0], decimals)
    if native_tag == 1:
        info["rentExemptReserve"] = ui_amount(native, decimals)
    close = _option_key(data, 129)
    if close is not None:
        info["closeAuthority"] = close
    extensions = _extensions(data, _ACCOUNT_TYPE_ACCOUNT)
    if extensions:
        info["extensions"] = extensions
    return info


_EXTENSIONS = {
    1: "transferFeeConfig",
    2: "transferFeeAmount",
    3: "mintCloseAuthority",
    4: "confidentialTransferMint",
    5: "confidentialTransferAccount",
    6: "defaultAccountState",
    7: "immutableOwner",
    8: "memoTransfer",
    9: "nonTransferable",
    10: "interestBearingConfig",
    11: "cpiGuard",
    12: "permanentDelegate",
    13: "nonTransferableAccount",
    14: "transferHook",
    15: "transferHookAccount",
    18: "metadataPointer",
    19: "tokenMetadata",
    20: "groupPointer",
    21: "tokenGroup",
    22: "groupMemberPointer",
    23: "tokenGroupMember",
}


def _extensions(data: bytes, account_type: int) -> list[dict[str, Any]]:
    """List Token-2022 extensions by name (their state is not decoded here)."""
    if len(data) <= TOKEN_ACCOUNT_SIZE or data[TOKEN_ACCOUNT_SIZE] != account_type:
        return []
    found = []
    offset = TOKEN_ACCOUNT_SIZE + 1
    while offset + 4 <= len(data):
        kind, length = struct.unpack_from("<HH", data, offset)
        if kind == 0:
            break
        name = _EXTENSIONS.get(kind, "unparseableExtension")
        found.append({"extension": name})
        offset += 4 + length
    return found


def parse_token(data: bytes, read: AccountReader) -> dict[str, Any]:
    """Return ``{"type", "info"}`` of an SPL Token / Token-2022 account."""
    kind = token_account_type(data)
    if kind == "mint":
        return {"type": "mint", "info": parse_mint(data)}
    if kind == "account":
        decimals = mint_decimals(Pubkey.from_bytes(data[0:32]), read)
        if decimals is None:
            raise NotParsable("the mint of this token account is not a mint")
        return {"type": "account", "info": parse_token_account(data, decimals)}
    if kind == "multisig":
        required, valid, initialized = data[0], data[1], data[2]
        if not initialized:
            raise NotParsable("uninitialized multisig")
        signers = [str(Pubkey.from_bytes(data[3 + 32 * i : 35 + 32 * i])) for i in range(valid)]
        info = {
            "numRequiredSigners": required,
            "numValidSigners": valid,
            "isInitialized": True,
            "signers": signers,
        }
        return {"type": "multisig", "info": info}
    raise NotParsable("not a token account")


def token_balances(keys: Sequence[Pubkey], read: AccountReader) -> list[dict[str, Any]]:
    """Return the validator's ``preTokenBalances``/``postTokenBalances`` entries for ``keys``.

    Only a transaction that loads a token program can change token balances; others
    return [] without reading anything.
    """
    if TOKEN_PROGRAMS.keys().isdisjoint(keys):
        return []
    balances = []
    for index, key in enumerate(keys):
        account = read(key)
        if account is None or account.owner not in TOKEN_PROGRAMS:
            continue
        data = account.data
        if token_account_type(data) != "account" or data[108] == 0:
            continue
        mint = Pubkey.from_bytes(data[0:32])
        decimals = mint_decimals(mint, read)
        if decimals is None:
            continue
        balances.append(
            {
                "accountIndex": index,
                "mint": str(mint),
                "uiTokenAmount": ui_amount(token_amount_of(data), decimals),
                "owner": str(Pubkey.from_bytes(data[32:64])),
                "programId": str(account.owner),
            }
        )
    return balances

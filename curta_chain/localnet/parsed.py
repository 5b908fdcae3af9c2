"""``jsonParsed`` accounts, and the token balances and memos of transactions.

Parsers: system (nonce), sysvars, SPL Token and Token-2022, lookup tables, the upgradeable
loader.

Shapes are agave's ``account-decoder`` (``parse_account_data``): ``{"program", "parsed":
{"type", "info"}, "space"}``. An account no parser accepts is answered in base64, as the
validator does. Token amounts come as ``UiTokenAmount`` (``amount`` and
``uiAmountString`` as strings, ``uiAmount`` as a float).
"""

import base64
import struct
from collections.abc import Callable, Sequence
from typing import Any

from solders.message import Message, MessageV0
from solders.pubkey import Pubkey

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
SYSVAR_OWNER = Pubkey.from_string("Sysvar1111111111111111111111111111111111111")
TOKEN_PROGRAM = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
TOKEN_2022_PROGRAM = Pubkey.from_string("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")
TOKEN_PROGRAMS = {TOKEN_PROGRAM: "spl-token", TOKEN_2022_PROGRAM: "spl-token-2022"}
ASSOCIATED_TOKEN_PROGRAM = Pubkey.from_string("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
MEMO_PROGRAMS = (
    Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"),
    Pubkey.from_string("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"),
)
_MEMO_SET = frozenset(MEMO_PROGRAMS)
LOOKUP_TABLE_PROGRAM = Pubkey.from_string("AddressLookupTab1e1111111111111111111111111")
UPGRADEABLE_LOADER = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")

CLOCK_SYSVAR = Pubkey.from_string("SysvarC1ock11111111111111111111111111111111")
SYSVARS = {
    CLOCK_SYSVAR: "clock",
    Pubkey.from_string("SysvarRent111111111111111111111111111111111"): "rent",
    Pubkey.from_string("SysvarEpochSchedu1e111111111111111111111111"): "epochSchedule",
    Pubkey.from_string("SysvarS1otHashes111111111111111111111111111"): "slotHashes",
    Pubkey.from_string("SysvarStakeHistory1111111111111111111111111"): "stakeHistory",
    Pubkey.from_string("SysvarLastRestartS1ot1111111111111111111111"): "lastRestartSlot",
    Pubkey.from_string("SysvarEpochRewards1111111111111111111111111"): "epochRewards",
    Pubkey.from_string("SysvarFees111111111111111111111111111111111"): "fees",
    Pubkey.from_string("SysvarRecentB1ockHashes11111111111111111111"): "recentBlockhashes",
    Pubkey.from_string("SysvarS1otHistory11111111111111111111111111"): "slotHistory",
}
GENESIS_ACCOUNTS = (
    *SYSVARS,
    *TOKEN_PROGRAMS,
    ASSOCIATED_TOKEN_PROGRAM,
    *MEMO_PROGRAMS,
    SYSTEM_PROGRAM,
    LOOKUP_TABLE_PROGRAM,
    UPGRADEABLE_LOADER,
    *(
        Pubkey.from_string(key)
        for key in (
            "ComputeBudget111111111111111111111111111111",
            "Stake11111111111111111111111111111111111111",
            "Vote111111111111111111111111111111111111111",
            "BPFLoader2111111111111111111111111111111111",
            "Config1111111111111111111111111111111111111",
            "KeccakSecp256k11111111111111111111111111111",
            "Ed25519SigVerify111111111111111111111111111",
        )
    ),
)
"""The accounts a new chain starts with, indexed so getProgramAccounts lists them."""

TOKEN_ACCOUNT_SIZE = 165
MINT_SIZE = 82
MULTISIG_SIZE = 355
_ACCOUNT_TYPE_MINT = 1
_ACCOUNT_TYPE_ACCOUNT = 2
_TOKEN_STATES = ("uninitialized", "initialized", "frozen")
_NONCE_SIZE = 80
_LOOKUP_TABLE_META = 56

AccountReader = Callable[[Pubkey], Any]
"""Returns an account (``.owner``, ``.data``) or None; used to find a mint's decimals."""


class NotParsable(ValueError):
    """No parser accepts this account."""


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


def parse_nonce(data: bytes) -> dict[str, Any]:
    """Return ``{"type", "info"}`` of a durable nonce account."""
    if len(data) != _NONCE_SIZE:
        raise NotParsable("not a nonce account")
    _, state = struct.unpack_from("<II", data, 0)
    if state == 0:
        return {"type": "uninitialized"}
    (fee,) = struct.unpack_from("<Q", data, 72)
    return {
        "type": "initialized",
        "info": {
            "authority": str(Pubkey.from_bytes(data[8:40])),
            "blockhash": str(Pubkey.from_bytes(data[40:72])),
            "feeCalculator": {"lamportsPerSignature": str(fee)},
        },
    }


def _hash(data: bytes, offset: int) -> str:
    # A Hash and a Pubkey share their base58 form.
    return str(Pubkey.from_bytes(data[offset : offset + 32]))


def parse_sysvar(key: Pubkey, data: bytes) -> dict[str, Any]:
    """Return ``{"type", "info"}`` of a sysvar account."""
    kind = SYSVARS.get(key)
    if kind == "clock":
        slot, start, epoch, leader_epoch, unix = struct.unpack_from("<QqQQq", data)
        info: Any = {
            "slot": slot,
            "epoch": epoch,
            "epochStartTimestamp": start,
            "leaderScheduleEpoch": leader_epoch,
            "unixTimestamp": unix,
        }
    elif kind == "rent":
        per_byte_year, threshold, burn = struct.unpack_from("<QdB", data)
        info = {
            "lamportsPerByteYear": str(per_byte_year),
            "exemptionThreshold": threshold,
            "burnPercent": burn,
        }
    elif kind == "epochSchedule":
        slots, offset, warmup, first_epoch, first_slot = struct.unpack_from("<QQ?QQ", data)
        info = {
            "slotsPerEpoch": slots,
            "leaderScheduleSlotOffset": offset,
            "warmup": warmup,
            "firstNormalEpoch": first_epoch,
            "firstNormalSlot": first_slot,
        }
    elif kind == "slotHashes":
        (count,) = struct.unpack_from("<Q", data)
        info = [
            {
                "slot": struct.unpack_from("<Q", data, 8 + 40 * i)[0],
                "hash": _hash(data, 16 + 40 * i),
            }
            for i in range(count)
        ]
    elif kind == "stakeHistory":
        (count,) = struct.unpack_from("<Q", data)
        info = []
        for i in range(count):
            epoch, effective, activating, deactivating = struct.unpack_from(
                "<QQQQ", data, 8 + 32 * i
            )
            entry = {"effective": effective, "activating": activating, "deactivating": deactivating}
            info.append({"epoch": epoch, "stakeHistory": entry})
    elif kind == "lastRestartSlot":
        info = {"lastRestartSlot": struct.unpack_from("<Q", data)[0]}
    elif kind == "epochRewards":
        start, partitions = struct.unpack_from("<QQ", data)
        points_lo, points_hi, total, distributed, active = struct.unpack_from("<QQQQ?", data, 48)
        info = {
            "distributionStartingBlockHeight": start,
            "numPartitions": partitions,
            "parentBlockhash": _hash(data, 16),
            "totalPoints": str(points_lo | points_hi << 64),
            "totalRewards": str(total),
            "distributedRewards": str(distributed),
            "active": active,
        }
    elif kind == "fees":
        info = {"feeCalculator": {"lamportsPerSignature": str(struct.unpack_from("<Q", data)[0])}}
    elif kind == "recentBlockhashes":
        (count,) = struct.unpack_from("<Q", data)
        info = [
            {
                "blockhash": _hash(data, 8 + 40 * i),
                "feeCalculator": {
                    "lamportsPerSignature": str(struct.unpack_from("<Q", data, 40 + 40 * i)[0])
                },
            }
            for i in range(count)
        ]
    else:
        raise NotParsable("no parser for this sysvar")
    return {"type": kind, "info": info}


def parse_lookup_table(data: bytes) -> dict[str, Any]:
    """Return ``{"type", "info"}`` of an address lookup table."""
    if len(data) < _LOOKUP_TABLE_META:
        raise NotParsable("not a lookup table")
    kind, deactivation, extended, start, has_authority = struct.unpack_from("<IQQBB", data)
    if kind == 0:
        return {"type": "uninitialized"}
    info: dict[str, Any] = {
        "deactivationSlot": str(deactivation),
        "lastExtendedSlot": str(extended),
        "lastExtendedSlotStartIndex": start,
    }
    if has_authority:
        info["authority"] = str(Pubkey.from_bytes(data[22:54]))
    count = (len(data) - _LOOKUP_TABLE_META) // 32
    info["addresses"] = [
        str(Pubkey.from_bytes(data[_LOOKUP_TABLE_META + 32 * i : _LOOKUP_TABLE_META + 32 * i + 32]))
        for i in range(count)
    ]
    return {"type": "lookupTable", "info": info}


def parse_upgradeable_loader(data: bytes) -> dict[str, Any]:
    """Return ``{"type", "info"}`` of an upgradeable-loader account."""
    (kind,) = struct.unpack_from("<I", data)
    if kind == 0:
        return {"type": "uninitialized"}
    if kind == 1:
        authority = str(Pubkey.from_bytes(data[5:37])) if data[4] else None
        payload = [base64.b64encode(data[37:]).decode(), "base64"]
        return {"type": "buffer", "info": {"authority": authority, "data": payload}}
    if kind == 2:
        return {"type": "program", "info": {"programData": str(Pubkey.from_bytes(data[4:36]))}}
    if kind == 3:
        (slot,) = struct.unpack_from("<Q", data, 4)
        authority = str(Pubkey.from_bytes(data[13:45])) if data[12] else None
        payload = [base64.b64encode(data[45:]).decode(), "base64"]
        return {
            "type": "programData",
            "info": {"slot": slot, "authority": authority, "data": payload},
        }
    raise NotParsable("not an upgradeable loader account")


def parse_account(key: Pubkey, owner: Pubkey, data: bytes, read: AccountReader) -> dict[str, Any]:
    """Return the ``data`` member of a jsonParsed account.

    Raises:
        NotParsable: no parser accepts the account (the caller answers base64).
    """
    try:
        if owner in TOKEN_PROGRAMS:
            program, parsed = TOKEN_PROGRAMS[owner], parse_token(data, read)
        elif owner == SYSTEM_PROGRAM:
            program, parsed = "nonce", parse_nonce(data)
        elif owner == SYSVAR_OWNER:
            program, parsed = "sysvar", parse_sysvar(key, data)
        elif owner == LOOKUP_TABLE_PROGRAM:
            program, parsed = "address-lookup-table", parse_lookup_table(data)
        elif owner == UPGRADEABLE_LOADER:
            program, parsed = "bpf-upgradeable-loader", parse_upgradeable_loader(data)
        else:
            raise NotParsable("no parser for this owner")
    except (struct.error, IndexError, ValueError) as exc:
        raise NotParsable(str(exc)) from exc
    return {"program": program, "parsed": parsed, "space": len(data)}


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


def memo_of(message: Message | MessageV0, keys: Sequence[Pubkey]) -> str | None:
    """Return getSignaturesForAddress's ``memo``: each memo as "[length] text", "; "-joined.

    ``keys`` are the message's account keys (a transaction without a memo program has
    no memo, and is answered without looking at its instructions).
    """
    if _MEMO_SET.isdisjoint(keys):
        return None
    memos = []
    for instruction in message.instructions:
        index = instruction.program_id_index
        if index < len(keys) and keys[index] in MEMO_PROGRAMS:
            text = bytes(instruction.data).decode("utf-8", errors="replace")
            memos.append(f"[{len(text)}] {text}")
    return "; ".join(memos) if memos else None

"""``jsonParsed`` accounts, and the memos of transactions.

Parsers: system (nonce), sysvars, SPL Token and Token-2022 (``parsed_tokens``, which also
gives transactions' token balances), lookup tables, the upgradeable loader;
``parse_account`` chooses among them by owner (the programs: ``parsed_programs``).

Shapes are agave's ``account-decoder`` (``parse_account_data``): ``{"program", "parsed":
{"type", "info"}, "space"}``. An account no parser accepts is answered in base64, as the
validator does.
"""

import base64
import struct
from collections.abc import Sequence
from typing import Any

from solders.message import Message, MessageV0, MessageV1
from solders.pubkey import Pubkey

from curta_chain.localnet.parsed_programs import (
    ASSOCIATED_TOKEN_PROGRAM,
    LOOKUP_TABLE_PROGRAM,
    MEMO_PROGRAMS,
    SYSTEM_PROGRAM,
    SYSVAR_OWNER,
    TOKEN_PROGRAMS,
    AccountReader,
    NotParsable,
)
from curta_chain.localnet.parsed_tokens import parse_token

# The chain model (``chain.py``) reads transactions' token balances from here.
from curta_chain.localnet.parsed_tokens import token_balances as token_balances
from curta_chain.protocol.loader import LOADER_V3

_MEMO_SET = frozenset(MEMO_PROGRAMS)

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
    LOADER_V3,
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

_NONCE_SIZE = 80
_LOOKUP_TABLE_META = 56


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
        elif owner == LOADER_V3:
            program, parsed = "bpf-upgradeable-loader", parse_upgradeable_loader(data)
        else:
            raise NotParsable("no parser for this owner")
    except (struct.error, IndexError, ValueError) as exc:
        raise NotParsable(str(exc)) from exc
    return {"program": program, "parsed": parsed, "space": len(data)}


def memo_of(message: Message | MessageV0 | MessageV1, keys: Sequence[Pubkey]) -> str | None:
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

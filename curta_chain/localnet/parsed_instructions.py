"""``jsonParsed`` instructions: System, SPL Memo, SPL Token / Token-2022, Associated Token.

Shapes are agave's ``transaction-status`` parsers: ``{"program", "programId", "parsed":
{"type", "info"}, "stackHeight"}`` (a memo's ``parsed`` is its text). An instruction no
parser accepts is "partially decoded": ``{"programId", "accounts", "data",
"stackHeight"}`` with addresses instead of indexes, as the validator answers it.
"""

import struct
from collections.abc import Callable, Sequence
from typing import Any

import based58

from curta_chain.localnet.parsed_programs import (
    ASSOCIATED_TOKEN_PROGRAM,
    MEMO_PROGRAMS,
    SYSTEM_PROGRAM,
    TOKEN_PROGRAMS,
)
from curta_chain.localnet.parsed_tokens import ui_amount


class _Unparsable(ValueError):
    pass


def _u64(data: bytes, offset: int) -> int:
    return struct.unpack_from("<Q", data, offset)[0]


def _key(data: bytes, offset: int) -> str:
    if len(data) < offset + 32:
        raise _Unparsable("short key")
    return based58.b58encode(data[offset : offset + 32]).decode()


def _seed(data: bytes, offset: int) -> tuple[str, int]:
    length = _u64(data, offset)
    end = offset + 8 + length
    if end > len(data):
        raise _Unparsable("short seed")
    return data[offset + 8 : end].decode(), end


def _need(accounts: Sequence[str], count: int) -> None:
    if len(accounts) < count:
        raise _Unparsable("not enough accounts")


def _system(data: bytes, a: Sequence[str]) -> tuple[str, dict[str, Any]]:
    (tag,) = struct.unpack_from("<I", data)
    if tag == 0:
        _need(a, 2)
        lamports, space = struct.unpack_from("<QQ", data, 4)
        info = {"source": a[0], "newAccount": a[1], "lamports": lamports, "space": space}
        return "createAccount", {**info, "owner": _key(data, 20)}
    if tag == 1:
        _need(a, 1)
        return "assign", {"account": a[0], "owner": _key(data, 4)}
    if tag == 2:
        _need(a, 2)
        return "transfer", {"source": a[0], "destination": a[1], "lamports": _u64(data, 4)}
    if tag == 3:
        _need(a, 2)
        base = _key(data, 4)
        seed, end = _seed(data, 36)
        lamports, space = struct.unpack_from("<QQ", data, end)
        info = {"source": a[0], "newAccount": a[1], "base": base, "seed": seed}
        return "createAccountWithSeed", {
            **info,
            "lamports": lamports,
            "space": space,
            "owner": _key(data, end + 16),
        }
    if tag == 4:
        _need(a, 3)
        return "advanceNonce", {
            "nonceAccount": a[0],
            "recentBlockhashesSysvar": a[1],
            "nonceAuthority": a[2],
        }
    if tag == 5:
        _need(a, 5)
        return "withdrawFromNonce", {
            "nonceAccount": a[0],
            "destination": a[1],
            "recentBlockhashesSysvar": a[2],
            "rentSysvar": a[3],
            "nonceAuthority": a[4],
            "lamports": _u64(data, 4),
        }
    if tag == 6:
        _need(a, 3)
        return "initializeNonce", {
            "nonceAccount": a[0],
            "recentBlockhashesSysvar": a[1],
            "rentSysvar": a[2],
            "nonceAuthority": _key(data, 4),
        }
    if tag == 7:
        _need(a, 2)
        return "authorizeNonce", {
            "nonceAccount": a[0],
            "nonceAuthority": a[1],
            "newAuthorized": _key(data, 4),
        }
    if tag == 8:
        _need(a, 1)
        return "allocate", {"account": a[0], "space": _u64(data, 4)}
    if tag == 9:
        _need(a, 2)
        seed, end = _seed(data, 36)
        return "allocateWithSeed", {
            "account": a[0],
            "base": _key(data, 4),
            "seed": seed,
            "space": _u64(data, end),
            "owner": _key(data, end + 8),
        }
    if tag == 10:
        _need(a, 2)
        seed, end = _seed(data, 36)
        return "assignWithSeed", {
            "account": a[0],
            "base": _key(data, 4),
            "seed": seed,
            "owner": _key(data, end),
        }
    if tag == 11:
        _need(a, 3)
        lamports = _u64(data, 4)
        seed, end = _seed(data, 12)
        return "transferWithSeed", {
            "source": a[0],
            "sourceBase": a[1],
            "destination": a[2],
            "lamports": lamports,
            "sourceSeed": seed,
            "sourceOwner": _key(data, end),
        }
    if tag == 12:
        _need(a, 1)
        return "upgradeNonce", {"nonceAccount": a[0]}
    raise _Unparsable("unknown system instruction")


_AUTHORITY_TYPES = (
    "mintTokens",
    "freezeAccount",
    "accountOwner",
    "closeAccount",
    "transferFeeConfig",
    "withheldWithdraw",
    "closeMint",
    "interestRate",
    "permanentDelegate",
    "confidentialTransferMint",
    "transferHookProgramId",
    "confidentialTransferFeeConfig",
    "metadataPointer",
    "groupPointer",
    "groupMemberPointer",
    "scaledUiAmount",
    "pause",
)


def _signer(info: dict[str, Any], a: Sequence[str], index: int, name: str) -> dict[str, Any]:
    """Add the authority at ``index``: one signer, or a multisig and the signers after it."""
    _need(a, index + 1)
    if len(a) > index + 1:
        info[f"multisig{name[0].upper()}{name[1:]}"] = a[index]
        info["signers"] = list(a[index + 1 :])
    else:
        info[name] = a[index]
    return info


def _coption_key(data: bytes, offset: int) -> tuple[str | None, int]:
    if data[offset] == 1:
        return _key(data, offset + 1), offset + 33
    return None, offset + 1


def _token(data: bytes, a: Sequence[str]) -> tuple[str, dict[str, Any]]:
    tag = data[0]
    if tag in (0, 20):  # initializeMint, initializeMint2
        decimals = data[1]
        mint_authority = _key(data, 2)
        freeze, _ = _coption_key(data, 34)
        _need(a, 2 if tag == 0 else 1)
        info: dict[str, Any] = {"mint": a[0], "decimals": decimals, "mintAuthority": mint_authority}
        if freeze is not None:
            info["freezeAuthority"] = freeze
        if tag == 0:
            info["rentSysvar"] = a[1]
        return ("initializeMint" if tag == 0 else "initializeMint2"), info
    if tag == 1:
        _need(a, 4)
        return "initializeAccount", {
            "account": a[0],
            "mint": a[1],
            "owner": a[2],
            "rentSysvar": a[3],
        }
    if tag in (16, 18):
        _need(a, 3 if tag == 16 else 2)
        info = {"account": a[0], "mint": a[1], "owner": _key(data, 1)}
        if tag == 16:
            info["rentSysvar"] = a[2]
        return ("initializeAccount2" if tag == 16 else "initializeAccount3"), info
    if tag in (2, 19):
        first = 2 if tag == 2 else 1
        _need(a, first + 1)
        info = {"multisig": a[0], "signers": list(a[first:]), "m": data[1]}
        if tag == 2:
            info["rentSysvar"] = a[1]
        return ("initializeMultisig" if tag == 2 else "initializeMultisig2"), info
    if tag == 3:
        _need(a, 3)
        info = {"source": a[0], "destination": a[1], "amount": str(_u64(data, 1))}
        return "transfer", _signer(info, a, 2, "authority")
    if tag == 4:
        _need(a, 3)
        info = {"source": a[0], "delegate": a[1], "amount": str(_u64(data, 1))}
        return "approve", _signer(info, a, 2, "owner")
    if tag == 5:
        return "revoke", _signer({"source": a[0]}, a, 1, "owner")
    if tag == 6:
        kind = data[1]
        new, _ = _coption_key(data, 2)
        owned = "mint" if kind in (0, 1) else "account"
        info = {
            owned: a[0],
            "authorityType": _AUTHORITY_TYPES[kind] if kind < len(_AUTHORITY_TYPES) else str(kind),
            "newAuthority": new,
        }
        return "setAuthority", _signer(info, a, 1, "authority")
    if tag == 7:
        _need(a, 3)
        info = {"mint": a[0], "account": a[1], "amount": str(_u64(data, 1))}
        return "mintTo", _signer(info, a, 2, "mintAuthority")
    if tag == 8:
        _need(a, 3)
        info = {"account": a[0], "mint": a[1], "amount": str(_u64(data, 1))}
        return "burn", _signer(info, a, 2, "authority")
    if tag == 9:
        _need(a, 3)
        return "closeAccount", _signer({"account": a[0], "destination": a[1]}, a, 2, "owner")
    if tag in (10, 11):
        _need(a, 3)
        info = {"account": a[0], "mint": a[1]}
        name = "freezeAccount" if tag == 10 else "thawAccount"
        return name, _signer(info, a, 2, "freezeAuthority")
    if tag in (12, 13):
        _need(a, 4)
        amount = ui_amount(_u64(data, 1), data[9])
        if tag == 12:
            info = {"source": a[0], "mint": a[1], "destination": a[2], "tokenAmount": amount}
            return "transferChecked", _signer(info, a, 3, "authority")
        info = {"source": a[0], "mint": a[1], "delegate": a[2], "tokenAmount": amount}
        return "approveChecked", _signer(info, a, 3, "owner")
    if tag in (14, 15):
        _need(a, 3)
        amount = ui_amount(_u64(data, 1), data[9])
        if tag == 14:
            info = {"mint": a[0], "account": a[1], "tokenAmount": amount}
            return "mintToChecked", _signer(info, a, 2, "mintAuthority")
        info = {"account": a[0], "mint": a[1], "tokenAmount": amount}
        return "burnChecked", _signer(info, a, 2, "authority")
    if tag == 17:
        _need(a, 1)
        return "syncNative", {"account": a[0]}
    if tag == 21:
        _need(a, 1)
        return "getAccountDataSize", {"mint": a[0]}
    if tag == 22:
        _need(a, 1)
        return "initializeImmutableOwner", {"account": a[0]}
    if tag == 23:
        _need(a, 1)
        return "amountToUiAmount", {"mint": a[0], "amount": str(_u64(data, 1))}
    if tag == 24:
        _need(a, 1)
        return "uiAmountToAmount", {"mint": a[0], "uiAmount": data[1:].decode()}
    raise _Unparsable("unknown token instruction")


def _associated_token(data: bytes, a: Sequence[str]) -> tuple[str, dict[str, Any]]:
    tag = data[0] if data else 0
    if tag in (0, 1):
        _need(a, 6)
        info = {
            "source": a[0],
            "account": a[1],
            "wallet": a[2],
            "mint": a[3],
            "systemProgram": a[4],
            "tokenProgram": a[5],
        }
        return ("create" if tag == 0 else "createIdempotent"), info
    if tag == 2:
        _need(a, 7)
        names = (
            "nestedSource",
            "nestedMint",
            "destination",
            "nestedOwner",
            "ownerMint",
            "wallet",
            "tokenProgram",
        )
        return "recoverNested", dict(zip(names, a, strict=False))
    raise _Unparsable("unknown associated token instruction")


_PARSERS: dict[Any, tuple[str, Callable[[bytes, Sequence[str]], tuple[str, dict[str, Any]]]]] = {
    SYSTEM_PROGRAM: ("system", _system),
    ASSOCIATED_TOKEN_PROGRAM: ("spl-associated-token-account", _associated_token),
    **{program: (name, _token) for program, name in TOKEN_PROGRAMS.items()},
}


def parse_instruction(
    program_id: str,
    accounts: Sequence[str],
    data: bytes,
    stack_height: int | None,
) -> dict[str, Any]:
    """Return one instruction in jsonParsed form (parsed, or partially decoded)."""
    from solders.pubkey import Pubkey

    program = Pubkey.from_string(program_id)
    try:
        if program in MEMO_PROGRAMS:
            return {
                "program": "spl-memo",
                "programId": program_id,
                "parsed": data.decode(),
                "stackHeight": stack_height,
            }
        if program in _PARSERS:
            name, parser = _PARSERS[program]
            kind, info = parser(data, accounts)
            return {
                "program": name,
                "programId": program_id,
                "parsed": {"type": kind, "info": info},
                "stackHeight": stack_height,
            }
    except (_Unparsable, struct.error, IndexError, UnicodeDecodeError):
        pass
    return {
        "programId": program_id,
        "accounts": list(accounts),
        "data": based58.b58encode(data).decode(),
        "stackHeight": stack_height,
    }

"""jsonParsed on its own: token amounts, accounts and instructions from bytes."""

import struct

import based58
import pytest
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from curta_chain.localnet.parsed import CLOCK_SYSVAR, parse_account
from curta_chain.localnet.parsed_instructions import parse_instruction
from curta_chain.localnet.parsed_programs import (
    SYSTEM_PROGRAM,
    SYSVAR_OWNER,
    TOKEN_PROGRAM,
    NotParsable,
)
from curta_chain.localnet.parsed_tokens import ui_amount


@pytest.mark.parametrize(
    ("amount", "decimals", "text", "ui"),
    [
        (0, 0, "0", 0.0),
        (0, 6, "0", 0.0),
        (1_500_000, 6, "1.5", 1.5),
        (1, 9, "0.000000001", 1e-9),
        (10**9, 9, "1", 1.0),
        (123, 0, "123", 123.0),
    ],
)
def test_ui_amount(amount, decimals, text, ui):
    assert ui_amount(amount, decimals) == {
        "amount": str(amount),
        "decimals": decimals,
        "uiAmount": ui,
        "uiAmountString": text,
    }


def mint_bytes(decimals: int, supply: int, authority: Pubkey) -> bytes:
    return (
        struct.pack("<I", 1)
        + bytes(authority)
        + struct.pack("<QB?", supply, decimals, True)
        + struct.pack("<I", 0)
        + bytes(32)
    )


def token_account_bytes(mint: Pubkey, owner: Pubkey, amount: int) -> bytes:
    data = bytes(mint) + bytes(owner) + struct.pack("<Q", amount)
    data += struct.pack("<I", 0) + bytes(32)  # no delegate
    data += bytes([1])  # initialized
    data += struct.pack("<IQ", 0, 0) + struct.pack("<Q", 0)  # not native, no delegated amount
    data += struct.pack("<I", 0) + bytes(32)  # no close authority
    return data


class Accounts(dict):
    def __call__(self, key):
        return self.get(key)


class Stored:
    def __init__(self, owner: Pubkey, data: bytes):
        self.owner, self.data = owner, data


def test_token_mint_and_account():
    mint, owner, authority = Pubkey.new_unique(), Pubkey.new_unique(), Pubkey.new_unique()
    accounts = Accounts({mint: Stored(TOKEN_PROGRAM, mint_bytes(2, 12345, authority))})
    parsed = parse_account(mint, TOKEN_PROGRAM, accounts[mint].data, accounts)
    assert parsed == {
        "program": "spl-token",
        "parsed": {
            "type": "mint",
            "info": {
                "mintAuthority": str(authority),
                "supply": "12345",
                "decimals": 2,
                "isInitialized": True,
                "freezeAuthority": None,
            },
        },
        "space": 82,
    }
    account = Pubkey.new_unique()
    data = token_account_bytes(mint, owner, 250)
    info = parse_account(account, TOKEN_PROGRAM, data, accounts)["parsed"]["info"]
    assert info == {
        "isNative": False,
        "mint": str(mint),
        "owner": str(owner),
        "state": "initialized",
        "tokenAmount": ui_amount(250, 2),
    }
    with pytest.raises(NotParsable):  # its mint is unknown: the validator answers base64
        parse_account(account, TOKEN_PROGRAM, token_account_bytes(owner, owner, 1), accounts)


def test_clock_sysvar_and_unparsable_owner():
    data = struct.pack("<QqQQq", 7, 100, 0, 1, 103)
    parsed = parse_account(CLOCK_SYSVAR, SYSVAR_OWNER, data, Accounts())
    assert parsed["parsed"] == {
        "type": "clock",
        "info": {
            "slot": 7,
            "epoch": 0,
            "epochStartTimestamp": 100,
            "leaderScheduleEpoch": 1,
            "unixTimestamp": 103,
        },
    }
    with pytest.raises(NotParsable):
        parse_account(Pubkey.new_unique(), Pubkey.new_unique(), b"", Accounts())
    with pytest.raises(NotParsable):  # a wallet: no data, not a nonce account
        parse_account(Pubkey.new_unique(), SYSTEM_PROGRAM, b"", Accounts())


def test_system_transfer_memo_and_unknown_instructions():
    source, destination = Pubkey.new_unique(), Pubkey.new_unique()
    ix = transfer(TransferParams(from_pubkey=source, to_pubkey=destination, lamports=42))
    accounts = [str(meta.pubkey) for meta in ix.accounts]
    assert parse_instruction(str(SYSTEM_PROGRAM), accounts, bytes(ix.data), None) == {
        "program": "system",
        "programId": str(SYSTEM_PROGRAM),
        "parsed": {
            "type": "transfer",
            "info": {"source": str(source), "destination": str(destination), "lamports": 42},
        },
        "stackHeight": None,
    }
    memo = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
    assert parse_instruction(memo, [], b"hi", 2)["parsed"] == "hi"
    other = str(Pubkey.new_unique())
    assert parse_instruction(other, accounts, b"\x01\x02", None) == {
        "programId": other,
        "accounts": accounts,
        "data": based58.b58encode(b"\x01\x02").decode(),
        "stackHeight": None,
    }
    # A system instruction too short to parse is shown partially decoded, as agave does.
    assert "parsed" not in parse_instruction(str(SYSTEM_PROGRAM), accounts, b"\x02\x00", None)

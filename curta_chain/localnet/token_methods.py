"""SPL Token and Token-2022 reads.

Methods: getTokenAccountsByOwner, getTokenAccountsByDelegate, getTokenAccountBalance,
getTokenSupply, getTokenLargestAccounts.

Token accounts are found through the owner index (every account of the two token
programs), at the commitment asked, and answered as ``UiAccount``s or ``UiTokenAmount``s
with the validator's messages for what is not a token account or mint.
"""

from typing import Any

from solders.pubkey import Pubkey

from curta_chain.localnet.account_methods import program_filters, ui_account
from curta_chain.localnet.node import Localnet
from curta_chain.localnet.params import (
    Params,
    account_encoding_param,
    config_at,
    context_slot,
    data_slice_param,
    pubkey_param,
    required,
    with_context,
)
from curta_chain.localnet.parsed_programs import TOKEN_PROGRAMS
from curta_chain.localnet.parsed_tokens import (
    mint_decimals,
    token_account_type,
    token_amount_of,
    ui_amount,
)
from curta_chain.localnet.rpc_errors import invalid_params

MAX_LARGEST_TOKEN_ACCOUNTS = 20
_OWNER_OFFSET = 32
_DELEGATE_OFFSET = 76


def _token_filter(localnet: Localnet, value: Any, slot: int) -> tuple[Pubkey, Pubkey | None]:
    """Return (token program, mint or None) of a ``{"mint"}`` / ``{"programId"}`` filter."""
    if not isinstance(value, dict) or len(value) != 1 or not ({"mint", "programId"} & set(value)):
        raise invalid_params("Invalid params: expected {mint} or {programId}")
    if "mint" in value:
        mint = pubkey_param(value["mint"])
        account = localnet.account_at(mint, slot)
        if account is None or account.owner not in TOKEN_PROGRAMS:
            raise invalid_params("Invalid param: could not find mint")
        return account.owner, mint
    program = pubkey_param(value["programId"])
    if program not in TOKEN_PROGRAMS:
        raise invalid_params("Invalid param: unrecognized Token program id")
    return program, None


def _accounts_by(localnet: Localnet, params: Params, offset: int) -> dict[str, Any]:
    key = pubkey_param(required(params, 0, "pubkey"))
    config = config_at(params, 2)
    encoding = account_encoding_param(config, "binary")
    data_slice = data_slice_param(config)
    checks = program_filters(config.get("filters"))
    slot = context_slot(localnet, config)
    program, mint = _token_filter(localnet, required(params, 1, "filter"), slot)
    wanted = bytes(key)
    found = []
    for pubkey, account in localnet.program_accounts(program, slot):
        data = account.data
        if token_account_type(data) != "account":
            continue
        if data[offset : offset + 32] != wanted:
            continue
        if offset == _DELEGATE_OFFSET and data[72:76] != b"\x01\x00\x00\x00":
            continue
        if mint is not None and data[0:32] != bytes(mint):
            continue
        if not all(check(data) for check in checks):
            continue
        found.append(
            {
                "pubkey": str(pubkey),
                "account": ui_account(localnet, pubkey, account, encoding, data_slice, slot),
            }
        )
    return with_context(slot, found)


def get_token_accounts_by_owner(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getTokenAccountsByOwner``: by ``{"mint"}`` or ``{"programId"}``."""
    return _accounts_by(localnet, params, _OWNER_OFFSET)


def get_token_accounts_by_delegate(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getTokenAccountsByDelegate``: by ``{"mint"}`` or ``{"programId"}``."""
    return _accounts_by(localnet, params, _DELEGATE_OFFSET)


def get_token_account_balance(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getTokenAccountBalance``."""
    pubkey = pubkey_param(required(params, 0, "pubkey"))
    slot = context_slot(localnet, config_at(params, 1))
    account = localnet.account_at(pubkey, slot)
    if (
        account is None
        or account.owner not in TOKEN_PROGRAMS
        or token_account_type(account.data) != "account"
    ):
        raise invalid_params("Invalid param: not a Token account")
    data = account.data
    decimals = mint_decimals(Pubkey.from_bytes(data[0:32]), lambda k: localnet.account_at(k, slot))
    if decimals is None:
        raise invalid_params("Invalid param: could not find mint")
    return with_context(slot, ui_amount(token_amount_of(data), decimals))


def _mint(localnet: Localnet, mint: Pubkey, slot: int) -> tuple[Pubkey, int, int]:
    account = localnet.account_at(mint, slot)
    if (
        account is None
        or account.owner not in TOKEN_PROGRAMS
        or token_account_type(account.data) != "mint"
    ):
        raise invalid_params("Invalid param: not a Token mint")
    data = account.data
    return account.owner, int.from_bytes(data[36:44], "little"), data[44]


def get_token_supply(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getTokenSupply``."""
    mint = pubkey_param(required(params, 0, "pubkey"))
    slot = context_slot(localnet, config_at(params, 1))
    _, supply, decimals = _mint(localnet, mint, slot)
    return with_context(slot, ui_amount(supply, decimals))


def get_token_largest_accounts(localnet: Localnet, params: Params) -> dict[str, Any]:
    """``getTokenLargestAccounts``: the 20 largest accounts of a mint."""
    mint = pubkey_param(required(params, 0, "pubkey"))
    slot = context_slot(localnet, config_at(params, 1))
    program, _, decimals = _mint(localnet, mint, slot)
    holders = []
    for pubkey, account in localnet.program_accounts(program, slot):
        data = account.data
        if token_account_type(data) == "account" and data[0:32] == bytes(mint):
            holders.append((token_amount_of(data), str(pubkey)))
    holders.sort(key=lambda item: -item[0])
    return with_context(
        slot,
        [
            {"address": address, **ui_amount(amount, decimals)}
            for amount, address in holders[:MAX_LARGEST_TOKEN_ACCOUNTS]
        ],
    )

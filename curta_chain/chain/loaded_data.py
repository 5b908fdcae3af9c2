"""Loaded account data (SIMD-0186): what a validator counts against a transaction's limit.

Before it runs a transaction, a validator loads every account the transaction names and
refuses it, charging the fee all the same, once the data loaded passes the transaction's
limit (``MaxLoadedAccountsDataSizeExceeded``). The limit is 64 MiB, or less when a
``SetLoadedAccountsDataSizeLimit`` compute-budget instruction asks for less (a request for
more is capped; a request for 0 is refused before anything is loaded or charged, as
``InvalidLoadedAccountsDataSizeLimit``).

agave counts (``svm/src/account_loader.rs``, ``load_transaction_accounts``):

- 8,248 bytes for each address lookup table the message uses;
- for each account key, static then looked up (fee payer and programs included), 64 bytes
  plus its data length when it exists; an account without lamports does not exist and counts
  nothing, and the instructions sysvar, which the runtime builds, counts nothing;
- for each key that is a LoaderV3 (upgradeable) program, its programdata account, 64 bytes
  plus its data length, once, unless a key names it already or it does not exist.

Writable and read-only accounts count alike, and the loaders are not added. The sum only
grows, so comparing the total with the limit gives the validator's answer whatever order it
loads in.
"""

from collections.abc import Callable, Sequence
from typing import Final

from solders.account import Account
from solders.compute_budget import ID as COMPUTE_BUDGET_PROGRAM_ID
from solders.message import Message, MessageV0, MessageV1
from solders.pubkey import Pubkey

from curta_chain.constants import MAX_LOADED_ACCOUNTS_DATA_SIZE

TRANSACTION_ACCOUNT_BASE_SIZE: Final = 64
"""What every loaded account costs on top of its data (agave's TRANSACTION_ACCOUNT_BASE_SIZE)."""
ADDRESS_LOOKUP_TABLE_BASE_SIZE: Final = 8_248
"""What every address lookup table a message uses costs: 8,192 bytes of table, 56 of metadata."""
INSTRUCTIONS_SYSVAR_ID: Final = Pubkey.from_string("Sysvar1nstructions1111111111111111111111111")
UPGRADEABLE_LOADER_ID: Final = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")
_PROGRAM_STATE: Final = (2).to_bytes(4, "little")
"""UpgradeableLoaderState::Program's bincode tag; its programdata address follows."""

# Compute-budget instructions (Borsh: a u8 tag, then the value), by tag: the data length each
# must have. Tag 0 is retired; anything else does not decode.
_REQUEST_HEAP_FRAME: Final = 1
_SET_LOADED_ACCOUNTS_DATA_SIZE_LIMIT: Final = 4
_BUDGET_DATA_LENGTH: Final = {1: 5, 2: 5, 3: 9, 4: 5}
_HEAP_FRAME_RANGE: Final = (32 * 1024, 256 * 1024)
_HEAP_FRAME_UNIT: Final = 1024


def loaded_accounts_data_size(
    message: Message | MessageV0 | MessageV1,
    account: Callable[[Pubkey], Account | None],
    looked_up: Sequence[Pubkey] = (),
) -> int:
    """Return the bytes of account data a validator loads for ``message``, as it counts them.

    Args:
        message: the transaction's message, legacy, v0 or v1.
        account: the account at a key before the transaction runs (None when there is none).
        looked_up: the addresses ``message``'s lookup tables resolve to, writable then
            read-only, as the runtime appends them to the static keys.

    Returns:
        The loaded account data size to compare with the transaction's limit.
    """
    keys = [*message.account_keys, *looked_up]
    tables = len(message.address_table_lookups) if isinstance(message, MessageV0) else 0
    total = tables * ADDRESS_LOOKUP_TABLE_BASE_SIZE
    named = set(keys)
    programdata_counted: set[Pubkey] = set()
    for key in keys:
        if key == INSTRUCTIONS_SYSVAR_ID:
            continue
        loaded = _existing(account(key))
        if loaded is None:
            continue
        data = loaded.data  # one copy: every read of an account's data copies it
        total += TRANSACTION_ACCOUNT_BASE_SIZE + len(data)
        programdata = _programdata_address(loaded.owner, data)
        if programdata is None or programdata in named or programdata in programdata_counted:
            continue
        extra = _existing(account(programdata))
        if extra is not None:
            total += TRANSACTION_ACCOUNT_BASE_SIZE + len(extra.data)
            programdata_counted.add(programdata)
    return total


def loaded_accounts_data_size_limit(message: Message | MessageV0) -> int | None:
    """Return the loaded-data limit a validator holds ``message`` to.

    Args:
        message: the transaction's message.

    Returns:
        64 MiB, or the smaller limit a ``SetLoadedAccountsDataSizeLimit`` asks for; 0 when it
        asks for 0; None when the compute-budget instructions themselves are invalid (data
        that does not decode, a kind given twice, a bad heap frame). A validator refuses the
        last two before loading any account, charging nothing.
    """
    keys = message.account_keys
    seen: set[int] = set()
    limit = MAX_LOADED_ACCOUNTS_DATA_SIZE
    for instruction in message.instructions:
        if keys[instruction.program_id_index] != COMPUTE_BUDGET_PROGRAM_ID:
            continue
        data = bytes(instruction.data)
        tag = data[0] if data else 0
        if _BUDGET_DATA_LENGTH.get(tag) != len(data) or tag in seen:
            return None
        seen.add(tag)
        value = int.from_bytes(data[1:], "little")
        if tag == _REQUEST_HEAP_FRAME and (
            value % _HEAP_FRAME_UNIT or not _HEAP_FRAME_RANGE[0] <= value <= _HEAP_FRAME_RANGE[1]
        ):
            return None
        if tag == _SET_LOADED_ACCOUNTS_DATA_SIZE_LIMIT:
            limit = min(value, MAX_LOADED_ACCOUNTS_DATA_SIZE)
    return limit


def _existing(account: Account | None) -> Account | None:
    """The account as loaded: one without lamports does not exist."""
    return account if account is not None and account.lamports > 0 else None


def _programdata_address(owner: Pubkey, data: bytes) -> Pubkey | None:
    """The programdata address of a LoaderV3 program account (owner and data), else None."""
    if owner != UPGRADEABLE_LOADER_ID or data[:4] != _PROGRAM_STATE or len(data) < 36:
        return None
    return Pubkey.from_bytes(data[4:36])

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
from solders.message import Message, MessageV0, MessageV1
from solders.pubkey import Pubkey

from curta_chain.protocol.compute_budget import compute_budget
from curta_chain.protocol.loader import LOADER_V3, PROGRAM

TRANSACTION_ACCOUNT_BASE_SIZE: Final = 64
"""What every loaded account costs on top of its data (agave's TRANSACTION_ACCOUNT_BASE_SIZE)."""
ADDRESS_LOOKUP_TABLE_BASE_SIZE: Final = 8_248
"""What every address lookup table a message uses costs: 8,192 bytes of table, 56 of metadata."""
INSTRUCTIONS_SYSVAR_ID: Final = Pubkey.from_string("Sysvar1nstructions1111111111111111111111111")
_PROGRAM_STATE: Final = PROGRAM.to_bytes(4, "little")
"""UpgradeableLoaderState::Program's bincode tag; its programdata address follows."""


AccountShape = tuple[int, Pubkey | None]
"""What loading counts of an existing account: its data length, and its programdata address
when it is a LoaderV3 program."""


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
    return loaded_data_size(message, lambda key: account_shape(account(key)), looked_up)


def loaded_data_size(
    message: Message | MessageV0 | MessageV1,
    shape: Callable[[Pubkey], AccountShape | None],
    looked_up: Sequence[Pubkey] = (),
) -> int:
    """Return ``loaded_accounts_data_size`` from each account's shape (``account_shape``).

    A caller can keep an account's shape without copying its data again.
    """
    keys = [*message.account_keys, *looked_up]
    tables = len(message.address_table_lookups) if isinstance(message, MessageV0) else 0
    total = tables * ADDRESS_LOOKUP_TABLE_BASE_SIZE
    named = set(keys)
    programdata_counted: set[Pubkey] = set()
    for key in keys:
        if key == INSTRUCTIONS_SYSVAR_ID:
            continue
        loaded = shape(key)
        if loaded is None:
            continue
        size, programdata = loaded
        total += TRANSACTION_ACCOUNT_BASE_SIZE + size
        if programdata is None or programdata in named or programdata in programdata_counted:
            continue
        extra = shape(programdata)
        if extra is not None:
            total += TRANSACTION_ACCOUNT_BASE_SIZE + extra[0]
            programdata_counted.add(programdata)
    return total


def account_shape(account: Account | None) -> AccountShape | None:
    """Return what loading counts of ``account`` (None: it does not exist, no lamports)."""
    if account is None or account.lamports == 0:
        return None
    data = account.data  # one copy: every read of an account's data copies it
    return len(data), _programdata_address(account.owner, data)


def loaded_accounts_data_size_limit(message: Message | MessageV0 | MessageV1) -> int | None:
    """Return the loaded-data limit a validator holds ``message`` to.

    Args:
        message: the transaction's message.

    Returns:
        64 MiB, or the smaller limit a ``SetLoadedAccountsDataSizeLimit`` asks for; 0 when it
        asks for 0; None when the compute-budget instructions themselves fail the transaction
        (``curta_chain.protocol.compute_budget``). A validator refuses the last two before
        loading any account, charging nothing.
    """
    budget = compute_budget(message)
    return None if budget is None else budget.loaded_accounts_data_size_limit


def _programdata_address(owner: Pubkey, data: bytes) -> Pubkey | None:
    """The programdata address of a LoaderV3 program account (owner and data), else None."""
    if owner != LOADER_V3 or data[:4] != _PROGRAM_STATE or len(data) < 36:
        return None
    return Pubkey.from_bytes(data[4:36])

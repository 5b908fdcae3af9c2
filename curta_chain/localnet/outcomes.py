"""What a send or a simulation returns, and what a transaction loads.

Sending returns a value, as LiteSVM does: ``Landed`` (in a block, with or without an
error: the fee was paid), ``Refused`` (never landed, nothing charged), each with its error,
logs and compute units, or ``Queued`` (accepted for a later block, in the busy mode); a
simulation returns a ``Simulation``. The RPC layer (``transaction_methods``) turns those
into JSON-RPC answers; nothing here knows JSON-RPC.
"""

from dataclasses import dataclass
from typing import Any

from solders.account import Account
from solders.message import Message, MessageV0, MessageV1
from solders.pubkey import Pubkey
from solders.transaction_metadata import TransactionMetadata


@dataclass(frozen=True)
class Landed:
    """A transaction in a block: ``err`` is None or its runtime error; its fee was paid.

    ``seq`` is its ledger record (0 without a ledger): it may be reported once durable.
    ``logs`` and ``units`` are read from LiteSVM's metadata when asked (most never are).
    """

    signature: str
    slot: int
    err: Any
    meta: TransactionMetadata
    seq: int
    keys: list[Pubkey]
    writable: list[Pubkey]

    @property
    def logs(self) -> list[str]:
        """The program log lines."""
        return self.meta.logs()

    @property
    def units(self) -> int:
        """The compute units consumed."""
        return self.meta.compute_units_consumed()


@dataclass(frozen=True)
class Refused:
    """A transaction that did not land and changed nothing: why, with its logs and units.

    ``err`` is a ``TransactionError`` in the validator's JSON form ("BlockhashNotFound",
    "SignatureFailure", {"InstructionError": [...]}, ...). For "AlreadyProcessed", ``seq``
    is the ledger record of the earlier copy that did land.
    """

    signature: str
    err: Any
    logs: list[str]
    units: int
    seq: int = 0
    fee: int | None = None
    """The fee a validator's simulation reports: the fee of a run that loaded (which a
    refusal then gives back); None when it never loaded."""
    loaded_size: int = 0
    """The account data it loaded (SIMD-0186's count); 0 when it never loaded."""


@dataclass(frozen=True)
class Simulation:
    """A simulated transaction and what the validator reports beside its result.

    ``fee`` is None and ``loaded_size`` 0 when the validator would not load it (a bad
    blockhash, a payer that cannot pay): then nothing ran, ``meta`` is None or LiteSVM's
    refusal, and the balances after are those before (no balances at all for a bad
    signature). ``post_accounts`` holds the writable accounts as a successful run leaves
    them.
    """

    accounts: "TransactionAccounts"
    err: Any
    meta: TransactionMetadata | None
    fee: int | None
    loaded_size: int
    pre_balances: list[int] | None
    post_balances: list[int] | None
    pre_token_balances: list[dict[str, Any]] | None
    post_token_balances: list[dict[str, Any]] | None
    post_accounts: dict[Pubkey, Account]


@dataclass(frozen=True)
class Queued:
    """A transaction accepted for a later block (or lost on its way to the leader)."""

    signature: str


SendOutcome = Landed | Refused | Queued


@dataclass(frozen=True)
class TransactionAccounts:
    """The accounts a transaction loads, in the runtime's order, and which it may write."""

    keys: list[Pubkey]
    writable: list[Pubkey]
    loaded_writable: list[Pubkey]
    loaded_readonly: list[Pubkey]


def writable_keys(message: Message | MessageV0 | MessageV1) -> list[Pubkey]:
    """Return the static account keys ``message`` may write, from its header."""
    header = message.header
    keys = message.account_keys
    signed = header.num_required_signatures
    writable_signed = signed - header.num_readonly_signed_accounts
    writable_unsigned = len(keys) - header.num_readonly_unsigned_accounts
    return [
        key
        for index, key in enumerate(keys)
        if index < writable_signed or signed <= index < writable_unsigned
    ]

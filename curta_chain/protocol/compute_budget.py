"""Compute budget and fees as the runtime reads them: one place for the client and the localnet.

A transaction's compute-budget instructions (program ``ComputeBudget111...``; Borsh: a u8
tag, then the value) set its compute-unit limit, its price in micro-lamports a unit, its
heap frame and its loaded-account-data limit (SIMD-0186). Agave reads them before anything
runs (``compute-budget-instruction``, ``ComputeBudgetInstructionDetails``): data that does
not decode fails the transaction (``InstructionError(i, InvalidInstructionData)``), a kind
given twice fails it (``DuplicateInstruction(i)``), and so does a heap frame outside 32-256
KiB or not a multiple of 1 KiB; nothing is charged. Bytes after the value are ignored (the
decoder does not check that it consumed the whole instruction).

The fee is 5,000 lamports a signature plus the priority fee: the price times the limit,
rounded up to whole lamports. The signatures paid for are the transaction's own and those
its precompile instructions verify (Ed25519, secp256k1, secp256r1: the first byte of each
one's data, as agave's ``get_precompile_signature_details`` counts them). Without
SetComputeUnitLimit the limit is, as Agave 4 reckons it
(SIMD-0170, ``calculate_default_compute_unit_limit``), 3,000 units per instruction of a
builtin program (compute-budget instructions included) and 200,000 per other instruction, at
most 1,400,000. Every transaction curta-chain sends sets its limit; the default matters for
what others send (and for the limit a program's log line names).

A v1 message (SIMD-0385) carries its budget inline (``TransactionConfig``) and its
compute-budget instructions configure nothing: as Agave 4.3 reads it, an unset compute-unit
limit is 0, an unset loaded-data limit 0, an unset heap 32 KiB, and its priority fee is a
total in lamports, not a price.

The client computes every fee it shows and checks from here (never from a node's
getFeeForMessage), and the localnet charges its fees from here as a validator does.
"""

from dataclasses import dataclass
from typing import Final

from solders.instruction import Instruction
from solders.message import Message, MessageV0, MessageV1
from solders.pubkey import Pubkey

from curta_chain.protocol.limits import MAX_COMPUTE_UNITS, MAX_LOADED_ACCOUNTS_DATA_SIZE

__all__ = [
    "BUILTIN_INSTRUCTION_COMPUTE_UNITS",
    "BUILTIN_PROGRAM_IDS",
    "COMPUTE_BUDGET_PROGRAM_ID",
    "DEFAULT_INSTRUCTION_COMPUTE_UNITS",
    "LAMPORTS_PER_SIGNATURE",
    "MICRO_LAMPORTS_PER_LAMPORT",
    "PRECOMPILE_PROGRAM_IDS",
    "ComputeBudget",
    "compute_budget",
    "priority_fee",
    "priority_lamports",
    "set_loaded_accounts_data_size_limit",
    "signature_count",
    "transaction_fee",
]

COMPUTE_BUDGET_PROGRAM_ID: Final = Pubkey.from_string("ComputeBudget111111111111111111111111111111")
LAMPORTS_PER_SIGNATURE: Final = 5_000
"""The validator's default fee rate, which LiteSVM charges too."""
DEFAULT_INSTRUCTION_COMPUTE_UNITS: Final = 200_000
BUILTIN_INSTRUCTION_COMPUTE_UNITS: Final = 3_000
"""Agave's MAX_BUILTIN_ALLOCATION_COMPUTE_UNIT_LIMIT: a builtin instruction's default share."""
BUILTIN_PROGRAM_IDS: Final = frozenset(
    Pubkey.from_string(key)
    for key in (
        "11111111111111111111111111111111",
        "ComputeBudget111111111111111111111111111111",
        "BPFLoaderUpgradeab1e11111111111111111111111",
        "BPFLoader1111111111111111111111111111111111",
        "BPFLoader2111111111111111111111111111111111",
        "LoaderV411111111111111111111111111111111111",
        "KeccakSecp256k11111111111111111111111111111",
        "Ed25519SigVerify111111111111111111111111111",
    )
)
"""The programs whose instructions default to 3,000 units (agave 4.2 builtins-default-costs).
The vote program is there only until its core-BPF migration feature, which the test validator
activates at genesis; stake, config and address lookup tables are core BPF programs now."""
MICRO_LAMPORTS_PER_LAMPORT: Final = 1_000_000
PRECOMPILE_PROGRAM_IDS: Final = frozenset(
    Pubkey.from_string(key)
    for key in (
        "Ed25519SigVerify111111111111111111111111111",
        "KeccakSecp256k11111111111111111111111111111",
        "Secp256r1SigVerify1111111111111111111111111",
    )
)
"""The precompiles: each signature one of their instructions verifies is charged as one of
the transaction's own."""

# The instructions by tag, with the length of their value. Tag 0 is retired: it decodes to
# an unused variant that the runtime refuses like anything else it does not know.
_REQUEST_HEAP_FRAME: Final = 1
_SET_COMPUTE_UNIT_LIMIT: Final = 2
_SET_COMPUTE_UNIT_PRICE: Final = 3
_SET_LOADED_ACCOUNTS_DATA_SIZE_LIMIT: Final = 4
_VALUE_LENGTH: Final = {
    _REQUEST_HEAP_FRAME: 4,
    _SET_COMPUTE_UNIT_LIMIT: 4,
    _SET_COMPUTE_UNIT_PRICE: 8,
    _SET_LOADED_ACCOUNTS_DATA_SIZE_LIMIT: 4,
}
_MIN_HEAP_FRAME: Final = 32 * 1024
_MAX_HEAP_FRAME: Final = 256 * 1024
_HEAP_FRAME_UNIT: Final = 1024


@dataclass(frozen=True)
class ComputeBudget:
    """What a transaction's compute-budget instructions give it, defaults filled in."""

    unit_limit: int
    """Compute units the transaction may use: requested or by default, at most 1,400,000."""
    unit_price: int
    """Micro-lamports a unit (0 without SetComputeUnitPrice)."""
    loaded_accounts_data_size_limit: int
    """Bytes of account data it may load: 64 MiB, or less when asked. 0 when it asks for 0,
    which the runtime refuses before loading anything (InvalidLoadedAccountsDataSizeLimit)."""
    heap_frame: int
    """Bytes of heap each program gets (32 KiB by default)."""

    @property
    def priority_lamports(self) -> int:
        """The priority fee of this budget, in lamports."""
        return priority_lamports(self.unit_limit, self.unit_price)


_last_read: tuple[object, "ComputeBudget | None"] = (None, None)
"""The last message read and its budget. The localnet asks for a message's budget at each
check (fee, loaded-data limit, scheduling cost, LiteSVM's limit) and solders' messages are
immutable, so one entry, matched by identity, spares the rereads; holding the message keeps
its identity from being reused."""


def compute_budget(message: Message | MessageV0 | MessageV1) -> ComputeBudget | None:
    """Return the compute budget of ``message`` as Agave reads it.

    Args:
        message: a transaction's message, legacy, v0 or v1.

    Returns:
        Its budget; None when the runtime fails the transaction for its compute-budget
        instructions (one that does not decode, a kind given twice, a bad heap frame) before
        loading an account or charging a fee.
    """
    global _last_read
    last, budget = _last_read
    if last is message:
        return budget
    budget = _read_budget(message)
    _last_read = (message, budget)
    return budget


def _read_budget(message: Message | MessageV0 | MessageV1) -> ComputeBudget | None:
    if isinstance(message, MessageV1):
        return _inline_budget(message)
    keys = message.account_keys
    requested: dict[int, int] = {}
    default_units = 0
    for instruction in message.instructions:
        index = instruction.program_id_index
        program = keys[index] if index < len(keys) else None
        if program in BUILTIN_PROGRAM_IDS:
            default_units += BUILTIN_INSTRUCTION_COMPUTE_UNITS
        else:
            default_units += DEFAULT_INSTRUCTION_COMPUTE_UNITS
        if program != COMPUTE_BUDGET_PROGRAM_ID:
            continue
        data = bytes(instruction.data)
        tag = data[0] if data else 0
        length = _VALUE_LENGTH.get(tag)
        if length is None or len(data) < 1 + length:
            return None  # InstructionError(i, InvalidInstructionData)
        if tag in requested:
            return None  # DuplicateInstruction(i)
        requested[tag] = int.from_bytes(data[1 : 1 + length], "little")
    heap = requested.get(_REQUEST_HEAP_FRAME, _MIN_HEAP_FRAME)
    if heap % _HEAP_FRAME_UNIT or not _MIN_HEAP_FRAME <= heap <= _MAX_HEAP_FRAME:
        return None
    units = requested.get(_SET_COMPUTE_UNIT_LIMIT, default_units)
    loaded = requested.get(_SET_LOADED_ACCOUNTS_DATA_SIZE_LIMIT, MAX_LOADED_ACCOUNTS_DATA_SIZE)
    return ComputeBudget(
        unit_limit=min(units, MAX_COMPUTE_UNITS),
        unit_price=requested.get(_SET_COMPUTE_UNIT_PRICE, 0),
        loaded_accounts_data_size_limit=min(loaded, MAX_LOADED_ACCOUNTS_DATA_SIZE),
        heap_frame=heap,
    )


def _inline_budget(message: MessageV1) -> ComputeBudget:
    """A v1 message's budget: its ``TransactionConfig``, unset fields as Agave 4.3 fills them.

    The price is derived from the fee (micro-lamports a unit, for ordering), as Agave does;
    the fee itself is the config's, exactly (``priority_fee``).
    """
    config = message.config
    units = min(config.compute_unit_limit or 0, MAX_COMPUTE_UNITS)
    fee = config.priority_fee or 0
    loaded = config.loaded_accounts_data_size_limit or 0
    return ComputeBudget(
        unit_limit=units,
        unit_price=fee * MICRO_LAMPORTS_PER_LAMPORT // units if units else 0,
        loaded_accounts_data_size_limit=min(loaded, MAX_LOADED_ACCOUNTS_DATA_SIZE),
        heap_frame=config.heap_size or _MIN_HEAP_FRAME,
    )


def priority_lamports(units: int, price: int) -> int:
    """Return the priority fee of a ``units`` limit at ``price`` micro-lamports a unit."""
    return -(-price * units // MICRO_LAMPORTS_PER_LAMPORT)


def priority_fee(message: Message | MessageV0 | MessageV1) -> int:
    """Return the priority fee of ``message`` in lamports.

    0 without a compute-unit price, and 0 when its compute-budget instructions fail it
    (nothing is charged then); a v1 message's is its config's fee.
    """
    if isinstance(message, MessageV1):
        return message.config.priority_fee or 0
    budget = compute_budget(message)
    return 0 if budget is None else budget.priority_lamports


def signature_count(message: Message | MessageV0 | MessageV1) -> int:
    """Return the signatures ``message`` pays for: its signers', then its precompiles'."""
    keys = message.account_keys
    count = message.header.num_required_signatures
    for instruction in message.instructions:
        index = instruction.program_id_index
        if index < len(keys) and keys[index] in PRECOMPILE_PROGRAM_IDS:
            data = bytes(instruction.data)
            count += data[0] if data else 0
    return count


def transaction_fee(message: Message | MessageV0 | MessageV1, priority: int | None = None) -> int:
    """Return the whole fee of ``message``: signatures plus priority (computed if None).

    Exact for a legacy, v0 or v1 message: what a validator charges, whatever a node says.
    """
    if priority is None:
        priority = priority_fee(message)
    return LAMPORTS_PER_SIGNATURE * signature_count(message) + priority


def set_loaded_accounts_data_size_limit(limit: int) -> Instruction:
    """Return the compute-budget instruction that asks for a loaded-data limit of ``limit``.

    solders 0.26 has no builder for it: tag 4, then the limit as a u32.
    """
    data = bytes([_SET_LOADED_ACCOUNTS_DATA_SIZE_LIMIT]) + limit.to_bytes(4, "little")
    return Instruction(COMPUTE_BUDGET_PROGRAM_ID, data, [])

"""Transaction fees as a validator charges them: a rate per signature plus the priority fee.

LiteSVM (since solders 0.29) charges both the signature fee and the priority fee (the
compute-unit price times the compute-unit limit, rounded up to whole lamports); the
localnet computes the same fee for getFeeForMessage, getTransaction's ``fee`` and its
checks before execution. Without a SetComputeUnitLimit, the limit here is 200,000 units
per instruction (at most 1,400,000): Agave 4 gives builtin instructions (System, the
compute budget, the BPF loaders) 3,000 instead (SIMD-0170), so for a priced transaction
without a limit LiteSVM charges less than this says.

A v1 message (SIMD-0385) carries its budget inline and its compute-budget instructions
configure nothing: as agave 4.3 reads its ``TransactionConfig``, an unset compute-unit limit
is 0, an unset priority fee 0 lamports (the fee is a total, not a price), an unset heap
32 KiB. LiteSVM reads no v1 config: it charges a v1 transaction the signature fee only, and
the localnet charges its priority fee (``Execution._execute``).
"""

from solders.message import Message, MessageV0, MessageV1
from solders.pubkey import Pubkey

from curta_chain.constants import MAX_COMPUTE_UNITS

LAMPORTS_PER_SIGNATURE = 5_000
"""The validator's default fee rate, which LiteSVM charges too."""
COMPUTE_BUDGET_PROGRAM_ID = Pubkey.from_string("ComputeBudget111111111111111111111111111111")
DEFAULT_INSTRUCTION_COMPUTE_UNITS = 200_000
MICRO_LAMPORTS_PER_LAMPORT = 1_000_000
MIN_HEAP_BYTES = 32 * 1024
_REQUEST_HEAP_FRAME = 1
_SET_COMPUTE_UNIT_LIMIT = 2
_SET_COMPUTE_UNIT_PRICE = 3


def compute_budget(message: Message | MessageV0 | MessageV1) -> tuple[int, int]:
    """Return (compute-unit limit, compute-unit price) of ``message`` as the runtime reads them.

    The limit is the one requested, or 200,000 units per instruction that is not a
    compute-budget one, at most 1,400,000; the price is 0 without SetComputeUnitPrice. A v1
    message's price is its priority fee over its limit, in micro-lamports a unit, as agave
    derives it for ordering.
    """
    if isinstance(message, MessageV1):
        config = message.config
        units = min(config.compute_unit_limit or 0, MAX_COMPUTE_UNITS)
        fee = config.priority_fee or 0
        return units, fee * MICRO_LAMPORTS_PER_LAMPORT // units if units else 0
    keys = message.account_keys
    price = 0
    limit: int | None = None
    others = 0
    for instruction in message.instructions:
        index = instruction.program_id_index
        if index >= len(keys) or keys[index] != COMPUTE_BUDGET_PROGRAM_ID:
            others += 1
            continue
        data = bytes(instruction.data)
        if len(data) == 5 and data[0] == _SET_COMPUTE_UNIT_LIMIT:
            limit = int.from_bytes(data[1:], "little")
        elif len(data) == 9 and data[0] == _SET_COMPUTE_UNIT_PRICE:
            price = int.from_bytes(data[1:], "little")
    units = limit if limit is not None else others * DEFAULT_INSTRUCTION_COMPUTE_UNITS
    return min(units, MAX_COMPUTE_UNITS), price


def heap_bytes(message: Message | MessageV0 | MessageV1) -> int:
    """Return the heap ``message`` asks for (RequestHeapFrame, or v1's ``heap_size``)."""
    if isinstance(message, MessageV1):
        return message.config.heap_size or MIN_HEAP_BYTES
    keys = message.account_keys
    for instruction in message.instructions:
        index = instruction.program_id_index
        data = bytes(instruction.data)
        budget = index < len(keys) and keys[index] == COMPUTE_BUDGET_PROGRAM_ID
        if budget and len(data) == 5 and data[0] == _REQUEST_HEAP_FRAME:
            return int.from_bytes(data[1:], "little")
    return MIN_HEAP_BYTES


def priority_fee(message: Message | MessageV0 | MessageV1) -> int:
    """Return the priority fee of ``message`` in lamports (0 without a compute-unit price)."""
    if isinstance(message, MessageV1):
        return message.config.priority_fee or 0
    return priority_lamports(*compute_budget(message))


def unpaid_priority(message: Message | MessageV0 | MessageV1) -> int:
    """The part of ``message``'s fee LiteSVM does not charge: a v1 message's priority fee."""
    return priority_fee(message) if isinstance(message, MessageV1) else 0


def priority_lamports(units: int, price: int) -> int:
    """Return the priority fee of a ``units`` limit at ``price`` micro-lamports a unit."""
    return -(-price * units // MICRO_LAMPORTS_PER_LAMPORT)


def transaction_fee(message: Message | MessageV0 | MessageV1, priority: int | None = None) -> int:
    """Return the whole fee of ``message``: signatures plus priority (computed if None)."""
    signatures = message.header.num_required_signatures
    if priority is None:
        priority = priority_fee(message)
    return LAMPORTS_PER_SIGNATURE * signatures + priority

"""How many weight bytes one writeWeights transaction carries in 1,232 bytes.

Measured with the protocol's sizer (``curta_chain.protocol.sizes``) on real messages, legacy
and v0 alike, taking the smaller: a sender may use either. A v1 write (4,096 bytes) is
sized where its budget is known (``chain.specs.Budget.write_payload``).
"""

from functools import cache

from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import Instruction
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey

from curta_chain.program.instructions import write_weights
from curta_chain.protocol import sizes


@cache
def max_write_payload(with_compute_budget: bool = False, fee_payer: bool = False) -> int:
    """The most weight bytes one writeWeights transaction carries in 1,232 bytes.

    Args:
        with_compute_budget: the transaction also carries SetComputeUnitLimit and
            SetComputeUnitPrice instructions.
        fee_payer: a fee payer other than the authority signs too (a key and a signature
            more).

    Returns:
        The largest ``data`` length that keeps the transaction, legacy or v0, within
        ``MAX_TRANSACTION_SIZE``.
    """
    authority, weight, program = (Pubkey(bytes([n] * 32)) for n in (1, 2, 3))
    payer = Pubkey(bytes([4] * 32)) if fee_payer else authority
    budget = [set_compute_unit_limit(1), set_compute_unit_price(1)] if with_compute_budget else []

    def instructions(data: bytes) -> list[Instruction]:
        return [*budget, write_weights(program, authority, weight, 0, data)]

    return sizes.largest_payload(
        lambda data: Message(instructions(data), payer),
        lambda data: MessageV0.try_compile(payer, instructions(data), [], Hash.default()),
    )


MAX_WRITE_PAYLOAD: int = max_write_payload(False)
"""Weight bytes per writeWeights transaction with one signer and no compute-budget instructions."""

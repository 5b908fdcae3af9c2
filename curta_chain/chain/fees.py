"""What transactions cost, as the node says, and whether the payer can pay it.

The fee is what validators charge, whatever the node says: a node that inflates it only
makes the cost shown (and the funds check) higher. Rent is ``rent.py``'s.
"""

import asyncio
from collections.abc import Sequence

from solders.message import Message
from solders.pubkey import Pubkey

from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.specs import TxSpec
from curta_chain.errors import InsufficientFundsError
from curta_chain.reporting import sol


async def estimate_fees(
    client: RpcClient, payer: Pubkey, kinds: Sequence[tuple[TxSpec, int]]
) -> int:
    """What the node says ``count`` transactions like each spec cost, summed (payer pays)."""
    if not kinds:
        return 0
    blockhash, _ = await client.latest_blockhash()
    fees = await asyncio.gather(
        *(
            client.fee_for_message(Message.new_with_blockhash(spec.instructions, payer, blockhash))
            for spec, _ in kinds
        )
    )
    return sum(fee * count for fee, (_, count) in zip(fees, kinds, strict=True))


async def require_funds(client: RpcClient, payer: Pubkey, needed: int, doing: str) -> int:
    """Return the payer's balance, which must be at least ``needed`` lamports.

    ``doing`` says what needs them, as in "publishing costs" or "deploying needs".

    Raises:
        InsufficientFundsError: the balance is short; names by how much. Nothing was sent.
    """
    balance = await client.balance(payer)
    if balance < needed:
        raise InsufficientFundsError(
            f"payer {payer} has {sol(balance)}; {doing} {sol(needed)} (short by "
            f"{sol(needed - balance)}); nothing was sent"
        )
    return balance

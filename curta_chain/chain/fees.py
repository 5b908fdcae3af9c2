"""What transactions cost, as the node says (whether the payer can pay it: ``funds.py``).

The fee is what validators charge, whatever the node says: a node that inflates it only
makes the cost shown (and the funds check) higher. Rent is ``rent.py``'s.
"""

import asyncio
from collections.abc import Sequence

from solders.message import Message
from solders.pubkey import Pubkey

from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.specs import TxSpec


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

"""What transactions cost, as the node says (whether the payer can pay it: ``rent.require_funds``).

The fee is what validators charge, whatever the node says: a node that inflates it only
makes the cost shown (and the funds check) higher. Rent is ``rent.py``'s.

Priority fees: ``--with-compute-unit-price auto`` pays the ``AutoPrice.percentile``-th
(75th by default) of the prices recent slots paid to write the command's accounts
(getRecentPrioritizationFees: one price per slot, the lowest that landed in it), capped
by ``--max-compute-unit-price``; ``priced`` resolves it before the plan's cost is made, so
the cost shown is the cost paid. A node that inflates the prices only raises what is
shown, never past the cap.
"""

import asyncio
import math
from collections.abc import Sequence
from dataclasses import replace

from solders.pubkey import Pubkey

from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.specs import Budget, TxSpec, message


async def estimate_fees(
    client: RpcClient, payer: Pubkey, kinds: Sequence[tuple[TxSpec, int]]
) -> int:
    """What the node says ``count`` transactions like each spec cost, summed (payer pays)."""
    if not kinds:
        return 0
    blockhash, _ = await client.latest_blockhash()
    fees = await asyncio.gather(
        *(client.fee_for_message(message(spec, payer, blockhash)) for spec, _ in kinds)
    )
    return sum(fee * count for fee, (_, count) in zip(fees, kinds, strict=True))


def percentile(prices: Sequence[int], rank: int) -> int:
    """The ``rank``-th percentile of ``prices`` (nearest rank; 0 when there are none)."""
    if not prices:
        return 0
    ordered = sorted(prices)
    return ordered[max(math.ceil(rank / 100 * len(ordered)) - 1, 0)]


async def priced(client: RpcClient, budget: Budget, writable: Sequence[Pubkey]) -> Budget:
    """``budget`` with an automatic price read from the node (unchanged when it has none).

    The price is the percentile of what recent slots paid to write ``writable``, at most
    the cap.
    """
    auto = budget.auto_price
    if auto is None:
        return budget
    price = percentile(await client.prioritization_fees(writable), auto.percentile)
    if auto.cap is not None:
        price = min(price, auto.cap)
    return replace(budget, compute_unit_price=price, auto_price=None)

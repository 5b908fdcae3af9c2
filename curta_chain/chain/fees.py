"""What transactions cost, computed from their messages, and the price ``auto`` pays.

Fees are computed here, from each message, as validators charge them
(``protocol.compute_budget.transaction_fee``: 5,000 lamports a signature, precompiles'
included, plus the priority fee its compute-budget instructions or v1 config set): the
plan, the funds check and the spend prompt all use this figure. The node's
getFeeForMessage is asked too, as a cross-check only: where it says something else, a note
shows both, and what is paid is still what the messages say.

Priority fees: ``--with-compute-unit-price auto`` pays the ``AutoPrice.percentile``-th (75th
by default) of the prices recent slots paid to write the command's accounts
(getRecentPrioritizationFees: one price per slot, the lowest that landed in it). A node may
lie about those, so ``auto`` has a cap: ``--max-compute-unit-price N`` when given (auto then
pays at most N), else ``DEFAULT_MAX_COMPUTE_UNIT_PRICE``, above which the command stops
before anything is signed (``PriceCapError``): a node answering 10^12 micro-lamports a unit
costs nothing. ``priced`` resolves the price before the plan's cost is made, so the cost
shown is the cost paid.
"""

import asyncio
import math
from collections.abc import Sequence
from dataclasses import replace

from solders.hash import Hash
from solders.pubkey import Pubkey

from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.specs import Budget, TxSpec, message
from curta_chain.errors import PriceCapError, RpcError
from curta_chain.protocol.compute_budget import transaction_fee
from curta_chain.reporting import Reporter

DEFAULT_MAX_COMPUTE_UNIT_PRICE = 1_000_000
"""The most ``auto`` accepts, in micro-lamports a compute unit, unless told otherwise: one
lamport a unit, so a 1,000-unit write pays at most a fifth of its base fee more. Above it the
command stops (recent prices that high are a congested cluster or a lying node: the user
chooses with ``--max-compute-unit-price`` or a price of their own)."""


def fee_of(spec: TxSpec, payer: Pubkey) -> int:
    """What validators charge for ``spec`` paid by ``payer``, computed from its message."""
    return transaction_fee(message(spec, payer, Hash.default()))


async def estimate_fees(
    client: RpcClient,
    payer: Pubkey,
    kinds: Sequence[tuple[TxSpec, int]],
    reporter: Reporter | None = None,
) -> int:
    """The fees of ``count`` transactions like each spec, summed (``payer`` pays).

    Computed from the messages. With a ``reporter`` the node's getFeeForMessage is asked for
    each kind as a cross-check, and a note says where it disagrees (its figure is never used).
    """
    ours = [fee_of(spec, payer) for spec, _ in kinds]
    total = sum(fee * count for fee, (_, count) in zip(ours, kinds, strict=True))
    if reporter is not None and kinds:
        theirs = await _node_fees(client, payer, [spec for spec, _ in kinds])
        if theirs is not None and theirs != ours:
            node_total = sum(fee * count for fee, (_, count) in zip(theirs, kinds, strict=True))
            reporter.note(
                f"{client.url} says these transactions cost {node_total:,} lamports in fees "
                f"(getFeeForMessage); computed from their messages, as validators charge: "
                f"{total:,}, which is what the plan counts"
            )
    return total


async def _node_fees(client: RpcClient, payer: Pubkey, specs: Sequence[TxSpec]) -> list[int] | None:
    """What the node says each spec costs; None when it will not say (or says nonsense)."""
    blockhash, _ = await client.latest_blockhash()
    try:
        return list(
            await asyncio.gather(
                *(client.fee_for_message(message(spec, payer, blockhash)) for spec in specs)
            )
        )
    except RpcError:
        return None


def percentile(prices: Sequence[int], rank: int) -> int:
    """The ``rank``-th percentile of ``prices`` (nearest rank; 0 when there are none)."""
    if not prices:
        return 0
    ordered = sorted(prices)
    return ordered[max(math.ceil(rank / 100 * len(ordered)) - 1, 0)]


async def priced(client: RpcClient, budget: Budget, writable: Sequence[Pubkey]) -> Budget:
    """``budget`` with an automatic price read from the node (unchanged when it has none).

    The price is the percentile of what recent slots paid to write ``writable``: at most the
    cap the user gave, and refused above the default cap.

    Raises:
        PriceCapError: the price is above ``DEFAULT_MAX_COMPUTE_UNIT_PRICE`` and no cap was
            given; nothing was signed or sent.
    """
    auto = budget.auto_price
    if auto is None:
        return budget
    price = percentile(await client.prioritization_fees(writable), auto.percentile)
    if auto.cap is not None:
        price = min(price, auto.cap)
    elif price > DEFAULT_MAX_COMPUTE_UNIT_PRICE:
        raise PriceCapError(
            f"{client.url} reports recent prices of {price:,} micro-lamports a compute unit "
            f"(the {auto.percentile}th percentile), above the default cap of "
            f"{DEFAULT_MAX_COMPUTE_UNIT_PRICE:,} for --with-compute-unit-price auto (a node "
            "may lie about prices): pass --max-compute-unit-price N to pay at most N, or "
            "--with-compute-unit-price N; nothing was sent"
        )
    return replace(budget, compute_unit_price=price, auto_price=None)

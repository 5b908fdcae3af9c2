"""What new accounts cost, and whether the payer can pay: rent, new accounts, the funds check.

Rent is computed here, from the runtime's own formula; the node's answer is a cross-check.
Also the planning of new accounts: their rent, and whether their address already holds
lamports someone sent (see ``NewAccount``).

The runtime makes an account of ``size`` bytes rent-exempt at
``(ACCOUNT_STORAGE_OVERHEAD + size) * lamports_per_byte_year * exemption_threshold``
lamports (agave's ``Rent::minimum_balance`` with its defaults: 128 bytes, 3,480 lamports,
2.0 years), the same on devnet, testnet and mainnet-beta. A node that asks for more is
refused: a lying RPC node must not decide how much goes into each account. A node that
asks for less is believed (a cluster could lower rent; an account funded too low is
refused by the runtime and costs one fee), so the amount paid is the smaller of the two.

Can the payer pay? Asked once, before anything is sent, by every command that spends:
``deploy``, ``publish``, ``seal``, ``close``, ``close-run`` and ``run --on-chain`` each know
what their plan costs before their first transaction; each calls ``require_funds`` with
that amount, dry runs included, so a payer who cannot pay learns it (and by how much) in
one line instead of by waiting for transactions that never land.
"""

import asyncio
from collections.abc import Sequence

from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain.chain.plan import NewAccount
from curta_chain.chain.rpc import RpcClient
from curta_chain.constants import (
    ACCOUNT_STORAGE_OVERHEAD,
    RENT_EXEMPTION_YEARS,
    RENT_LAMPORTS_PER_BYTE_YEAR,
)
from curta_chain.errors import AccountError, InsufficientFundsError, NodeMismatchError
from curta_chain.reporting import sol


def rent_exempt_minimum(size: int) -> int:
    """The lamports that make an account of ``size`` data bytes rent-exempt."""
    return (ACCOUNT_STORAGE_OVERHEAD + size) * RENT_LAMPORTS_PER_BYTE_YEAR * RENT_EXEMPTION_YEARS


async def checked_rent(client: RpcClient, size: int) -> int:
    """The rent for ``size`` bytes: ours, checked against the node's answer.

    Raises:
        NodeMismatchError: the node asks for more than the runtime's formula gives.
    """
    ours = rent_exempt_minimum(size)
    theirs = await client.rent_exempt_minimum(size)
    if theirs > ours:
        raise NodeMismatchError(
            f"{client.url} asks {theirs:,} lamports to make {size:,} bytes rent-exempt; the "
            f"runtime's formula gives {ours:,}: refusing a node that asks for more; "
            f"nothing was sent"
        )
    return min(ours, theirs)


async def checked_rents(client: RpcClient, sizes: Sequence[int]) -> list[int]:
    """``checked_rent`` of each size, asked together."""
    return list(await asyncio.gather(*(checked_rent(client, size) for size in sizes)))


async def plan_new_accounts(
    client: RpcClient, sizes: Sequence[tuple[Pubkey, int]]
) -> tuple[NewAccount, ...]:
    """Plan the creation of each (address, size): its checked rent, what it already holds.

    An address that holds lamports and no data (someone sent them) is still ours to use;
    one that holds data or belongs to a program is not.

    Raises:
        AccountError: an address already holds an account.
        NodeMismatchError: the node asks more rent than the runtime's formula gives.
    """
    addresses = [address for address, _ in sizes]
    infos, rents = await asyncio.gather(
        client.accounts(addresses, head=1), checked_rents(client, [size for _, size in sizes])
    )
    out = []
    for (address, size), info, rent in zip(sizes, infos, rents, strict=True):
        existing = 0
        if info is not None:
            if info.owner != SYSTEM_PROGRAM_ID or info.data:
                raise AccountError(
                    f"{address} already holds an account owned by {info.owner}; "
                    f"it cannot be created"
                )
            existing = info.lamports
        out.append(NewAccount(address, size, rent, existing))
    return tuple(out)


async def require_funds(client: RpcClient, payer: Pubkey, needed: int, doing: str) -> int:
    """Return the payer's balance, which must be at least ``needed`` lamports.

    Args:
        client: the cluster's RPC client.
        payer: who pays the fees and the rent.
        needed: what the plan costs in lamports, rent and fees.
        doing: what needs them, as in "publishing costs" or "deploying needs".

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

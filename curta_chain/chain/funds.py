"""Can the payer pay? Asked once, before anything is sent, by every command that spends.

``deploy``, ``publish``, ``seal``, ``close``, ``close-run`` and ``run --on-chain`` each know
what their plan costs before their first transaction; each calls ``require_funds`` with
that amount, dry runs included, so a payer who cannot pay learns it (and by how much) in
one line instead of by waiting for transactions that never land.
"""

from solders.pubkey import Pubkey

from curta_chain.chain.rpc import RpcClient
from curta_chain.errors import InsufficientFundsError
from curta_chain.reporting import sol


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

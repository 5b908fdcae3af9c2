"""close: take an unsealed model apart, one weight account per transaction, rent back.

Every transaction names the model and at most one weight account, so closing stays within a
validator's loaded-data limit whatever the model's size. The weight accounts go first (in
one batch: they do not depend on each other), then the model once none is bound. A rerun
after an interruption reads the model and closes what is left.

The program pays each closed account's lamports to the authority. With a ``recipient``
(``close --recipient``), each transaction also passes on exactly what the account it closes
held, so every transaction stands alone: an interrupted close has sent the recipient all
it closed, and the rerun the rest.
"""

import time
from dataclasses import dataclass

from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from curta_chain.chain.accounts import ZERO_KEY, require_model
from curta_chain.chain.context import ChainContext
from curta_chain.chain.fees import estimate_fees
from curta_chain.chain.specs import TxSpec
from curta_chain.errors import AccountError
from curta_chain.program import ModelAccount, ModelState
from curta_chain.reporting import counted


def resume_hint(address: Pubkey) -> str:
    """What a give-up tells the user: closing resumes from what the model still binds."""
    return f"rerun `curta-chain close {address}` to resume"


@dataclass(frozen=True)
class CloseResult:
    """What a close did: the accounts it closed, their lamports, and who received them."""

    model: Pubkey
    closed_accounts: int
    lamports_closed: int
    """What the closed accounts held, all of which went to ``recipient``."""
    recipient: Pubkey
    lamports_returned: int
    """The recipient's balance change: ``lamports_closed``, less the fees it paid."""
    transactions: int
    seconds: float
    last_signature: str | None = None

    def to_json(self) -> dict[str, object]:
        """The result as JSON values."""
        return {
            "model": str(self.model),
            "closed_accounts": self.closed_accounts,
            "lamports_closed": self.lamports_closed,
            "recipient": str(self.recipient),
            "lamports_returned": self.lamports_returned,
            "transactions": self.transactions,
            "seconds": round(self.seconds, 3),
            "signature": self.last_signature,
        }


def _check_closable(address: Pubkey, model: ModelAccount, authority: Pubkey) -> None:
    if model.state == ModelState.SEALED:
        raise AccountError(f"model {address} is sealed: a sealed model never changes")
    if model.authority != authority:
        raise AccountError(f"model {address} belongs to {model.authority}; pass its keypair")


async def close_cost(ctx: ChainContext, address: Pubkey) -> int:
    """The fees closing the model from where it stands costs (``ctx.payer`` pays them).

    Raises:
        AccountError: there is no curta model at ``address``, or ``ctx.authority`` cannot
            close it (it is sealed, or another's): said before any cost is.
    """
    model = await require_model(ctx.client, ctx.program_id, address)
    _check_closable(address, model, ctx.authority.pubkey())
    weights, last = ctx.transactions.closes(address, _bound(model))
    kinds = [(last, 1)] + ([(weights[0], len(weights))] if weights else [])
    return await estimate_fees(ctx.client, ctx.payer.pubkey(), kinds, ctx.reporter)


async def close(ctx: ChainContext, address: Pubkey, recipient: Pubkey | None = None) -> CloseResult:
    """Close every weight account still bound to ``address``, then the model itself.

    ``recipient`` (default: the authority) receives the lamports; ``ctx.payer`` pays the fees.

    Raises:
        AccountError: the model is missing, not a model, sealed, or not ``ctx.authority``'s.
        ProgramError: the program refused a close (named from the IDL).
    """
    client, authority = ctx.client, ctx.authority.pubkey()
    sender = ctx.sender_for(resume_hint(address))
    recipient = recipient or authority
    started = time.monotonic()
    model = await require_model(client, ctx.program_id, address)
    _check_closable(address, model, authority)
    bound = _bound(model)
    infos = await client.accounts([address, *(account for _, account in bound)], head=0)
    held = [info.lamports if info is not None else 0 for info in infos]
    before = await client.balance(recipient)
    weights, last = ctx.transactions.closes(address, bound)
    if recipient != authority:
        weights = [
            _passing_on(spec, authority, recipient, lamports)
            for spec, lamports in zip(weights, held[1:], strict=True)
        ]
        last = _passing_on(last, authority, recipient, held[0])
    landed = 0
    if weights:
        sent = await sender.send(
            weights, what=f"{counted(len(weights), 'weight account')} to close"
        )
        landed += sent.confirmed
        ctx.reporter.line(f"closed {counted(len(weights), 'weight account')} of {address}")
    sent = await sender.send([last], what="the model's close")
    landed += sent.confirmed
    after = await client.balance(recipient)
    return CloseResult(
        model=address,
        closed_accounts=len(weights) + 1,
        lamports_closed=sum(held),
        recipient=recipient,
        lamports_returned=after - before,
        transactions=landed,
        seconds=time.monotonic() - started,
        last_signature=sent.last_signature or None,
    )


def _bound(model: ModelAccount) -> list[tuple[int, Pubkey]]:
    return [
        (i, slot.weight_account)
        for i, slot in enumerate(model.sections)
        if slot.weight_account != ZERO_KEY
    ]


def _passing_on(spec: TxSpec, authority: Pubkey, recipient: Pubkey, lamports: int) -> TxSpec:
    """``spec``, then a transfer of what its close paid the authority on to ``recipient``."""
    move = transfer(TransferParams(from_pubkey=authority, to_pubkey=recipient, lamports=lamports))
    return TxSpec((*spec.instructions, move), spec.signers, spec.payload_bytes)

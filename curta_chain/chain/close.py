"""close: take an unsealed model apart, one weight account per transaction, rent back.

Every transaction names the model and at most one weight account, so closing stays within a
validator's loaded-data limit whatever the model's size. The weight accounts go first (in
one batch: they do not depend on each other), then the model once none is bound. A rerun
after an interruption reads the model and closes what is left.
"""

import time
from dataclasses import dataclass

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.chain import specs
from curta_chain.chain.accounts import ZERO_KEY, require_model
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.sender import Sender
from curta_chain.errors import AccountError
from curta_chain.program import ModelState
from curta_chain.reporting import NullReporter, Reporter


def resume_hint(address: Pubkey) -> str:
    """What a give-up tells the user: closing resumes from what the model still binds."""
    return f"rerun `curta-chain close {address}` to resume"


@dataclass(frozen=True)
class CloseResult:
    """What a close did: the accounts it closed and what the authority got back, net of fees."""

    model: Pubkey
    closed_accounts: int
    lamports_returned: int
    transactions: int
    seconds: float

    def to_json(self) -> dict[str, object]:
        """The result as JSON values."""
        return {
            "model": str(self.model),
            "closed_accounts": self.closed_accounts,
            "lamports_returned": self.lamports_returned,
            "transactions": self.transactions,
            "seconds": round(self.seconds, 3),
        }


async def close(
    client: RpcClient,
    program_id: Pubkey,
    authority: Keypair,
    address: Pubkey,
    budget: specs.Budget | None = None,
    reporter: Reporter | None = None,
    sender: Sender | None = None,
) -> CloseResult:
    """Close every weight account still bound to ``address``, then the model itself.

    Raises:
        AccountError: the model is missing, not a model, sealed, or not ``authority``'s.
        ProgramError: the program refused a close (named from the IDL).
    """
    budget = budget or specs.Budget()
    reporter = reporter or NullReporter()
    sender = sender or Sender(client, authority, resume_hint=resume_hint(address))
    started = time.monotonic()
    model = await require_model(client, program_id, address)
    if model.state == ModelState.SEALED:
        raise AccountError(f"model {address} is sealed: a sealed model never changes")
    if model.authority != authority.pubkey():
        raise AccountError(f"model {address} belongs to {model.authority}; pass its keypair")
    bound = [
        (i, slot.weight_account)
        for i, slot in enumerate(model.sections)
        if slot.weight_account != ZERO_KEY
    ]
    before = await client.balance(authority.pubkey())
    confirmed_before = sender.stats.confirmed
    weights, last = specs.close_specs(program_id, authority.pubkey(), address, bound, budget)
    if weights:
        await sender.send(weights)
        reporter.line(f"closed {len(weights)} weight accounts of {address}")
    await sender.send([last])
    after = await client.balance(authority.pubkey())
    return CloseResult(
        model=address,
        closed_accounts=len(weights) + 1,
        lamports_returned=after - before,
        transactions=sender.stats.confirmed - confirmed_before,
        seconds=time.monotonic() - started,
    )

"""Run accounts: listing them, and closing one, whatever state it is in.

A run account holds its rent until its opener closes it (``closeRun``, any state: a
finished run, one a kill left half-done, one never stepped). ``find_runs`` lists the
program's runs (of one opener, if given) from one getProgramAccounts call that reads only
each run's header; ``close_run`` closes one for its opener, the rent back to them.
"""

import base64
import time
from dataclasses import dataclass

from solders.pubkey import Pubkey

from curta_chain.chain.context import ChainContext
from curta_chain.chain.effects import closed
from curta_chain.chain.fees import estimate_fees
from curta_chain.chain.rpc import RpcClient
from curta_chain.errors import AccountError
from curta_chain.onchain.run_account import RUN_HEADER_SIZE, FinishReason, RunAccount, RunState
from curta_chain.program.idl import DISCRIMINATOR_SIZE, coder

RUN_OPENER_OFFSET = DISCRIMINATOR_SIZE + 32
"""Where a run account's opener starts: after the discriminator and the model (32 bytes)."""


def resume_hint(run: Pubkey) -> str:
    """What a give-up tells the user: closing a run is one transaction, safe to resend."""
    return f"rerun `curta-chain close-run {run}`"


@dataclass(frozen=True)
class RunSummary:
    """One run account as a list shows it."""

    address: Pubkey
    header: RunAccount
    lamports: int

    @property
    def state(self) -> str:
        """The state as a list shows it: tokenizing, running, or how the run finished."""
        h = self.header
        if h.state == RunState.FINISHED:
            return f"finished: {h.finish_reason.name.lower().replace('_', ' ')}"
        return h.state.name.lower()

    @property
    def generated(self) -> int:
        """Tokens generated so far (the prompt's excluded)."""
        return max(0, self.header.token_count - self.header.prompt_tokens)

    def to_json(self) -> dict[str, object]:
        """The run as JSON values."""
        h = self.header
        return {
            "run": str(self.address),
            "model": str(h.model),
            "opener": str(h.opener),
            "state": h.state.name.lower(),
            "finish": None
            if h.finish_reason == FinishReason.NONE
            else h.finish_reason.name.lower(),
            "capacity": h.capacity,
            "prompt_tokens": h.prompt_tokens,
            "tokens": h.token_count,
            "generated_tokens": self.generated,
            "steps": h.steps,
            "rent_lamports": self.lamports,
        }


async def find_runs(
    client: RpcClient, program_id: Pubkey, opener: Pubkey | None = None
) -> list[RunSummary]:
    """Every run of ``program_id`` (of ``opener`` only, if given), sorted by address.

    Filtered on the node by discriminator and opener; only each header is read.
    """
    discriminator = coder().account_discriminator("Run")
    filters: list[dict[str, object]] = [
        {
            "memcmp": {
                "offset": 0,
                "bytes": base64.b64encode(discriminator).decode(),
                "encoding": "base64",
            }
        }
    ]
    if opener is not None:
        filters.append({"memcmp": {"offset": RUN_OPENER_OFFSET, "bytes": str(opener)}})
    found = []
    for address, info in await client.program_accounts(program_id, filters, RUN_HEADER_SIZE):
        try:
            found.append(RunSummary(address, RunAccount.from_bytes(info.data), info.lamports))
        except AccountError:
            continue  # the filters matched bytes that do not decode: not a run after all
    return sorted(found, key=lambda run: str(run.address))


async def read_run(client: RpcClient, program_id: Pubkey, address: Pubkey) -> RunSummary:
    """The run at ``address``.

    Raises:
        AccountError: there is no account there, or it is not a run of the program.
    """
    (info,) = await client.accounts([address], head=RUN_HEADER_SIZE)
    if info is None:
        raise AccountError(f"run {address}: no such account (closed already?)")
    if info.owner != program_id:
        raise AccountError(f"{address} is owned by {info.owner}, not the program: not a run")
    return RunSummary(address, RunAccount.from_bytes(info.data), info.lamports)


@dataclass(frozen=True)
class CloseRunResult:
    """What closing a run did."""

    run: RunSummary
    lamports_returned: int
    """The run account's lamports, now the opener's."""
    transactions: int
    seconds: float
    signature: str | None

    def to_json(self) -> dict[str, object]:
        """The result as JSON values."""
        return {
            **self.run.to_json(),
            "closed": True,
            "lamports_returned": self.lamports_returned,
            "transactions": self.transactions,
            "seconds": round(self.seconds, 3),
            "signature": self.signature,
        }


async def close_run_cost(ctx: ChainContext, address: Pubkey) -> tuple[RunSummary, int]:
    """The run to close and the fee its closing costs (``ctx.payer`` pays it).

    Raises:
        AccountError: no run there, or ``ctx.payer`` is not its opener.
    """
    run = await read_run(ctx.client, ctx.program_id, address)
    _check_opener(run, ctx)
    fee = await estimate_fees(
        ctx.client, ctx.payer.pubkey(), [(ctx.transactions.close_run(address), 1)]
    )
    return run, fee


async def close_run(ctx: ChainContext, address: Pubkey) -> CloseRunResult:
    """Close the run at ``address`` whatever its state; its lamports go to its opener.

    The opener (``ctx.payer``, ``-k``) signs and pays the fee.

    Raises:
        AccountError: no run there, or ``ctx.payer`` is not its opener (nothing is sent).
        ProgramError: the program refused the close (named from the IDL).
    """
    started = time.monotonic()
    run = await read_run(ctx.client, ctx.program_id, address)
    _check_opener(run, ctx)
    sender = ctx.sender_for(resume_hint(address))
    gone = closed(ctx.client, [address])
    sent = await sender.send(
        [ctx.transactions.close_run(address)], what="the run's close", effects=gone
    )
    return CloseRunResult(
        run=run,
        lamports_returned=run.lamports,
        transactions=sent.confirmed,
        seconds=time.monotonic() - started,
        signature=sent.last_signature or None,
    )


def _check_opener(run: RunSummary, ctx: ChainContext) -> None:
    if run.header.opener != ctx.payer.pubkey():
        raise AccountError(
            f"run {run.address} was opened by {run.header.opener}: only its opener closes it "
            f"(pass its keypair with -k); nothing was sent"
        )

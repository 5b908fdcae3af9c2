"""The run's pipeline: its first step simulated before any fee, its refusals counted.

Against the localnet in this process (``node``), on a tiny sealed model: the simulation of
a step the program refuses raises the program's error and spends nothing; one refused
only because the run has finished is left to the round; and the run's JSON counts the
steps of its own the program refused (none when nobody else cranks).
"""

import pytest
from inprocess import published
from solders.pubkey import Pubkey

from curta_chain.chain.accounts import require_model
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.seal import seal
from curta_chain.errors import ProgramError
from curta_chain.inference import SamplingSettings
from curta_chain.onchain.pipeline import RunFlow, simulate_step
from curta_chain.onchain.run import resume_hint, run_on_chain


@pytest.mark.asyncio
async def test_a_refused_first_step_is_found_in_simulation_before_any_fee(node, tiny):
    ctx, plan = await published(node, tiny)
    await seal(ctx, plan.model, tiny)
    result = await run_on_chain(ctx, plan.model, "Once", 2, SamplingSettings(0, 0, 0))
    assert result.refused_steps == 0 and result.to_json()["refused_step_transactions"] == 0
    account = await require_model(ctx.client, ctx.program_id, plan.model)
    flow = RunFlow(
        ctx=ctx,
        processed=RpcClient(node, "processed"),
        reader=RpcClient(node, "confirmed"),
        sender=ctx.sender_for(resume_hint(plan.model)),
        model=plan.model,
        model_account=account,
        address=result.run,
        on_piece=lambda piece: None,
    )
    weights = [section.weight_account for section in account.sections]
    payer = ctx.payer.pubkey()
    before = await flow.processed.balance(payer)
    # The run has finished: a step would be refused with RunFinished, which the round settles.
    await simulate_step(flow, ctx.transactions.step(result.run, plan.model, weights, 7))
    # A step naming another model than the run's: the program refuses it, nothing is spent.
    stranger = ctx.transactions.step(result.run, Pubkey.new_unique(), weights, 8)
    with pytest.raises(ProgramError, match="WrongAccountOwner"):
        await simulate_step(flow, stranger)
    assert await flow.processed.balance(payer) == before

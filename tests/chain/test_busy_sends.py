"""The sender's sends on the busy localnet, in this process: seeded losses, counted sends.

stories260K is published on the localnet's busy profile (blocks in the leader's seeded
order, half of each block taken by others, 10% of accepted transactions lost) behind a
provider whose rate is scaled down with the model: its 96 transactions at one call a
second are what the stories15M shape's 4,300 are at the profile's 50 a second, more calls
than a blockhash lives (each request here takes the time its calls take at that rate; the
client knows the rate, as once it learnt it from 429s). Signing only what the rate lets go
out and resending only what stays unseen past the cluster's learnt time to land, the
sender sends at most 1.5 times per planned transaction, signs none again and spends the
plan to the lamport. (Signing the whole window at once, it let every blockhash expire and
gave up.) Time is the node's manual clock, the sender's waits moving it on: nothing here
is timed.
"""

import pytest
from inprocess import LocalnetTransport

from curta_chain.artifact import Artifact
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.localnet import BusyOptions

SENDS_PER_PLANNED = 1.5
RPS = 1
"""Calls a second: stories260K's transactions over it as the stories15M shape's over 50."""


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.asyncio
async def test_a_busy_publish_sends_at_most_one_and_a_half_times_its_plan(
    seed: int, stories260k: Artifact
):
    node = LocalnetTransport(busy=BusyOptions.busy(seed), rps=RPS)
    try:
        ctx = node.context(node.fund())
        ctx.client.limits.rps = float(RPS)
        plan = await plan_publish(ctx, stories260k)
        planned = int(plan.create_model) + len(plan.create_sections) + len(plan.writes)
        before = await ctx.client.balance(ctx.payer.pubkey())
        sends = node.methods.count("sendTransaction")
        result = await publish(ctx, stories260k, plan)
        sends = node.methods.count("sendTransaction") - sends
        assert result.transactions == planned
        # The seed's losses cost resends, but few.
        assert planned < sends <= SENDS_PER_PLANNED * planned
        # Nothing signed again, nothing landed twice: the plan's cost exactly.
        assert before - await ctx.client.balance(ctx.payer.pubkey()) == plan.cost_lamports
    finally:
        node.localnet.close()

"""seal and run --on-chain on the busy localnet (in this process): each behaviour once.

Blocks in the leader's seeded order, 30 % of accepted transactions lost, the scheduler's
per-account limits small enough that a round of steps spans several blocks, and (over
HTTP) a provider's limits on calls a second and batch size:
each time the real seal and run finish, the mirror having checked every state it saw, the
chain holds the artifact's hash and the off-chain core's tokens, and the payer spent what
the plan said (plus one fee for each duplicate a resend landed: none here, for nothing is
resent before it expires).

The writes go as v1 transactions (the localnet has them active); one behaviour runs again
with legacy writes.
"""

from collections.abc import Iterator

import pytest
from inprocess import PROGRAM_ID, LocalnetTransport, published
from solders.keypair import Keypair

from curta_chain.artifact import Artifact
from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.chain.context import ChainContext
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.seal import seal, seal_cost
from curta_chain.chain.sender import wait_for_signature
from curta_chain.chain.specs import Budget
from curta_chain.chain.transport import HttpTransport
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, generate, plan_run
from curta_chain.localnet import BusyOptions, start_in_thread
from curta_chain.onchain.run import run_on_chain
from curta_chain.program import ModelState

SEVERAL_CHUNKS = ModelConfig(
    dim=64, hidden_dim=256, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=259, seq_len=16
)
"""A model whose layer sections take two 64 KiB chunks each."""
BEHAVIOURS = {
    "blocks in the leader's order": (BusyOptions(blocks=True, seed=3), "auto"),
    "30% lost": (BusyOptions(blocks=True, seed=4, drop_rate=0.3), "auto"),
    "per-account limits": (
        BusyOptions(blocks=True, seed=5, account_cu_limit=3_000_000, account_write_limit=3),
        "auto",
    ),
    "30% lost, legacy writes": (BusyOptions(blocks=True, seed=4, drop_rate=0.3), "legacy"),
}


@pytest.fixture(scope="module")
def several() -> Artifact:
    return synthetic_artifact(SEVERAL_CHUNKS, seed=2)


@pytest.fixture(params=list(BEHAVIOURS))
def busy(request) -> Iterator[tuple[LocalnetTransport, str]]:
    options, tx_version = BEHAVIOURS[request.param]
    node = LocalnetTransport(busy=options)
    try:
        yield node, tx_version
    finally:
        node.localnet.close()


@pytest.mark.asyncio
async def test_seal_and_run_finish_as_on_a_clean_chain(busy, several):
    node, tx_version = busy
    ctx, plan = await published(node, several, Budget(tx_version=tx_version))
    assert plan.tx_version == ("legacy" if tx_version == "legacy" else "v1")
    payer = ctx.payer.pubkey()
    chunks, fee = await seal_cost(ctx, plan.model)
    before = await ctx.client.balance(payer)
    sealed = await seal(ctx, plan.model, several)
    assert sealed.state == ModelState.SEALED and sealed.running_hash == several.weights_hash()
    assert sealed.transactions == chunks
    assert before - await ctx.client.balance(payer) == fee
    settings = SamplingSettings(0, 0, 0)
    result = await run_on_chain(ctx, plan.model, "Once", 6, settings, close=True)
    model, tokenizer = IntModel.from_artifact(several), Tokenizer.from_artifact(several)
    assert result.generated == list(
        generate(model, plan_run(model, tokenizer, "Once", 6), settings)
    )
    assert result.closed and result.transactions == len(result.step_units) + 2
    assert len(result.step_units) == result.steps


@pytest.mark.asyncio
async def test_behind_a_provider_s_limits_seal_and_run_finish(tiny):
    # Over HTTP (the limits are the server's): 40 calls a second, batches of at most 4.
    handle = start_in_thread(busy=BusyOptions(blocks=True, seed=6, rps=40, max_batch=4))
    client = RpcClient(HttpTransport(handle.url), "confirmed")
    try:
        authority = Keypair()
        await wait_for_signature(client, await client.request_airdrop(authority.pubkey(), 10**11))
        ctx = ChainContext(client, PROGRAM_ID, authority)
        plan = await plan_publish(ctx, tiny)
        await publish(ctx, tiny, plan)
        sealed = await seal(ctx, plan.model, tiny)
        assert sealed.state == ModelState.SEALED
        settings = SamplingSettings(0, 0, 0)
        result = await run_on_chain(ctx, plan.model, "Once", 4, settings)
        model, tokenizer = IntModel.from_artifact(tiny), Tokenizer.from_artifact(tiny)
        assert result.generated == list(
            generate(model, plan_run(model, tokenizer, "Once", 4), settings)
        )
        assert client.limits.batch <= 4  # learnt from the refusals
    finally:
        await client.aclose()
        handle.stop()

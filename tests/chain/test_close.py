"""close, in-process: every lamport of rent back, to the authority or a recipient.

A close cut short is finished by a rerun; a sealed model, or another authority's, is
refused before anything is sent.
"""

import pytest
from inprocess import published
from solders.keypair import Keypair

from curta_chain.chain.close import close, close_cost
from curta_chain.chain.seal import seal
from curta_chain.errors import AccountError


@pytest.mark.asyncio
async def test_close_returns_all_the_rent_to_the_authority(node, tiny):
    ctx, plan = await published(node, tiny)
    me = ctx.authority.pubkey()
    assert await close_cost(ctx, plan.model) == 3 * 5_000
    before = await ctx.client.balance(me)
    result = await close(ctx, plan.model)
    assert (result.closed_accounts, result.transactions, result.recipient) == (3, 3, me)
    assert result.lamports_closed == plan.rent_lamports
    assert result.lamports_returned == plan.rent_lamports - 3 * 5_000
    assert await ctx.client.balance(me) == before + result.lamports_returned
    accounts = [plan.model, *plan.weight_accounts]
    assert await ctx.client.accounts(accounts) == [None] * 3


@pytest.mark.asyncio
async def test_a_recipient_gets_what_each_closed_account_held(node, tiny):
    ctx, plan = await published(node, tiny)
    recipient = Keypair().pubkey()
    result = await close(ctx, plan.model, recipient)
    assert result.recipient == recipient
    assert await ctx.client.balance(recipient) == plan.rent_lamports == result.lamports_returned


@pytest.mark.asyncio
async def test_a_close_cut_short_is_finished_by_a_rerun(node, tiny):
    ctx, plan = await published(node, tiny)
    (first,), _ = ctx.transactions.closes(plan.model, [(0, plan.weight_accounts[0])])
    await ctx.sender_for("").send([first])
    result = await close(ctx, plan.model)
    assert (result.closed_accounts, result.transactions) == (2, 2)
    assert await ctx.client.account(plan.model) is None


@pytest.mark.asyncio
async def test_a_sealed_model_or_another_authority_s_is_refused(node, tiny):
    ctx, plan = await published(node, tiny)
    stranger = node.context(node.fund())
    with pytest.raises(AccountError, match=f"belongs to {ctx.authority.pubkey()}; pass its"):
        await close(stranger, plan.model)
    await seal(ctx, plan.model, tiny)
    sent = node.methods.count("sendTransaction")
    with pytest.raises(AccountError, match="is sealed: a sealed model never changes"):
        await close(ctx, plan.model)
    assert node.methods.count("sendTransaction") == sent

"""publish: the plan from a chain state built by hand (pure), then publishing in-process.

``plan_from_state`` decides everything from what ``read_state`` read: each state a model can
be in is written out here. The in-process runs check what reading and sending add: a rerun
sends nothing, a separate fee payer pays everything, a pre-funded address is still used, a
short payer is told by how much.
"""

from dataclasses import replace

import pytest
from inprocess import PROGRAM_ID
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import AllocateParams, TransferParams, allocate, transfer

from curta_chain import program
from curta_chain.artifact import Artifact
from curta_chain.chain.keys import ClusterScope, model_keypair
from curta_chain.chain.plan import NewAccount, PublishState, WritePiece, plan_from_state
from curta_chain.chain.publish import check_funds, plan_publish, publish, read_state
from curta_chain.chain.specs import Budget, TxSpec
from curta_chain.constants import WEIGHT_HEADER_SIZE
from curta_chain.errors import AccountError, InsufficientFundsError
from curta_chain.program import ModelAccount, ModelState, SectionSlot

SCOPE = ClusterScope("LocaLGenesis1111111111111111111111111111111", PROGRAM_ID)
AUTHORITY = Keypair().pubkey()
PAYLOAD = 1_000


def state(artifact: Artifact, model: ModelAccount | None = None, **changes) -> PublishState:
    """A chain state for ``artifact``: nothing there, or ``model`` at the model's address."""
    derived = tuple(Keypair().pubkey() for _ in artifact.sections)
    address = Keypair().pubkey()
    funding = (
        NewAccount(address, program.MODEL_ACCOUNT_SIZE, 1),
        *(
            NewAccount(k, WEIGHT_HEADER_SIZE + len(s), 2)
            for k, s in zip(derived, artifact.sections, strict=True)
        ),
    )
    fields = dict(
        scope=SCOPE,
        model_address=address,
        derived_weights=derived,
        model=model,
        sections=(None,) * len(artifact.sections),
        frozen=(),
        funding=funding,
    )
    return PublishState(**{**fields, **changes})


def model_of(artifact: Artifact, state_: ModelState, bound: int | None = None) -> ModelAccount:
    count = len(artifact.sections)
    bound = count if bound is None else bound
    slots = tuple(
        SectionSlot(Keypair().pubkey() if i < bound else Pubkey.default(), len(s))
        for i, s in enumerate(artifact.sections)
    )
    return ModelAccount(
        authority=AUTHORITY,
        declared_hash=artifact.weights_hash(),
        running_hash=bytes(32),
        state=state_,
        section_count=count,
        bound_count=bound,
        frozen_count=count if state_ == ModelState.FAILED else 0,
        cursor_section=0,
        cursor_offset=0,
        chunks_hashed=0,
        sections=slots,
        seal_slot=0,
    )


def test_nothing_on_chain_plans_every_account_and_every_nonzero_piece(tiny):
    plan = plan_from_state(state(tiny), tiny, AUTHORITY, PAYLOAD)
    assert plan.state == "new" and plan.create_model
    assert plan.create_sections == (0, 1) and plan.reopen_sections == ()
    assert [a.size for a in plan.new_accounts] == [
        program.MODEL_ACCOUNT_SIZE,
        *(WEIGHT_HEADER_SIZE + len(s) for s in tiny.sections),
    ]
    assert plan.rent_lamports == 1 + 2 + 2 and plan.fee_lamports == 0
    nonzero = sum(any(s[i : i + PAYLOAD]) for s in tiny.sections for i in range(0, len(s), PAYLOAD))
    assert len(plan.writes) == nonzero
    assert plan.writes[0].section == 0 and plan.writes[1].section == 1  # interleaved


def test_an_upload_under_way_rewrites_only_what_differs_and_binds_what_is_unbound(tiny):
    model = model_of(tiny, ModelState.UPLOADING, bound=1)
    chain = bytearray(tiny.sections[0])
    chain[2_500] ^= 1
    plan = plan_from_state(
        state(tiny, model, sections=(bytes(chain), None)), tiny, AUTHORITY, PAYLOAD
    )
    assert (plan.state, plan.create_model, plan.create_sections) == ("uploading", False, (1,))
    assert plan.weight_accounts[0] == model.sections[0].weight_account
    assert plan.new_accounts[0].size == WEIGHT_HEADER_SIZE + len(tiny.sections[1])
    assert plan.writes[0] == WritePiece(0, 2_000, PAYLOAD)
    assert all(p.section == 1 for p in plan.writes[1:])


def test_a_failed_model_is_reopened_where_still_frozen(tiny):
    model = model_of(tiny, ModelState.FAILED)
    sections = tuple(bytes(s) for s in tiny.sections)
    plan = plan_from_state(
        state(tiny, model, sections=sections, frozen=(1,)), tiny, AUTHORITY, PAYLOAD
    )
    assert (plan.state, plan.reopen_sections, plan.writes, plan.new_accounts) == (
        "failed",
        (1,),
        (),
        (),
    )
    assert plan.transactions == 1


@pytest.mark.parametrize("model_state", [ModelState.SEALING, ModelState.SEALED])
def test_a_sealing_or_sealed_model_takes_no_writes(tiny, model_state):
    plan = plan_from_state(state(tiny, model_of(tiny, model_state)), tiny, AUTHORITY, PAYLOAD)
    assert plan.state == model_state.name.lower() and plan.transactions == 0


def test_a_model_being_closed_or_not_this_artifact_s_is_refused(tiny):
    closing = state(tiny, model_of(tiny, ModelState.CLOSING))
    with pytest.raises(AccountError, match="is being closed: finish `curta-chain close"):
        plan_from_state(closing, tiny, AUTHORITY, PAYLOAD)
    other = Keypair().pubkey()
    with pytest.raises(AccountError, match=f"belongs to {AUTHORITY}, not to {other}"):
        plan_from_state(state(tiny, model_of(tiny, ModelState.UPLOADING)), tiny, other, PAYLOAD)
    declared = replace(model_of(tiny, ModelState.UPLOADING), declared_hash=bytes(32))
    with pytest.raises(AccountError, match=f"declares hash {bytes(32).hex()}, the artifact's"):
        plan_from_state(state(tiny, declared), tiny, AUTHORITY, PAYLOAD)
    model = model_of(tiny, ModelState.UPLOADING)
    shorter = replace(model, sections=(model.sections[0], SectionSlot(Pubkey.default(), 5)))
    with pytest.raises(AccountError, match=r"has section lengths \[44312, 5\], the artifact"):
        plan_from_state(state(tiny, shorter), tiny, AUTHORITY, PAYLOAD)


# -- in-process ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_publish_lands_the_plan_and_a_rerun_plans_nothing(node, tiny):
    ctx = node.context(node.fund())
    plan = await plan_publish(ctx, tiny)
    assert plan.fee_lamports == 5_000 * (2 + 2 * 2 + len(plan.writes))  # two signers each create
    result = await publish(ctx, tiny, plan)
    assert result.transactions == plan.transactions
    assert result.signatures.create_model and len(result.signatures.bind) == 2
    assert result.signatures.writes == len(plan.writes)
    again = await plan_publish(ctx, tiny)
    assert (again.model, again.state, again.transactions) == (plan.model, "uploading", 0)
    read = await read_state(ctx, tiny)
    assert read.sections == tuple(bytes(s) for s in tiny.sections)
    assert read.funding == ()


@pytest.mark.asyncio
async def test_a_separate_fee_payer_pays_the_rent_and_fees_the_authority_signs(node, tiny):
    authority, payer = node.fund(), node.fund()
    ctx = node.context(authority, fee_payer=payer)
    assert ctx.budget.separate_fee_payer
    plan = await plan_publish(ctx, tiny)
    # v1 writes (the localnet has them): a key and a signature less room, as in legacy.
    assert plan.payload_per_write == Budget(separate_fee_payer=True).write_payload("v1")
    assert plan.payload_per_write == Budget().write_payload("v1") - 96
    balance = ctx.client.balance
    before = await balance(authority.pubkey()), await balance(payer.pubkey())
    await publish(ctx, tiny, plan)
    assert await balance(authority.pubkey()) == before[0]
    assert await balance(payer.pubkey()) == before[1] - plan.cost_lamports


@pytest.mark.asyncio
async def test_an_address_someone_funded_is_allocated_and_topped_up(node, tiny):
    ctx = node.context(node.fund())
    model = (await plan_publish(ctx, tiny)).model
    node.localnet.airdrop(model, 1_000_000)  # anyone can send lamports to an address
    plan = await plan_publish(ctx, tiny)
    (funded,) = plan.prefunded
    assert (funded.address, funded.existing) == (model, 1_000_000)
    await publish(ctx, tiny, plan)
    info = await ctx.client.account(model)
    assert info is not None and info.owner == PROGRAM_ID and info.lamports == funded.rent


@pytest.mark.asyncio
async def test_a_payer_short_of_the_cost_is_told_by_how_much(node, tiny):
    ctx = node.context(node.fund(0.001))
    plan = await plan_publish(ctx, tiny)
    with pytest.raises(InsufficientFundsError) as short:
        await check_funds(ctx, plan)
    shortfall = (plan.cost_lamports - 1_000_000) / 10**9
    assert str(short.value).endswith(f"(short by {shortfall:.9f} SOL); nothing was sent")


@pytest.mark.asyncio
async def test_an_account_at_a_derived_address_that_is_not_ours_is_refused(node, tiny):
    authority = node.fund()
    ctx = node.context(authority)
    plan = await plan_publish(ctx, tiny)
    squatter = model_keypair(authority, plan.weights_hash, plan.scope)  # as if it leaked
    fund = transfer(
        TransferParams(from_pubkey=authority.pubkey(), to_pubkey=squatter.pubkey(), lamports=10**7)
    )
    grab = allocate(AllocateParams(pubkey=squatter.pubkey(), space=10))
    await ctx.sender_for("").send([TxSpec((fund, grab), (squatter,))])
    with pytest.raises(AccountError, match=f"{plan.model} is not a curta model: owned by 1111"):
        await plan_publish(ctx, tiny)


@pytest.mark.asyncio
async def test_accounts_an_earlier_run_created_after_the_plan_are_read_again_not_a_failure(
    node, tiny
):
    # On a busy cluster a killed run's creation can land after the rerun read the chain:
    # the rerun's own creation is refused (AccountAlreadyInUse, one fee), and it reads again.
    authority = node.fund()
    earlier = node.context(authority)
    plan = await plan_publish(earlier, tiny)
    ctx = node.context(authority)  # the rerun: its own sender, on a later blockhash
    stale = await plan_publish(ctx, tiny)
    await publish(earlier, tiny, replace(plan, writes=plan.writes[:1]))
    node.slots(2)
    payer = ctx.payer.pubkey()
    before = await ctx.client.balance(payer)
    result = await publish(ctx, tiny, stale)
    assert not result.plan.create_model and not result.plan.create_sections
    assert len(result.plan.writes) == len(stale.writes) - 1
    assert (await plan_publish(ctx, tiny)).transactions == 0  # all of it is on chain
    refused = 2 * 5_000  # the model's creation: the payer's and the model's signatures
    assert before - await ctx.client.balance(payer) == refused + 5_000 * len(result.plan.writes)

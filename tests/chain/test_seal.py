"""seal and its mirror, against the localnet in this process.

The mirror's check is a pure function of the model account and the steps it computed:
each way a model can disagree is built by hand. Then whole seals: one that ends sealed,
one resumed from the chain, a write landing in a section the seal has not entered yet
(the mirror stops it), an upload that is not the artifact's (refused before sending).
"""

from dataclasses import replace
from typing import Any

import pytest
from inprocess import PROGRAM_ID, published
from solders.keypair import Keypair

from curta_chain import program
from curta_chain.artifact import INITIAL_HASH, hash_steps
from curta_chain.chain.plan import NewAccount
from curta_chain.chain.seal import _overtaken, seal, seal_cost
from curta_chain.chain.seal_mirror import SealMirror
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import TxSpec
from curta_chain.constants import WEIGHT_HEADER_SIZE
from curta_chain.errors import AccountError, MirrorMismatchError, ProgramError
from curta_chain.program import ModelAccount, ModelState, SectionSlot
from curta_chain.reporting import NullReporter

SECTIONS = [bytes(range(256)) * 274, b"tail" * 3]  # 70,144 and 12 bytes: chunks 2 + 1
STEPS = list(hash_steps(SECTIONS))


def model_at(done: int, **changes: Any) -> ModelAccount:
    """The model as the program leaves it after ``done`` steps of sealing ``SECTIONS``."""
    final = done == len(STEPS)
    cursor = (len(SECTIONS), 0) if final else (STEPS[done].section, STEPS[done].offset)
    fields: dict[str, Any] = dict(
        authority=Keypair().pubkey(),
        declared_hash=STEPS[-1].running,
        running_hash=STEPS[done - 1].running if done else INITIAL_HASH,
        state=ModelState.SEALED if final else ModelState.SEALING,
        section_count=2,
        bound_count=2,
        frozen_count=2,
        cursor_section=cursor[0],
        cursor_offset=cursor[1],
        chunks_hashed=done,
        sections=tuple(SectionSlot(Keypair().pubkey(), len(s)) for s in SECTIONS),
        seal_slot=7,
    )
    return ModelAccount(**{**fields, **changes})


MIRROR = SealMirror(STEPS)
ONES = b"\1" * 32


@pytest.mark.parametrize("done", range(len(STEPS) + 1))
def test_the_mirror_accepts_the_model_after_each_step(done: int):
    MIRROR.check(model_at(done))
    MIRROR.check(model_at(done), done)


def test_the_mirror_accepts_a_failed_end_when_the_hash_is_not_the_declared_one():
    MIRROR.check(model_at(3, declared_hash=bytes(32), state=ModelState.FAILED))


@pytest.mark.parametrize(
    ("model", "done", "message"),
    [
        (model_at(2), 1, "the model has hashed 2 chunks; the mirror expected 1"),
        (
            model_at(3, chunks_hashed=4),
            None,
            "the model has hashed 4 chunks; the mirror expected 3",
        ),
        (
            model_at(1, running_hash=bytes(32)),
            1,
            f"running hash after section 0 bytes 0..65536 is {bytes(32).hex()} on chain, "
            f"{STEPS[0].running.hex()} in the mirror",
        ),
        (
            model_at(0, running_hash=ONES),
            0,
            f"running hash before the first chunk is {ONES.hex()} on chain, "
            f"{INITIAL_HASH.hex()} in the mirror",
        ),
        (
            model_at(1, cursor_section=1, cursor_offset=0),
            1,
            "after section 0 bytes 0..65536 the chain's cursor is section 1 offset 0; the "
            "mirror's is section 0 offset 65536",
        ),
        (
            model_at(2, state=ModelState.SEALED),
            2,
            "the model is sealed after section 0 bytes 65536..70144; 1 chunks remain",
        ),
        (
            model_at(3, state=ModelState.FAILED),
            3,
            "after the last chunk the model is failed; the mirror says sealed",
        ),
    ],
)
def test_every_disagreement_is_a_mirror_mismatch_naming_where(model, done, message):
    with pytest.raises(MirrorMismatchError) as mismatch:
        MIRROR.check(model, done)
    assert str(mismatch.value) == message


# -- whole seals -----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_seal_ends_sealed_and_a_reused_sender_counts_only_its_own(node, tiny):
    ctx, plan = await published(node, tiny)
    assert await seal_cost(ctx, plan.model) == (3, 15_000)  # begin + one chunk per section
    result = await seal(ctx, plan.model, tiny)
    assert (result.state, result.transactions, result.chunks) == (ModelState.SEALED, 3, 2)
    assert result.running_hash == tiny.weights_hash() == result.declared_hash
    assert result.begin_signature and result.last_signature
    assert result.first_bad_chunk is None
    again = await seal(ctx, plan.model, tiny)  # the same context and sender
    assert (again.state, again.transactions, again.last_signature) == (ModelState.SEALED, 0, None)
    assert await seal_cost(ctx, plan.model) == (0, 0)


@pytest.mark.asyncio
async def test_a_seal_cut_short_resumes_from_the_chain(node, tiny):
    ctx, plan = await published(node, tiny)
    txs = ctx.transactions
    sender = ctx.sender_for("")
    await sender.send([txs.begin_sealing(plan.model)])
    await sender.send([txs.seal_step(plan.model, [plan.weight_accounts[0]], 0)])
    notes: list[str] = []
    ctx = replace(ctx, reporter=Notes(notes))
    result = await seal(ctx, plan.model, tiny)
    assert (result.state, result.transactions, result.begin_signature) == (
        ModelState.SEALED,
        1,
        None,
    )
    assert "resuming the seal at chunk 2 of 2 (section 1 offset 0)" in notes


class Notes(NullReporter):
    """A reporter that keeps the lines and notes it is told."""

    def __init__(self, into: list[str]) -> None:
        self.into = into

    def line(self, text: str) -> None:
        self.into.append(text)

    def note(self, text: str) -> None:
        self.into.append(text)


class WritesAfterTheFirstStep(Sender):
    """Lands a write into section 1 right after the seal's first step lands: the authority
    changes bytes the seal has not reached yet (it cannot know the model is sealing)."""

    write: TxSpec | None = None
    calls: int = 0

    async def send(self, specs, progress=None, commitment=None, what=None, effects=None):  # type: ignore[override]
        self.calls += 1
        if self.calls != 2 or self.write is None:  # begin, then the steps
            return await super().send(specs, progress, commitment, what, effects)
        first = await super().send(specs[:1], progress, commitment, what)
        await super().send([self.write])
        rest = await super().send(specs[1:], progress, commitment, what)
        rest.confirmed += first.confirmed
        return rest


@pytest.mark.asyncio
async def test_a_write_into_a_section_not_yet_entered_stops_the_seal_naming_it(node, tiny):
    ctx, plan = await published(node, tiny)
    sender = WritesAfterTheFirstStep(ctx.client, ctx.authority, poll_interval=0.0, clock=node.clock)
    flipped = bytes([tiny.sections[1][0] ^ 1])
    sender.write = TxSpec(
        (
            program.write_weights(
                PROGRAM_ID, ctx.authority.pubkey(), plan.weight_accounts[1], 0, flipped
            ),
        )
    )
    ctx = replace(ctx, sender=sender)
    with pytest.raises(MirrorMismatchError) as mismatch:
        await seal(ctx, plan.model, tiny)
    length = len(tiny.sections[1])
    assert str(mismatch.value).startswith(f"running hash after section 1 bytes 0..{length} is ")
    assert str(mismatch.value).endswith(" in the mirror")


@pytest.mark.asyncio
async def test_an_upload_that_is_not_the_artifact_s_is_refused_before_anything_is_sent(node, tiny):
    ctx, plan = await published(node, tiny)
    flipped = bytes([tiny.sections[0][100] ^ 1])
    write = program.write_weights(
        PROGRAM_ID, ctx.authority.pubkey(), plan.weight_accounts[0], 100, flipped
    )
    await ctx.sender_for("").send([TxSpec((write,))])
    before = node.methods.count("sendTransaction")
    with pytest.raises(AccountError) as refused:
        await seal(ctx, plan.model, tiny)
    assert f"model {plan.model} is not fully uploaded: 1 byte differs in sections [0]" in str(
        refused.value
    )
    assert node.methods.count("sendTransaction") == before
    # Told to seal anyway, it ends failed, naming the first chunk that differs.
    failed = await seal(ctx, plan.model, tiny, check_upload=False)
    assert failed.state == ModelState.FAILED
    assert failed.first_bad_chunk is not None and failed.first_bad_chunk.section == 0
    assert failed.describe().endswith(
        f"first differing chunk: section 0 bytes 0..{len(tiny.sections[0])}"
    )


@pytest.mark.asyncio
async def test_only_the_authority_begins_a_seal(node, tiny):
    ctx, plan = await published(node, tiny)
    stranger = node.context(node.fund())
    with pytest.raises(AccountError, match=r"only its authority \w+ can begin sealing"):
        await seal(stranger, plan.model)
    await ctx.sender_for("").send([ctx.transactions.begin_sealing(plan.model)])
    cranked = await seal(stranger, plan.model)  # anyone may crank a seal under way
    assert (cranked.state, cranked.transactions) == (ModelState.SEALED, 2)


@pytest.mark.asyncio
async def test_seal_refuses_what_is_not_a_model(node):
    ctx = node.context(node.fund())
    with pytest.raises(AccountError, match="no such account"):
        await seal(ctx, Keypair().pubkey())
    with pytest.raises(AccountError, match="is not a curta model: owned by 1111"):
        await seal(ctx, ctx.authority.pubkey())


@pytest.mark.asyncio
async def test_a_seal_begun_by_another_after_it_read_the_chain_carries_on(node, tiny):
    # On a busy cluster a killed run's beginning can land after the rerun read the model:
    # the rerun's own is refused (ModelNotUploading, one fee) and it cranks from the chain.
    ctx, plan = await published(node, tiny)
    other = node.context(ctx.authority).sender_for("")

    async def meanwhile() -> None:
        await other.send([ctx.transactions.begin_sealing(plan.model)])

    result = await seal(ctx, plan.model, tiny, before_sending=meanwhile)
    assert (result.state, result.begin_signature, result.transactions) == (
        ModelState.SEALED,
        None,
        2,
    )


@pytest.mark.asyncio
async def test_a_seal_finished_by_another_after_it_read_the_chain_ends_sealed(node, tiny):
    # A killed run's steps land after the rerun read the model: the rerun's are refused
    # (ModelNotSealing, a fee each), and the chain says it is sealed.
    ctx, plan = await published(node, tiny)
    txs = ctx.transactions
    await ctx.sender_for("").send([txs.begin_sealing(plan.model)])
    other = node.context(ctx.authority).sender_for("")
    weights = list(plan.weight_accounts)

    async def meanwhile() -> None:
        steps = [txs.seal_step(plan.model, weights, 0), txs.seal_step(plan.model, weights[1:], 1)]
        await other.send(steps)

    result = await seal(ctx, plan.model, tiny, before_sending=meanwhile)
    assert (result.state, result.transactions, result.last_signature) == (
        ModelState.SEALED,
        0,
        None,
    )
    assert result.running_hash == tiny.weights_hash()


async def sealing_three_sections(node):
    """A model of three zero sections (2 + 1 + 1 chunks), bound and sealing, not yet stepped.

    Returns its payer's context and the sender that set it up, the model's keypair, the
    weight accounts, the hash steps and a second sender of the same authority (another
    process cranking the seal).
    """
    sections = [bytes(70_000), bytes(10), bytes(10)]  # zeros, as new accounts hold
    steps = list(hash_steps(sections))
    ctx = node.context(node.fund())
    txs, client = ctx.transactions, ctx.client
    model, weights = Keypair(), [Keypair() for _ in sections]
    lengths = [len(s) for s in sections]
    size = program.MODEL_ACCOUNT_SIZE
    funding = NewAccount(model.pubkey(), size, await client.rent_exempt_minimum(size))
    specs = [txs.create_model(model, steps[-1].running, lengths, funding)]
    for i, (weight, length) in enumerate(zip(weights, lengths, strict=True)):
        size = WEIGHT_HEADER_SIZE + length
        funding = NewAccount(weight.pubkey(), size, await client.rent_exempt_minimum(size))
        specs.append(txs.bind(model.pubkey(), weight, i, funding))
    sender = ctx.sender_for("")
    await sender.send(specs[:1])
    await sender.send([*specs[1:], txs.begin_sealing(model.pubkey())])
    keys = [w.pubkey() for w in weights]
    return ctx, sender, model, keys, steps, node.context(ctx.authority).sender_for("")


@pytest.mark.asyncio
async def test_a_seal_overtaken_past_its_round_s_sections_goes_on_from_the_chain(node):
    # A killed run's steps can land after the rerun read the model and carry the cursor
    # past both sections the rerun's round names: its steps are refused as naming the wrong
    # weight account (WrongWeightAccount, a fee each), and it cranks on from the chain.
    ctx, _sender, model, keys, steps, other = await sealing_three_sections(node)
    txs, _client = ctx.transactions, ctx.client

    async def meanwhile() -> None:
        # Three steps: the cursor leaves sections 0 and 1 for section 2.
        await other.send([txs.seal_step(model.pubkey(), keys[:2], label) for label in (0, 1)])
        await other.send([txs.seal_step(model.pubkey(), keys[1:], 2)])

    result = await seal(ctx, model.pubkey(), before_sending=meanwhile)
    assert (result.state, result.transactions) == (ModelState.SEALED, 1)
    assert result.running_hash == steps[-1].running


@pytest.mark.asyncio
async def test_the_steps_an_overtaken_round_landed_are_counted_from_the_chain(node):
    # One step of another's lands first: of the rerun's round of three (section 0's second
    # chunk, section 1's, one more), two land and the third is refused (the cursor left both
    # sections). The refusal ends the round, yet the two landed: the chain lists them.
    ctx, sender, model, keys, _steps, other = await sealing_three_sections(node)
    txs, client = ctx.transactions, ctx.client

    async def meanwhile() -> None:
        await other.send([txs.seal_step(model.pubkey(), keys[:2], 99)])

    result = await seal(ctx, model.pubkey(), before_sending=meanwhile)
    assert (result.state, result.transactions) == (ModelState.SEALED, 3)
    # The last step: the one of the round after the refused one.
    assert result.last_signature in sender.own_signatures
    landed = await client.signature_statuses([result.last_signature], search_history=True)
    assert landed[0] is not None and landed[0].err is None


@pytest.mark.parametrize(
    ("name", "model", "first", "overtaken"),
    [
        ("WrongWeightAccount", model_at(0, cursor_section=2), 0, True),
        ("WrongWeightAccount", model_at(0, cursor_section=1), 0, False),  # still in the round
        ("WrongWeightAccount", model_at(3), 0, False),  # sealed: that refusal is another's
        ("ModelNotSealing", model_at(3), 0, True),
        ("ModelNotSealing", model_at(1), 0, False),  # still sealing: a real refusal
        ("WeightAccountFrozen", model_at(1, cursor_section=2), 0, False),
    ],
)
def test_only_a_refusal_the_chain_s_cursor_explains_is_taken_for_others_steps(
    name, model, first, overtaken
):
    assert _overtaken(ProgramError(name, name=name), model, first) is overtaken

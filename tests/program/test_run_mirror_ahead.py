"""The mirror for a pipelining client: every step left, the next steps' sections, and the
run checked at whatever step count the chain holds (issue 21's order-free runs)."""

import random
from dataclasses import asdict, astuple

import pytest
from curta_svm import CU_LIMIT, Chain, Published
from run_svm import account_data, open_ixs, step_ix, tokens_of
from solders.compute_budget import set_compute_unit_limit
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.errors import MirrorMismatchError, StepPlanError
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, generate, plan_run
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import RunState, opened_run_data

PROMPT = "Once upon a time"
TOKENS = 6


@pytest.fixture
def sealed(chain: Chain, stories260k: Artifact) -> Published:
    return chain.install_sealed(stories260k.sections)


def open_run(chain, sealed, artifact, capacity, **sampling) -> tuple[Keypair, RunMirror]:
    run = Keypair()
    ixs = open_ixs(chain, sealed, artifact, run, capacity, PROMPT.encode(), **sampling)
    assert chain.send(ixs, [run]).ok
    return run, RunMirror(artifact, account_data(chain, run.pubkey()))


def test_a_window_of_steps_in_flight_lands_in_any_order_and_each_count_is_checked(
    chain, sealed, stories260k
):
    model, tokenizer = IntModel.from_artifact(stories260k), Tokenizer.from_artifact(stories260k)
    plan = plan_run(model, tokenizer, PROMPT, TOKENS)
    settings = SamplingSettings(58_982, 58_982, 21)  # 0.9 and 0.9 in Q16: the nucleus's passes
    capacity = len(plan.prompt_ids) + TOKENS
    run, mirror = open_run(chain, sealed, stories260k, capacity, **asdict(settings))
    total = mirror.steps_to_finish()
    assert mirror.header.steps == 0  # counted on a copy
    rng = random.Random(21)
    label, logged = 0, []
    while mirror.header.state != RunState.FINISHED:
        window = mirror.plan_ahead(rng.randint(1, 8))
        sections = sorted({n for step in window for n in step.sections})
        steps = [step_ix(sealed, run.pubkey(), sections, label + i) for i in range(len(window))]
        label += len(window)
        rng.shuffle(steps)
        for i, ix in enumerate(steps):
            assert chain.send([set_compute_unit_limit(CU_LIMIT), ix]).ok
            if rng.random() < 0.5 or i == len(steps) - 1:  # the client reads now and then
                logged += mirror.observe(account_data(chain, run.pubkey()))
    assert mirror.header.steps == total
    assert account_data(chain, run.pubkey()) == mirror.data
    want = [*plan.prompt_ids, *generate(model, plan, settings)]
    assert tokens_of(mirror.data) == want
    assert [t.token for t in logged] == want[len(plan.prompt_ids) :]


def test_windows_across_the_layers_sections_pass_what_their_steps_read(chain, stories15m):
    # The stories15M shape keeps a layer per section: a step often reads two of them.
    sealed = chain.install_sealed(stories15m.sections)
    run = Keypair()
    assert chain.send(open_ixs(chain, sealed, stories15m, run, 4, [1, 300]), [run]).ok
    mirror = RunMirror(stories15m, account_data(chain, run.pubkey()))
    rng = random.Random(15)
    for start in (0, 6):
        window = mirror.plan_ahead(6)
        sections = sorted({n for step in window for n in step.sections})
        assert len(sections) >= 3
        steps = [step_ix(sealed, run.pubkey(), sections, start + i) for i in range(6)]
        for ix in rng.sample(steps, len(steps)):
            assert chain.send([set_compute_unit_limit(CU_LIMIT), ix]).ok
        mirror.observe(account_data(chain, run.pubkey()))
        assert mirror.header.steps == start + 6


def test_a_step_missing_a_section_is_refused_by_the_plan_and_the_chain(chain, sealed, stories260k):
    run, mirror = open_run(chain, sealed, stories260k, 24)
    needed = mirror.plan().sections  # the prompt's tokens, then the embedding's section
    assert needed
    with pytest.raises(StepPlanError, match=rf"^step 0 reads section {needed[0]}, which is not "):
        mirror.plan(available=())
    opened = account_data(chain, run.pubkey())
    short = chain.send([set_compute_unit_limit(CU_LIMIT), step_ix(sealed, run.pubkey(), (), 0)])
    assert not short.ok and "MissingWeightAccount" in " ".join(short.logs)
    assert account_data(chain, run.pubkey()) == opened
    assert mirror.observe(opened) == []


@pytest.mark.parametrize(
    "settings", [SamplingSettings(0, 0, 0), SamplingSettings(65_536, 0, 7)], ids=["greedy", "t1"]
)
def test_the_dry_count_of_steps_is_the_planned_one(stories260k, settings):
    prompt = [1, 300, 400, 450]
    data = opened_run_data(
        stories260k.config, Pubkey.default(), Pubkey.default(), 12, prompt, *astuple(settings)
    )
    mirror = RunMirror(stories260k, data)
    planned = mirror.plan_ahead(10_000)
    assert mirror.steps_to_finish() == len(planned) == planned[-1].steps
    # The dry steps also say when each token is chosen: the planned steps that log one.
    chosen = [plan.steps for plan in planned for _ in plan.logged]
    assert mirror.token_steps() == chosen and chosen
    mirror.advance(planned[0])
    assert mirror.steps_to_finish() == len(planned) - 1
    # observe counts the estimated units of the steps it passes (the progress line's).
    before = mirror.units
    mirror.observe(planned[2].data)
    assert mirror.units - before == planned[1].estimated + planned[2].estimated > 0


def test_the_mirror_names_what_it_cannot_plan_or_match(stories260k):
    # A run whose prompt fills its 3 tokens: tokenized, then finished without a token.
    opened = opened_run_data(
        stories260k.config, Pubkey.default(), Pubkey.default(), 3, PROMPT.encode()
    )
    mirror = RunMirror(stories260k, opened)
    total = mirror.steps_to_finish()
    last = mirror.state_after(total)
    with pytest.raises(
        StepPlanError, match=rf"^the run finishes at step {total}, before {total + 1}$"
    ):
        mirror.state_after(total + 1)
    corrupted = bytearray(mirror.state_after(1))
    corrupted[-1] ^= 1
    with pytest.raises(MirrorMismatchError, match=r"^after step 0 \(position 0, tokenizer "):
        mirror.observe(bytes(corrupted))
    with pytest.raises(MirrorMismatchError, match=r"^the chain's run account: "):
        mirror.observe(b"\0" * 600)
    assert mirror.data == opened  # nothing taken from a mismatch
    mirror.observe(last)
    assert mirror.steps_to_finish() == 0 and mirror.plan_ahead(3) == []
    with pytest.raises(
        StepPlanError, match=rf"^step 0 is behind the mirror, which is at step {total} "
    ):
        mirror.state_after(0)
    with pytest.raises(
        StepPlanError, match=rf"^the run finished at step {total}: no step is left$"
    ):
        mirror.plan()

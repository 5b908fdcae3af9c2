"""A prompt in batches of two positions: the bits of one position at a time, whatever the
activations (docs/inference.md, "Batches").

The loud models scale a real checkpoint's normalization weights (and matrices): their
activations make a batch's plan cut its columns into several packed segments and run some
plain, and every step is compared with the mirror, which computes one position at a time.
"""

import pytest
from bench_inference import loud
from curta_svm import Chain
from run_svm import account_data, crank, open_ixs, tokens_of
from solders.keypair import Keypair

from curta_chain.inference import IntModel, SamplingSettings, generate
from curta_chain.inference.run import RunPlan
from curta_chain.onchain.mirror import RunMirror, batch
from curta_chain.onchain.mirror import forward as mirror_forward
from curta_chain.onchain.run_account import RunAccount, batch_lanes

PROMPT = [1, 300, 400, 500, 100, 200, 310, 410, 55]
"""Nine token ids: four batches of two, then the last prompt position alone."""
NEW = 3


def test_a_batch_has_two_lanes_while_the_next_position_is_the_prompts():
    assert [batch_lanes(p, 9) for p in (0, 2, 6, 7, 8, 9, 12)] == [2, 2, 2, 2, 1, 1, 1]
    assert batch_lanes(0, 1) == 1  # a one-token prompt: its position samples at once


@pytest.mark.parametrize(
    ("norm_gain", "weight_gain", "packed_only"),
    [(1, 1, True), (25, 1, False), (25, 20, False)],
    ids=["quiet", "loud", "louder"],
)
def test_batches_give_the_off_chain_tokens_whatever_the_activations(
    monkeypatch, stories260k_bytes, tok512_bytes, norm_gain, weight_gain, packed_only
):
    artifact = loud(stories260k_bytes, tok512_bytes, norm_gain, weight_gain)
    plans: list[list[tuple[bool, int]]] = []

    def plan_batch(x0, x1):
        plans.append(batch.segments(x0, x1))
        return batch.plan_batch(x0, x1)

    monkeypatch.setattr(mirror_forward, "plan_batch", plan_batch)
    chain = Chain()
    sealed = chain.install_sealed(artifact.sections)
    run = Keypair()
    capacity = len(PROMPT) + NEW
    assert chain.send(open_ixs(chain, sealed, artifact, run, capacity, PROMPT), [run]).ok
    counted = RunMirror(artifact, account_data(chain, run.pubkey())).steps_to_finish()
    cranked, _ = crank(chain, sealed, artifact, run.pubkey())  # every step mirrored

    model = IntModel.from_artifact(artifact)
    want = [*PROMPT, *generate(model, RunPlan(tuple(PROMPT), NEW), SamplingSettings(0, 0, 0))]
    data = account_data(chain, run.pubkey())
    assert tokens_of(data) == want
    assert cranked.steps == counted == RunAccount.from_bytes(data).steps
    # The prompt's positions go two at a time (a step starts at a batch's first), but the last.
    assert all(p % 2 == 0 for p in cranked.steps_per_position if p < len(PROMPT))
    # The batches' plans, as the gains make them.
    assert plans
    several = any(len(cut) > 1 for cut in plans)
    plain = any(not packed for cut in plans for packed, _ in cut)
    assert (several, plain) == ((False, False) if packed_only else (True, True))

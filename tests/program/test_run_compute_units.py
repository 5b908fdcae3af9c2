"""Inference's compute units in the real runtime: the kernel, a stories15M-shaped prompt and
token, and the cost model against the chain's own count.

Runs go through LiteSVM in this process, every step checked against the mirror
(``bench_inference.run_stats``).
"""

import shutil

import bench_inference
import pytest
from build_program import build_one
from run_svm import STEP_CU_CEILING

from curta_chain.artifact import Artifact
from curta_chain.onchain.schedule import STEP_BUDGET, STEP_OVERHEAD
from curta_chain.program import BUILDS

MACS_A_TOKEN = 15_187_968
"""A stories15M-shaped token's multiply-accumulates: 6 layers of 995,328, and 32,000 x 288."""
PROMPT = [1, *range(300, 312)]
"""Thirteen token ids."""
clang = pytest.mark.skipif(shutil.which("clang-14") is None, reason="clang-14 builds the code")


@clang
def test_the_matvec_kernel_takes_at_most_3_3_compute_units_per_mac():
    for label, units in bench_inference.kernel_rows():
        print(f"{label}: {units:.3f} CU/MAC")
        assert 3.25 < units <= 3.3


def test_a_stories15m_prompt_takes_at_most_12_step_transactions_a_position(stories15m: Artifact):
    stats = bench_inference.run_stats(stories15m, PROMPT, len(PROMPT) + 1)
    # Positions 0 to 11 go two at a time; position 12 runs alone and samples the first token.
    before_last = sum(1 for position, _, _ in stats.steps if position < len(PROMPT) - 1)
    print(f"{before_last / (len(PROMPT) - 1):.2f} steps a position, {len(stats.steps)} in all")
    assert before_last <= 12 * (len(PROMPT) - 1)
    assert len(stats.steps) <= 12 * len(PROMPT)  # the first generated token's steps included
    assert max(units for _, units, _ in stats.steps) <= STEP_CU_CEILING


def test_a_stories15m_token_takes_at_most_40_transactions_and_3_5_units_a_mac(
    stories15m: Artifact,
):
    # The token at position 20 (the run moved there, its earlier keys and values zero): what
    # a 13-token prompt's ninth new token attends to.
    stats = bench_inference.run_stats(stories15m, [1] * 21, 22, position=20)
    (count,) = bench_inference.per_token(stats)
    units = sum(units for _, units, _ in stats.steps)
    print(f"{count} step transactions, {units / MACS_A_TOKEN:.3f} CU/MAC")
    assert count <= 40
    assert units / MACS_A_TOKEN <= 3.5
    assert max(units for _, units, _ in stats.steps) <= STEP_CU_CEILING


@clang
def test_every_phase_costs_at_most_its_estimate_and_a_step_at_most_its_ceiling(
    stories260k: Artifact, stories260k_bytes: bytes, tok512_bytes: bytes, stories15m: Artifact
):
    """The calibration build: every phase's real units against the cost model's estimate.

    stories260K greedy from a text (the tokenizer, batches), stories260K loud and sampled
    (plain segments, saturated rows, the nucleus's passes), and a stories15M-shaped batch and
    token. What a step spends besides its phases, measured with the accounts a step needs
    and with all ten of the stories15M shape's, stays within STEP_OVERHEAD at the 20 a step
    may name.
    """
    program, _ = build_one(BUILDS[0], ("-DCALIBRATE",))
    loud = bench_inference.loud(stories260k_bytes, tok512_bytes, 25, 20)
    runs = (
        (stories260k, b"Once upon a time there was", 24, (0, 0, 0)),
        (loud, b"Once upon a time", 20, (58_982, 58_982, 7)),
        (stories15m, [1, 300, 400], 4, (0, 0, 0)),
    )
    for artifact, prompt, capacity, sampling in runs:
        logs: list[list[str]] = []
        stats = bench_inference.run_stats(artifact, prompt, capacity, 0, program, logs, sampling)
        layers = artifact.config.n_layers
        ratios = bench_inference.calibration_ratios(logs, layers, stats.prompt_tokens)
        assert max(ratio for ratio, _ in ratios.values()) <= 1, ratios
    overhead = bench_inference.step_overheads(program, stories15m)
    (few, least), (most, largest) = sorted(overhead.items())
    assert most == 10 and few < most
    assert largest + (20 - most) * (largest - least) / (most - few) <= STEP_OVERHEAD, overhead
    assert STEP_BUDGET + STEP_OVERHEAD == STEP_CU_CEILING

"""The page's count of an on-chain run's steps is the CLI mirror's, and its layout the program's.

The SDK runs the step schedule dry (sdk/js/src/steps.ts over the generated
sdk/js/src/schedule.ts) to price a run before anything is signed; the CLI's mirror counts
the same run (``RunMirror.steps_to_finish``, ``token_steps``). Both are held here to each
other on stories260K and a grouped-heads model, greedy, sampled and nucleus, and the run
account's layout to ``run_layout``. A prompt is read two positions a step (a batch), whose
rows cost what the plan of its activations says (sdk/js/src/batch.ts, a port of
``onchain/mirror/batch.py``): every plan the SDK's count makes is the mirror's, on loud
models whose plans cut several segments and run some plain, and the plan of crafted sums
at the bound's edges is the Python's. The generated schedule module is checked current.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from bench_inference import loud, loud_stories15m
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.onchain.mirror import RunMirror, batch
from curta_chain.onchain.mirror import forward as mirror_forward
from curta_chain.onchain.run_account import PromptKind, opened_run_data, run_layout
from curta_chain.onchain.schedule import KERNEL_STEP

SCRIPT = Path(__file__).parent / "count_steps.mjs"
PLAN_SCRIPT = Path(__file__).parent / "plan_batch.mjs"
REPO = Path(__file__).resolve().parents[2]
GROUPED = ModelConfig(
    dim=32, hidden_dim=72, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=300, seq_len=64
)


def sdk_count(path: Path, prompt: str, new: int, temperature: str, top_p: str, seed: int):
    done = subprocess.run(
        ["node", str(SCRIPT), str(path), prompt, str(new), temperature, top_p, str(seed)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def mirror_count(artifact: Artifact, prompt: str, got, monkeypatch=None):
    """The CLI mirror's count for the run the SDK counted (its capacity and settings): its
    steps, the step each token lands in, and each step's sections (planned in full); with
    ``monkeypatch``, also every batch plan its count made, in order."""
    s = got["settings"]
    data = opened_run_data(
        artifact.config, Pubkey.default(), Pubkey.default(), got["capacity"], prompt.encode(),
        s["temperature"], s["top_p"], int(s["seed"]),
    )  # fmt: skip
    mirror = RunMirror(artifact, data)
    plans: list[list[int]] = []
    cuts: list[list[tuple[bool, int]]] = []
    if monkeypatch is not None:

        def plan_batch(x0, x1):
            plan = batch.plan_batch(x0, x1)
            plans.append([plan.segments, plan.kernel, plan.call, plan.remainder])
            cuts.append(batch.segments(x0, x1))
            return plan

        monkeypatch.setattr(mirror_forward, "plan_batch", plan_batch)
    count = mirror.steps_to_finish()
    if monkeypatch is not None:
        monkeypatch.undo()  # the plans of the count only, not of planning every step below
    sections = [list(plan.sections) for plan in mirror.plan_ahead(count)]
    return (count, mirror.token_steps(), sections), plans, cuts


CASES = [
    ("Once upon a time", 12, "0", "0", 0),
    ("Once upon a time", 30, "1.0", "0.9", 7),
    ("Lily and Tom went to the park", 20, "0.8", "0", 3),
    ("a", 40, "1.3", "0.5", 2**64 - 1),
]


@pytest.mark.parametrize("prompt, new, temperature, top_p, seed", CASES)
def test_stories260k_counts_the_mirror_s_steps(sdk, tmp_path, stories260k, prompt, new,
                                               temperature, top_p, seed):  # fmt: skip
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    got = sdk_count(path, prompt, new, temperature, top_p, seed)
    want, _, _ = mirror_count(stories260k, prompt, got)
    assert (got["steps"], got["tokenSteps"], got["sections"]) == want
    regions = run_layout(stories260k.config, got["capacity"], PromptKind.TEXT, len(prompt.encode()))
    assert got["layout"] == list(regions)


@pytest.mark.parametrize("prompt, new, temperature, top_p, seed", CASES[:2])
def test_grouped_heads_count_the_mirror_s_steps(sdk, tmp_path, prompt, new, temperature, top_p,
                                                seed):  # fmt: skip
    artifact = synthetic_artifact(GROUPED, seed=4)
    path = tmp_path / "grouped.curta"
    path.write_bytes(artifact.data)
    got = sdk_count(path, "ünï " + prompt, new, temperature, top_p, seed)
    want, _, _ = mirror_count(artifact, "ünï " + prompt, got)
    assert (got["steps"], got["tokenSteps"], got["sections"]) == want
    regions = run_layout(GROUPED, got["capacity"], PromptKind.TEXT, len(("ünï " + prompt).encode()))
    assert got["layout"] == list(regions)


LONG_PROMPT = "Once upon a time there was a big dog"
"""Ten tokens of stories260K's: five batches of two positions."""


BATCHED = {
    "quiet": ("260K", 1, 1, "0"),
    "loud": ("260K", 25, 1, "0"),
    "louder-sampled": ("260K", 25, 20, "1.0"),
    "15M-shaped": ("15M", 1, 1, "0"),
    "15M-shaped-loud": ("15M", 64, 100, "0"),
}
"""Models whose normalization weights (and matrices) are scaled (``bench_inference.loud``):
the quiet ones' plans are one packed segment, the loud ones' several, some plain."""


@pytest.mark.parametrize("case", BATCHED)
def test_batches_plan_as_the_mirror_plans(sdk, tmp_path, monkeypatch, stories260k_bytes,
                                          tok512_bytes, case):  # fmt: skip
    """Each slice of a batch's rows costs what the plan of its activations says: the SDK's
    plans (from its integer core's activations) are the mirror's, slice for slice, and so
    are the count, each token's step and each step's sections."""
    shape, norm_gain, weight_gain, temperature = BATCHED[case]
    if shape == "15M":  # stories15M's shapes, synthetic weights, the real 32,000 tokens
        artifact = loud_stories15m(norm_gain, weight_gain)
    else:
        artifact = loud(stories260k_bytes, tok512_bytes, norm_gain, weight_gain)
    path = tmp_path / "batched.curta"
    path.write_bytes(artifact.data)
    got = sdk_count(path, LONG_PROMPT, 3, temperature, "0.9", 5)
    want, plans, cuts = mirror_count(artifact, LONG_PROMPT, got, monkeypatch)
    assert (got["steps"], got["tokenSteps"], got["sections"]) == want
    assert got["plans"] == plans and plans
    several = any(len(cut) > 1 for cut in cuts)
    plain = any(not packed for cut in cuts for packed, _ in cut)
    assert (several, plain) == ((False, False) if norm_gain == 1 else (True, True))


def test_a_batch_s_plan_is_the_python_s_at_the_bound_s_edges(sdk):
    """The plan of crafted lanes: sums at the bound, one past it, zeros, a lane past it alone,
    long packed runs that must be cut, padding past the vector."""
    rng = np.random.default_rng(7)
    span = batch.LANE_SPAN
    vectors: list[tuple[np.ndarray, np.ndarray]] = [
        (np.full(64, span // 8), np.zeros(64)),  # each group at the bound, then cut
        (np.full(64, span // 8 + 1), np.full(64, 3)),  # lane 0 one past the bound: plain
        (np.zeros(96), np.full(96, span // 8 + 1)),  # lane 1 alone past it
        (np.array([span] + [0] * 7 + [1] * 8 + [span // 2] * 16), np.zeros(32)),
    ]
    for _ in range(12):  # lane 0 at random magnitudes, lane 1 small
        quiet = rng.integers(-(2**21), 2**21, 768)
        vectors.append((rng.integers(-(2**31), 2**31, 768) >> rng.integers(0, 31), quiet))
    cases, want = [], []
    for x0, x1 in vectors:
        padded = len(x0) + KERNEL_STEP * int(rng.integers(0, 3))  # zero groups past the vector
        a, b = (np.zeros(padded, np.int64) for _ in range(2))
        a[: len(x0)], b[: len(x1)] = x0, x1
        sums = [np.abs(v[: len(x0)]).reshape(-1, KERNEL_STEP).sum(axis=1).tolist() for v in (a, b)]
        cases.append([*sums, padded])
        plan = batch.plan_batch(a, b)
        cut = [[packed, columns] for packed, columns in batch.segments(a, b)]
        want.append([cut, [plan.segments, plan.kernel, plan.call, plan.remainder]])
    done = subprocess.run(
        ["node", str(PLAN_SCRIPT)], input=json.dumps(cases), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == want
    assert {len(cut) > 1 for cut, _ in want} == {True, False}


def test_the_generated_schedule_module_is_current():
    """sdk/js/src/schedule.ts is what the generator makes of the schedule's table today."""
    script = REPO / "sdk" / "js" / "scripts" / "gen_schedule_ts.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "matches curta_chain/onchain/schedule.py" in done.stdout


def test_a_stale_schedule_module_is_named(tmp_path):
    stale = tmp_path / "schedule.ts"
    stale.write_text((REPO / "sdk" / "js" / "src" / "schedule.ts").read_text() + "// edited\n")
    script = REPO / "sdk" / "js" / "scripts" / "gen_schedule_ts.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check", "--out", str(stale)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "stale, not the schedule table's" in done.stderr

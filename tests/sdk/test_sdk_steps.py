"""The page's count of an on-chain run's steps is the CLI mirror's, and its layout the program's.

The SDK runs the step schedule dry (sdk/js/src/steps.ts over the generated
sdk/js/src/schedule.ts) to price a run before anything is signed; the CLI's mirror counts
the same run (``RunMirror.steps_to_finish``, ``token_steps``). Both are held here to each
other on stories260K and a grouped-heads model, greedy, sampled and nucleus, and the run
account's layout to ``run_layout``. The generated schedule module is checked current.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import PromptKind, opened_run_data, run_layout

SCRIPT = Path(__file__).parent / "count_steps.mjs"
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


def mirror_count(artifact: Artifact, prompt: str, got):
    """The CLI mirror's count for the run the SDK counted (its capacity and settings): its
    steps, the step each token lands in, and each step's sections (planned in full)."""
    s = got["settings"]
    data = opened_run_data(
        artifact.config, Pubkey.default(), Pubkey.default(), got["capacity"], prompt.encode(),
        s["temperature"], s["top_p"], int(s["seed"]),
    )  # fmt: skip
    mirror = RunMirror(artifact, data)
    count = mirror.steps_to_finish()
    sections = [list(plan.sections) for plan in mirror.plan_ahead(count)]
    return count, mirror.token_steps(), sections


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
    assert (got["steps"], got["tokenSteps"], got["sections"]) == mirror_count(
        stories260k, prompt, got
    )
    regions = run_layout(stories260k.config, got["capacity"], PromptKind.TEXT, len(prompt.encode()))
    assert got["layout"] == list(regions)


@pytest.mark.parametrize("prompt, new, temperature, top_p, seed", CASES[:2])
def test_grouped_heads_count_the_mirror_s_steps(sdk, tmp_path, prompt, new, temperature, top_p,
                                                seed):  # fmt: skip
    artifact = synthetic_artifact(GROUPED, seed=4)
    path = tmp_path / "grouped.curta"
    path.write_bytes(artifact.data)
    got = sdk_count(path, "ünï " + prompt, new, temperature, top_p, seed)
    want = mirror_count(artifact, "ünï " + prompt, got)
    assert (got["steps"], got["tokenSteps"], got["sections"]) == want
    regions = run_layout(GROUPED, got["capacity"], PromptKind.TEXT, len(("ünï " + prompt).encode()))
    assert got["layout"] == list(regions)


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

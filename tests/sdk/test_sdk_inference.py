"""The SDK's forward pass, tokenizer and sampler give the ids `curta-chain run` gives.

Greedy and seeded sampling (with and without top-p) on the real stories260K and on a
synthetic model with grouped key/value heads; a refusal reads as the CLI's.
"""

import json
import subprocess
from pathlib import Path

import pytest

from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.cli import main

SCRIPT = Path(__file__).parent / "run_model.mjs"
GROUPED = ModelConfig(
    dim=32, hidden_dim=72, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=300, seq_len=64
)


def sdk_run(path: Path, prompt: str, steps: int, temperature: str, top_p: str, seed: int):
    done = subprocess.run(
        ["node", str(SCRIPT), str(path), prompt, str(steps), temperature, top_p, str(seed)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cli_run(capsys, path: Path, prompt: str, steps: int, temperature: str, top_p: str, seed: int):
    capsys.readouterr()
    code = main([
        "run", str(path), "--prompt", prompt, "--steps", str(steps), "--temperature",
        temperature, "--top-p", top_p, "--seed", str(seed), "--output", "json",
    ])  # fmt: skip
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else err.strip()


SETTINGS = [("0", "0.9", 0), ("1.0", "0.9", 7), ("0.8", "0", 3), ("1.3", "0.5", 2**64 - 1)]


@pytest.mark.parametrize("temperature, top_p, seed", SETTINGS)
def test_stories260k_gives_the_cli_s_ids(sdk, capsys, tmp_path, stories260k, temperature, top_p,
                                         seed):  # fmt: skip
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    code, want = cli_run(capsys, path, "Once upon a time", 40, temperature, top_p, seed)
    assert code == 0
    got = sdk_run(path, "Once upon a time", 40, temperature, top_p, seed)
    assert (got["prompt_ids"], got["generated_ids"]) == (want["prompt_ids"], want["generated_ids"])


@pytest.mark.parametrize("temperature, top_p, seed", SETTINGS[:2])
def test_grouped_heads_and_padded_rows_give_the_cli_s_ids(sdk, capsys, tmp_path, temperature,
                                                          top_p, seed):  # fmt: skip
    path = tmp_path / "grouped.curta"
    path.write_bytes(synthetic_artifact(GROUPED, seed=4).data)
    code, want = cli_run(capsys, path, "a prompt ünïcode", 30, temperature, top_p, seed)
    assert code == 0
    got = sdk_run(path, "a prompt ünïcode", 30, temperature, top_p, seed)
    assert (got["prompt_ids"], got["generated_ids"]) == (want["prompt_ids"], want["generated_ids"])


def test_too_many_steps_is_refused_as_the_cli_refuses(sdk, capsys, tmp_path, stories260k):
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    code, err = cli_run(capsys, path, "Once", 600, "0", "0.9", 0)
    assert code != 0
    got = sdk_run(path, "Once", 600, "0", "0.9", 0)
    assert err == f"error: {got['error']}"

"""The demo model (curta_chain/demo): the committed files, what it says, and its training.

The files are checked against their documented hashes, converted by ``curta-chain convert``
and run by ``curta-chain run`` with llama2.c's short options. Its words are the corpus
generator's (scripts/demo_corpus.py), and the integer pass picks llama2.c's float pass's
top-1 token under teacher forcing. The training script's smoke test needs torch and
sentencepiece (scripts/train_demo_model.requirements.txt), which ``scripts/setup.sh --all``
installs (the README's test command, CI's): without them it skips, or fails under CI.
"""

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bench_run import PROMPTS, agreement_counts  # scripts/, on the path by scripts/setup.sh
from demo_corpus import vocabulary

from curta_chain.cli import build_parser, main
from curta_chain.demo import DEMO_MODEL, DEMO_MODEL_SHA256, DEMO_TOKENIZER, DEMO_TOKENIZER_SHA256

REPO = Path(__file__).resolve().parents[1]
WORD = re.compile(r"[A-Za-z]+")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``curta-chain ARGS`` as a user types it: a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "curta_chain", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=300,
    )


@pytest.fixture(scope="module")
def demo_curta(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "demo.curta"
    done = cli("convert", str(DEMO_MODEL), str(DEMO_TOKENIZER), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


def run_json(capsys, *args: str) -> dict:
    capsys.readouterr()
    code = main(["run", *args, "--output", "json-compact"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def dictionary_share(text: str) -> float:
    words = [w.lower() for w in WORD.findall(text)]
    assert words, text
    return sum(w in vocabulary() for w in words) / len(words)


def test_the_committed_files_are_the_documented_ones():
    assert hashlib.sha256(DEMO_MODEL.read_bytes()).hexdigest() == DEMO_MODEL_SHA256
    assert hashlib.sha256(DEMO_TOKENIZER.read_bytes()).hexdigest() == DEMO_TOKENIZER_SHA256
    doc = (REPO / "docs" / "demo-model.md").read_text()
    assert DEMO_MODEL_SHA256 in doc and DEMO_TOKENIZER_SHA256 in doc


def test_a_greedy_story_is_the_corpus_english(capsys, demo_curta):
    result = run_json(capsys, str(demo_curta), "-i", "Once upon a time", "-n", "200", "-t", "0")
    assert result["text"].startswith("Once upon a time, there was a ")
    assert len(result["generated_ids"]) >= 100  # a whole story, not a stop at once
    assert dictionary_share(result["generated_text"]) >= 0.95, result["text"]


def test_short_options_are_the_long_ones_in_a_process(demo_curta):
    common = ["run", str(demo_curta), "--output", "json-compact"]
    short = cli(*common, "-i", "One day", "-n", "40", "-t", "0.8", "-p", "0.95", "-s", "7")
    assert short.returncode == 0, short.stderr
    got = json.loads(short.stdout)
    # -n is run.c's: 40 steps with the prompt's tokens, so 41 - prompt tokens are new.
    new = 40 - len(got["prompt_ids"]) + 1
    long = cli(
        *common, "--prompt", "One day", "--steps", str(new), "--temperature", "0.8",
        "--top-p", "0.95", "--seed", "7",
    )  # fmt: skip
    assert long.returncode == 0, long.stderr
    want = json.loads(long.stdout)
    assert got == {**want, "first_token_seconds": got["first_token_seconds"],
                   "tokens_per_second": got["tokens_per_second"]}  # fmt: skip
    assert got["sampling"]["seed"] == 7 and got["sampling"]["top_p_q16"] == 62_259
    assert got["text"].startswith("One day, ") and dictionary_share(got["text"]) >= 0.9


def test_no_prompt_is_the_opening_token_alone_as_run_c(demo_curta):
    done = cli("run", str(demo_curta), "-n", "60", "-t", "0", "--output", "json-compact")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["prompt_ids"] == [1] and result["text"] == result["generated_text"]
    # From the opening token alone the model begins a story, as every story of its corpus.
    assert re.match(r"(Once upon a time|One|Long ago)\b", result["text"]), result["text"]
    assert dictionary_share(result["text"]) >= 0.95


def test_the_short_options_collide_with_no_chain_option():
    (run,) = [
        p
        for a in build_parser()._subparsers._group_actions
        for name, p in a.choices.items()
        if name == "run"
    ]
    dest = {o: a.dest for a in run._actions for o in a.option_strings}
    ours = {"-i": "prompt", "-n": "run_c_steps", "-t": "temperature", "-p": "top_p", "-s": "seed"}
    solana = {"-u": "url", "-k": "keypair", "-C": "config", "-y": "yes"}
    assert {o: dest[o] for o in [*ours, *solana]} == {**ours, **solana}
    assert "-z" not in dest  # the tokenizer is the artifact's own, sealed with its weights


@pytest.mark.parametrize("seeded", [False, True], ids=["greedy", "sampled"])
def test_the_integer_pass_agrees_with_llama2c_float_pass(seeded):
    counts, total = agreement_counts(
        DEMO_MODEL.read_bytes(), DEMO_TOKENIZER.read_bytes(), PROMPTS[:3], seeded
    )
    assert counts[1] / total >= 0.95, (counts, total)  # int against the checkpoint's floats


def needs_training() -> None:
    if all(importlib.util.find_spec(m) for m in ("torch", "sentencepiece")):
        return
    why = "the training script needs torch and sentencepiece: run `bash scripts/setup.sh --all`"
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def test_the_training_script_makes_files_convert_and_run_read(tmp_path, capsys):
    needs_training()
    tiny = [
        "--stories", "60", "--dim", "16", "--hidden", "32", "--layers", "1", "--heads", "2",
        "--kv-heads", "1", "--seq-len", "32", "--batch", "4", "--steps", "3", "--warmup", "1",
    ]  # fmt: skip
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / name
        done = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "train_demo_model.py"), "-o", str(out),
             "--work", str(tmp_path / f"work-{name}"), *tiny],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "done in " in done.stderr
        outputs.append([(out / f).read_bytes() for f in ("model.bin", "tokenizer.bin")])
    assert outputs[0] == outputs[1]  # a function of the seed and the options
    out = tmp_path / "a"
    artifact = tmp_path / "tiny.curta"
    capsys.readouterr()
    code = main(
        ["convert", str(out / "model.bin"), str(out / "tokenizer.bin"), "-o", str(artifact)]
    )
    assert code == 0, capsys.readouterr().err
    result = run_json(capsys, str(artifact), "-i", "Once upon a time", "--steps", "5", "-t", "0")
    assert result["prompt_ids"][0] == 1 and len(result["prompt_ids"]) > 2

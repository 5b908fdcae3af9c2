"""``curta-chain run`` from a file and from the localnet, and every bad input it refuses."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from curta_chain.artifact import Artifact
from curta_chain.cli import main
from curta_chain.cli.keypairs import write_keypair
from curta_chain.inference import SamplingSettings, Tokenizer, generate, plan_run

PROMPT = "Once upon a time"


@pytest.fixture
def art260k(tmp_path: Path, stories260k: Artifact) -> Path:
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    return path


def run(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["run", *args])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *args: str) -> dict:
    code, out, err = run(capsys, *args, "--output", "json-compact")
    assert code == 0, err
    return json.loads(out)


def test_text_streams_then_the_speed(capsys, art260k, stories260k, model260k):
    code, out, err = run(
        capsys, str(art260k), "--prompt", PROMPT, "--steps", "12", "--temperature", "0"
    )
    assert code == 0
    tokenizer = Tokenizer.from_artifact(stories260k)
    plan = plan_run(model260k, tokenizer, PROMPT, 12)
    ids = list(generate(model260k, plan, SamplingSettings(temperature=0)))
    want = tokenizer.decode([*plan.prompt_ids[1:], *ids]).decode("utf-8", errors="replace")
    assert out == want + "\n"
    assert err.count("\n") == 1 and "12 tokens (" in err and "tokens/s" in err


def test_json_gives_the_ids_and_the_text(capsys, art260k, stories260k, model260k):
    result = run_json(capsys, str(art260k), "--prompt", PROMPT, "--steps", "20", "--seed", "7")
    tokenizer = Tokenizer.from_artifact(stories260k)
    plan = plan_run(model260k, tokenizer, PROMPT, 20)
    ids = list(generate(model260k, plan, SamplingSettings(seed=7)))
    assert result["prompt_ids"] == list(plan.prompt_ids)
    assert result["generated_ids"] == ids
    assert result["generated_text"] == tokenizer.decode(ids, plan.prompt_ids[-1]).decode(
        "utf-8", errors="replace"
    )
    assert result["text"].startswith(" Once upon a time")  # the stand-in has no " " token
    assert result["sampling"] == {
        "temperature_q16": 65_536,
        "temperature": 1.0,
        "top_p_q16": 58_982,
        "top_p": 58_982 / 65_536,
        "seed": 7,
    }
    assert (
        result["stop"] in ("steps", "token")
        and result["weights_hash"] == stories260k.weights_hash().hex()
    )
    again = run_json(capsys, str(art260k), "--prompt", PROMPT, "--steps", "20", "--seed", "7")
    assert again["generated_ids"] == ids


@pytest.mark.parametrize(
    "args, message",
    [
        (["--prompt", "x" * 600], r"the prompt is 602 tokens, longer than the model's context"),
        (["--prompt", "hello", "--steps", "506"], r"--steps 506: the prompt's 7 tokens and 506"),
        (["--prompt", "hello", "--steps", "-3"], r"--steps -3: expected at least 1"),
        (["--prompt", "caf\udce9"], r"the prompt is not valid UTF-8"),
        (["--prompt", "hi", "--temperature", "warm"], r"--temperature 'warm': expected a decimal"),
        (["--prompt", "hi", "--temperature", "-1"], r"--temperature -1: expected 0 to 100"),
        (["--prompt", "hi", "--top-p", "1.5"], r"--top-p 1.5: expected 0 to 1"),
        (["--prompt", "hi", "--seed", "-1"], r"--seed -1: expected 0 to 18446744073709551615"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line(capsys, art260k, args, message):
    code, out, err = run(capsys, str(art260k), *args)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert re.search(message, err), err


def test_an_artifact_that_fails_decode_is_one_line(capsys, tmp_path, stories260k):
    broken = bytearray(stories260k.data)
    broken[23_296 + 400] ^= 0x40  # an exponential table entry
    path = tmp_path / "broken.curta"
    path.write_bytes(bytes(broken))
    code, out, err = run(capsys, str(path), "--prompt", "hi")
    assert code == 1 and out == ""
    assert err.startswith(f"error: {path}: byte 23,696 (exponential table entry 100)")
    code, _, err = run(capsys, str(tmp_path / "missing.curta"), "--prompt", "hi")
    assert code == 1 and "missing.curta: no such file, and not a model address" in err


def test_a_non_utf8_prompt_from_the_command_line(tmp_path, art260k):
    process = subprocess.run(
        [sys.executable, "-m", "curta_chain", "run", str(art260k), "--prompt", b"caf\xe9"],
        capture_output=True,
        env={**os.environ, "HOME": str(tmp_path)},
        timeout=120,
    )
    assert process.returncode == 1 and process.stdout == b""
    assert (
        process.stderr == b"error: the prompt is not valid UTF-8 (character 3 cannot be encoded)\n"
    )


def chain_cli(capsys, url: str, keypair: Path, *args: str) -> dict:
    capsys.readouterr()
    code = main([*args, "-u", url, "-k", str(keypair), "--output", "json-compact"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_run_from_the_chain_equals_run_from_the_file(capsys, localnet, fund, tmp_path, art260k):
    keypair = tmp_path / "id.json"
    write_keypair(fund(localnet.url, 100), keypair)
    model = chain_cli(capsys, localnet.url, keypair, "publish", str(art260k))["model"]
    on_chain = ["-u", localnet.url]

    code, out, err = run(capsys, model, "--prompt", "hi", *on_chain)
    assert code == 1 and out == ""
    assert err == (
        f"error: model {model} is uploading, not sealed: only a sealed model runs "
        "(--allow-unsealed to try it anyway)\n"
    )
    args = ["--prompt", PROMPT, "--steps", "24", "--seed", "99"]
    from_file = run_json(capsys, str(art260k), *args)
    unsealed = run_json(capsys, model, *args, *on_chain, "--allow-unsealed")
    assert unsealed["generated_ids"] == from_file["generated_ids"]

    assert chain_cli(capsys, localnet.url, keypair, "seal", model)["state"] == "sealed"
    for extra in ([], ["--temperature", "0"], ["--top-p", "1"]):
        from_file = run_json(capsys, str(art260k), *args, *extra)
        from_chain = run_json(capsys, model, *args, *extra, *on_chain)
        assert from_chain["source"] == f"model {model}"
        for key in ("prompt_ids", "generated_ids", "text", "weights_hash", "stop"):
            assert from_chain[key] == from_file[key]
    code, out, _ = run(capsys, model, *args, *on_chain)
    assert code == 0 and out.startswith(from_file["text"][:10])

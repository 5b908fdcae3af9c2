"""The README's first command: ``scripts/demo.sh``, end to end, and on a busy port."""

import os
import re
import socket
import subprocess
import time
from pathlib import Path

from demo_corpus import vocabulary  # scripts/, on the path by scripts/setup.sh

from curta_chain.artifact import read_artifact
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, generate, plan_run

REPO = Path(__file__).resolve().parents[1]
STORY = "Once upon a time, there was a "


def demo(tmp_path, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "demo.sh")],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "CURTA_DEMO_OUT": str(tmp_path / "demo"),
            **env,
        },
        timeout=600,
    )
    return done, time.monotonic() - started


def sections(stdout: str) -> dict[str, list[str]]:
    """The demo's output under each ``== heading`` line (by its first words)."""
    found: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in stdout.splitlines():
        if line.startswith("== "):
            lines = found.setdefault(line[3:].split(":")[0], [])
        else:
            lines.append(line)
    return found


def english(text: str) -> bool:
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", text)]
    return bool(words) and sum(w in vocabulary() for w in words) >= 0.95 * len(words)


def test_the_demo_tells_the_same_story_from_the_file_the_chain_and_the_program(tmp_path):
    # 8899 may be taken (another localnet, a validator): the demo picks a free port.
    done, _ = demo(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "verified " in done.stdout and "sealed, every byte matches" in done.stdout
    out = sections(done.stdout)
    greedy, sampled = out["run from the file"]
    assert greedy.startswith(STORY) and sampled.startswith(STORY) and sampled != greedy
    assert english(greedy) and english(sampled), (greedy, sampled)
    assert out["run"] == [greedy]  # read from the chain: the same bytes, the same story
    # On chain, fewer tokens (each a step of the program, checked by the mirror).
    # After the text, the run's address and its signatures, as the other commands print.
    on_chain, run, *signatures = out["run --on-chain"]
    assert greedy.startswith(on_chain) and len(on_chain) > len(STORY)
    assert run.startswith("Run: ") and signatures[0].endswith("(open run)")
    assert all(line.startswith("Signature: ") for line in signatures)
    # No prompt: the opening token alone, the same tokens as off chain.
    artifact = read_artifact(tmp_path / "demo" / "demo.curta")
    model, tokenizer = IntModel.from_artifact(artifact), Tokenizer.from_artifact(artifact)
    ids = list(generate(model, plan_run(model, tokenizer, "", 6), SamplingSettings(0, 0, 0)))
    assert out["run --on-chain with no prompt"][0] == tokenizer.decode(ids).decode()


def test_a_busy_demo_port_fails_at_once_saying_so(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done, seconds = demo(tmp_path, CURTA_DEMO_PORT=str(port))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"error: port {port} on 127.0.0.1 is in use" in done.stderr
    assert seconds < 60  # conversion and the localnet's start-up, no 60 s wait

"""The README's first command: ``scripts/demo.sh``, end to end, and on a busy port."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
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


def test_the_demo_tells_the_same_story_from_the_file_the_chain_and_the_program(
    tmp_path, localnet_process
):
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
    # Once verified, nothing offers a next step on the localnet the demo is about to stop.
    after_verify = done.stdout.split("== verify", 1)[1]
    assert "Next:" not in after_verify.split("== done", 1)[0]
    # It ends saying where its files are and what to try next.
    ended = out["done"]
    model = re.search(r"^Model: (\w+)$", done.stdout, re.MULTILINE)[1]
    assert f"== done: everything it wrote is in {tmp_path / 'demo'}" in done.stdout
    assert ".venv/bin/curta-chain web    # the page: the demo model in the browser" in ended[3]
    assert ended[4].startswith(f"  .venv/bin/curta-chain localnet --ledger {tmp_path}/demo/ledger")
    assert ended[5].startswith(f"  .venv/bin/curta-chain web --model {model} ")
    assert "The workflow on the localnet" in ended[6]
    # The ledger it names holds the sealed model after the demo's localnet stopped.
    node = localnet_process(ledger=tmp_path / "demo" / "ledger")
    status = subprocess.run(
        [sys.executable, "-m", "curta_chain", "status", model, "-u", node.url, "--output", "json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert status.returncode == 0 and json.loads(status.stdout)["state"] == "sealed", status.stderr


def test_the_demo_sets_up_without_the_node_suites(tmp_path):
    # A checkout with no venv yet: the demo asks setup.sh for the Python side alone.
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "demo.sh", tmp_path / "scripts")
    asked = tmp_path / "asked"
    (tmp_path / "scripts" / "setup.sh").write_text(f'echo "$@" > {asked}; exit 3\n')
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "demo.sh")], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 3 and asked.read_text() == "--no-node\n"


def test_a_busy_demo_port_fails_at_once_saying_so(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done, seconds = demo(tmp_path, CURTA_DEMO_PORT=str(port))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"error: port {port} on 127.0.0.1 is in use" in done.stderr
    assert seconds < 60  # conversion and the localnet's start-up, no 60 s wait

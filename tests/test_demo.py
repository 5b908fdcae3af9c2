"""The README's first command: ``scripts/demo.sh``, end to end, and on a busy port."""

import os
import socket
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def demo(tmp_path, data_dir, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "demo.sh")],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "CURTA_DEMO_OUT": str(tmp_path / "demo"),
            "CURTA_DATA": str(data_dir),
            **env,
        },
        timeout=600,
    )
    return done, time.monotonic() - started


def test_the_demo_publishes_seals_and_verifies_on_a_port_of_its_own(tmp_path, data_dir):
    # 8899 may be taken (another localnet, a validator): the demo picks a free port.
    done, _ = demo(tmp_path, data_dir)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "verified " in done.stdout and "sealed, every byte matches" in done.stdout


def test_a_busy_demo_port_fails_at_once_saying_so(tmp_path, data_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done, seconds = demo(tmp_path, data_dir, CURTA_DEMO_PORT=str(port))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"error: cannot listen on 127.0.0.1:{port}: " in done.stderr
    assert "address already in use" in done.stderr.lower()
    assert seconds < 60  # conversion and the localnet's start-up, no 60 s wait

import socket
import subprocess
import sys

from solana.rpc.api import Client


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "curta_chain", "localnet", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_validator_flag_says_when_solana_test_validator_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty PATH: no solana-test-validator
    out = run_cli("--validator")
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "error: solana-test-validator is not installed (not on PATH); run `curta-chain "
        "localnet` without --validator for the embedded localnet"
    )


def test_port_in_use_is_one_error_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = run_cli("--port", str(port))
    assert out.returncode == 1
    assert out.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}:")
    assert len(out.stderr.strip().splitlines()) == 1


def test_cli_serves_and_stops_cleanly_on_ctrl_c(tmp_path, localnet_process):
    node = localnet_process(tmp_path / "ledger")
    assert Client(node.url).get_slot().value >= 0
    assert node.stop() == 0
    assert any("Localnet stopped" in line for line in node.output)


def test_second_localnet_on_the_same_ledger_is_refused(tmp_path, localnet_process):
    node = localnet_process(tmp_path / "ledger")
    out = run_cli("--port", "0", "--ledger", str(node.ledger))
    assert out.returncode == 1
    assert out.stderr.strip().endswith("ledger is in use by another localnet")

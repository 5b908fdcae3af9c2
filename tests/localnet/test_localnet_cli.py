import socket
import subprocess
import sys
from pathlib import Path

from reference_client import Client
from solders.pubkey import Pubkey

from curta_chain.constants import LOCALNET_PROGRAM_ID


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
    assert out.stderr.startswith(f"error: port {port} on 127.0.0.1 is in use")
    assert out.stdout == ""  # said before the chain is opened: no "preloaded" line first
    assert len(out.stderr.strip().splitlines()) == 1


def test_cli_serves_and_stops_cleanly_on_ctrl_c(tmp_path, localnet_process):
    node = localnet_process(tmp_path / "ledger")
    assert Client(node.url, "processed").get_slot().value >= 0
    assert node.stop() == 0
    assert any("Localnet stopped" in line for line in node.output)


def test_second_localnet_on_the_same_ledger_is_refused(tmp_path, localnet_process):
    node = localnet_process(tmp_path / "ledger")
    out = run_cli("--port", "0", "--ledger", str(node.ledger))
    assert out.returncode == 1
    assert out.stderr.strip().endswith("ledger is in use by another localnet")


def test_validator_flag_runs_solana_test_validator_with_the_program(tmp_path, monkeypatch):
    # A stand-in that records its arguments: the real validator cannot be installed here.
    fake = tmp_path / "solana-test-validator"
    fake.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/args"\nexit 3\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    out = run_cli("--validator", "--port", "9123", "--ledger", str(tmp_path / "ledger"), "--reset")
    assert out.returncode == 3
    args = (tmp_path / "args").read_text().split()
    assert args[args.index("--rpc-port") + 1] == "9123"
    program = args.index("--bpf-program")
    assert args[program + 1] == LOCALNET_PROGRAM_ID
    assert args[program + 2].endswith("curta_chain/program/curta.so")
    assert "--reset" in args


def test_the_localnet_program_id_has_no_keypair_and_no_seed_derives_one():
    # Off the ed25519 curve: no secret key exists, so nobody can deploy there anywhere.
    assert not Pubkey.from_string(LOCALNET_PROGRAM_ID).is_on_curve()
    repo = Path(__file__).resolve().parents[2]
    assert not (repo / "localnet" / "write_program_keypair.py").exists()
    script = (repo / "localnet" / "start-test-validator.sh").read_text()
    assert f"--bpf-program {LOCALNET_PROGRAM_ID} " in script


def test_bad_port_and_ledger_are_one_line_errors(tmp_path):
    out = run_cli("--port", "99999")
    assert out.returncode == 2
    assert out.stderr == (
        "error: curta-chain localnet: argument --port: 99999: expected a port 0 to 65535 "
        "(see --help)\n"
    )
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    out = run_cli("--port", "0", "--ledger", str(not_a_folder))
    assert out.returncode == 1
    assert out.stderr.strip() == f"error: {not_a_folder}: cannot open ledger folder: File exists"

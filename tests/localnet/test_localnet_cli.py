import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import processes
from reference_client import Client
from solders.pubkey import Pubkey

from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.user_data import recorded_local_clusters
from curta_chain.validator import PINNED_VERSION, install_folder, shipped_preload

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return processes.run(
        [sys.executable, "-m", "curta_chain", "localnet", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_validator_flag_says_when_solana_test_validator_is_missing(tmp_path, monkeypatch):
    # Neither the per-user folder (under this test's own HOME) nor PATH has it.
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    out = run_cli("--validator")
    assert out.returncode == 1
    folder = install_folder()
    assert str(folder).startswith(os.environ["HOME"])
    assert out.stderr.strip() == (
        "error: solana-test-validator is not installed: run bash "
        "scripts/install-test-validator.sh from a curta-chain checkout (it builds agave "
        f"{PINNED_VERSION} into {folder}; nothing there and none on PATH), or run "
        "`curta-chain localnet` without --validator for the embedded localnet"
    )


def test_start_script_says_how_to_install_the_validator(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    out = subprocess.run(
        ["bash", str(REPO / "scripts" / "start-test-validator.sh")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert out.stderr.startswith(
        "error: solana-test-validator is not installed: run bash scripts/install-test-validator.sh"
    )
    assert len(out.stderr.splitlines()) == 1


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


STAND_IN = """#!{python}
# A stand-in for solana-test-validator: records its arguments, then serves getHealth,
# getGenesisHash and getSlot on --rpc-port until SIGINT (the real validator cannot be built
# in this test).
import http.server, json, pathlib, sys
args = sys.argv[1:]
pathlib.Path(__file__).with_name("args").write_text(" ".join(args))
if "--version" in args:
    print("solana-test-validator 0.0.0 (stand-in)")
    sys.exit(0)
if pathlib.Path(__file__).with_name("fail").exists():
    print("Error: failed to start validator: stand-in told to fail")
    sys.exit(3)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        call = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answers = {{"getHealth": "ok", "getGenesisHash": "{genesis}"}}
        result = answers.get(call["method"], 7)
        body = json.dumps({{"jsonrpc": "2.0", "id": call["id"], "result": result}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
port = int(args[args.index("--rpc-port") + 1])
try:
    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
except KeyboardInterrupt:
    pass
"""


STAND_IN_GENESIS = "StandinGenesis11111111111111111111111111111"


def stand_in(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "solana-test-validator"
    fake.write_text(STAND_IN.format(python=sys.executable, genesis=STAND_IN_GENESIS))
    fake.chmod(0o755)
    return fake


def test_validator_flag_runs_solana_test_validator_with_the_program(tmp_path, monkeypatch):
    fake = stand_in(tmp_path / "bin")
    (fake.parent / "fail").write_text("")
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    out = run_cli("--validator", "--port", "9123", "--ledger", str(tmp_path / "ledger"), "--reset")
    assert out.returncode == 1
    assert out.stderr == (
        "error: solana-test-validator exited with status 3 before it answered: Error: failed "
        "to start validator: stand-in told to fail "
        f"(its log: {tmp_path / 'ledger' / 'validator.log'})\n"
    )
    args = (fake.parent / "args").read_text().split()
    assert args[args.index("--rpc-port") + 1] == "9123"
    assert args[args.index("--ledger") + 1] == str(tmp_path / "ledger")
    program = args.index("--bpf-program")
    assert args[program + 1] == LOCALNET_PROGRAM_ID
    assert args[program + 2].endswith("curta_chain/program/curta.so")
    assert "--reset" in args
    assert args[args.index("--bind-address") + 1] == "127.0.0.1"  # loopback only
    # Every other port the validator takes is a free one, apart from the RPC's two.
    faucet = int(args[args.index("--faucet-port") + 1])
    gossip = int(args[args.index("--gossip-port") + 1])
    first, end = map(int, args[args.index("--dynamic-port-range") + 1].split("-"))
    taken = [faucet, gossip, *range(first, end)]
    assert end - first >= 26 and len(set(taken)) == len(taken)
    assert not {9123, 9124} & set(taken)


def test_validator_flag_waits_until_it_answers_then_stops_on_ctrl_c(tmp_path, monkeypatch):
    # The per-user folder's build comes before one on PATH.
    home = Path(os.environ["HOME"])
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    pinned = stand_in(install_folder())
    stand_in(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    assert str(pinned).startswith(str(home))
    process = processes.start(
        [sys.executable, "-m", "curta_chain", "localnet", "--validator", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("Validator ready at"):
            break
    url = lines[-1].split()[-1]
    assert Client(url).get_slot().value == 7
    assert lines[0] == f"Starting solana-test-validator 0.0.0 (stand-in) ({pinned})\n"
    # Recorded as this user's local cluster, by its genesis hash, once it answered.
    assert f"Genesis hash {STAND_IN_GENESIS} (recorded as this user's local cluster)\n" in lines
    assert [(c["genesis_hash"], c["url"]) for c in recorded_local_clusters()] == [
        (STAND_IN_GENESIS, url)
    ]
    assert not (tmp_path / "bin" / "args").exists()
    process.send_signal(signal.SIGINT)
    assert processes.wait(process, 60) == 0
    assert process.stdout.read() == "Validator stopped\n"
    assert process.stderr.read() == ""


def test_the_localnet_program_id_has_no_keypair_and_no_seed_derives_one():
    # Off the ed25519 curve: no secret key exists, so nobody can deploy there anywhere.
    assert not Pubkey.from_string(LOCALNET_PROGRAM_ID).is_on_curve()
    assert not (REPO / "localnet" / "write_program_keypair.py").exists()
    assert shipped_preload().arguments()[:2] == ["--bpf-program", LOCALNET_PROGRAM_ID]


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

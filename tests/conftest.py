"""Shared fixtures: a real localnet over HTTP, in-process or as the CLI subprocess.

- ``localnet``: a fresh embedded localnet (memory only) serving from a background thread
  of this process for one test; use ``localnet.url`` with solana-py's ``Client`` or
  ``AsyncClient``, ``localnet.stop()`` is done for you. Reads default to "finalized", as
  on a validator: read what you just wrote at "processed".
- ``clock`` and ``manual_localnet``: a ``ManualClock`` and a localnet whose slots move only
  when the test calls ``clock.advance(...)`` (``localnet_helpers.advance_slots``): no
  sleeps against slot durations.
- ``localnet_process``: a factory ``localnet_process(ledger: Path | None) -> LocalnetProcess``
  that runs ``python -m curta_chain localnet --port N [--ledger DIR]`` on a free port and
  waits for its "Localnet ready at" line. ``.url``, ``.kill()`` (SIGKILL, nothing flushed),
  ``.stop()`` (Ctrl-C) and ``.restart()`` (same port and ledger). Every process is stopped
  at the end of the test.
- ``fund``: ``fund(url, sol=10, commitment="confirmed") -> Keypair``, a new keypair holding
  ``sol`` SOL from the faucet, the airdrop confirmed when it returns ("processed" on a
  manual clock).
- ``funded_keypair``: ``fund(localnet.url)`` for the ``localnet`` fixture.
- ``own_home`` (every test): ``HOME`` is an empty folder of the test's own.
- The per-user data folder (``XDG_DATA_HOME``), where each localnet records its genesis hash
  as this user's local cluster when it starts (``curta_chain.user_data``), is one folder of
  this test process's own, set before any fixture starts a localnet (a module's localnet
  serves tests with different HOMEs) and inherited by every process a test starts; the
  user's own is never written. The validator the user built there is put on ``PATH`` first,
  so the validator tier still finds it.
- ``sdk``: ``sdk/js`` with its npm packages, built once a session (``dist/``); skipped
  without node (failed under ``CI``), failed without the packages (``node_packages``).

Data, session-scoped and never modified (the reference files are copied first):

- ``data_dir`` (``tests/data/llama2c``, or ``$CURTA_DATA``), ``stories260k_bytes``,
  ``tok512_bytes`` (the first 512 entries of tokenizer.bin), ``inputs_dir`` (copies of both).
- ``stories260k``: the real stories260K converted (2 sections); ``stories15m``: a synthetic
  checkpoint of stories15M's shapes converted (8 sections); ``largest``: a synthetic
  checkpoint of the largest model the spec allows converted (18 sections, 79 MB).
"""

import atexit
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import processes
import pytest
from node_packages import require_node_packages
from reference_client import Client
from solders.keypair import Keypair

from curta_chain.artifact import Artifact
from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.synthetic import (
    LARGEST,
    STORIES15M,
    llama2c_checkpoint_bytes,
    llama2c_tokenizer_bytes,
    synthetic_artifact,
)
from curta_chain.constants import LAMPORTS_PER_SOL
from curta_chain.errors import BuildError
from curta_chain.inference.host_build import compiler
from curta_chain.localnet import LocalnetHandle, ManualClock, start_in_thread
from curta_chain.localnet.current_bank import reuse_freed_memory
from curta_chain.validator import find_validator

# The tests' own LiteSVMs (tests/program) run in this process too: as the localnet's do.
reuse_freed_memory()
# A shell that ignores Ctrl-C passes the ignore on: every child starts with the default.
processes.default_ctrl_c()

_validator = find_validator()
if _validator is not None:
    os.environ["PATH"] = f"{_validator.parent}{os.pathsep}{os.environ.get('PATH', '')}"
_DATA_HOME = tempfile.mkdtemp(prefix="curta-data-")
os.environ["XDG_DATA_HOME"] = _DATA_HOME
atexit.register(shutil.rmtree, _DATA_HOME, ignore_errors=True)

READY_TIMEOUT = 120.0
"""Seconds a localnet subprocess may take to replay its ledger and listen."""


# The suite runs in worker processes (addopts), a test file to each in turn. The longest
# files go first, so that no worker starts one near the end while the others sit idle:
# the validator tier (one folder: its tests share one validator), then the reliability
# rows, then the rest in the order collected.
FIRST = ("tests/validator/", "tests/reliability/")


def _rank(item: pytest.Item) -> int:
    path = item.nodeid
    return next((i for i, prefix in enumerate(FIRST) if path.startswith(prefix)), len(FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: a file's tests keep their order


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Files to workers in the order collected; the validator tier as one unit."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class TierScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(FIRST[0]):
                return FIRST[0]
            return super()._split_scope(nodeid)

    config.option.loadscopereorder = False  # keep the order above, not the test counts'
    return TierScheduling(config, log)


NATIVE_CACHE = Path(tempfile.gettempdir()) / f"curta-chain-tests-{os.getuid()}" / "cache"
"""The tests' per-user cache: ``run`` builds the program's C for the host there once for
every test and process (its key is the sources' hash), not once for each HOME."""


def _c_compiler() -> bool:
    try:
        compiler()
    except BuildError:
        return False
    return True


C_COMPILER = _c_compiler()
"""Without one, ``run`` would open every test's stderr with a note that it runs numpy
(tests/inference/test_native.py tests that note): the tests ask for numpy instead."""


@pytest.fixture(autouse=True)
def nothing_left_running() -> Iterator[None]:
    """Every process a test started (``tests/processes.py``) is gone when it ends."""
    with processes.left_behind():
        yield


@pytest.fixture(autouse=True)
def own_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test (and every process it starts) gets an empty HOME of its own.

    Chain commands read the Solana CLI config in ``~/.config/solana/cli`` (where ``deploy``
    records program ids): a test must never read or write the real one. The per-user cache
    is the tests' own too (``NATIVE_CACHE``).
    """
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(NATIVE_CACHE))
    if not C_COMPILER:
        monkeypatch.setenv("CURTA_CHAIN_NATIVE", "0")
    return home


@pytest.fixture
def localnet() -> Iterator[LocalnetHandle]:
    handle = start_in_thread()
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def manual_localnet(clock: ManualClock) -> Iterator[LocalnetHandle]:
    handle = start_in_thread(now=clock)
    try:
        yield handle
    finally:
        handle.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalnetProcess:
    """``curta-chain localnet`` as a subprocess on a fixed port and ledger folder."""

    def __init__(self, ledger: Path | None, port: int | None = None, extra: tuple[str, ...] = ()):
        self.ledger = ledger
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra = extra
        self.process: subprocess.Popen[str] | None = None
        self.output: list[str] = []

    def start(self) -> "LocalnetProcess":
        command = [sys.executable, "-m", "curta_chain", "localnet", "--port", str(self.port)]
        if self.ledger is not None:
            command += ["--ledger", str(self.ledger)]
        command += self.extra
        self.process = processes.start(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + READY_TIMEOUT
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"localnet exited: {''.join(self.output)}")
            self.output.append(line)
            if line.startswith("Localnet ready at"):
                return self
        raise RuntimeError(f"localnet not ready after {READY_TIMEOUT}s: {''.join(self.output)}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            processes.kill(self.process)

    def stop(self) -> int:
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        code = processes.wait(self.process, 60)
        assert self.process.stdout is not None
        self.output.append(self.process.stdout.read())
        return code

    def restart(self) -> "LocalnetProcess":
        self.kill()
        return self.start()


@pytest.fixture
def localnet_process() -> Iterator[Callable[..., LocalnetProcess]]:
    started: list[LocalnetProcess] = []

    def make(
        ledger: Path | None = None, port: int | None = None, extra: tuple[str, ...] = ()
    ) -> LocalnetProcess:
        process = LocalnetProcess(ledger, port, extra)
        started.append(process)
        return process.start()

    yield make
    for process in started:
        process.kill()


def fund_keypair(url: str, sol: float = 10, commitment: str = "confirmed") -> Keypair:
    """A new keypair holding ``sol`` SOL, the airdrop at ``commitment`` when it returns.

    On a manual clock nothing gets confirmed until the test moves time: pass "processed".
    """
    keypair = Keypair()
    client = Client(url)
    signature = client.request_airdrop(keypair.pubkey(), int(sol * LAMPORTS_PER_SOL)).value
    if commitment != "processed":
        client.confirm_transaction(signature, commitment, sleep_seconds=0.05)
    return keypair


@pytest.fixture
def fund() -> Callable[..., Keypair]:
    return fund_keypair


@pytest.fixture
def funded_keypair(localnet: LocalnetHandle) -> Keypair:
    return fund_keypair(localnet.url)


REPO = Path(__file__).resolve().parents[1]


SDK = REPO / "sdk" / "js"


@pytest.fixture(scope="session")
def sdk() -> Path:
    """sdk/js, its packages installed and built once (dist/index.js, dist/test/)."""
    require_node_packages(SDK, "esbuild")
    # Built once a run, not once a worker process: another's tests may be reading dist/.
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))
    built = SDK / "node_modules" / f".curta-built-{run}"
    with open(SDK / "node_modules" / ".curta-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built.exists():
            for old in built.parent.glob(".curta-built-*"):
                old.unlink()
            subprocess.run(["node", "scripts/build.mjs"], cwd=SDK, check=True, timeout=300)
            built.touch()
    return SDK


DATA = Path(os.environ.get("CURTA_DATA", REPO / "tests" / "data" / "llama2c"))


def first_tokens(data: bytes, count: int) -> bytes:
    """The tokenizer file's own header and its first ``count`` entries."""
    pos = 4
    for _ in range(count):
        (length,) = struct.unpack_from("<I", data, pos + 4)
        pos += 8 + length
    return data[:pos]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA / "stories260K.bin").is_file():
        pytest.fail(f"the llama2.c reference files are missing: expected them in {DATA}")
    return DATA


@pytest.fixture(scope="session")
def stories260k_bytes(data_dir: Path) -> bytes:
    return (data_dir / "stories260K.bin").read_bytes()


@pytest.fixture(scope="session")
def tok512_bytes(data_dir: Path) -> bytes:
    return first_tokens((data_dir / "tokenizer.bin").read_bytes(), 512)


@pytest.fixture(scope="session")
def inputs_dir(tmp_path_factory, stories260k_bytes: bytes, tok512_bytes: bytes) -> Path:
    """Copies of the real files (the originals are never touched) in a session folder."""
    folder = tmp_path_factory.mktemp("llama2c")
    (folder / "stories260K.bin").write_bytes(stories260k_bytes)
    (folder / "tok512.bin").write_bytes(tok512_bytes)
    return folder


@pytest.fixture(scope="session")
def stories260k(stories260k_bytes: bytes, tok512_bytes: bytes) -> Artifact:
    return convert_llama2c_bytes(stories260k_bytes, tok512_bytes, "stories260K.bin", "tok512.bin")


@pytest.fixture(scope="session")
def stories260k_file(tmp_path_factory, stories260k: Artifact) -> Path:
    """stories260K's artifact as a file (for the CLI: read, never written to)."""
    path = tmp_path_factory.mktemp("stories260k") / "stories260K.curta"
    path.write_bytes(stories260k.data)
    return path


@pytest.fixture(scope="session")
def stories15m_checkpoint() -> bytes:
    return llama2c_checkpoint_bytes(STORIES15M, seed=15)


@pytest.fixture(scope="session")
def tokenizer32k() -> bytes:
    return llama2c_tokenizer_bytes(STORIES15M.vocab_size, seed=15)


@pytest.fixture(scope="session")
def stories15m(stories15m_checkpoint: bytes, tokenizer32k: bytes) -> Artifact:
    return convert_llama2c_bytes(stories15m_checkpoint, tokenizer32k, "15m.bin", "tok.bin")


@pytest.fixture(scope="session")
def largest() -> Artifact:
    return synthetic_artifact(LARGEST, seed=18)

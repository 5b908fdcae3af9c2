"""The real ``solana-test-validator``, where it is installed: find it, start it, wait for it.

``scripts/install-test-validator.sh`` builds agave's ``solana-test-validator``, pinned
(``PINNED_VERSION``), into a per-user folder outside any checkout (``install_folder()``:
``${XDG_DATA_HOME:-~/.local/share}/curta-chain/agave/<version>/bin``), so every clone on the
machine (CI's included) finds the same binary; ``find_validator`` looks there first, then
on PATH. ``ValidatorProcess.start`` runs it with the curta program preloaded at
``LOCALNET_PROGRAM_ID`` (``--bpf-program``: an address off the curve, no keypair exists for
it), a ledger folder, free ports (JSON-RPC and PubSub on the next port, the faucet, gossip
and the dynamic range) and its faucet, and returns once the node answers ``getHealth`` and
``getSlot``: a state, not a time. ``curta-chain localnet --validator`` and the validator
test tier (tests/validator/) are its users. The validator's genesis hash is its own:
chain commands there need ``--program-id LOCALNET_PROGRAM_ID`` (or a ``deploy``).

This module sits beside the client, not inside the embedded localnet: nothing in it
imports ``curta_chain.localnet``.
"""

import collections
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
from solders.pubkey import Pubkey

from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.errors import LocalnetError
from curta_chain.reporting import NullReporter, Reporter
from curta_chain.user_data import data_folder, record_local_cluster

__all__ = [
    "EXECUTABLE",
    "INSTALL_COMMAND",
    "NOT_INSTALLED",
    "PINNED_VERSION",
    "READY_TIMEOUT",
    "Preload",
    "ValidatorPorts",
    "ValidatorProcess",
    "find_validator",
    "install_folder",
    "pick_ports",
    "require_validator",
    "run_validator",
    "shipped_preload",
    "validator_command",
    "validator_version",
]

EXECUTABLE = "solana-test-validator"
PINNED_VERSION = "4.2.2"
"""The agave-validator release scripts/install-test-validator.sh builds (its default)."""
INSTALL_COMMAND = "bash scripts/install-test-validator.sh"
NOT_INSTALLED = f"{EXECUTABLE} is not installed: run {INSTALL_COMMAND}"
"""Why the validator tier skips, and the start of what ``localnet --validator`` says."""
READY_TIMEOUT = 180.0
"""Seconds a starting validator may take to answer getHealth (genesis, then the first
slots; minutes on two busy cores)."""
DYNAMIC_PORTS = 32
"""Width of ``--dynamic-port-range`` (agave's minimum is 26; its own tests use 26)."""
_PORT_BASES = (10_000, 30_000)
"""Where free blocks are looked for: below Linux's ephemeral range (32768-60999), so an
outgoing connection does not take a port between the check and the validator's bind."""
_POLL_SECONDS = 0.2
_STOP_TIMEOUT = 30.0
"""Seconds a validator may take to exit after SIGINT before it is killed."""


def install_folder(version: str = PINNED_VERSION, environ: Mapping[str, str] = os.environ) -> Path:
    """The folder scripts/install-test-validator.sh installs ``version``'s binary into."""
    return data_folder(environ) / "agave" / version / "bin"


def find_validator(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The pinned build in the per-user folder, else ``solana-test-validator`` on PATH."""
    pinned = install_folder(environ=environ) / EXECUTABLE
    if pinned.is_file() and os.access(pinned, os.X_OK):
        return pinned
    found = shutil.which(EXECUTABLE, path=environ.get("PATH", ""))
    return Path(found) if found else None


def require_validator(environ: Mapping[str, str] = os.environ) -> Path:
    """``find_validator``, or a one-line error saying how to install it.

    Raises:
        LocalnetError: it is neither in the per-user folder nor on PATH.
    """
    found = find_validator(environ)
    if found is None:
        raise LocalnetError(
            f"{NOT_INSTALLED} from a curta-chain checkout (it builds agave {PINNED_VERSION} "
            f"into {install_folder(environ=environ)}; nothing there and none on PATH), or run "
            "`curta-chain localnet` without --validator for the embedded localnet"
        )
    return found


def validator_version(executable: Path) -> str:
    """What ``solana-test-validator --version`` says (``solana-test-validator 4.2.2 (...)``).

    Raises:
        LocalnetError: it cannot be run.
    """
    try:
        done = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LocalnetError(f"{executable}: cannot run it: {exc}") from exc
    return done.stdout.strip() or done.stderr.strip()


@dataclass(frozen=True)
class ValidatorPorts:
    """The ports one validator takes on 127.0.0.1 (PubSub is ``rpc + 1``, as agave does)."""

    rpc: int
    faucet: int
    gossip: int
    dynamic: tuple[int, int]
    """``--dynamic-port-range``: [first, end), for TPU, TVU, repair and the rest."""

    @property
    def url(self) -> str:
        """The JSON-RPC URL."""
        return f"http://127.0.0.1:{self.rpc}"

    @property
    def ws_url(self) -> str:
        """The PubSub websocket URL."""
        return f"ws://127.0.0.1:{self.rpc + 1}"

    @property
    def faucet_address(self) -> str:
        """Where the faucet listens (``requestAirdrop`` goes through the RPC to it)."""
        return f"127.0.0.1:{self.faucet}"


def _is_free(port: int) -> bool:
    # The validator binds TCP and UDP (gossip, TPU, repair), the faucet on every interface.
    for kind, host in (
        (socket.SOCK_STREAM, "127.0.0.1"),
        (socket.SOCK_DGRAM, "127.0.0.1"),
        (socket.SOCK_STREAM, "0.0.0.0"),
    ):
        with socket.socket(socket.AF_INET, kind) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True


def _free_block(count: int, avoid: frozenset[int] = frozenset(), tries: int = 200) -> int:
    rng = random.Random()
    for _ in range(tries):
        base = rng.randrange(_PORT_BASES[0], _PORT_BASES[1] - count)
        block = range(base, base + count)
        if not avoid.intersection(block) and all(_is_free(port) for port in block):
            return base
    raise LocalnetError(f"no block of {count} free ports on 127.0.0.1 for {EXECUTABLE}")


def pick_ports(rpc: int = 0) -> ValidatorPorts:
    """Free ports for one validator; ``rpc`` (and ``rpc + 1``) as given unless 0.

    Raises:
        LocalnetError: no free block was found.
    """
    if rpc:
        base = _free_block(2 + DYNAMIC_PORTS, frozenset({rpc, rpc + 1}))
        faucet, gossip, first = base, base + 1, base + 2
    else:
        base = _free_block(4 + DYNAMIC_PORTS)
        rpc, faucet, gossip, first = base, base + 2, base + 3, base + 4
    return ValidatorPorts(rpc, faucet, gossip, (first, first + DYNAMIC_PORTS))


@dataclass(frozen=True)
class Preload:
    """A program put in the validator's genesis.

    ``upgrade_authority`` None: ``--bpf-program`` (no upgrades); otherwise
    ``--upgradeable-program`` with that authority (an address, a keypair file, or "none").
    """

    address: str
    binary: Path
    upgrade_authority: str | None = None

    def arguments(self) -> list[str]:
        """The validator's arguments for this program."""
        if self.upgrade_authority is None:
            return ["--bpf-program", self.address, str(self.binary)]
        return ["--upgradeable-program", self.address, str(self.binary), self.upgrade_authority]


def shipped_preload() -> Preload:
    """The shipped ``curta.so`` at ``LOCALNET_PROGRAM_ID``, as the embedded localnet has it.

    Raises:
        LocalnetError: this install has no program binary.
    """
    try:
        from curta_chain.program import PROGRAM_BINARY
    except ImportError as exc:
        raise LocalnetError("no curta program binary in this install to preload") from exc
    binary = Path(PROGRAM_BINARY)
    if not binary.is_file():
        raise LocalnetError(f"{binary}: the curta program binary is missing from this install")
    return Preload(LOCALNET_PROGRAM_ID, binary)


def validator_command(
    executable: Path,
    ledger: Path,
    ports: ValidatorPorts,
    programs: Sequence[Preload],
    reset: bool = False,
    deactivate: Sequence[Pubkey] = (),
) -> list[str]:
    """The command line that starts the validator on ``ports`` with ``programs`` preloaded.

    ``--quiet``: no dashboard (the node's log is ``ledger/validator.log``);
    ``--bind-address 127.0.0.1``: its ports (gossip, TPU, repair, RPC) on loopback only, as
    the embedded localnet's, not on every interface of the machine; ``deactivate``: feature
    ids for its ``--deactivate-feature``.
    """
    command = [
        str(executable),
        "--ledger",
        str(ledger),
        "--bind-address",
        "127.0.0.1",
        "--rpc-port",
        str(ports.rpc),
        "--faucet-port",
        str(ports.faucet),
        "--gossip-port",
        str(ports.gossip),
        "--dynamic-port-range",
        f"{ports.dynamic[0]}-{ports.dynamic[1]}",
        "--quiet",
    ]
    for program in programs:
        command += program.arguments()
    for feature in deactivate:
        command += ["--deactivate-feature", str(feature)]
    return [*command, "--reset"] if reset else command


class ValidatorProcess:
    """A running ``solana-test-validator``: its ``url``, ``ws_url``, ``ports`` and ``stop()``.

    ``start`` returns it once the node answers; its output (stdout and stderr) is kept, the
    last lines in ``output``, for the error that says why it stopped.
    """

    def __init__(self, command: list[str], ports: ValidatorPorts, ledger: Path):
        self.command = command
        self.ports = ports
        self.ledger = ledger
        self.url = ports.url
        self.ws_url = ports.ws_url
        self.output: collections.deque[str] = collections.deque(maxlen=40)
        self.genesis_hash = ""
        """Its genesis hash, once it answers (recorded as this user's local cluster)."""
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
            )
        except OSError as exc:
            raise LocalnetError(f"{command[0]}: cannot start: {exc.strerror}") from exc
        self._reader = threading.Thread(target=self._read, name="validator-output", daemon=True)
        self._reader.start()

    @classmethod
    def start(
        cls,
        ledger: Path,
        ports: ValidatorPorts | None = None,
        programs: Sequence[Preload] | None = None,
        reset: bool = False,
        executable: Path | None = None,
        timeout: float = READY_TIMEOUT,
        deactivate: Sequence[Pubkey] = (),
    ) -> "ValidatorProcess":
        """Start the validator and wait until it answers.

        Args:
            ledger: its ledger folder (created; an existing one is resumed unless ``reset``).
            ports: default: free ones.
            programs: default: the shipped program at ``LOCALNET_PROGRAM_ID``.
            reset: start a new chain in ``ledger``.
            executable: default: ``require_validator()``.
            timeout: seconds it may take to answer.
            deactivate: features to turn off in its genesis.

        Raises:
            LocalnetError: it is not installed, exited, or did not answer in time.
        """
        executable = executable or require_validator()
        ports = ports or pick_ports()
        programs = [shipped_preload()] if programs is None else programs
        command = validator_command(executable, ledger, ports, programs, reset, deactivate)
        node = cls(command, ports, ledger)
        try:
            node.wait_ready(timeout)
            node.genesis_hash = node.read_genesis_hash()
            record_local_cluster(node.genesis_hash, "curta-chain localnet --validator", node.url)
        except BaseException:
            node.stop()
            raise
        return node

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip():
                self.output.append(line.rstrip())

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until the node answers getHealth "ok" and getSlot.

        Raises:
            LocalnetError: the process exited, or ``timeout`` seconds passed.
        """
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=5) as client:
            while True:
                if self.process.poll() is not None:
                    raise LocalnetError(self.why_exited("before it answered"))
                if _answers(client, self.url):
                    return
                if time.monotonic() > deadline:
                    raise LocalnetError(
                        f"{EXECUTABLE} did not answer getHealth on {self.url} within "
                        f"{timeout:.0f} s (its log: {self.ledger / 'validator.log'})"
                    )
                time.sleep(_POLL_SECONDS)

    def read_genesis_hash(self) -> str:
        """The running validator's genesis hash (getGenesisHash).

        Raises:
            LocalnetError: it does not answer one.
        """
        body = {"jsonrpc": "2.0", "id": 1, "method": "getGenesisHash"}
        try:
            genesis = httpx.post(self.url, json=body, timeout=30).json().get("result")
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            raise LocalnetError(f"{EXECUTABLE} at {self.url}: no genesis hash: {exc}") from exc
        if not isinstance(genesis, str):
            raise LocalnetError(f"{EXECUTABLE} at {self.url}: no genesis hash ({genesis!r:.80})")
        return genesis

    def why_exited(self, when: str) -> str:
        """One line: the exit status and the last thing the validator said."""
        self._reader.join(timeout=5)
        last = self.output[-1] if self.output else "no output"
        return (
            f"{EXECUTABLE} exited with status {self.process.returncode} {when}: {last} "
            f"(its log: {self.ledger / 'validator.log'})"
        )

    def wait(self) -> int:
        """Wait for the process to end; its exit status."""
        return self.process.wait()

    def stop(self) -> int | None:
        """SIGINT, then SIGKILL if it lingers; the exit status. Safe to call twice."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=5)
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL: nothing flushed."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _answers(client: httpx.Client, url: str) -> bool:
    try:
        health = client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "getHealth"})
        slot = client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "getSlot"})
        return health.json().get("result") == "ok" and isinstance(slot.json().get("result"), int)
    except (httpx.HTTPError, ValueError):
        return False


def run_validator(
    port: int,
    ledger: Path,
    reset: bool,
    reporter: Reporter | None = None,
    deactivate: Sequence[Pubkey] = (),
) -> int:
    """``curta-chain localnet --validator``: serve until Ctrl-C; 0 when stopped so.

    Raises:
        LocalnetError: it is not installed, exited early, or did not answer in time.
    """
    reporter = reporter or NullReporter()
    executable = require_validator()
    reporter.line(f"Starting {validator_version(executable)} ({executable})")
    ports = pick_ports(port)
    # SIGTERM stops the validator as Ctrl-C does, rather than leaving it orphaned.
    signal.signal(signal.SIGTERM, _interrupt)
    node = ValidatorProcess.start(
        ledger, ports, reset=reset, executable=executable, deactivate=deactivate
    )
    try:
        reporter.line(f"Ledger {ledger} (log: {ledger / 'validator.log'})")
        reporter.line(f"Faucet at {ports.faucet_address}")
        reporter.line(f"Program {LOCALNET_PROGRAM_ID} preloaded")
        reporter.line(f"Genesis hash {node.genesis_hash} (recorded as this user's local cluster)")
        reporter.line(f"PubSub websocket at {ports.ws_url}")
        reporter.line(f"Validator ready at {ports.url}")
        node.wait()
    except KeyboardInterrupt:
        node.stop()
        reporter.line("Validator stopped")
        return 0
    raise LocalnetError(node.why_exited("while serving"))


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt

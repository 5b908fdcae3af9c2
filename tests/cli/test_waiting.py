"""Never waiting in silence: fast failures, waits that say what they wait for, Ctrl-C.

A node that has never answered is not there: a refused connection or a host name that
does not resolve fails with one line, without the retries a node that answered before
gets. A node that answered and then stopped is waited for, saying so. A resume hint is
given only once something was sent. How long each takes is exact in
``tests/chain/test_transport.py`` (a fake clock) and measured by
``scripts/bench_cli_startup.py``; here they run against real sockets and processes.
"""

import asyncio
import contextlib
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import processes
import pytest
from reference_client import Client
from solders.keypair import Keypair

from curta_chain.chain.transport import HttpTransport
from curta_chain.cli.keypairs import load_keypair, write_keypair
from curta_chain.errors import RpcError
from curta_chain.localnet import start_in_thread


def free_port() -> int:
    """A port nothing listens on (it was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def curta(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return processes.run(
        [sys.executable, "-m", "curta_chain", *args], capture_output=True, text=True, **kwargs
    )


class Recorder:
    """A reporter that remembers what it was told to wait for."""

    def __init__(self) -> None:
        self.waits: list[str] = []

    @contextlib.contextmanager
    def waiting(self, what: str):
        recorder = self

        class Handle:
            def update(self, what: str) -> None:
                recorder.waits.append(what)

        self.waits.append(what)
        yield Handle()


def post_once(url: str, **kwargs) -> None:
    async def run() -> None:
        transport = HttpTransport(url, **kwargs)
        try:
            await transport.post({"jsonrpc": "2.0", "id": 1, "method": "getHealth"})
        finally:
            await transport.aclose()

    asyncio.run(run())


def test_a_refused_connection_fails_with_one_line():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(RpcError) as refused:
        post_once(url)
    assert str(refused.value) == (
        f"{url}: connection refused: no RPC node is listening there "
        f"(start one with `curta-chain localnet --port {port}`)"
    )


def test_a_host_name_that_does_not_resolve_fails_at_once():
    with pytest.raises(RpcError, match=r"cannot resolve the host curta-chain-test\.invalid"):
        post_once("http://curta-chain-test.invalid:8899")


def test_a_node_that_answered_and_stopped_is_waited_for_saying_so():
    handle = start_in_thread()
    recorder = Recorder()

    async def run() -> None:
        transport = HttpTransport(handle.url, give_up_after=2.0, reporter=recorder)
        try:
            await transport.post({"jsonrpc": "2.0", "id": 1, "method": "getHealth"})
            handle.stop()
            await transport.post({"jsonrpc": "2.0", "id": 2, "method": "getHealth"})
        finally:
            await transport.aclose()

    # Retried for give_up_after (by the transport's own count), then given up on.
    with pytest.raises(RpcError, match=r"no usable answer for 1\.\d s \(last: connection refused"):
        asyncio.run(run())
    host = handle.url.removeprefix("http://")
    assert recorder.waits[0] == f"{host} to answer (connection refused)"


def test_publish_against_nothing_fails_fast_with_no_resume_hint(tmp_path, stories260k):
    art, keypair = tmp_path / "m.curta", tmp_path / "id.json"
    art.write_bytes(stories260k.data)
    write_keypair(Keypair(), keypair)
    url = f"http://127.0.0.1:{free_port()}"
    out = curta("publish", str(art), "-u", url, "-k", str(keypair), "--rpc-timeout", "5")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith(f"error: {url}: connection refused") and "rerun" not in out.stderr
    assert out.stderr.count("\n") == 1


def test_devnet_unreachable_here_fails_at_once(tmp_path):
    # No network but the package registries here: -u d must not retry for a minute.
    out = curta("status", "11111111111111111111111111111111", "-u", "d", "-C", "/dev/null")
    assert out.returncode == 1 and out.stderr.startswith("error: https://api.devnet.solana.com")
    assert out.stderr.count("\n") == 1


class Silent:
    """A port whose kernel completes connections that nobody ever answers."""

    def __enter__(self) -> "Silent":
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        return self

    def connected(self) -> None:
        """Return once a client has connected (and waits for an answer that never comes)."""
        self.sock.settimeout(120)
        self.sock.accept()

    def __exit__(self, *exc) -> None:
        self.sock.close()


def interrupt_when(argv: list[str], ready: Callable[[], None]) -> tuple[int, str, str]:
    """Run the CLI, and press Ctrl-C once ``ready`` returns."""
    process = processes.start(
        [sys.executable, "-m", "curta_chain", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ready()
    process.send_signal(signal.SIGINT)
    out, err = processes.finish(process, 60)
    return process.returncode, out, err


def wait_for_balance(
    client: Client, who, condition: Callable[[int], bool], process: subprocess.Popen[str]
) -> int:
    """Poll ``who``'s balance until ``condition`` holds (or the process ended); return it."""
    while True:
        lamports = client.get_balance(who).value
        if condition(lamports):
            return lamports
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)


def test_ctrl_c_before_anything_was_sent_gives_no_resume_hint():
    with Silent() as silent:
        code, out, err = interrupt_when(
            ["status", "11111111111111111111111111111111", "-u", silent.url], silent.connected
        )
    assert (code, out, err) == (130, "", "error: interrupted\n")


def test_ctrl_c_mid_upload_says_how_to_resume(localnet, fund, tmp_path, stories15m):
    art, keypair = tmp_path / "m.curta", tmp_path / "id.json"
    art.write_bytes(stories15m.data)
    write_keypair(fund(localnet.url, 200), keypair)
    argv = ["publish", str(art), "-u", localnet.url, "-k", str(keypair), "--output", "json"]
    process = processes.start(
        [sys.executable, "-m", "curta_chain", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Interrupt once writes are landing: the accounts' rent has left the payer, and then
    # at least one write's fee. Read at processed: that is where the chain is now.
    payer = load_keypair(keypair).pubkey()
    client = Client(localnet.url, "processed")
    created = wait_for_balance(client, payer, lambda lamports: lamports < 150 * 10**9, process)
    wait_for_balance(client, payer, lambda lamports: lamports < created, process)
    process.send_signal(signal.SIGINT)
    out, err = processes.finish(process, 60)
    assert process.returncode == 130 and out == ""
    # The hint is the command itself, with the -u and -k it was given.
    rerun = shlex.join(["curta-chain", "publish", str(art), "-u", localnet.url, "-k", str(keypair)])
    assert err == f"error: interrupted; rerun `{rerun}` to resume\n"


def test_publish_with_a_wallet_as_program_id_fails_before_sending_anything(
    localnet, fund, tmp_path, stories260k
):
    # It once sent every write and gave up after nearly five minutes.
    art, keypair = tmp_path / "m.curta", tmp_path / "id.json"
    art.write_bytes(stories260k.data)
    payer = fund(localnet.url, 10)
    write_keypair(payer, keypair)
    client = Client(localnet.url, "processed")  # where a fee would show at once
    before = client.get_balance(payer.pubkey()).value
    argv = ["publish", str(art), "-u", localnet.url, "-k", str(keypair)]
    out = curta(*argv, "--program-id", str(payer.pubkey()))
    assert out.returncode == 1 and out.stdout == "" and out.stderr.count("\n") == 1
    assert f"program {payer.pubkey()} is not an executable program" in out.stderr
    assert client.get_balance(payer.pubkey()).value == before == 10 * 10**9

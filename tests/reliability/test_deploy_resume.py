"""kill -9 of `deploy` at chosen points; the rerun resumes from the buffer on the chain.

As in ``test_crash_resume``, the CLI runs as its own process through a ``FaultProxy`` that
forwards one request at a time and kills the client at the chosen point (the node never
sees what the client had queued). The rerun must find the buffer the first run created
(never a second one), write only the pieces it does not hold yet, and deploy; the payer
ends exactly as poor as a clean deploy leaves it, plus the fees of what both runs landed.
"""

import signal
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from attacker import on_chain
from fault_proxy import (
    LAMPORTS_PER_SIGNATURE,
    FaultProxy,
    Request,
    balance,
    fees_paid,
    landed,
    record,
    run_cli,
    start_cli,
    wait_confirmed,
)
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.chain import loader
from curta_chain.chain.program_check import read_program
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import TxSpec
from curta_chain.cli import keypairs
from curta_chain.program import shipped_program


@dataclass(frozen=True)
class KillPoint:
    name: str
    stage: str
    when: Callable[[FaultProxy, Request], bool]
    writes_left: int | None
    """Writes the rerun plans (None: all the clean plan's)."""


def _carries(kind: str) -> Callable[[FaultProxy, Request], bool]:
    return lambda _proxy, request: any(tx.kind == kind for tx in request.transactions)


KILL_POINTS = [
    KillPoint("buffer created, no write yet", "before", _carries("loader_write"), None),
    KillPoint("buffer written, not deployed", "after", _carries("loader_write"), 0),
    KillPoint("as the deploy arrives", "before", _carries("loader_deploy"), 0),
]


@pytest.mark.parametrize("point", KILL_POINTS, ids=[p.name for p in KILL_POINTS])
def test_kill_9_mid_deploy_then_the_rerun_resumes_from_the_buffer(localnet, fund, tmp_path, point):
    payer = fund(localnet.url, 10)
    key = tmp_path / "id.json"
    keypairs.write_keypair(payer, key)
    proxy = FaultProxy(localnet.url, serialize=True).start()
    try:
        via = ("-u", proxy.url, "-k", str(key), "-C", str(tmp_path / "config.yml"))
        code, dry, err = run_cli("deploy", "--dry-run", *via)
        assert code == 0, err
        clean = dry["plan"]
        before = balance(localnet.url, payer.pubkey())
        victim = []
        spoiled = 0

        def kill() -> None:
            victim[0].kill()
            victim[0].wait()
            proxy.down = True

        trigger = proxy.trigger(point.when, kill, point.stage)
        victim.append(start_cli("deploy", *via))
        victim[0].wait(timeout=120)
        assert victim[0].returncode == -signal.SIGKILL
        assert trigger.settled.wait(60)  # the action ran whole: the proxy is down by now
        proxy.down = False
        wait_confirmed(localnet.url, list(proxy.sent))  # the rerun reads at confirmed

        code, again, err = run_cli("deploy", "--dry-run", *via)
        assert code == 0, err
        resumed = again["plan"]
        left = clean["write_transactions"] if point.writes_left is None else point.writes_left
        assert (resumed["state"], resumed["write_transactions"]) == ("resuming", left)
        assert resumed["transaction_version"] == clean["transaction_version"] == "v1"
        assert resumed["buffer"] == clean["buffer"]
        if point.writes_left == 0 and point.stage == "after":
            # Someone (the payer, its authority) changed one piece: only that one is rewritten.
            spoil_one_piece(localnet.url, payer, Pubkey.from_string(clean["buffer"]))
            spoiled = LAMPORTS_PER_SIGNATURE  # the spoiling write, and the rerun's rewrite
            code, again, err = run_cli("deploy", "--dry-run", *via)
            assert again["plan"]["write_transactions"] == 1, err

        code, result, err = run_cli("deploy", *via)
        assert code == 0, err
    finally:
        proxy.stop()
    # The build the cluster's features choose (sbpf-v3 on the localnet, as on Agave 4).
    build = shipped_program(clean["build"])
    assert result["program_id"] == clean["program_id"] and result["shipped_build"] == build.name
    deployed = on_chain(
        localnet.url, lambda c: read_program(c, Pubkey.from_string(clean["program_id"]))
    )
    assert deployed.build == build

    outcomes = landed(localnet.url, proxy.sent)
    assert all(err is None for _, err in outcomes.values())
    kinds = [tx.kind for tx, _ in outcomes.values()]
    assert kinds.count("loader_initialize_buffer") == 1  # one buffer, found again by the rerun
    assert kinds.count("loader_deploy") == 1
    spent = before - balance(localnet.url, payer.pubkey()) - spoiled
    fees = fees_paid(localnet.url, proxy.sent)
    assert spent == clean["rent_lamports"] + fees
    # What the kill cost: nothing. No second buffer, no rent, no transaction sent twice.
    lost = spent - clean["cost_lamports"] - spoiled
    assert lost == 0
    record(f"kill -9 deploy: {point.name}", writes=clean["write_transactions"], lost_lamports=lost)


def spoil_one_piece(url: str, payer: Keypair, buffer: Pubkey) -> None:
    """Write garbage over the buffer's second piece."""
    chunk = loader.max_write_chunk()
    ix = loader.write(buffer, payer.pubkey(), chunk, b"\xff" * 16)
    on_chain(url, lambda client: Sender(client, payer).send([TxSpec((ix,))]))

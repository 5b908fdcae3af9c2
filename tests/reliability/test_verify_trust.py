"""What verify trusts: the program (checked first, and fast) and the node (cross-checked).

A user who mistypes a wallet for ``--program-id`` is stopped within a second or two. With
``--cross-check URL`` verify reads every account it used again from a second node, at the
first node's slot or later: an honest second node agrees; one that serves different bytes
for any account fails the check; one on another cluster is refused in one line.
"""

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_proxy import FaultProxy, run_cli, run_plain
from solders.keypair import Keypair

from curta_chain.artifact import Artifact
from curta_chain.cli import keypairs
from curta_chain.program import MODEL_ACCOUNT_SIZE

DEVNET_GENESIS = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"


@pytest.fixture
def sealed(localnet, fund, tmp_path, stories260k: Artifact) -> Iterator[tuple[str, Path]]:
    """A sealed stories260K model on the localnet, and its artifact file."""
    art = tmp_path / "stories260K.curta"
    art.write_bytes(stories260k.data)
    key = tmp_path / "id.json"
    keypairs.write_keypair(fund(localnet.url, 20), key)
    via = ("-u", localnet.url, "-k", str(key))
    code, published, err = run_cli("publish", str(art), *via)
    assert code == 0, err
    code, _, err = run_cli("seal", published["model"], *via)
    assert code == 0, err
    yield published["model"], art


def test_a_wallet_as_the_program_id_fails_in_one_line(localnet, fund):
    wallet = fund(localnet.url, 1).pubkey()
    done = run_plain(
        "status", str(Keypair().pubkey()), "-u", localnet.url, "--program-id", str(wallet)
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert f"program {wallet} is not an executable program" in done.stderr


def test_an_honest_second_node_agrees(localnet, sealed):
    model, art = sealed
    second = FaultProxy(localnet.url).start()
    try:
        done = run_plain("verify", model, str(art), "-u", localnet.url, "--cross-check", second.url)
    finally:
        second.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"cross-checked  every account read again from {second.url}" in done.stdout
    assert second.requests > 0


def test_a_second_node_serving_other_bytes_fails_the_check(localnet, sealed):
    model, art = sealed

    def doctor(result: dict) -> dict:
        value = result.get("value") if isinstance(result, dict) else None
        if value and value["data"][1] == "base64":
            data = bytearray(base64.b64decode(value["data"][0]))
            if len(data) == MODEL_ACCOUNT_SIZE:
                data[-1] ^= 0xFF  # past every field verify reads: only the bytes differ
                value["data"][0] = base64.b64encode(bytes(data)).decode()
        return result

    liar = FaultProxy(localnet.url, edits={"getAccountInfo": doctor}).start()
    try:
        done = run_plain("verify", model, str(art), "-u", localnet.url, "--cross-check", liar.url)
        code, report, _ = run_cli(
            "verify", model, str(art), "-u", localnet.url, "--cross-check", liar.url
        )
    finally:
        liar.stop()
    assert done.returncode == 1
    assert f"cross-check: {liar.url} (slot " in done.stdout
    assert f"holds different bytes for account {model} than the first node" in done.stdout
    assert code == 1 and [d["kind"] for d in report["differences"]] == ["cross-check"]
    # Without the second node, the first (honest) one alone verifies.
    assert run_plain("verify", model, str(art), "-u", localnet.url).returncode == 0


def test_a_second_node_on_another_cluster_is_refused(localnet, sealed):
    model, art = sealed
    other = FaultProxy(localnet.url, edits={"getGenesisHash": lambda _: DEVNET_GENESIS}).start()
    try:
        done = run_plain("verify", model, str(art), "-u", localnet.url, "--cross-check", other.url)
    finally:
        other.stop()
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"error: --cross-check {other.url} serves genesis {DEVNET_GENESIS}, {localnet.url} serves "
        f"{localnet.genesis_hash}: not the same cluster\n"
    )

"""A node that delivers every transaction but reports no status for any, against the CLI.

Through the fault proxy's ``hide_statuses`` (getSignatureStatuses answers null for every
signature, getTransaction null for every transaction), ``publish`` and ``seal`` of
stories260K run as processes: each finishes well within ten minutes, pays what the same
commands pay through the honest node (no transaction signed twice, so not a lamport more),
and says what the node reported, what the chain shows and how to check the node.
"""

import re
from pathlib import Path

from fault_proxy import FaultProxy, Provider, balance, fund, run_plain
from solders.keypair import Keypair

from curta_chain.constants import LAMPORTS_PER_SOL
from curta_chain.localnet import LocalnetHandle

DEADLINE = 600.0
"""Seconds each command may take through the hiding node: the acceptance's ten minutes."""


def publish_and_seal(url: str, node: str, keypair: Path, artifact: Path) -> tuple[int, int, str]:
    """Publish and seal through ``url``; return what each cost the payer, and the stderr."""
    payer = Keypair.from_json(keypair.read_text())
    start = balance(node, payer.pubkey())
    via = ("-u", url, "-k", str(keypair))
    published = run_plain("publish", str(artifact), *via, timeout=DEADLINE)
    assert published.returncode == 0, published.stderr
    after_publish = balance(node, payer.pubkey())
    (model,) = re.findall(r"^created model (\S+)$", published.stdout, re.MULTILINE)
    sealed = run_plain("seal", model, *via, timeout=DEADLINE)
    assert sealed.returncode == 0, sealed.stderr
    assert f"sealed {model}" in sealed.stdout
    spent = after_publish - balance(node, payer.pubkey())
    return start - after_publish, spent, published.stderr + sealed.stderr


def test_a_node_hiding_every_status_costs_what_an_honest_one_does_and_is_named(
    localnet: LocalnetHandle, tmp_path, stories260k_file
):
    honest = tmp_path / "honest"
    honest.mkdir()
    clean = fund(localnet.url, Keypair(), 20 * LAMPORTS_PER_SOL, honest)
    clean_publish, clean_seal, _ = publish_and_seal(
        localnet.url, localnet.url, clean, stories260k_file
    )
    proxy = FaultProxy(localnet.url, provider=Provider(hide_statuses=True)).start()
    try:
        keypair = fund(localnet.url, Keypair(), 20 * LAMPORTS_PER_SOL, tmp_path)
        hidden_publish, hidden_seal, err = publish_and_seal(
            proxy.url, localnet.url, keypair, stories260k_file
        )
    finally:
        proxy.stop()
    assert proxy.injected["status hidden"] > 0
    # Everything the node hid was found on chain, never signed again: the same spend.
    assert (hidden_publish, hidden_seal) == (clean_publish, clean_seal)
    assert f"{proxy.url} reported no status for" in err
    assert "that the chain shows landed: counted from the chain" in err
    assert "--cross-check URL" in err

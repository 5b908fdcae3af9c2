"""The conformance harness (tests/rpc_conformance.py) itself: two embedded localnets agree.

The validator tier holds the embedded localnet to the real validator with it; here, where
no validator is needed, two localnets with the same history must show no difference at
all: what the harness allows (slots, hashes, addresses and signatures by name) is exactly
what differs between two runs of one node, and every probe gets an answer.
"""

import base64
import hashlib
from pathlib import Path

from rpc_conformance import Difference, call, compare, conformance, normalize, prepare, probes
from solders.keypair import Keypair

from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.localnet import start_in_thread

TINY = ModelConfig(
    dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)


def test_two_embedded_localnets_answer_every_probe_alike(tmp_path: Path):
    art = tmp_path / "tiny.curta"
    art.write_bytes(synthetic_artifact(TINY, seed=3).data)
    payer = Keypair()
    # Short slots: the scenario waits for its last transaction to be finalized (32 slots).
    first, second = start_in_thread(slot_duration=0.1), start_in_thread(slot_duration=0.1)
    try:
        ours = prepare(first.url, payer, art, tmp_path)
        theirs = prepare(second.url, payer, art, tmp_path)
        assert ours.signatures["transfer"] != theirs.signatures["transfer"]  # other blockhashes
        assert [str(d) for d in conformance(ours, theirs)] == []
        # Each probe is answered (a result or an error object), never by a transport failure.
        answered = [call(ours.url, probe.method, probe.params) for probe in probes(ours)]
        assert all(("result" in a) != ("error" in a) for a in answered)
        errors = {p.name for p, a in zip(probes(ours), answered, strict=True) if "error" in a}
        assert {
            "getAccountInfo slot not reached",
            "sendTransaction program error",
            "sendTransaction bad signature",
            "sendTransaction unknown blockhash",
            "sendTransaction blockhash newer than the preflight's bank",
            "sendTransaction oversized",
            "sendTransaction not base64",
        } <= errors
        accepted = {
            "sendTransaction preflight in the blockhash's bank",
            "sendTransaction blockhash newer than finalized, no preflight",
        }
        assert not accepted & errors
    finally:
        first.stop()
        second.stop()


def test_a_difference_is_named_by_probe_and_path():
    ours = {"result": {"context": {"slot": 5}, "value": {"lamports": 1, "space": 0}}}
    theirs = {"result": {"context": {"slot": 9}, "value": {"lamports": 2}}}
    assert compare("getBalance", ours, theirs) == [
        Difference("getBalance", "result.value.lamports", 1, 2),
        Difference("getBalance", "result.value.space", 0, "(absent)"),
    ]


def test_addresses_are_named_in_strings_and_in_account_data():
    address, other = Keypair().pubkey(), Keypair().pubkey()
    data = base64.b64encode(bytes(8) + bytes(address) + bytes(other)).decode()
    named = normalize({"owner": str(address), "data": [data, "base64"]}, {str(address): "<m>"})
    assert named["owner"] == "<m>"
    decoded = base64.b64decode(named["data"][0])
    assert decoded == bytes(8) + hashlib.sha256(b"<m>").digest() + bytes(other)

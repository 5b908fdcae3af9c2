"""The embedded localnet answers as the real validator does (tests/rpc_conformance.py).

The same state is built on both (a funded payer, a model published by the CLI, a transfer,
a second one, a program error that landed), then every request the client, the SDK and
the page make, and the error answers they read, go to both. Each difference found is
either fixed in the localnet or listed in ``KNOWN``, with its reason, and written down in
docs/localnet.md ("Against the real validator"); an unlisted difference fails the test, and
so does a listed one that is gone (the list stays true).
"""

from pathlib import Path

from rpc_conformance import conformance, prepare
from solders.keypair import Keypair
from validator_helpers import Node

from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact

TINY = ModelConfig(
    dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)
KNOWN: dict[str, str] = {}
"""``probe: path`` -> why the difference stays (docs/localnet.md says the same)."""


def test_the_embedded_localnet_answers_every_probe_as_the_validator(
    validator: Node, embedded: Node, tmp_path: Path
):
    art = tmp_path / "tiny.curta"
    art.write_bytes(synthetic_artifact(TINY, seed=4).data)
    payer = Keypair()
    theirs = prepare(validator.url, payer, art, tmp_path)
    ours = prepare(embedded.url, payer, art, tmp_path)
    found = conformance(ours, theirs)
    where = {f"{d.probe}: {d.path}" for d in found}
    assert [str(d) for d in found if f"{d.probe}: {d.path}" not in KNOWN] == []
    assert sorted(set(KNOWN) - where) == [], "listed differences that are gone"

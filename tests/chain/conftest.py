"""The chain package's unit tests run against ``node``: the localnet in this process.

``node`` is an ``inprocess.LocalnetTransport`` (see its docstring): no HTTP, no threads, one
slot per request; ``node.fund()``, ``node.sender(payer)`` and ``node.context(authority)``
make what a test needs; ``tiny`` is an artifact that publishes in a few dozen writes. The
end-to-end tests here use the ``localnet`` fixture over HTTP.
"""

from collections.abc import Iterator

import pytest
from inprocess import LocalnetTransport

from curta_chain.artifact import Artifact
from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact

TINY = ModelConfig(
    dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)
"""A model small enough to publish in a few dozen writes: sections of 44,312 and 9,544
bytes, one seal chunk each."""


@pytest.fixture
def node() -> Iterator[LocalnetTransport]:
    transport = LocalnetTransport()
    try:
        yield transport
    finally:
        transport.localnet.close()


@pytest.fixture(scope="session")
def tiny() -> Artifact:
    return synthetic_artifact(TINY, seed=1)

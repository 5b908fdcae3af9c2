from pathlib import Path

import pytest

from curta_chain.artifact import Artifact, ModelConfig, read_artifact
from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.synthetic import (
    llama2c_checkpoint_bytes,
    llama2c_tokenizer_bytes,
)

SPLIT_UNTIED = ModelConfig(
    dim=64, hidden_dim=128, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=16_000, seq_len=32
)
"""Small, yet over a million matrix weights: 4 sections, and an own classifier."""


@pytest.fixture(scope="session")
def split_untied_checkpoint() -> bytes:
    return llama2c_checkpoint_bytes(SPLIT_UNTIED, seed=7, shared_classifier=False)


@pytest.fixture(scope="session")
def split_untied(split_untied_checkpoint: bytes) -> Artifact:
    tokenizer = llama2c_tokenizer_bytes(SPLIT_UNTIED.vocab_size, seed=7)
    return convert_llama2c_bytes(split_untied_checkpoint, tokenizer, "split.bin", "tok.bin")


@pytest.fixture
def artifact_file(tmp_path: Path, stories260k: Artifact) -> Path:
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    assert read_artifact(path).data == stories260k.data
    return path

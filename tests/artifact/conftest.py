import os
import struct
from pathlib import Path

import pytest

from curta_chain.artifact import Artifact, ModelConfig, read_artifact
from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.synthetic import (
    STORIES15M,
    llama2c_checkpoint_bytes,
    llama2c_tokenizer_bytes,
)

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("CURTA_DATA", REPO.parent / "shared" / "data" / "llama2c"))

SPLIT_UNTIED = ModelConfig(
    dim=64, hidden_dim=128, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=16_000, seq_len=32
)
"""Small, yet over a million matrix weights: 4 sections, and an own classifier."""


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
def stories15m_checkpoint() -> bytes:
    return llama2c_checkpoint_bytes(STORIES15M, seed=15)


@pytest.fixture(scope="session")
def tokenizer32k() -> bytes:
    return llama2c_tokenizer_bytes(STORIES15M.vocab_size, seed=15)


@pytest.fixture(scope="session")
def stories15m(stories15m_checkpoint: bytes, tokenizer32k: bytes) -> Artifact:
    return convert_llama2c_bytes(stories15m_checkpoint, tokenizer32k, "15m.bin", "tok.bin")


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

"""Models for the inference tests: stories260K, a 32k-vocabulary one, and one at the largest shapes.

- ``model260k``: the real stories260K (with the 512-token stand-in tokenizer) as an IntModel.
- ``artifact32k``: a tiny model whose tokenizer is the real 32,000-token tokenizer.bin.
- ``widest``: one layer at the format's largest per-layer shapes (dimension 512, hidden
  2,048, head size 64, context 512) with weights near the largest a row scale holds and
  normalization weights near 128, so activations saturate and every bound is reached.
- ``c_compiler``, ``native_path``: the C compiler (a skip without one), and the program's C
  built for the host (``host_build``), in the tests' cache.
"""

import os
import struct
from pathlib import Path

import numpy as np
import pytest

from curta_chain.artifact import Artifact, ModelConfig
from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.llama2c import tensor_shapes
from curta_chain.artifact.synthetic import llama2c_checkpoint_bytes, llama2c_tokenizer_bytes
from curta_chain.errors import BuildError
from curta_chain.inference import IntModel, Tokenizer
from curta_chain.inference.host_build import compiler, library

TINY32K = ModelConfig(
    dim=8, hidden_dim=16, n_layers=1, n_heads=2, n_kv_heads=2, vocab_size=32_000, seq_len=16
)
WIDEST = ModelConfig(
    dim=512, hidden_dim=2_048, n_layers=1, n_heads=8, n_kv_heads=8, vocab_size=259, seq_len=512
)


def checkpoint_bytes(config: ModelConfig, tensor) -> bytes:
    """A llama2.c checkpoint (shared classifier) whose tensors are ``tensor(name, shape)``."""
    header = struct.pack(
        "<7i", config.dim, config.hidden_dim, config.n_layers, config.n_heads,
        config.n_kv_heads, config.vocab_size, config.seq_len,
    )  # fmt: skip
    body = [
        np.asarray(tensor(name, shape), dtype="<f4").tobytes()
        for name, shape in tensor_shapes(config, True)
    ]
    return header + b"".join(body)


@pytest.fixture(scope="session")
def model260k(stories260k: Artifact) -> IntModel:
    return IntModel.from_artifact(stories260k)


@pytest.fixture(scope="session")
def tokenizer_bin(data_dir) -> bytes:
    return (data_dir / "tokenizer.bin").read_bytes()


@pytest.fixture(scope="session")
def artifact32k(tokenizer_bin: bytes) -> Artifact:
    checkpoint = llama2c_checkpoint_bytes(TINY32K, seed=3)
    return convert_llama2c_bytes(checkpoint, tokenizer_bin, "tiny.bin", "tokenizer.bin")


@pytest.fixture(scope="session")
def tokenizer32k(artifact32k: Artifact) -> Tokenizer:
    return Tokenizer.from_artifact(artifact32k)


@pytest.fixture(scope="session")
def widest() -> Artifact:
    rng = np.random.default_rng(11)

    def tensor(name: str, shape: tuple[int, ...]) -> np.ndarray:
        if "normalization" in name:
            return np.full(shape, 127.99, dtype=np.float32)
        if name == "rotary tables":
            return np.zeros(shape, dtype=np.float32)
        signs = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=shape)
        return signs * np.float32(32_000.0)

    checkpoint = checkpoint_bytes(WIDEST, tensor)
    return convert_llama2c_bytes(
        checkpoint, llama2c_tokenizer_bytes(WIDEST.vocab_size), "widest.bin", "tok.bin"
    )


@pytest.fixture
def c_compiler() -> list[str]:
    """The compiler's command words, or a skip saying there is none (a failure under CI)."""
    try:
        return compiler()
    except BuildError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"{exc}: the native forward pass cannot be built here")


@pytest.fixture
def native_path(c_compiler: list[str]) -> Path:
    return library()  # the tests' cache (the root conftest's own_home): built once, then found

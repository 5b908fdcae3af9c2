"""Synthetic inputs with real shapes and random values, for tests and benchmarks.

Everything here is deterministic in its seed, so two runs build byte-identical files.
"""

import struct

import numpy as np

from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.llama2c import tensor_shapes
from curta_chain.artifact.model import Artifact
from curta_chain.artifact.tezw import HEADER_SIZE as TEZW_HEADER_SIZE
from curta_chain.artifact.tezw import MAGIC, VERSION, expected_size

STORIES15M = ModelConfig(
    dim=288, hidden_dim=768, n_layers=6, n_heads=6, n_kv_heads=6, vocab_size=32_000, seq_len=256
)
"""The shapes of llama2.c's stories15M (its classifier is shared)."""
LARGEST = ModelConfig(
    dim=512, hidden_dim=2_048, n_layers=16, n_heads=8, n_kv_heads=8, vocab_size=20_160, seq_len=512
)
"""The largest model the spec allows: every dimension at its bound, 18 sections (79 MB), and
the largest vocabulary whose embedding fits one section (20,160 rows of 520 bytes; the
classifier shared)."""
TEZW_DEFAULT = {"n_layer": 4, "n_head": 4, "dim": 128, "max_seq": 128, "ffn_dim": 512}
"""The TEZW page's default configuration (vocabulary 256)."""
WEIGHT_STD = 0.02


def llama2c_checkpoint_bytes(
    config: ModelConfig, seed: int = 0, shared_classifier: bool = True
) -> bytes:
    """Return a llama2.c checkpoint of ``config``'s shapes with random float32 weights.

    Matrices are normal with standard deviation 0.02; normalization weights are near 1.
    """
    rng = np.random.default_rng(seed)
    vocab = config.vocab_size if shared_classifier else -config.vocab_size
    header = struct.pack(
        "<7i", config.dim, config.hidden_dim, config.n_layers, config.n_heads,
        config.n_kv_heads, vocab, config.seq_len,
    )  # fmt: skip
    pieces = [header]
    for name, shape in tensor_shapes(config, shared_classifier):
        if "normalization" in name:
            values = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
        else:
            values = WEIGHT_STD * rng.standard_normal(shape, dtype=np.float32)
        pieces.append(values.astype("<f4").tobytes())
    return b"".join(pieces)


def llama2c_tokenizer_bytes(vocab_size: int, seed: int = 0) -> bytes:
    """Return a llama2.c tokenizer file of ``vocab_size`` distinct tokens.

    Ids 0 to 2 are llama2.c's specials, 3 to 258 its ``<0xXX>`` byte tokens, and the rest
    random lowercase pieces (some with a leading space) with falling scores.
    """
    rng = np.random.default_rng(seed)
    tokens = [b"<unk>", b"\n<s>\n", b"\n</s>\n", *(b"<0x%02X>" % b for b in range(256))]
    seen = set(tokens)
    while len(tokens) < vocab_size:
        length = int(rng.integers(2, 12))
        piece = bytes(rng.integers(97, 123, size=length, dtype=np.uint8))
        if rng.random() < 0.5:
            piece = b" " + piece
        if piece not in seen:
            seen.add(piece)
            tokens.append(piece)
    longest = max(len(t) for t in tokens)
    out = [struct.pack("<I", longest)]
    for token_id, token in enumerate(tokens):
        score = 0.0 if token_id < 259 else -float(token_id - 259)
        out.append(struct.pack("<fI", score, len(token)) + token)
    return b"".join(out)


def tezw_bytes(
    n_layer: int = 4, n_head: int = 4, dim: int = 128, max_seq: int = 128, ffn_dim: int = 512,
    seed: int = 0,
) -> bytes:  # fmt: skip
    """Return a TEZW v2 file (vocabulary 256) with random float64 weights."""
    rng = np.random.default_rng(seed)
    size = expected_size(n_layer, dim, 256, ffn_dim)
    count = (size - TEZW_HEADER_SIZE) // 8
    header = MAGIC + struct.pack("<7i", VERSION, n_layer, n_head, dim, 256, max_seq, ffn_dim)
    values = WEIGHT_STD * rng.standard_normal(count)
    # Normalization weights near 1 at their places: the final one, then rms1/rms2 per layer.
    layer = 2 * dim + 4 * dim * dim + 3 * ffn_dim * dim
    base = 256 * dim
    values[base : base + dim] += 1.0
    for index in range(n_layer):
        start = base + dim + index * layer
        values[start : start + dim] += 1.0
        rms2 = start + dim + 4 * dim * dim
        values[rms2 : rms2 + dim] += 1.0
    return header + bytes(8) + values.astype("<f8").tobytes()


def synthetic_artifact(
    config: ModelConfig = STORIES15M, seed: int = 0, shared_classifier: bool = True
) -> Artifact:
    """Return the artifact converted from a synthetic checkpoint and tokenizer of ``config``."""
    return convert_llama2c_bytes(
        llama2c_checkpoint_bytes(config, seed, shared_classifier),
        llama2c_tokenizer_bytes(config.vocab_size, seed),
        "<synthetic checkpoint>",
        "<synthetic tokenizer>",
    )

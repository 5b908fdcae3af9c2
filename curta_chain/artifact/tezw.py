"""Read a TEZW v2 file (TezzLLM's weights) as a llama-shaped model over a 259-token vocabulary.

The layout: ``TZ2W``, then seven i32 (version, layers, heads, dim, vocab, context, ffn
dim), eight reserved bytes, then float64 tensors: the embedding, the final normalization,
and per layer rms1, wq, wk, wv, wo, rms2, wgate, wval, wproj. The file must be exactly
that long.

What the TEZW page leaves open, decided here:

- The version must be 2 and the vocabulary 256 (one token per byte).
- The eight reserved bytes are ignored, whatever they hold.
- Matrices are stored (rows, columns) = (output, input), as llama2.c stores them: wgate and
  wval are [ffn_dim, dim], wproj is [dim, ffn_dim].
- SwiGLU: wgate is the gate (llama2.c's w1), wval the up projection (w3), wproj the down
  projection (w2).
- Key and value heads equal heads; the classifier is tied to the embedding.
- TEZW byte ``b`` becomes id ``b + 3``; ids 0, 1 and 2 (unknown, begin, end) get zero
  embedding rows, so their logit is always 0.
"""

import struct

import numpy as np

from curta_chain.artifact.floats import FloatModel
from curta_chain.artifact.layout import ModelConfig
from curta_chain.errors import CheckpointError

MAGIC = b"TZ2W"
VERSION = 2
HEADER_SIZE = 40
TEZW_VOCAB = 256
SPECIAL_TOKENS = 3
FIELDS = ("version", "n_layer", "n_head", "dim", "vocab_sz", "max_seq", "ffn_dim")
_TEZW_NAMES = {
    # our config field: (TEZW header field, its byte)
    "n_layers": ("n_layer", 8),
    "n_heads": ("n_head", 12),
    "n_kv_heads": ("n_head", 12),
    "dim": ("dim", 16),
    "vocab_size": ("vocab_sz", 20),
    "seq_len": ("max_seq", 24),
    "hidden_dim": ("ffn_dim", 28),
}


def expected_size(n_layer: int, dim: int, vocab: int, ffn_dim: int) -> int:
    """Return the byte length of a TEZW file with these dimensions."""
    layer = 2 * dim + 4 * dim * dim + 3 * ffn_dim * dim
    return HEADER_SIZE + 8 * (vocab * dim + dim + n_layer * layer)


def parse_tezw(data: bytes, source: str) -> FloatModel:
    """Parse the bytes of a TEZW v2 file.

    Raises:
        CheckpointError: a wrong magic or version, a dimension the artifact format cannot
            hold, a size that disagrees with the header, or a non-finite float.
    """
    if len(data) < HEADER_SIZE or data[:4] != MAGIC:
        raise CheckpointError(f"{source}: not a TEZW v2 file (expected the magic {MAGIC.decode()})")
    header = dict(zip(FIELDS, struct.unpack_from("<7i", data, 4), strict=True))
    if header["version"] != VERSION:
        raise CheckpointError(
            f"{source}: byte 4 (version): {header['version']}, expected {VERSION}"
        )
    if header["vocab_sz"] != TEZW_VOCAB:
        raise CheckpointError(
            f"{source}: byte 20 (vocab_sz): {header['vocab_sz']}, expected {TEZW_VOCAB} "
            "(one token per byte)"
        )
    n_layer, n_head, dim = header["n_layer"], header["n_head"], header["dim"]
    config = ModelConfig(
        dim=dim,
        hidden_dim=header["ffn_dim"],
        n_layers=n_layer,
        n_heads=n_head,
        n_kv_heads=n_head,
        vocab_size=TEZW_VOCAB + SPECIAL_TOKENS,
        seq_len=header["max_seq"],
    )
    problem = config.problem()
    if problem:
        name, at = _TEZW_NAMES[problem[0]]
        raise CheckpointError(f"{source}: byte {at} ({name}): {problem[1]}")
    ffn = config.hidden_dim
    size = expected_size(n_layer, dim, TEZW_VOCAB, ffn)
    if len(data) != size:
        raise CheckpointError(
            f"{source}: {len(data):,} bytes, but its header ({n_layer} layers, dim {dim}, "
            f"vocab {TEZW_VOCAB}, ffn_dim {ffn}) says {size:,}"
        )
    values = np.frombuffer(data, dtype="<f8", offset=HEADER_SIZE)
    finite = np.isfinite(values)
    if not finite.all():
        index = int(np.argmax(~finite))
        raise CheckpointError(
            f"{source}: byte {HEADER_SIZE + 8 * index:,} (double {index}): {values[index]}, "
            "expected a finite float"
        )
    wte = values[: TEZW_VOCAB * dim].reshape(TEZW_VOCAB, dim)
    final_norm = values[TEZW_VOCAB * dim : TEZW_VOCAB * dim + dim]
    layers = values[TEZW_VOCAB * dim + dim :].reshape(n_layer, -1)
    cuts = np.cumsum([dim, dim * dim, dim * dim, dim * dim, dim * dim, dim, ffn * dim, ffn * dim])
    rms1, wq, wk, wv, wo, rms2, wgate, wval, wproj = np.split(layers, cuts, axis=1)
    embedding = np.zeros((config.vocab_size, dim), dtype=np.float64)
    embedding[SPECIAL_TOKENS:] = wte
    return FloatModel(
        config=config,
        source=source,
        embedding=embedding,
        classifier=None,
        attn_norm=rms1,
        ffn_norm=rms2,
        final_norm=final_norm,
        wq=wq.reshape(n_layer, dim, dim),
        wk=wk.reshape(n_layer, dim, dim),
        wv=wv.reshape(n_layer, dim, dim),
        wo=wo.reshape(n_layer, dim, dim),
        w1=wgate.reshape(n_layer, ffn, dim),
        w2=wproj.reshape(n_layer, dim, ffn),
        w3=wval.reshape(n_layer, ffn, dim),
    )


def byte_vocabulary_tokens() -> tuple[bytes, ...]:
    """Return the 259 tokens given to a TEZW model: llama2.c's three specials, then bytes.

    Token ``b + 3`` is the single byte ``b``; every score is 0, so nothing merges.
    """
    return (b"<unk>", b"\n<s>\n", b"\n</s>\n", *(bytes([b]) for b in range(TEZW_VOCAB)))

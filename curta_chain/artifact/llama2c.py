"""Read a llama2.c checkpoint (the ``export.py`` version-0 format) exactly.

A 28-byte header of seven i32 (dim, hidden, layers, heads, kv heads, vocab, context; a
negative vocab means the classifier follows as its own tensor), then float32 tensors, then
nothing. Any other file is refused.
"""

import struct

import numpy as np

from curta_chain.artifact.floats import FloatModel
from curta_chain.artifact.layout import CONFIG_FIELDS, ModelConfig
from curta_chain.errors import CheckpointError

HEADER_SIZE = 28
FLOAT_SIZE = 4


def tensor_shapes(config: ModelConfig, shared: bool) -> list[tuple[str, tuple[int, ...]]]:
    """Return ``(name, shape)`` of every tensor of the checkpoint, in file order."""
    d, h, k, v, layers = (
        config.dim,
        config.hidden_dim,
        config.kv_dim,
        config.vocab_size,
        config.n_layers,
    )
    shapes = [
        ("token embedding", (v, d)),
        ("attention normalization", (layers, d)),
        ("query", (layers, d, d)),
        ("key", (layers, k, d)),
        ("value", (layers, k, d)),
        ("attention output", (layers, d, d)),
        ("ffn normalization", (layers, d)),
        ("ffn gate", (layers, h, d)),
        ("ffn down", (layers, d, h)),
        ("ffn up", (layers, h, d)),
        ("final normalization", (d,)),
        ("rotary tables", (config.seq_len * config.head_size,)),
    ]
    if not shared:
        shapes.append(("classifier", (v, d)))
    return shapes


def parse_header(data: bytes, source: str) -> tuple[ModelConfig, bool]:
    """Return the checkpoint's config and whether its classifier is shared.

    Raises:
        CheckpointError: the header is short or a field is out of the format's range.
    """
    if len(data) < HEADER_SIZE:
        raise CheckpointError(
            f"{source}: {len(data)} bytes, truncated inside the {HEADER_SIZE}-byte header"
        )
    fields = list(struct.unpack_from("<7i", data, 0))
    shared = fields[5] > 0
    fields[5] = abs(fields[5])
    config = ModelConfig(*fields)
    problem = config.problem()
    if problem:
        name, what = problem
        at = next(byte for field, byte, *_ in CONFIG_FIELDS if field == name) - 8
        raise CheckpointError(f"{source}: header byte {at} ({name}): {what}")
    return config, shared


def is_checkpoint(data: bytes) -> bool:
    """Whether ``data`` has a valid llama2.c header and exactly the size it implies."""
    try:
        config, shared = parse_header(data, "")
    except CheckpointError:
        return False
    floats = sum(int(np.prod(shape)) for _, shape in tensor_shapes(config, shared))
    return len(data) == HEADER_SIZE + FLOAT_SIZE * floats


def parse_checkpoint(data: bytes, source: str) -> FloatModel:
    """Parse the bytes of a llama2.c checkpoint.

    Raises:
        CheckpointError: truncated, trailing bytes, a non-finite float, a config out of
            range, or a classifier present when shared (or absent when not).
    """
    config, shared = parse_header(data, source)
    shapes = tensor_shapes(config, shared)
    floats = sum(int(np.prod(shape)) for _, shape in shapes)
    expected = HEADER_SIZE + FLOAT_SIZE * floats
    classifier_bytes = FLOAT_SIZE * config.vocab_size * config.dim
    if len(data) != expected:
        if shared and len(data) == expected + classifier_bytes:
            raise CheckpointError(
                f"{source}: {len(data):,} bytes holds a classifier of {classifier_bytes:,} bytes "
                f"after the rotary tables, but the positive vocabulary {config.vocab_size} "
                f"says it is shared (expected {expected:,} bytes)"
            )
        if not shared and len(data) == expected - classifier_bytes:
            raise CheckpointError(
                f"{source}: {len(data):,} bytes ends before the classifier that the negative "
                f"vocabulary -{config.vocab_size} announces (expected {expected:,} bytes)"
            )
        state = "truncated" if len(data) < expected else f"{len(data) - expected:,} trailing bytes"
        raise CheckpointError(
            f"{source}: {len(data):,} bytes, expected {expected:,} for this header ({state})"
        )
    values = np.frombuffer(data, dtype="<f4", offset=HEADER_SIZE)
    finite = np.isfinite(values)
    if not finite.all():
        index = int(np.argmax(~finite))
        at = HEADER_SIZE + FLOAT_SIZE * index
        raise CheckpointError(
            f"{source}: byte {at:,} ({_tensor_at(shapes, index)}): {values[index]}, "
            "expected a finite float"
        )
    tensors: dict[str, np.ndarray] = {}
    start = 0
    for name, shape in shapes:
        count = int(np.prod(shape))
        tensors[name] = values[start : start + count].reshape(shape)
        start += count
    return FloatModel(
        config=config,
        source=source,
        embedding=tensors["token embedding"],
        classifier=tensors.get("classifier"),
        attn_norm=tensors["attention normalization"],
        ffn_norm=tensors["ffn normalization"],
        final_norm=tensors["final normalization"],
        wq=tensors["query"],
        wk=tensors["key"],
        wv=tensors["value"],
        wo=tensors["attention output"],
        w1=tensors["ffn gate"],
        w2=tensors["ffn down"],
        w3=tensors["ffn up"],
    )


def _tensor_at(shapes: list[tuple[str, tuple[int, ...]]], index: int) -> str:
    for name, shape in shapes:
        count = int(np.prod(shape))
        if index < count:
            return f"{name}, float {index}"
        index -= count
    raise AssertionError("index past the last tensor")

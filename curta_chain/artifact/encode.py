"""The model in integers, and its bytes: ``encode_parts`` lays ``ArtifactParts`` out as CURTAW01.

``ArtifactParts`` is what a conversion (``convert.py``: llama2.c, TEZW) or a decoded
``Artifact`` (``Artifact.parts``) holds before it is laid out; ``encode_parts`` writes it in
the canonical layout.
"""

import struct
from dataclasses import dataclass

import numpy as np

from curta_chain.artifact.layout import (
    BLOCK_OFFSETS_OFFSET,
    CONFIG_OFFSET,
    DESCRIPTOR_FORMAT,
    DESCRIPTOR_SIZE,
    HEADER_SIZE,
    INV_SQRT_OFFSET,
    MATRIX_TABLE_OFFSET,
    SECTION_COUNT_OFFSET,
    SECTION_ENTRY_SIZE,
    SECTION_TABLE_OFFSET,
    TAG,
    ModelConfig,
    matrix_name,
    matrix_section_lengths,
    plan_blocks,
    plan_matrices,
    round_up,
)
from curta_chain.artifact.tokenizer import sorted_token_ids
from curta_chain.constants import MAX_SECTION_SIZE
from curta_chain.errors import ArtifactError


@dataclass(frozen=True, eq=False)
class ArtifactParts:
    """Everything an artifact holds, with its positions left to the canonical layout.

    Attributes:
        config: the model's shape.
        tied: the classifier shares the embedding's bytes (stored once).
        norm: (2 × layers + 1) × dim normalization weights, int32, 24 fractional bits.
        rotary: seq_len × head_size rotary values, int32, 24 fractional bits.
        exp: the 4,097-entry exponential table, uint32.
        silu: the 4,097-entry SiLU table, int32.
        inv_sqrt_head_size: 1/sqrt(head size) with 24 fractional bits.
        score_keys: one u32 score key per token id.
        tokens: the bytes of each token id.
        matrices: each matrix's stored rows, a (rows, row length) uint8 array, in table
            order; when ``tied``, entry 1 is ignored (pass the embedding again).
    """

    config: ModelConfig
    tied: bool
    norm: np.ndarray
    rotary: np.ndarray
    exp: np.ndarray
    silu: np.ndarray
    inv_sqrt_head_size: int
    score_keys: np.ndarray
    tokens: tuple[bytes, ...]
    matrices: tuple[np.ndarray, ...]


def _block(values: np.ndarray, dtype: str, count: int, what: str) -> memoryview:
    array = np.ascontiguousarray(values, dtype=dtype)
    if array.size != count:
        raise ArtifactError(f"cannot encode: {what} has {array.size} values, expected {count}")
    return array.data.cast("B")


def encode_parts(parts: ArtifactParts) -> bytes:
    """Return the artifact file holding ``parts``.

    Raises:
        ArtifactError: the parts do not fit the format (a config out of range, a block or
            matrix of the wrong size, a section over the limit).
    """
    config = parts.config
    problem = config.problem()
    if problem:
        raise ArtifactError(f"cannot encode: {problem[0]}: {problem[1]}")
    v, d, layers = config.vocab_size, config.dim, config.n_layers
    if len(parts.tokens) != v:
        raise ArtifactError(f"cannot encode: {len(parts.tokens)} tokens, expected {v}")
    blocks = plan_blocks(config)
    strings = b"".join(parts.tokens)
    lengths = np.array([len(t) for t in parts.tokens], dtype=np.int64)
    entries = np.zeros((v, 4), dtype="<u4")
    entries[:, 0] = np.asarray(parts.score_keys, dtype=np.uint32)
    entries[:, 1] = lengths
    entries[:, 2] = blocks[6] + np.cumsum(lengths) - lengths
    strings_end = blocks[6] + len(strings)
    section0_length = round_up(strings_end, 8)

    descriptors = plan_matrices(config, parts.tied)
    section_lengths = [section0_length, *matrix_section_lengths(config, parts.tied)]
    for index, length in enumerate(section_lengths):
        if length > MAX_SECTION_SIZE:
            raise ArtifactError(
                f"cannot encode: section {index} would be {length:,} bytes, "
                f"more than the {MAX_SECTION_SIZE:,} a section holds"
            )

    header = bytearray(HEADER_SIZE)
    header[: len(TAG)] = TAG
    struct.pack_into(
        "<7I", header, CONFIG_OFFSET, d, config.hidden_dim, layers, config.n_heads,
        config.n_kv_heads, v, config.seq_len,
    )  # fmt: skip
    struct.pack_into("<I", header, SECTION_COUNT_OFFSET, len(section_lengths))
    struct.pack_into("<7I", header, BLOCK_OFFSETS_OFFSET, *blocks)
    struct.pack_into("<I", header, INV_SQRT_OFFSET, parts.inv_sqrt_head_size)
    offset = 0
    for index, length in enumerate(section_lengths):
        struct.pack_into(
            "<QQ", header, SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * index, offset, length
        )
        offset += length
    for index, desc in enumerate(descriptors):
        struct.pack_into(
            DESCRIPTOR_FORMAT, header, MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE * index,
            desc.section, desc.columns, desc.rows, desc.row_bytes, desc.offset,
        )  # fmt: skip

    pieces: list[bytes | bytearray | memoryview] = [
        header,
        _block(parts.norm, "<i4", (2 * layers + 1) * d, "the normalization block"),
        _block(parts.rotary, "<i4", config.seq_len * config.head_size, "the rotary block"),
        _block(parts.exp, "<u4", blocks[3] - blocks[2] >> 2, "the exponential table"),
        _block(parts.silu, "<i4", blocks[4] - blocks[3] >> 2, "the SiLU table"),
        entries.data.cast("B"),
        _block(sorted_token_ids(parts.tokens), "<u4", v, "the sorted ids"),
        strings,
        bytes(section0_length - strings_end),
    ]
    for index, desc in enumerate(descriptors):
        if index == 1 and parts.tied:
            continue
        rows = np.ascontiguousarray(parts.matrices[index], dtype=np.uint8)
        if rows.shape != (desc.rows, desc.row_bytes):
            raise ArtifactError(
                f"cannot encode: matrix {index} ({matrix_name(index)}) is {rows.shape}, "
                f"expected ({desc.rows}, {desc.row_bytes})"
            )
        pieces.append(rows.data.cast("B"))
    return b"".join(pieces)

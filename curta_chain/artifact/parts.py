"""The model in integers, before it is laid out as bytes: what ``encode_parts`` lays out."""

from dataclasses import dataclass

import numpy as np

from curta_chain.artifact.layout import ModelConfig


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

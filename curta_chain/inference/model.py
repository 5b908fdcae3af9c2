"""``IntModel``: an artifact's integers arranged for the forward pass.

Built once from a decoded ``Artifact`` (from a file or from the chain's sections); it
holds each matrix's weights (stored byte - 128, as float32 for the exact BLAS product of
``fixed.product``) with its u32 row scales, and the normalization weights and tables as
int64. Nothing here rounds: every value is an integer the artifact holds.
"""

from dataclasses import dataclass

import numpy as np

from curta_chain.artifact import Artifact, ModelConfig
from curta_chain.artifact.layout import MATRICES_PER_LAYER, ROW_PREFIX, WEIGHT_BIAS
from curta_chain.inference.fixed import ACT_BITS, SCALE_BITS, product, round_shift, scale_rows


@dataclass(frozen=True, eq=False)
class Matrix:
    """One or more matrices' rows stacked: int8 weights as float64 and their row scales.

    Attributes:
        weights: (rows, columns) float32, each an integer -127 to 127.
        scales: (rows,) int64, the u32 row scales (24 fractional bits).
        row_l1: the largest sum of |weight| over a row (what ``fixed.product`` needs).
    """

    weights: np.ndarray
    scales: np.ndarray
    row_l1: int

    @classmethod
    def from_stored(cls, columns: int, *stored: np.ndarray) -> "Matrix":
        """Stack the stored rows (uint8, scale prefix first) of matrices of ``columns``."""
        rows = np.concatenate(stored) if len(stored) > 1 else stored[0]
        q = rows[:, ROW_PREFIX : ROW_PREFIX + columns].astype(np.int32) - WEIGHT_BIAS
        row_l1 = int(np.abs(q).sum(axis=1).max())
        return cls(q.astype(np.float32), _scales(rows), row_l1)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Return each row times each activation vector of ``x`` (T, columns): (T, rows) Q16."""
        return scale_rows(product(self.weights, self.row_l1, x), self.scales)


@dataclass(frozen=True, eq=False)
class Layer:
    """One transformer layer's matrices, stacked where they share an input vector.

    Attributes:
        qkv: query, key and value rows (dim + 2 × kv_dim rows).
        output: the attention output matrix.
        gate_up: the feed-forward gate rows, then the up rows (2 × hidden rows).
        down: the feed-forward down matrix.
    """

    qkv: Matrix
    output: Matrix
    gate_up: Matrix
    down: Matrix


@dataclass(frozen=True, eq=False)
class IntModel:
    """Everything the integer forward pass reads, as the artifact stores it.

    Attributes:
        config: the model's shape.
        embedding: (vocab, row length) uint8, the embedding's stored rows.
        classifier: the classifier (the embedding's rows again when tied).
        layers: per layer, its matrices.
        norm: (2 × layers + 1, dim) int64 normalization weights, Q24.
        cos: (context, head size / 2) int64, Q24.
        sin: (context, head size / 2) int64, Q24.
        exp: (4,097,) int64, the exponential table (Q30).
        silu: (4,097,) int64, the SiLU table (Q16).
        inv_sqrt_head_size: Q24.
    """

    config: ModelConfig
    embedding: np.ndarray
    classifier: Matrix
    layers: tuple[Layer, ...]
    norm: np.ndarray
    cos: np.ndarray
    sin: np.ndarray
    exp: np.ndarray
    silu: np.ndarray
    inv_sqrt_head_size: int

    @classmethod
    def from_artifact(cls, artifact: Artifact) -> "IntModel":
        """Arrange a decoded artifact's integers for the forward pass."""
        config = artifact.config
        dim = config.dim
        stored = [artifact.stored_rows(i) for i in range(len(artifact.matrices))]
        layers = []
        for layer in range(config.n_layers):
            q, k, v, o, gate, down, up = stored[2 + MATRICES_PER_LAYER * layer :][
                :MATRICES_PER_LAYER
            ]
            layers.append(
                Layer(
                    qkv=Matrix.from_stored(dim, q, k, v),
                    output=Matrix.from_stored(dim, o),
                    gate_up=Matrix.from_stored(dim, gate, up),
                    down=Matrix.from_stored(config.hidden_dim, down),
                )
            )
        rotary = artifact.rotary().astype(np.int64).reshape(config.seq_len, -1, 2)
        return cls(
            config=config,
            embedding=stored[0],
            classifier=Matrix.from_stored(dim, stored[1]),
            layers=tuple(layers),
            norm=artifact.norm_weights().astype(np.int64).reshape(-1, config.dim),
            cos=np.ascontiguousarray(rotary[:, :, 0]),
            sin=np.ascontiguousarray(rotary[:, :, 1]),
            exp=artifact.exp_table().astype(np.int64),
            silu=artifact.silu_table().astype(np.int64),
            inv_sqrt_head_size=artifact.inv_sqrt_head_size,
        )

    def embed(self, tokens: np.ndarray) -> np.ndarray:
        """Return the embedding rows of ``tokens`` as Q16: ``(q × scale + 2^7) >> 8``.

        |q × scale| < 127 × 2^32 < 2^39, and the result is below 127 × 2^24 < 2^31.
        """
        rows = self.embedding[tokens]
        columns = self.config.dim
        q = rows[:, ROW_PREFIX : ROW_PREFIX + columns].astype(np.int64) - WEIGHT_BIAS
        return round_shift(q * _scales(rows)[:, None], SCALE_BITS - ACT_BITS)


def _scales(rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows[:, :4]).view("<u4")[:, 0].astype(np.int64)

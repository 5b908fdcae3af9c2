"""``FloatModel``: a checkpoint's tensors as floats, whatever file they came from."""

from dataclasses import dataclass

import numpy as np

from curta_chain.artifact.layout import ModelConfig


@dataclass(frozen=True, eq=False)
class FloatModel:
    """A model's float tensors in llama2.c's orientation: a matrix is (rows, columns).

    Attributes:
        config: the model's shape.
        source: the file the tensors came from, for messages.
        embedding: (vocab, dim).
        classifier: (vocab, dim), or None when it shares the embedding.
        attn_norm: (layers, dim), the normalization before attention.
        ffn_norm: (layers, dim), the normalization before the feed-forward block.
        final_norm: (dim,).
        wq: (layers, dim, dim).
        wk: (layers, kv_dim, dim).
        wv: (layers, kv_dim, dim).
        wo: (layers, dim, dim).
        w1: (layers, hidden, dim), the feed-forward gate.
        w2: (layers, dim, hidden), the feed-forward down projection.
        w3: (layers, hidden, dim), the feed-forward up projection.
    """

    config: ModelConfig
    source: str
    embedding: np.ndarray
    classifier: np.ndarray | None
    attn_norm: np.ndarray
    ffn_norm: np.ndarray
    final_norm: np.ndarray
    wq: np.ndarray
    wk: np.ndarray
    wv: np.ndarray
    wo: np.ndarray
    w1: np.ndarray
    w2: np.ndarray
    w3: np.ndarray

    def matrices(self) -> list[np.ndarray]:
        """Return every matrix in the artifact's table order (classifier = embedding if tied)."""
        classifier = self.embedding if self.classifier is None else self.classifier
        out = [self.embedding, classifier]
        for layer in range(self.config.n_layers):
            out += [
                self.wq[layer], self.wk[layer], self.wv[layer], self.wo[layer],
                self.w1[layer], self.w2[layer], self.w3[layer],
            ]  # fmt: skip
        return out

    def norm_weights(self) -> np.ndarray:
        """Return the normalization weights in the artifact's order: per layer, then final."""
        per_layer = np.stack([self.attn_norm, self.ffn_norm], axis=1).reshape(-1)
        return np.concatenate([per_layer, np.asarray(self.final_norm).reshape(-1)])

"""llama2.c's float forward pass in numpy float32: the baseline the integer pass is measured by.

``FloatReference`` runs a ``FloatModel`` (a llama2.c checkpoint's own floats, or an
artifact's int8 weights dequantized by ``dequantize``) the way llama2.c's ``run.c`` does:
RMS normalization with epsilon 1e-5, rotary angles ``pos / 10000^(2j / head size)``,
scores divided by sqrt(head size), a float softmax, SiLU as ``x / (1 + e^-x)``. It is
used by the benchmarks and the agreement tests only; nothing in ``curta-chain run``
touches a float.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from curta_chain.artifact import Artifact
from curta_chain.artifact.floats import FloatModel
from curta_chain.artifact.layout import FRACTION_BITS, ROTARY_BASE, ROW_PREFIX, WEIGHT_BIAS

EPSILON = np.float32(1e-5)


def dequantize(artifact: Artifact) -> FloatModel:
    """Return the artifact's weights as float32: each int8 weight times its row scale."""
    config = artifact.config
    unit = np.float64(1 << FRACTION_BITS)

    def matrix(index: int) -> np.ndarray:
        rows = artifact.stored_rows(index)
        columns = artifact.matrices[index].columns
        q = rows[:, ROW_PREFIX : ROW_PREFIX + columns].astype(np.float64) - WEIGHT_BIAS
        scale = np.ascontiguousarray(rows[:, :4]).view("<u4")[:, 0] / unit
        return (q * scale[:, None]).astype(np.float32)

    matrices = [matrix(i) for i in range(len(artifact.matrices))]
    norm = (artifact.norm_weights() / unit).astype(np.float32).reshape(-1, config.dim)

    def stack(kind: int) -> np.ndarray:
        return np.stack([matrices[2 + 7 * layer + kind] for layer in range(config.n_layers)])

    return FloatModel(
        config=config,
        source=f"{artifact.source} (dequantized)",
        embedding=matrices[0],
        classifier=None if artifact.tied else matrices[1],
        attn_norm=norm[0:-1:2],
        ffn_norm=norm[1:-1:2],
        final_norm=norm[-1],
        wq=stack(0),
        wk=stack(1),
        wv=stack(2),
        wo=stack(3),
        w1=stack(4),
        w2=stack(5),
        w3=stack(6),
    )


@dataclass(eq=False)
class FloatCache:
    """Keys and values per layer, float32, for the positions run so far."""

    keys: np.ndarray
    values: np.ndarray
    length: int = field(default=0)


class FloatReference:
    """llama2.c's forward pass over a ``FloatModel``, in float32."""

    def __init__(self, model: FloatModel):
        """Take the model's tensors as contiguous float32 arrays."""
        self.config = c = model.config

        def f32(a: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(a, dtype=np.float32)

        self.embedding = f32(model.embedding)
        self.classifier = self.embedding if model.classifier is None else f32(model.classifier)
        self.attn_norm, self.ffn_norm = f32(model.attn_norm), f32(model.ffn_norm)
        self.final_norm = f32(model.final_norm)
        self.wq, self.wk, self.wv, self.wo = (
            f32(w) for w in (model.wq, model.wk, model.wv, model.wo)
        )
        self.w1, self.w2, self.w3 = f32(model.w1), f32(model.w2), f32(model.w3)
        head = c.head_size
        freq = np.float32(1.0) / np.power(
            np.float32(ROTARY_BASE), np.arange(0, head, 2, dtype=np.float32) / np.float32(head)
        )
        angles = np.arange(c.seq_len, dtype=np.float32)[:, None] * freq[None, :]
        self.cos, self.sin = np.cos(angles), np.sin(angles)

    def empty_cache(self) -> FloatCache:
        """Return a cache with room for the whole context."""
        c = self.config
        shape = (c.n_layers, c.seq_len, c.kv_dim)
        return FloatCache(np.zeros(shape, np.float32), np.zeros(shape, np.float32))

    def forward(
        self, cache: FloatCache, tokens: Sequence[int], all_logits: bool = False
    ) -> np.ndarray:
        """Run ``tokens`` at the next positions of ``cache``; return (positions, vocab) logits."""
        c = self.config
        ids = np.asarray(tokens, dtype=np.int64).reshape(-1)
        start, count = cache.length, ids.size
        end = start + count
        head, kv_dim = c.head_size, c.kv_dim
        cos, sin = self.cos[start:end], self.sin[start:end]
        x = self.embedding[ids]
        for layer in range(c.n_layers):
            xb = _rmsnorm(x, self.attn_norm[layer])
            q = _rotate(_matmul(self.wq[layer], xb).reshape(count, -1, head), cos, sin)
            k = _rotate(_matmul(self.wk[layer], xb).reshape(count, -1, head), cos, sin)
            cache.keys[layer, start:end] = k.reshape(count, kv_dim)
            cache.values[layer, start:end] = _matmul(self.wv[layer], xb)
            mixed = self._attention(q, cache.keys[layer, :end], cache.values[layer, :end], start)
            x = x + _matmul(self.wo[layer], mixed)
            xb = _rmsnorm(x, self.ffn_norm[layer])
            gate, up = _matmul(self.w1[layer], xb), _matmul(self.w3[layer], xb)
            x = x + _matmul(self.w2[layer], gate / (np.float32(1) + np.exp(-gate)) * up)
        cache.length = end
        rows = x if all_logits else x[-1:]
        return _matmul(self.classifier, _rmsnorm(rows, self.final_norm))

    def _attention(
        self, q: np.ndarray, keys: np.ndarray, values: np.ndarray, start: int
    ) -> np.ndarray:
        c = self.config
        count, heads, head = q.shape
        group = c.n_heads // c.n_kv_heads
        length = keys.shape[0]
        k = keys.reshape(length, c.n_kv_heads, head)
        v = values.reshape(length, c.n_kv_heads, head)
        k = np.repeat(k, group, axis=1).transpose(1, 2, 0)  # (heads, head, P)
        v = np.repeat(v, group, axis=1).transpose(1, 0, 2)  # (heads, P, head)
        scores = (q.transpose(1, 0, 2) @ k) / np.sqrt(np.float32(head))
        allowed = np.arange(length)[None, :] <= start + np.arange(count)[:, None]
        scores = np.where(allowed[None], scores, np.float32(-np.inf))
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        return (scores @ v).transpose(1, 0, 2).reshape(count, heads * head)

    def teacher_forcing_logits(self, tokens: Sequence[int]) -> np.ndarray:
        """Return float logits at every position of ``tokens``."""
        return self.forward(self.empty_cache(), tokens, all_logits=True)


def _matmul(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    if x.shape[0] == 1:
        return (w @ x[0])[None, :]
    return x @ w.T


def _rmsnorm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    ss = (x * x).mean(axis=-1, keepdims=True) + EPSILON
    return weight * (x / np.sqrt(ss))


def _rotate(v: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    a, b = v[..., 0::2], v[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(v)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out

"""The integer forward pass: token ids in, Q16 logits out, every bit as ``docs/inference.md``.

One call runs any number of consecutive positions at once (a prompt, a teacher-forced
sequence, or one new token) against a ``KVCache``; the integers do not depend on how the
positions are grouped, because each position's arithmetic reads only its own row and the
keys and values of the positions up to it.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from curta_chain.artifact import ModelConfig
from curta_chain.errors import PromptError
from curta_chain.inference.fixed import (
    ACT_BITS,
    I32_MIN,
    SCALE_BITS,
    divide_rounded,
    exp_weights,
    rmsnorm,
    rotate,
    round_shift,
    sat32,
    silu,
)
from curta_chain.inference.model import IntModel

_MASKED = 2 * I32_MIN
"""A masked score: its distance to any maximum is at least 2^31, past the table's end."""


@dataclass(eq=False)
class KVCache:
    """Each layer's keys (after rotary) and values for the positions run so far.

    Attributes:
        keys: (layers, context, kv_dim) int64, each within ±2^27.
        values: (layers, context, kv_dim) int64, each within i32.
        length: how many positions are filled.
    """

    keys: np.ndarray
    values: np.ndarray
    length: int = field(default=0)

    @classmethod
    def empty(cls, model: IntModel) -> "KVCache":
        """Return a cache with room for the model's whole context."""
        c = model.config
        shape = (c.n_layers, c.seq_len, c.kv_dim)
        return cls(np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64))


def check_tokens(config: ModelConfig, tokens: Sequence[int], start: int = 0) -> np.ndarray:
    """Return ``tokens`` as an int64 array after checking ids and length against the model.

    Raises:
        PromptError: no tokens, an id outside the vocabulary, or more positions than fit
            the context after ``start``.
    """
    ids = np.asarray(tokens, dtype=np.int64).reshape(-1)
    if ids.size == 0:
        raise PromptError("no tokens to run")
    if start + ids.size > config.seq_len:
        raise PromptError(
            f"{start + ids.size} positions, more than the model's context of {config.seq_len}"
        )
    bad = (ids < 0) | (ids >= config.vocab_size)
    if bad.any():
        index = int(np.argmax(bad))
        raise PromptError(
            f"token {index} is {int(ids[index])}, outside the vocabulary 0 to "
            f"{config.vocab_size - 1}"
        )
    return ids


def forward(
    model: IntModel, cache: KVCache, tokens: Sequence[int], all_logits: bool = False
) -> np.ndarray:
    """Run ``tokens`` at the next positions of ``cache``; return their Q16 logits.

    Args:
        model: the model.
        cache: keys and values of the positions before; it gains these positions.
        tokens: the token ids at positions ``cache.length`` onwards.
        all_logits: return every position's logits, not only the last one's.

    Returns:
        (positions, vocab) int64 logits, each within i32 (one row unless ``all_logits``).

    Raises:
        PromptError: see ``check_tokens``.
    """
    start = cache.length
    ids = check_tokens(model.config, tokens, start)
    config = model.config
    count = ids.size
    end = start + count
    positions = np.arange(start, end)
    cos, sin = model.cos[positions], model.sin[positions]
    dim, kv_dim, head = config.dim, config.kv_dim, config.head_size
    x = model.embed(ids)
    for index, layer in enumerate(model.layers):
        xn = rmsnorm(x, model.norm[2 * index])
        qkv = layer.qkv.apply(xn)
        qk = rotate(qkv[:, : dim + kv_dim].reshape(count, -1, head), cos, sin)
        q = qk[:, : config.n_heads]
        cache.keys[index, start:end] = qk[:, config.n_heads :].reshape(count, kv_dim)
        cache.values[index, start:end] = qkv[:, dim + kv_dim :]
        mixed = attention(model, q, cache.keys[index, :end], cache.values[index, :end], start)
        x = sat32(x + layer.output.apply(mixed))
        xn = rmsnorm(x, model.norm[2 * index + 1])
        gate_up = layer.gate_up.apply(xn)
        hidden = config.hidden_dim
        h = sat32(
            round_shift(silu(gate_up[:, :hidden], model.silu) * gate_up[:, hidden:], ACT_BITS)
        )
        x = sat32(x + layer.down.apply(h))
    cache.length = end
    rows = x if all_logits else x[-1:]
    return model.classifier.apply(rmsnorm(rows, model.norm[-1]))


def attention(
    model: IntModel, q: np.ndarray, keys: np.ndarray, values: np.ndarray, start: int
) -> np.ndarray:
    """Return every head's softmax-weighted values for the queries at ``start`` onwards.

    Args:
        model: the model (head counts, 1/sqrt(head size), the exponential table).
        q: (T, heads, head size) rotated queries, within ±2^27.
        keys: (P, kv_dim) cached keys for positions 0 to P - 1 = start + T - 1.
        values: (P, kv_dim) cached values.
        start: the first query's position.

    Returns:
        (T, dim) int64 within i32.
    """
    config = model.config
    count, heads, head = q.shape
    kv_heads, group = config.n_kv_heads, config.n_heads // config.n_kv_heads
    length = keys.shape[0]
    # Query head h reads key/value head h // group: stack each group's queries together.
    grouped = q.reshape(count, kv_heads, group, head).transpose(1, 2, 0, 3)
    queries = grouped.reshape(kv_heads, group * count, head)
    k = keys.reshape(length, kv_heads, head).transpose(1, 2, 0)
    v = values.reshape(length, kv_heads, head).transpose(1, 0, 2)
    dots = queries @ k  # |q·k| <= 64 × 2^54 = 2^60
    scaled = sat32(round_shift(dots, ACT_BITS))  # Q32 to Q16
    scores = round_shift(scaled * model.inv_sqrt_head_size, SCALE_BITS)
    if count > 1:  # a later position's key is masked out
        query_position = start + np.tile(np.arange(count), group)
        allowed = np.arange(length)[None, :] <= query_position[:, None]
        scores = np.where(allowed, scores, _MASKED)
    weights = exp_weights(scores.max(axis=-1, keepdims=True) - scores, model.exp)
    total = weights.sum(axis=-1, keepdims=True)  # 2^22 - 1 to 2^31
    mixed = divide_rounded(weights @ v, total)  # |Σ w v| <= 512 × 2^22 × 2^31 = 2^62
    mixed = mixed.reshape(kv_heads, group, count, head).transpose(2, 0, 1, 3)
    return mixed.reshape(count, heads * head)


def teacher_forcing_logits(model: IntModel, tokens: Sequence[int]) -> np.ndarray:
    """Return the integer logits at every position of ``tokens`` (teacher forcing).

    Row ``t`` is what the model predicts for position ``t + 1`` after reading
    ``tokens[0..t]``; the same integers as running the tokens one at a time.

    Args:
        model: the model.
        tokens: token ids, at most the model's context.

    Returns:
        (len(tokens), vocab) int32 logits, Q16.

    Raises:
        PromptError: no tokens, an id outside the vocabulary, or longer than the context.
    """
    logits = forward(model, KVCache.empty(model), tokens, all_logits=True)
    return logits.astype(np.int32)

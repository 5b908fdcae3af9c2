"""docs/inference.md transliterated into plain Python integers, one position at a time.

Independent of curta_chain.inference (no numpy arithmetic, no BLAS): the tests compare
the numpy pass with this one bit for bit, and every intermediate value here goes
through ``i64``, which fails if it leaves the signed 64-bit range the on-chain program
has. Slow by design; used on small models and a few positions of the largest shapes.
"""

import math

import numpy as np

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def i64(value: int) -> int:
    assert I64_MIN <= value <= I64_MAX, f"{value} leaves i64"
    return value


def rnd(a: int, k: int) -> int:
    return i64(i64(a + (1 << (k - 1))) >> k)


def sat32(a: int) -> int:
    return min(max(a, -(2**31)), 2**31 - 1)


def divr(a: int, b: int) -> int:
    q = i64(abs(a) + b // 2) // b
    return -q if a < 0 else q


def row_times_vector(stored: list[int], scale: int, x: list[int]) -> int:
    by_bytes = 0
    total = 0
    for b, v in zip(stored, x, strict=False):
        by_bytes = i64(by_bytes + i64(b * v))
        total = i64(total + v)
    acc = i64(by_bytes - i64(128 * total))
    hi, lo = acc >> 24, acc & ((1 << 24) - 1)
    return sat32(i64(i64(hi * scale) + (i64(i64(lo * scale) + (1 << 23)) >> 24)))


def rmsnorm(x: list[int], g: list[int]) -> list[int]:
    n = len(x)
    largest = max(abs(v) for v in x)
    s = max(0, largest.bit_length() - 26)
    squares = 0
    for v in x:
        squares = i64(squares + i64((v >> s) * (v >> s)))
    v = squares // n + (42_950 >> (2 * s))
    e = (62 - v.bit_length()) & ~1
    r = math.isqrt(i64(v << e))
    assert 2**30 <= r < 2**31
    inv = (1 << 61) // r
    shift = 45 - e // 2 + s
    out = []
    for xj, gj in zip(x, g, strict=True):
        xn = rnd(i64(xj * inv), shift)
        assert abs(xn) < 2**21
        out.append(rnd(i64(xn * gj), 24))
    return out


def rotate(v: list[int], cos: list[int], sin: list[int]) -> list[int]:
    """One head's pairs, rotated and saturated to ±2^27."""
    out = list(v)
    for p, (c, s) in enumerate(zip(cos, sin, strict=True)):
        a, b = v[2 * p], v[2 * p + 1]
        out[2 * p] = rnd(i64(i64(a * c) - i64(b * s)), 24)
        out[2 * p + 1] = rnd(i64(i64(a * s) + i64(b * c)), 24)
    return [min(max(value, -(2**27)), 2**27) for value in out]


def exp_weight(distance: int, table: list[int]) -> int:
    i, f = distance >> 8, distance & 255
    if i >= 4_096:
        return 0
    return rnd(i64(i64(table[i] * (256 - f)) + i64(table[i + 1] * f)), 16)


def attention_head(
    q: list[int], keys: list[list[int]], values: list[list[int]], inv_sqrt: int, table: list[int]
) -> list[int]:
    scores = []
    for key in keys:
        dot = 0
        for a, b in zip(q, key, strict=True):
            dot = i64(dot + i64(a * b))
        scores.append(rnd(i64(sat32(rnd(dot, 16)) * inv_sqrt), 24))
    top = max(scores)
    weights = [exp_weight(top - s, table) for s in scores]
    total = sum(weights)
    out = []
    for i in range(len(q)):
        acc = 0
        for w, value in zip(weights, values, strict=True):
            acc = i64(acc + i64(w * value[i]))
        out.append(divr(acc, total))
    return out


def silu(a: int, table: list[int]) -> int:
    if a >= 1 << 20:
        return a
    if a < -(1 << 20):
        return 0
    u = a + (1 << 20)
    i, f = u >> 9, u & 511
    return i64(i64(table[i] * (512 - f)) + i64(table[i + 1] * f) + 256) >> 9


class Model:
    """An artifact's integers as Python lists."""

    def __init__(self, artifact):
        self.config = c = artifact.config
        self.rows = []
        for index, desc in enumerate(artifact.matrices):
            stored = artifact.stored_rows(index)
            scales = np.ascontiguousarray(stored[:, :4]).view("<u4")[:, 0].tolist()
            weights = stored[:, 8 : 8 + desc.columns].astype(int).tolist()
            self.rows.append(list(zip(weights, scales, strict=True)))
        self.norm = np.asarray(artifact.norm_weights(), dtype=np.int64).reshape(-1, c.dim).tolist()
        rotary = artifact.rotary().astype(np.int64).reshape(c.seq_len, -1, 2)
        self.cos, self.sin = rotary[:, :, 0].tolist(), rotary[:, :, 1].tolist()
        self.exp = artifact.exp_table().astype(np.int64).tolist()
        self.silu = artifact.silu_table().astype(np.int64).tolist()
        self.inv_sqrt = artifact.inv_sqrt_head_size
        self.keys = [[] for _ in range(c.n_layers)]
        self.values = [[] for _ in range(c.n_layers)]

    def matrix(self, index: int, x: list[int]) -> list[int]:
        return [row_times_vector(weights, scale, x) for weights, scale in self.rows[index]]

    def step(self, token: int) -> list[int]:
        """Run ``token`` at the next position; return its logits."""
        c = self.config
        pos = len(self.keys[0])
        head = c.head_size
        weights, scale = self.rows[0][token]
        x = [rnd(i64((b - 128) * scale), 8) for b in weights]
        for layer in range(c.n_layers):
            base = 2 + 7 * layer
            xn = rmsnorm(x, self.norm[2 * layer])
            q, k, v = (self.matrix(base + i, xn) for i in range(3))
            cos, sin = self.cos[pos], self.sin[pos]
            q = [e for h in range(0, c.dim, head) for e in rotate(q[h : h + head], cos, sin)]
            k = [e for h in range(0, c.kv_dim, head) for e in rotate(k[h : h + head], cos, sin)]
            self.keys[layer].append(k)
            self.values[layer].append(v)
            group = c.n_heads // c.n_kv_heads
            mixed = []
            for h in range(c.n_heads):
                kv = (h // group) * head
                mixed += attention_head(
                    q[h * head : (h + 1) * head],
                    [key[kv : kv + head] for key in self.keys[layer]],
                    [value[kv : kv + head] for value in self.values[layer]],
                    self.inv_sqrt,
                    self.exp,
                )
            x = [sat32(a + b) for a, b in zip(x, self.matrix(base + 3, mixed), strict=True)]
            xn = rmsnorm(x, self.norm[2 * layer + 1])
            gate, up = self.matrix(base + 4, xn), self.matrix(base + 6, xn)
            hidden = [
                sat32(rnd(i64(silu(g, self.silu) * u), 16)) for g, u in zip(gate, up, strict=True)
            ]
            x = [sat32(a + b) for a, b in zip(x, self.matrix(base + 5, hidden), strict=True)]
        return self.matrix(1, rmsnorm(x, self.norm[-1]))

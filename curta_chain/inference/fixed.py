"""The fixed-point primitives of the integer forward pass, exactly as ``docs/inference.md``.

Every function takes and returns numpy ``int64`` arrays and computes the very integers
the document defines, for any input inside its stated domain; each docstring gives the
bound that keeps the arithmetic inside 64 bits. ``>>`` on numpy ``int64`` is an
arithmetic shift (floor), and ``//`` is only ever applied to non-negative operands, so
both match the on-chain program's unsigned division and its arithmetic shift.
"""

import math
from typing import Final

import numpy as np

from curta_chain.artifact.layout import (
    EXP_FRACTION_BITS,
    EXP_STEPS_PER_UNIT,
    FRACTION_BITS,
    SILU_FRACTION_BITS,
    SILU_RANGE,
    SILU_STEPS_PER_UNIT,
    TABLE_ENTRIES,
)

I32_MIN: Final = -(2**31)
I32_MAX: Final = 2**31 - 1
ACT_BITS: Final = 16
"""Fractional bits of every activation (Q16 in an i32): residual, q, k, v, hidden, logits."""
SCALE_BITS: Final = FRACTION_BITS
"""Fractional bits of row scales, normalization weights, rotary values, 1/sqrt(head size)."""
QK_LIMIT: Final = 2**27
"""Queries and keys are saturated to ±2^27 (±2,048.0) after rotary: bounds q·k by 2^60."""
EPS_Q32: Final = 42_950
"""RMS normalization's epsilon, 1e-5, with 32 fractional bits (round(1e-5 × 2^32))."""
NORM_SQUARE_BITS: Final = 26
"""RMS normalization squares ``x >> s`` with ``s`` chosen so that ``|x >> s| <= 2^26``."""
INV_BITS: Final = 61
"""RMS normalization's reciprocal: ``2^61 // isqrt(u)``."""
WEIGHT_BITS: Final = 22
"""Softmax weights (exponential table, interpolated) carry 22 fractional bits."""
EXP_LIMIT: Final = TABLE_ENTRIES - 1
"""A softmax distance of 4,096 table steps (16.0) or more weighs zero."""
EXP_STEP_BITS: Final = EXP_STEPS_PER_UNIT.bit_length() - 1  # 8: 256 steps per unit
SILU_STEP_SHIFT: Final = ACT_BITS - (SILU_STEPS_PER_UNIT.bit_length() - 1)  # 9
SILU_EDGE: Final = SILU_RANGE << ACT_BITS
"""±16.0 in Q16: above it SiLU is its input, below its negative it is zero."""
assert SILU_FRACTION_BITS == ACT_BITS, "the SiLU table's values are Q16 activations"


_I32_MIN, _I32_MAX = np.int64(I32_MIN), np.int64(I32_MAX)


def sat32(a: np.ndarray) -> np.ndarray:
    """Saturate to the i32 range."""
    return np.minimum(np.maximum(a, _I32_MIN), _I32_MAX)


def round_shift(a: np.ndarray, bits: int | np.ndarray) -> np.ndarray:
    """Return ``(a + 2^(bits-1)) >> bits``, a / 2^bits rounded half up (a + 2^(bits-1) < 2^63)."""
    if isinstance(bits, int):
        return (a + (1 << (bits - 1))) >> bits
    return (a + np.left_shift(np.int64(1), bits - 1)) >> bits


def scale_rows(acc: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Return sat32(round(acc × scale / 2^24)) for row accumulators and their u32 scales.

    ``acc × scale`` can reach 2^81, so it is split: with ``hi = acc >> 24`` and
    ``lo = acc & (2^24 - 1)``, the result is ``hi × scale + ((lo × scale + 2^23) >> 24)``,
    the same integer. Bounds: |acc| < 2^49, so |hi × scale| < 2^57 and lo × scale < 2^56.

    Args:
        acc: (..., rows) int64, |acc| < 2^49.
        scales: (rows,) int64, 1 to 2^32 - 1.
    """
    lo = acc & ((1 << SCALE_BITS) - 1)
    lo *= scales
    lo += 1 << (SCALE_BITS - 1)
    lo >>= SCALE_BITS
    hi = acc >> SCALE_BITS
    hi *= scales
    hi += lo
    return np.clip(hi, _I32_MIN, _I32_MAX, out=hi)


FLOAT32_EXACT: Final = 1 << 24
"""float32 holds every integer up to 2^24 in magnitude exactly."""


def split_bits(row_l1: int, largest: int) -> tuple[int, int]:
    """Return ``(bits, pieces)`` that make ``product``'s float32 sums exact.

    An activation vector is cut into ``pieces`` vectors of ``bits`` bits each (the
    lowest ones unsigned, the top one signed) so that a row's weights times any piece
    sum, in any order, below 2^24: ``row_l1 × max|piece| <= 2^24``.

    Args:
        row_l1: the largest sum of |weight| over a row of the matrix (at most 127 × 2,048).
        largest: the largest |activation| of the input.
    """
    limit = FLOAT32_EXACT // max(row_l1, 1)  # at least 64
    bits = (limit + 1).bit_length() - 1  # 2^bits - 1 <= limit
    pieces = 1
    while -(-largest >> (bits * (pieces - 1))) > limit:  # ceil(largest / 2^shift)
        pieces += 1
    return bits, pieces


def product(weights: np.ndarray, row_l1: int, x: np.ndarray) -> np.ndarray:
    """Return the exact integer products ``x @ weights.T`` as int64.

    float32 BLAS is exact here: ``x`` is cut into pieces (``split_bits``) so that every
    product of a weight and a piece, and every partial sum of them in whatever order
    BLAS adds, is an integer of magnitude at most ``row_l1 × max|piece| <= 2^24``. The
    pieces' products are then shifted back into place and added in int64 (|acc| < 2^49).

    Args:
        weights: (rows, columns) float32 holding the int8 weights (stored byte - 128).
        row_l1: the largest row sum of |weight|.
        x: (T, columns) int64 activations within i32.
    """
    count, columns = x.shape
    bits, pieces = split_bits(row_l1, max(int(x.max()), -int(x.min())))
    # Column p × count + t is piece p of vector t: (columns, pieces × count), Fortran order.
    parts = np.empty((pieces, count, columns), dtype=np.float32)
    mask = (1 << bits) - 1
    for piece in range(pieces):
        shifted = x >> (bits * piece) if piece else x
        parts[piece] = shifted & mask if piece < pieces - 1 else shifted
    if count == 1:
        # A matrix-vector product a piece: BLAS reads the weights as they are, where a
        # product with a few columns first copies them into its own layout (1.2 to 1.7
        # times slower for one token).
        acc = (weights @ parts[0, 0]).astype(np.int64)
        for piece in range(1, pieces):
            acc += (weights @ parts[piece, 0]).astype(np.int64) << (bits * piece)
        return acc[None, :]
    sums = (weights @ parts.reshape(pieces * count, columns).T).astype(np.int64)
    acc = sums[:, :count]
    for piece in range(1, pieces):
        acc = acc + (sums[:, piece * count : (piece + 1) * count] << (bits * piece))
    return acc.T


def rmsnorm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """RMS normalization of each row of ``x`` (Q16 i32) by ``weight`` (Q24 i32): Q16 out.

    Steps (``docs/inference.md``): ``s = max(0, bitlen(max|x|) - 26)``;
    ``S = Σ (x >> s)^2 <= 2^61``; ``v = S // n + (EPS_Q32 >> 2s)``;
    ``e = (62 - bitlen(v)) & ~1``; ``r = isqrt(v << e)`` in [2^30, 2^31);
    ``inv = 2^61 // r``; ``xn = (x × inv) >> (45 - e/2 + s)`` rounded (|x × inv| <= 2^62,
    |xn| < 2^21); ``out = (xn × w) >> 24`` rounded (|xn × w| < 2^52, |out| < 2^28).
    """
    n = x.shape[-1]
    shifts = [
        max(0, int(m).bit_length() - NORM_SQUARE_BITS)
        for m in np.maximum(x.max(axis=-1), -x.min(axis=-1)).tolist()
    ]
    xs = x >> np.array(shifts, dtype=np.int64)[:, None] if any(shifts) else x
    inv, shift = [], []
    for total, s in zip((xs * xs).sum(axis=-1).tolist(), shifts, strict=True):
        v = total // n + (EPS_Q32 >> (2 * s))
        e = (62 - v.bit_length()) & ~1
        inv.append((1 << INV_BITS) // math.isqrt(v << e))
        shift.append(INV_BITS - ACT_BITS - e // 2 + s)
    xn = round_shift(x * np.array(inv, dtype=np.int64)[:, None], np.array(shift)[:, None])
    return round_shift(xn * weight, SCALE_BITS)


def rotate(v: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate each pair (a, b) of ``v`` by (cos, sin), Q24; saturate to ±QK_LIMIT.

    ``a' = (a cos - b sin) >> 24``, ``b' = (a sin + b cos) >> 24``, rounded; each sum is
    below 2^56 in magnitude.

    Args:
        v: (T, heads, head size) int64 within i32.
        cos: (T, head size / 2) int64, |cos| <= 2^24.
        sin: (T, head size / 2) int64, |sin| <= 2^24.
    """
    a, b = v[..., 0::2], v[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(v)
    out[..., 0::2] = round_shift(a * c - b * s, SCALE_BITS)
    out[..., 1::2] = round_shift(a * s + b * c, SCALE_BITS)
    return np.clip(out, -QK_LIMIT, QK_LIMIT)


def exp_weights(distance: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Return the softmax weight of each distance below the maximum (Q16, >= 0): Q22.

    With ``i = d >> 8`` and ``f = d & 255``: zero when ``i >= 4096``, else
    ``(T[i] × (256 - f) + T[i+1] × f + 2^15) >> 16``, the exponential table (Q30)
    interpolated linearly; at most 2^38 before the shift.
    """
    i = distance >> EXP_STEP_BITS
    f = distance & (EXP_STEPS_PER_UNIT - 1)
    j = np.minimum(i, EXP_LIMIT - 1)
    mixed = table[j] * (EXP_STEPS_PER_UNIT - f) + table[j + 1] * f
    shift = EXP_FRACTION_BITS + EXP_STEP_BITS - WEIGHT_BITS
    return np.where(i < EXP_LIMIT, round_shift(mixed, shift), 0)


def silu(g: np.ndarray, table: np.ndarray) -> np.ndarray:
    """SiLU of Q16 values through the table (Q16, steps of 1/128 from -16): Q16 out.

    ``g >= 16.0``: g; ``g < -16.0``: 0; else with ``a = g + 2^20``, ``i = a >> 9``,
    ``f = a & 511``: ``(T[i] × (512 - f) + T[i+1] × f + 256) >> 9`` (below 2^30).
    """
    a = np.clip(g + SILU_EDGE, 0, 2 * SILU_EDGE - 1)
    i = a >> SILU_STEP_SHIFT
    f = a & ((1 << SILU_STEP_SHIFT) - 1)
    mid = round_shift(table[i] * ((1 << SILU_STEP_SHIFT) - f) + table[i + 1] * f, SILU_STEP_SHIFT)
    return np.where(g >= SILU_EDGE, g, np.where(g < -SILU_EDGE, 0, mid))


def divide_rounded(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Return numerator / denominator rounded half away from zero, with unsigned division.

    ``sign(n) × ((|n| + d // 2) // d)`` for d >= 1 and |n| + d/2 < 2^63.
    """
    magnitude = (np.abs(numerator) + denominator // 2) // denominator
    return np.where(numerator < 0, -magnitude, magnitude)

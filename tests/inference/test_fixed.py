"""Each primitive of docs/inference.md at its edges and at the format's largest shapes.

The numpy primitives are compared with ``int_reference`` (plain Python integers, every
intermediate checked to stay inside i64) on the extreme inputs of each bound.
"""

import math
from types import SimpleNamespace

import int_reference as ref
import numpy as np
import pytest

from curta_chain.artifact.tables import exp_table, silu_table
from curta_chain.inference import fixed
from curta_chain.inference.forward import attention

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
EXP = exp_table().astype(np.int64)
SILU = silu_table().astype(np.int64)
RNG = np.random.default_rng(5)


def extremes(count: int) -> list[np.ndarray]:
    """Input vectors that reach the bounds: all minimum, all maximum, alternating, random."""
    return [
        np.full(count, I32_MIN),
        np.full(count, I32_MAX),
        np.where(np.arange(count) % 2, I32_MAX, I32_MIN),
        RNG.integers(I32_MIN, I32_MAX, count, endpoint=True),
        RNG.integers(-(2**20), 2**20, count),
        np.zeros(count, dtype=np.int64),
    ]


@pytest.mark.parametrize("columns", [1, 288, 2_048])
def test_row_products_are_exact_at_2048_columns(columns):
    rows = 6
    stored = np.stack(
        [
            np.full(columns, 1),  # weight -127
            np.full(columns, 255),  # weight 127
            np.where(np.arange(columns) % 2, 1, 255),
            RNG.integers(1, 256, columns),
            np.full(columns, 128),  # a row of zeros
            RNG.integers(100, 157, columns),
        ]
    )
    scales = np.array([2**32 - 1, 2**32 - 1, 1, 2**31 + 12_345, 1, 83_886])
    weights = (stored - 128).astype(np.float32)
    row_l1 = int(np.abs(stored - 128).sum(axis=1).max())
    for x in extremes(columns):
        got = fixed.scale_rows(fixed.product(weights, row_l1, x[None, :]), scales)[0]
        want = [
            ref.row_times_vector(stored[r].tolist(), int(scales[r]), x.tolist())
            for r in range(rows)
        ]
        assert got.tolist() == want
        exact = [(int(q) * xv) for q, xv in zip(stored[3] - 128, x.tolist(), strict=True)]
        assert got[3] == ref.sat32((sum(exact) * int(scales[3]) + 2**23) >> 24)


def test_product_splits_into_exact_float32_pieces():
    for columns, count in [(64, 1), (288, 3), (768, 1), (2_048, 2)]:
        q = RNG.integers(-127, 128, (40, columns))
        row_l1 = int(np.abs(q).sum(axis=1).max())
        for largest in (0, 1, 2**10, 2**20, 2**27, 2**31):
            x = (
                RNG.integers(-largest, largest + 1, (count, columns))
                if largest
                else np.zeros((count, columns), dtype=np.int64)
            )
            x[0, 0] = -largest
            bits, pieces = fixed.split_bits(row_l1, largest)
            assert row_l1 * ((1 << bits) - 1) <= 2**24
            assert row_l1 * -(-largest >> (bits * (pieces - 1))) <= 2**24
            want = x @ q.T  # int64, exact: |.| < 2^49
            assert np.array_equal(fixed.product(q.astype(np.float32), row_l1, x), want)


def test_scale_rows_rounds_half_up_and_saturates():
    acc = np.array([[2**23, 2**23 - 1, -(2**23), -(2**23) - 1, 2**48, -(2**48)]])
    got = fixed.scale_rows(acc, np.array([1, 1, 1, 1, 2**32 - 1, 2**32 - 1]))
    assert got.tolist() == [[1, 0, 0, -1, I32_MAX, I32_MIN]]


@pytest.mark.parametrize("n", [1, 64, 288, 512])
def test_rmsnorm_at_every_scale_of_input(n):
    weight = np.full(n, I32_MAX)
    weight[::3] = I32_MIN
    cases = [
        *extremes(n),
        np.where(np.arange(n) == n - 1, I32_MIN, 0),  # one large value
        np.full(n, 1),  # tiny: epsilon dominates
        np.full(n, 2**26 - 1),  # the largest with s = 0
        np.full(n, 2**26),  # the smallest with s = 1
        RNG.integers(-5, 6, n),
    ]
    for x in cases:
        got = fixed.rmsnorm(np.stack([x, x[::-1]]), weight)
        assert got[0].tolist() == ref.rmsnorm(x.tolist(), weight.tolist())
        assert got[1].tolist() == ref.rmsnorm(x[::-1].tolist(), weight.tolist())
        assert np.abs(got).max() < 2**28


def test_rmsnorm_follows_llama2c_within_its_precision():
    x = RNG.normal(0, 3, 288)
    weight = RNG.normal(1, 0.2, 288)
    got = fixed.rmsnorm(
        np.rint(x * 2**16).astype(np.int64)[None], np.rint(weight * 2**24).astype(np.int64)
    )
    want = weight * x / math.sqrt((x * x).mean() + 1e-5)
    assert np.abs(got[0] / 2**16 - want).max() < 1e-4


def test_rotary_at_the_extremes():
    cos = np.array([[2**24, -(2**24), 0, 2**24 + 1] * 8])
    sin = np.array([[0, 2**24, -(2**24), -(2**24) - 1] * 8])
    for x in extremes(64):
        got = fixed.rotate(x.reshape(1, 1, 64), cos, sin)[0, 0]
        assert got.tolist() == ref.rotate(x.tolist(), cos[0].tolist(), sin[0].tolist())
        assert np.abs(got).max() <= 2**27


@pytest.mark.parametrize(
    "distance",
    [
        0,
        1,
        255,
        256,
        257,
        4_095 * 256,
        4_095 * 256 + 255,
        4_096 * 256 - 1,
        4_096 * 256,
        2**32 - 1,
        2**48,
    ],
)
def test_exponential_lookup_at_its_edges(distance):
    got = int(fixed.exp_weights(np.array([distance]), EXP)[0])
    assert got == ref.exp_weight(distance, EXP.tolist())
    if distance // 256 >= 4_096:
        assert got == 0
    else:
        assert abs(got - math.exp(-distance / 2**16) * 2**22) <= 1
    assert int(fixed.exp_weights(np.array([0]), EXP)[0]) == 2**22


@pytest.mark.parametrize(
    "value",
    [
        I32_MIN,
        -(2**20) - 1,
        -(2**20),
        -(2**20) + 1,
        -(2**20) + 511,
        -1,
        0,
        1,
        255,
        256,
        2**20 - 512,
        2**20 - 1,
        2**20,
        2**20 + 1,
        I32_MAX,
    ],
)
def test_silu_lookup_at_its_edges(value):
    got = int(fixed.silu(np.array([value]), SILU)[0])
    assert got == ref.silu(value, SILU.tolist())
    x = value / 2**16
    if value >= 2**20:
        assert got == value
    elif value < -(2**20):
        assert got == 0
    else:
        assert abs(got - x / (1 + math.exp(-x)) * 2**16) <= 1.5


def test_silu_between_entries_interpolates():
    # Halfway between entries 2,048 (SiLU(0) = 0) and 2,049 (SiLU(1/128)): their mean.
    got = int(fixed.silu(np.array([256]), SILU)[0])
    assert got == (int(SILU[2_048]) * 256 + int(SILU[2_049]) * 256 + 256) >> 9


def test_attention_over_512_positions_of_head_size_64():
    model = SimpleNamespace(
        config=SimpleNamespace(n_heads=2, n_kv_heads=1),
        inv_sqrt_head_size=round(2**24 / math.sqrt(2)),  # the largest the format allows
        exp=EXP,
    )
    length = 512
    for keys, values in [
        (np.full((length, 64), 2**27), np.full((length, 64), I32_MIN)),
        (np.full((length, 64), -(2**27)), np.full((length, 64), I32_MAX)),
        (RNG.integers(-(2**27), 2**27, (length, 64)), RNG.integers(I32_MIN, I32_MAX, (length, 64))),
        (RNG.integers(-(2**16), 2**16, (length, 64)), RNG.integers(-(2**16), 2**16, (length, 64))),
    ]:
        q = np.stack([np.full(64, 2**27), keys[7]])[None]  # (T=1, heads 2, 64)
        got = attention(model, q, keys, values, length - 1)
        for head in range(2):
            want = ref.attention_head(
                q[0, head].tolist(),
                keys.tolist(),
                values.tolist(),
                model.inv_sqrt_head_size,
                EXP.tolist(),
            )
            assert got[0, 64 * head : 64 * (head + 1)].tolist() == want


def test_divide_rounded_is_half_away_from_zero():
    n = np.array([5, -5, 4, -4, 7, -7, 0, 2**62])
    d = np.array([2, 2, 3, 3, 7, 7, 3, 2**31])
    assert fixed.divide_rounded(n, d).tolist() == [3, -3, 1, -1, 1, -1, 0, 2**31]

import math

import numpy as np

from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.tables import (
    exp_table,
    inv_sqrt_head_size,
    rotary_table,
    silu_table,
    to_fixed,
)

CONFIG = ModelConfig(64, 172, 5, 8, 4, 512, 512)  # stories260K: head size 8


def test_rotary_is_cos_then_sin_per_pair_per_position():
    table = rotary_table(CONFIG)
    assert table.dtype == np.int32 and table.size == 512 * 8
    for position in (0, 1, 77, 511):
        for pair in range(4):
            angle = position / 10_000 ** (2 * pair / 8)
            cos, sin = table[position * 8 + 2 * pair : position * 8 + 2 * pair + 2]
            assert abs(cos - math.cos(angle) * 2**24) <= 1
            assert abs(sin - math.sin(angle) * 2**24) <= 1


def test_exponential_table_within_one_unit():
    table = exp_table()
    assert table.dtype == np.uint32 and table.size == 4_097
    assert table[0] == 1 << 30
    exact = [math.exp(-i / 256) * 2**30 for i in range(4_097)]
    assert max(abs(int(t) - e) for t, e in zip(table, exact, strict=True)) <= 1


def test_silu_table_within_one_unit():
    table = silu_table()
    assert table.dtype == np.int32 and table.size == 4_097
    exact = []
    for i in range(4_097):
        x = i / 128 - 16
        exact.append(x / (1 + math.exp(-x)) * 2**16)
    assert max(abs(int(t) - e) for t, e in zip(table, exact, strict=True)) <= 1
    assert table[2_048] == 0  # SiLU(0)


def test_inverse_square_root_of_head_size():
    assert inv_sqrt_head_size(CONFIG) == round(2**24 / math.sqrt(8))
    assert inv_sqrt_head_size(ModelConfig(64, 8, 1, 1, 1, 259, 8)) == 1 << 21


def test_fixed_point_ties_round_to_even():
    assert to_fixed(np.array([0.5, 1.5, -0.5]) / 2**24).tolist() == [0, 2, 0]

import numpy as np
import pytest

from curta_chain.artifact.quantize import (
    MAX_ABS_WEIGHT,
    dequantize,
    quantize_matrix,
    row_scales,
    row_weights,
)
from curta_chain.errors import CheckpointError

ONE = 1 << 24


def test_a_row_is_scale_four_zeros_biased_weights_and_padding():
    rows = quantize_matrix(np.array([[127.0, -127.0, 0.0]], dtype=np.float32), "m")
    assert rows.shape == (1, 16)
    assert rows[0, :4].tobytes() == ONE.to_bytes(4, "little")
    assert rows[0, 4:8].tolist() == [0, 0, 0, 0]
    assert rows[0, 8:11].tolist() == [255, 1, 128]
    assert rows[0, 11:].tolist() == [128] * 5


def test_ties_round_to_even():
    # Scale 1: w / scale is exactly .5 for these weights.
    rows = quantize_matrix(np.array([[127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5]]), "m")
    assert row_weights(rows, 7).tolist() == [[127, 0, 2, 2, 0, -2, -2]]


def test_division_is_by_the_float_scale_in_float64():
    # max 1.0: the float scale is 1/127, the stored one round(2^24/127) = 132104 / 2^24,
    # a little above it. 0.5 / (1/127) = 63.5 -> 64 (even); by the stored scale it
    # would be 63.49... -> 63.
    rows = quantize_matrix(np.array([[1.0, 0.5]], dtype=np.float32), "m")
    assert row_scales(rows).tolist() == [132_104]
    assert row_weights(rows, 2).tolist() == [[127, 64]]


def test_a_row_of_zeros_takes_the_smallest_scale():
    rows = quantize_matrix(np.zeros((2, 3), dtype=np.float32), "m")
    assert row_scales(rows).tolist() == [1, 1]
    assert row_weights(rows, 3).tolist() == [[0, 0, 0]] * 2


def test_a_tiny_row_keeps_scale_one_and_full_resolution():
    rows = quantize_matrix(np.array([[1e-9, -1e-9, 5e-10]]), "m")
    assert row_scales(rows).tolist() == [1]
    assert row_weights(rows, 3).tolist() == [[127, -127, 64]]


def test_every_weight_is_within_half_a_step_and_in_range():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((300, 37)).astype(np.float32) * rng.uniform(0.001, 10, (300, 1))
    rows = quantize_matrix(w, "m")
    q = row_weights(rows, 37)
    assert q.min() >= -127 and q.max() <= 127
    scale = np.abs(w.astype(np.float64)).max(axis=1, keepdims=True) / 127
    assert np.all(np.abs(q * scale - w) <= scale / 2 * (1 + 1e-12))
    # With the stored fixed-point scale the error grows by at most 127 half-units of 2^-24.
    stored = row_scales(rows)[:, None] / ONE
    assert np.all(np.abs(dequantize(rows, 37) - w) <= stored / 2 + 127 * 2.0**-25)


def test_a_weight_too_large_for_the_scale_field_is_refused():
    ok = np.array([[MAX_ABS_WEIGHT * 0.999]])
    assert row_scales(quantize_matrix(ok, "m")).item() > 0xFF00_0000
    with pytest.raises(CheckpointError, match=r"^f.bin: layer 0 key: row 1 holds \|w\| = 40000"):
        quantize_matrix(np.array([[1.0], [40_000.0]]), "f.bin: layer 0 key")

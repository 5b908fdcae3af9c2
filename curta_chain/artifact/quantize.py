"""Per-row int8 quantization: the one place floats become the artifact's integers.

A row is its u32 scale (24 fractional bits, at least 1), four zero bytes, the weights as
``q + 128`` and padding bytes of 128 up to the row length. See the package docstring for
how ties round and where the division happens.
"""

import numpy as np

from curta_chain.artifact.layout import FRACTION_BITS, ROW_PREFIX, WEIGHT_BIAS, row_bytes
from curta_chain.errors import CheckpointError

Q_MAX = 127
MAX_STORED_SCALE = 0xFFFF_FFFF
MAX_ABS_WEIGHT = MAX_STORED_SCALE / float(1 << FRACTION_BITS) * Q_MAX
"""The largest |weight| whose row scale still fits the u32 field (about 32,512)."""


def quantize_matrix(weights: np.ndarray, what: str) -> np.ndarray:
    """Quantize a (rows, columns) float matrix into its stored rows.

    Args:
        weights: finite floats, float32 or float64; the arithmetic is float64.
        what: names the matrix in an error, e.g. ``"model.bin: layer 0 query"``.

    Returns:
        A (rows, row length) uint8 array: the matrix's bytes in the artifact.

    Raises:
        CheckpointError: a row's scale does not fit the u32 scale field.
    """
    w = np.asarray(weights, dtype=np.float64)
    rows, columns = w.shape
    scale = np.abs(w).max(axis=1) / Q_MAX
    stored = np.maximum(np.rint(scale * float(1 << FRACTION_BITS)), 1.0)
    if rows and stored.max() > MAX_STORED_SCALE:
        bad = int(np.argmax(stored > MAX_STORED_SCALE))
        raise CheckpointError(
            f"{what}: row {bad} holds |w| = {scale[bad] * Q_MAX:.6g}, expected below "
            f"{MAX_ABS_WEIGHT:,.0f} (the row scale must fit a u32 with 24 fractional bits)"
        )
    # A row of zeros has scale 0: divide by 1 instead, every q is 0 either way.
    divisor = np.where(scale > 0.0, scale, 1.0)
    q = np.clip(np.rint(w / divisor[:, None]), -Q_MAX, Q_MAX)
    out = np.full((rows, row_bytes(columns)), WEIGHT_BIAS, dtype=np.uint8)
    out[:, :4] = stored.astype("<u4").view(np.uint8).reshape(rows, 4)
    out[:, 4:ROW_PREFIX] = 0
    out[:, ROW_PREFIX : ROW_PREFIX + columns] = (q + WEIGHT_BIAS).astype(np.uint8)
    return out


def row_scales(stored_rows: np.ndarray) -> np.ndarray:
    """Return each stored row's scale field as uint32."""
    return np.ascontiguousarray(stored_rows[:, :4]).view("<u4").reshape(-1)


def row_weights(stored_rows: np.ndarray, columns: int) -> np.ndarray:
    """Return the int8 weights ``q`` of stored rows, as a (rows, columns) int16 array."""
    return stored_rows[:, ROW_PREFIX : ROW_PREFIX + columns].astype(np.int16) - WEIGHT_BIAS


def dequantize(stored_rows: np.ndarray, columns: int) -> np.ndarray:
    """Return ``q × scale`` of stored rows as float64, with the stored fixed-point scale."""
    scales = row_scales(stored_rows).astype(np.float64) / float(1 << FRACTION_BITS)
    return row_weights(stored_rows, columns) * scales[:, None]

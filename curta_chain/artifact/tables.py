"""The fixed-point coefficients and lookup tables of section zero, computed in float64."""

import numpy as np

from curta_chain.artifact.layout import (
    EXP_FRACTION_BITS,
    EXP_STEPS_PER_UNIT,
    FRACTION_BITS,
    ROTARY_BASE,
    SILU_FRACTION_BITS,
    SILU_RANGE,
    SILU_STEPS_PER_UNIT,
    TABLE_ENTRIES,
    ModelConfig,
)


def to_fixed(values: np.ndarray, fraction_bits: int = FRACTION_BITS) -> np.ndarray:
    """Return ``values × 2^fraction_bits`` rounded to nearest (ties to even), as int64."""
    return np.rint(np.asarray(values, dtype=np.float64) * float(1 << fraction_bits)).astype(
        np.int64
    )


def rotary_table(config: ModelConfig) -> np.ndarray:
    """Return the rotary coefficients as int32: per position, per pair, cosine then sine."""
    head_size = config.head_size
    pairs = np.arange(head_size // 2, dtype=np.float64)
    positions = np.arange(config.seq_len, dtype=np.float64)
    angles = positions[:, None] / ROTARY_BASE ** (2.0 * pairs / head_size)[None, :]
    table = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    return to_fixed(table.reshape(-1)).astype(np.int32)


def exp_table() -> np.ndarray:
    """Return entry ``i`` = e^(-i/256) with 30 fractional bits, as uint32."""
    x = np.arange(TABLE_ENTRIES, dtype=np.float64) / EXP_STEPS_PER_UNIT
    return to_fixed(np.exp(-x), EXP_FRACTION_BITS).astype(np.uint32)


def silu_table() -> np.ndarray:
    """Return entry ``i`` = SiLU(i/128 - 16) with 16 fractional bits, as int32."""
    x = np.arange(TABLE_ENTRIES, dtype=np.float64) / SILU_STEPS_PER_UNIT - SILU_RANGE
    return to_fixed(x / (1.0 + np.exp(-x)), SILU_FRACTION_BITS).astype(np.int32)


def inv_sqrt_head_size(config: ModelConfig) -> int:
    """Return 1/sqrt(head size) with 24 fractional bits."""
    return int(to_fixed(np.array(1.0 / np.sqrt(float(config.head_size))))[()])

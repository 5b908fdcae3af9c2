"""A batch's plan (``programs/curta/src/rows.c``'s ``plan_batch``): what its rows cost.

A batch of two lanes runs the kernel on packed words (lane 0 + 2^32 x lane 1) over
segments of columns where each lane's sum is known to lie in a window of 2^32: a stored
byte is 128 + w with w in -128..127, so the window holds when 256 x (the lane's sum of |x|
over the segment) < 2^32. A group of 8 columns
where that fails for either lane runs each lane on its own (the plain kernel). The plan
cuts the columns greedily, a group at a time; the rows' values are the single positions'
(the mirror computes them so, and so checks the packing), only their cost follows the
plan: ``BATCH_SLICE_COST`` and ``BATCH_ROW_COST`` of its kernel units and segments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from curta_chain.onchain.schedule import (
    KERNEL_CALL,
    KERNEL_REMAINDER,
    KERNEL_ROW,
    KERNEL_STEP,
    ROWS_PER_CALL,
)

LANE_SPAN = (2**32 - 1) // 256
"""A lane's largest sum of |x| over a packed segment (its sum then fits a 2^32 window)."""


@dataclass(frozen=True)
class BatchPlan:
    """The cost parameters of a batch's rows (``Plan`` in rows.c).

    Attributes:
        segments: packed and plain segments.
        kernel: a row's kernel units: a packed segment's call once, a plain one's twice,
            each with its call's cost spread over at most ``ROWS_PER_CALL`` rows.
        call: the calls of a chunk of rows, beyond their rows.
        remainder: their last rows, in C.
    """

    segments: int
    kernel: int
    call: int
    remainder: int


def segments(x0: np.ndarray, x1: np.ndarray) -> list[tuple[bool, int]]:
    """The plan's segments of two lanes' input vectors: each packed or not, and its columns.

    Args:
        x0: lane 0's input (``padded`` i64, zero past the matrix's columns).
        x1: lane 1's.
    """
    groups = len(x0) // KERNEL_STEP
    l0 = np.abs(x0).reshape(groups, KERNEL_STEP).sum(axis=1).tolist()
    l1 = np.abs(x1).reshape(groups, KERNEL_STEP).sum(axis=1).tolist()
    cut: list[tuple[bool, int]] = []  # (packed, columns)
    span0 = span1 = 0
    for a, b in zip(l0, l1, strict=True):
        fits = a <= LANE_SPAN and b <= LANE_SPAN
        if cut:
            packed, columns = cut[-1]
            if fits and packed and span0 + a <= LANE_SPAN and span1 + b <= LANE_SPAN:
                cut[-1] = (packed, columns + KERNEL_STEP)
                span0, span1 = span0 + a, span1 + b
                continue
            if not fits and not packed:
                cut[-1] = (packed, columns + KERNEL_STEP)
                continue
        cut.append((fits, KERNEL_STEP))
        span0, span1 = a, b
    return cut


def plan_batch(x0: np.ndarray, x1: np.ndarray) -> BatchPlan:
    """The plan of two lanes' input vectors (``padded`` i64 each, zero past the columns)."""
    cut = segments(x0, x1)
    rows = ROWS_PER_CALL.number
    kernel = call = remainder = 0
    for packed, columns in cut:
        calls = 1 if packed else 2
        kernel += calls * (KERNEL_ROW(columns=columns) + -(-KERNEL_CALL(columns=columns) // rows))
        call += calls * KERNEL_CALL(columns=columns)
        remainder += calls * KERNEL_REMAINDER(columns=columns)
    return BatchPlan(len(cut), kernel, call, remainder)

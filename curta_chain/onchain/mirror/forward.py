"""A token's phases (``programs/curta/src/forward.c``): embed, norms, rows, rotary, SwiGLU.

Each phase spends from the step's budget with the schedule's cost formulas and does the
off-chain integer core's arithmetic (``curta_chain.inference``) on the rows, heads or
vector the slice covers. Attention is in ``attention``, the SAMPLE phase in ``sampling``.
"""

from __future__ import annotations

import enum

import numpy as np

from curta_chain.inference.fixed import ACT_BITS, rmsnorm, rotate, round_shift, sat32, silu
from curta_chain.inference.model import Matrix
from curta_chain.onchain.mirror.attention import attention_phase
from curta_chain.onchain.mirror.batch import plan_batch
from curta_chain.onchain.mirror.machine import Step, Stop
from curta_chain.onchain.mirror.sampling import sample_phase
from curta_chain.onchain.run_account import Region
from curta_chain.onchain.schedule import (
    BATCH_FIXED_COST,
    BATCH_ROW_COST,
    BATCH_SLICE_COST,
    EMBED_COST,
    MAT_EMBEDDING,
    NORM_COST,
    ROPE_COST,
    ROW_COST,
    ROWS_FIXED_COST,
    SWIGLU_COST,
    LayerPhase,
    Phase,
    TokenPhase,
)


class Rows(enum.Enum):
    """Where a phase's rows go (``enum RowsKind`` and the phase's destinations)."""

    QKV = "query, then the cached key and value"
    GATE_UP = "gate, then up"
    LOGITS = "the logits, and the running maximum"
    RESIDUAL = "added to x, from xb"
    RESIDUAL_HIDDEN = "added to x, from the hidden vector"


_MATRICES = {
    Rows.QKV: 3,
    Rows.GATE_UP: 2,
    Rows.LOGITS: 1,
    Rows.RESIDUAL: 1,
    Rows.RESIDUAL_HIDDEN: 1,
}
"""How many matrices each kind of rows phase stacks."""


def forward_phase(s: Step) -> bool:
    """Run the run's phase as far as the budget allows (``Stop`` when nothing fits)."""
    model, layers = s.model.model, s.config.n_layers
    phase = Phase.of(s.run.phase, layers)
    if phase.token == TokenPhase.EMBED:
        return _embed(s)
    if phase.token == TokenPhase.FINAL_NORM:
        return _norm(s, 2 * layers)
    if phase.token == TokenPhase.CLASSIFIER:
        return _rows(s, model.classifier, Rows.LOGITS, phase)
    if phase.token == TokenPhase.SAMPLE:
        return sample_phase(s)
    layer = phase.layer
    weights = model.layers[layer]
    match phase.layer_phase:
        case LayerPhase.ATT_NORM:
            return _norm(s, 2 * layer)
        case LayerPhase.QKV:
            return _rows(s, weights.qkv, Rows.QKV, phase)
        case LayerPhase.ROPE:
            return _rope(s, layer)
        case LayerPhase.ATTENTION:
            return attention_phase(s, layer)
        case LayerPhase.OUTPUT:
            return _rows(s, weights.output, Rows.RESIDUAL, phase)
        case LayerPhase.FFN_NORM:
            return _norm(s, 2 * layer + 1)
        case LayerPhase.GATE_UP:
            return _rows(s, weights.gate_up, Rows.GATE_UP, phase)
        case LayerPhase.SWIGLU:
            return _swiglu(s)
        case _:
            return _rows(s, weights.down, Rows.RESIDUAL_HIDDEN, phase)


def _embed(s: Step) -> bool:
    c, lanes = s.config, s.lanes
    s.spend(lanes * EMBED_COST(dim=c.dim))
    s.need(MAT_EMBEDDING)
    if not s.dry:
        for lane in range(lanes):
            token = int(s.u32(Region.TOKENS, 1, s.lane_position(lane))[0])
            s.lane(Region.X, c.dim, lane)[:] = s.model.model.embed(np.array([token]))[0]
    s.next_phase()
    return True


def _norm(s: Step, index: int) -> bool:
    c, lanes = s.config, s.lanes
    s.spend(lanes * NORM_COST(dim=c.dim))
    if not s.dry:
        for lane in range(lanes):
            x = s.lane(Region.X, c.dim, lane).copy()
            xn = rmsnorm(x[None, :], s.model.model.norm[index])[0]
            s.lane(Region.XB, c.dim, lane)[:] = xn
    s.next_phase()
    return True


def _rows(s: Step, matrix: Matrix, rows: Rows, phase: Phase) -> bool:
    """Rows [cursor, cursor + n) of the phase's stacked matrices, n as the budget allows.

    The cost counts the first matrix's row length as the artifact gives it, padding
    included, as the program reads it; a slice that fits reads that matrix's section. A
    batch of two pays for the plan of its lanes first, then per row by that plan.
    """
    run, lanes = s.run, s.lanes
    total = matrix.weights.shape[0]
    first = phase.matrix()
    assert first is not None  # a rows phase: the table names its first matrix
    padded = s.model.padded(first)
    matrices = _MATRICES[rows]
    if lanes == 1:
        per_row = ROW_COST(padded=padded)
        fixed = ROWS_FIXED_COST(padded=padded, matrices=matrices)
        if s.budget < fixed + per_row:
            raise Stop
        s.need(first)
        s.budget -= fixed
    else:
        s.spend(BATCH_FIXED_COST(padded=padded))
        s.need(first)
        source = Region.HB if rows == Rows.RESIDUAL_HIDDEN else Region.XB
        length = s.config.hidden_dim if source == Region.HB else s.config.dim
        x0, x1 = (np.zeros(padded, np.int64) for _ in range(2))
        x0[:length], x1[:length] = s.lane(source, length, 0), s.lane(source, length, 1)
        plan = plan_batch(x0, x1)
        per_row = BATCH_ROW_COST(kernel=plan.kernel, segments=plan.segments)
        slice_cost = BATCH_SLICE_COST(call=plan.call, remainder=plan.remainder, matrices=matrices)
        if s.budget < slice_cost + per_row:
            raise Stop  # the plan's cost stays spent: the step ends here
        s.budget -= slice_cost
    n = min(s.budget // per_row, total - run.cursor)
    s.budget -= n * per_row
    start, end = run.cursor, run.cursor + n
    if not s.dry:
        for lane in range(lanes):
            _apply(s, matrix, rows, phase, start, end, lane)
    run.cursor = end
    if end == total:
        s.next_phase()
    return True


def _apply(
    s: Step, matrix: Matrix, rows: Rows, phase: Phase, start: int, end: int, lane: int
) -> None:
    """Rows [start, end) of the phase's matrices times a lane's input, stored where they go."""
    c, run = s.config, s.run
    columns = matrix.weights.shape[1]
    source = Region.HB if rows == Rows.RESIDUAL_HIDDEN else Region.XB
    x = s.lane(source, columns, lane).copy()
    piece = Matrix(matrix.weights[start:end], matrix.scales[start:end], matrix.row_l1)
    y = piece.apply(x[None, :])[0]
    if rows == Rows.QKV:
        position = s.lane_position(lane)
        q = s.lane(Region.Q, c.dim, lane)
        k = s.cache(Region.KEYS, phase.layer, position)
        v = s.cache(Region.VALUES, phase.layer, position)
        stacked = np.concatenate([q, k, v])
        stacked[start:end] = y
        q[:], k[:], v[:] = np.split(stacked, [c.dim, c.dim + c.kv_dim])
    elif rows == Rows.GATE_UP:
        gate = s.lane(Region.HB, c.hidden_dim, lane)
        up = s.lane(Region.HB2, c.hidden_dim, lane)
        stacked = np.concatenate([gate, up])
        stacked[start:end] = y
        gate[:], up[:] = stacked[: c.hidden_dim], stacked[c.hidden_dim :]
    elif rows == Rows.LOGITS:
        if run.temperature:  # greedy keeps no logit: the running maximum is all it needs
            s.i64(Region.LOGITS, c.vocab_size)[start:end] = y
        best = int(np.argmax(y))
        if start == 0 or int(y[best]) > run.best_logit:
            run.best_logit, run.best_token = int(y[best]), start + best
    else:
        out = s.lane(Region.X, c.dim, lane)
        out[start:end] = sat32(out[start:end] + y)


def _rope(s: Step, layer: int) -> bool:
    c, lanes = s.config, s.lanes
    s.spend(lanes * ROPE_COST(dim=c.dim, kv_dim=c.kv_dim))
    if not s.dry:
        for lane in range(lanes):
            position = s.lane_position(lane)
            cos = s.model.model.cos[position : position + 1]
            sin = s.model.model.sin[position : position + 1]
            q = s.lane(Region.Q, c.dim, lane)
            q[:] = rotate(q.reshape(1, c.n_heads, c.head_size), cos, sin).reshape(-1)
            k = s.cache(Region.KEYS, layer, position)
            k[:] = rotate(k.reshape(1, c.n_kv_heads, c.head_size), cos, sin).reshape(-1)
    s.next_phase()
    return True


def _swiglu(s: Step) -> bool:
    c, lanes = s.config, s.lanes
    s.spend(lanes * SWIGLU_COST(hidden=c.hidden_dim))
    if not s.dry:
        for lane in range(lanes):
            gate, up = s.lane(Region.HB, c.hidden_dim, lane), s.lane(Region.HB2, c.hidden_dim, lane)
            gate[:] = sat32(round_shift(silu(gate.copy(), s.model.model.silu) * up, ACT_BITS))
    s.next_phase()
    return True

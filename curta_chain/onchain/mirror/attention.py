"""The ATTENTION phase (``programs/curta/src/forward.c``'s ``attention``), sliced by heads."""

from __future__ import annotations

from curta_chain.inference.forward import attention
from curta_chain.onchain.mirror.machine import Step, Stop
from curta_chain.onchain.run_account import Region
from curta_chain.onchain.schedule import COST_ATTENTION, HEAD_COST


def attention_phase(s: Step, layer: int) -> bool:
    """Heads [cursor, cursor + n) of the layer's attention, n as the budget allows."""
    c, run = s.config, s.run
    positions = run.position + 1
    per_head = HEAD_COST(head_size=c.head_size, positions=positions)
    fixed = COST_ATTENTION.number
    if s.budget < fixed + per_head:
        raise Stop
    n = min((s.budget - fixed) // per_head, c.n_heads - run.cursor)
    s.budget -= fixed + n * per_head
    if not s.dry:
        _attend(s, layer, n)
    run.cursor += n
    if run.cursor == c.n_heads:
        s.next_phase()
    return True


def _attend(s: Step, layer: int, n: int) -> None:
    """Heads [cursor, cursor + n): their outputs into xb."""
    c, run = s.config, s.run
    positions = run.position + 1
    rows = run.capacity - 1
    keys = s.i64(Region.KEYS, positions * c.kv_dim, layer * rows * c.kv_dim)
    values = s.i64(Region.VALUES, positions * c.kv_dim, layer * rows * c.kv_dim)
    q = s.i64(Region.Q, c.dim).reshape(1, c.n_heads, c.head_size)
    mixed = attention(
        s.model.model,
        q,
        keys.reshape(positions, c.kv_dim),
        values.reshape(positions, c.kv_dim),
        run.position,
    )[0]
    lo, hi = run.cursor * c.head_size, (run.cursor + n) * c.head_size
    s.i64(Region.XB, c.dim)[lo:hi] = mixed[lo:hi]

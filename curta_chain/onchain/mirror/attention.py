"""The ATTENTION phase (``programs/curta/src/forward.c``'s ``attention``), sliced by heads.

The cursor counts each lane's heads in turn (lane x heads + head); a head costs as many
positions as its lane attends: a batch's lane 0 (its last position) one more than lane 1.
"""

from __future__ import annotations

from curta_chain.inference.forward import attention
from curta_chain.onchain.mirror.machine import Step, Stop
from curta_chain.onchain.run_account import Region
from curta_chain.onchain.schedule import COST_ATTENTION, HEAD_COST


def attention_phase(s: Step, layer: int) -> bool:
    """Heads from the cursor on, each lane's in turn, as many as the budget allows."""
    c, run = s.config, s.run
    items = s.lanes * c.n_heads
    budget = s.budget - COST_ATTENTION.number
    cursor = run.cursor
    while cursor < items:
        lane = cursor // c.n_heads
        cost = HEAD_COST(head_size=c.head_size, positions=s.lane_position(lane) + 1)
        if budget < cost:
            break
        budget -= cost
        cursor += 1
    if cursor == run.cursor:
        raise Stop
    s.budget = budget
    if not s.dry:
        for lane in range(s.lanes):
            heads = range(max(run.cursor, lane * c.n_heads), min(cursor, (lane + 1) * c.n_heads))
            if heads:
                _attend(s, layer, lane, heads.start % c.n_heads, len(heads))
    run.cursor = cursor
    if cursor == items:
        s.next_phase()
    return True


def _attend(s: Step, layer: int, lane: int, head: int, n: int) -> None:
    """A lane's heads [head, head + n): their outputs into its xb."""
    c, run = s.config, s.run
    position = s.lane_position(lane)
    positions = position + 1
    rows = run.capacity - 1
    keys = s.i64(Region.KEYS, positions * c.kv_dim, layer * rows * c.kv_dim)
    values = s.i64(Region.VALUES, positions * c.kv_dim, layer * rows * c.kv_dim)
    q = s.lane(Region.Q, c.dim, lane).reshape(1, c.n_heads, c.head_size)
    mixed = attention(
        s.model.model,
        q,
        keys.reshape(positions, c.kv_dim),
        values.reshape(positions, c.kv_dim),
        position,
    )[0]
    lo, hi = head * c.head_size, (head + n) * c.head_size
    s.lane(Region.XB, c.dim, lane)[lo:hi] = mixed[lo:hi]

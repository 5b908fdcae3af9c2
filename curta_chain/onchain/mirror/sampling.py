"""The SAMPLE phase (``programs/curta/src/sample.c``): greedy, or passes over the ids.

Greedy takes the classifier's running maximum. Sampling makes the WEIGHTS pass (each id's
weight, their sum and, for the nucleus, the histogram), the CUT pass (the nucleus's
cut-off weight) and the DRAW pass (one draw, then the first kept id past it), each sliced
by ids like a matrix's rows.
"""

from __future__ import annotations

import numpy as np

from curta_chain.inference.fixed import ACT_BITS, exp_weights
from curta_chain.inference.sampling import Xorshift64Star
from curta_chain.inference.tokenizer import STOP_TOKENS
from curta_chain.onchain.mirror.machine import Logged, Step, Stop
from curta_chain.onchain.run_account import (
    HIST_HIGH,
    HIST_LOW,
    HIST_SHIFT,
    FinishReason,
    Region,
    RunAccount,
    RunState,
    SamplePass,
)
from curta_chain.onchain.schedule import (
    COST_BUCKETS,
    COST_CHOOSE,
    COST_ID,
    COST_PASS,
    COST_WEIGHT,
    TokenPhase,
    token_phase,
)

_ONE_Q16 = 1 << ACT_BITS


def sample_phase(s: Step) -> bool:
    """The next pass of the SAMPLE phase, as far as the budget allows."""
    run = s.run
    if run.temperature == 0:
        s.spend(COST_PASS.number)
        _choose(s, s.oracle(s) if s.oracle else run.best_token)
        return True
    if run.sample_pass == SamplePass.WEIGHTS:
        return _weights_pass(s)
    if run.sample_pass == SamplePass.CUT:
        return _cut_pass(s)
    return _draw_pass(s)


def _ids_that_fit(s: Step, per_id: int, fixed: int) -> int:
    """How many of ids [cursor, vocab) fit the budget at ``per_id`` each; spend them."""
    if s.budget < fixed + per_id:
        raise Stop
    n = min((s.budget - fixed) // per_id, s.config.vocab_size - s.run.cursor)
    s.budget -= fixed + n * per_id
    return n


def _nucleus(run: RunAccount) -> bool:
    return 0 < run.top_p < _ONE_Q16


def _hist(s: Step) -> tuple[np.ndarray, np.ndarray]:
    both = s.i64(Region.HIST, HIST_HIGH + HIST_LOW)
    return both[:HIST_HIGH], both[HIST_HIGH:]


def _weights_pass(s: Step) -> bool:
    run = s.run
    n = _ids_that_fit(s, COST_WEIGHT.number, COST_PASS.number)
    start, end = run.cursor, run.cursor + n
    nucleus = _nucleus(run)
    if not s.dry:
        _weigh(s, start, end, nucleus)
    run.cursor = end
    if end == s.config.vocab_size:
        run.cursor = 0
        run.sample_pass = SamplePass.CUT if nucleus else SamplePass.DRAW
        run.kept_sum = run.weight_sum
    return True


def _weigh(s: Step, start: int, end: int, nucleus: bool) -> None:
    """Ids [start, end): their weights over their logits, summed, histogrammed."""
    run = s.run
    logits = s.i64(Region.LOGITS, s.config.vocab_size)
    high, low = _hist(s)
    if start == 0 and nucleus:
        high[:], low[:] = 0, 0
    distance = (run.best_logit - logits[start:end]) << ACT_BITS
    w = exp_weights(distance // run.temperature, s.model.model.exp)
    logits[start:end] = w
    run.weight_sum += int(w.sum())
    if nucleus:
        np.add.at(high, w >> HIST_SHIFT, w)


def _cut_pass(s: Step) -> bool:
    run = s.run
    n = _ids_that_fit(s, COST_ID.number, COST_PASS.number + COST_BUCKETS.number)
    start, end = run.cursor, run.cursor + n
    if s.dry:
        run.cursor = end
        if end == s.config.vocab_size:
            run.cursor = 0
            run.sample_pass = SamplePass.DRAW
        return True
    high, low = _hist(s)
    limit = run.top_p * run.weight_sum
    bucket, above = _crossing(high, 0, limit)
    w = s.i64(Region.LOGITS, s.config.vocab_size)[start:end]
    mine = w[(w >> HIST_SHIFT) == bucket]
    np.add.at(low, mine & (HIST_LOW - 1), mine)
    run.cursor = end
    if end == s.config.vocab_size:
        j, above = _crossing(low, above, limit)
        v = bucket << HIST_SHIFT | j
        run.cut_weight = v
        run.cut_count = (limit - (above << ACT_BITS)) // (v << ACT_BITS) + 1
        run.kept_sum = above + run.cut_count * v
        run.cursor = 0
        run.sample_pass = SamplePass.DRAW
    return True


def _draw_pass(s: Step) -> bool:
    run = s.run
    n = _ids_that_fit(s, COST_ID.number, COST_PASS.number + COST_CHOOSE.number)
    if s.oracle:
        # The walk stops at the chosen id: the budget of the ids after it comes back.
        token = s.oracle(s)
        if run.cursor <= token < run.cursor + n:
            s.budget += (run.cursor + n - 1 - token) * COST_ID.number
            _choose(s, token)
        else:
            run.cursor += n
        return True
    if run.cursor == 0:
        rng = Xorshift64Star(0)
        rng.state = run.rng
        run.target = rng.next() % run.kept_sum
        run.rng = rng.state
    w = s.i64(Region.LOGITS, s.config.vocab_size)
    nucleus = _nucleus(run)
    for t in range(run.cursor, run.cursor + n):
        weight = int(w[t])
        if nucleus and weight <= run.cut_weight:
            if weight < run.cut_weight or run.cut_seen == run.cut_count:
                continue
            run.cut_seen += 1
        run.running += weight
        if run.running > run.target:
            s.budget += (run.cursor + n - 1 - t) * COST_ID.number  # the ids not walked
            _choose(s, t)
            return True
    run.cursor += n
    return True


def _choose(s: Step, token: int) -> None:
    """The chosen token: appended, logged, and the run on to its next position or done."""
    run = s.run
    tokens = s.u32(Region.TOKENS, run.capacity)
    previous = int(tokens[run.position])
    tokens[run.position + 1] = token
    run.token_count = run.position + 2
    run.position += 1
    run.phase = token_phase(TokenPhase.EMBED, s.config.n_layers)
    run.cursor = 0
    run.sample_pass = SamplePass.WEIGHTS
    run.weight_sum = run.kept_sum = run.cut_weight = run.cut_count = run.cut_seen = 0
    run.target = run.running = 0
    if token in STOP_TOKENS:
        run.state, run.finish_reason = RunState.FINISHED, FinishReason.END_TOKEN
    elif run.token_count == run.capacity:
        run.state, run.finish_reason = RunState.FINISHED, FinishReason.CAPACITY
    if not s.dry:
        s.logged.append(Logged(run.position, token, s.model.tokenizer.piece(previous, token)))


def _crossing(buckets: np.ndarray, above: int, limit: int) -> tuple[int, int]:
    """Return the nucleus's bucket and the sum of the buckets heavier than it.

    Buckets are scanned heaviest first from ``above``; the first where the running sum
    passes the limit (sum x 65,536 > P x Z) is the one the nucleus ends in.
    """
    running = above
    for b in range(len(buckets) - 1, -1, -1):
        weight = int(buckets[b])
        if (running + weight) << ACT_BITS > limit:
            return b, running
        running += weight
    return 0, running

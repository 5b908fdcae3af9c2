"""The tokenizer's phases (``programs/curta/src/tokenize.c``): a text prompt into ids.

CHARS looks up each UTF-8 character, PAIRS looks up every adjacent pair once, MERGE merges
the best pair and looks up its two new neighbours until no pair is a token; then the
prompt's tokens are the run's first. The work region holds the tokens so far and, per
adjacent pair, the token it joins into (or none) and that token's score key.
"""

from __future__ import annotations

import numpy as np

from curta_chain.inference.tokenizer import BOS
from curta_chain.onchain.mirror.machine import Step, Stop
from curta_chain.onchain.run_account import FinishReason, Region, RunState, work_entries
from curta_chain.onchain.schedule import (
    CHAR_COST,
    FINISH_COST,
    LOOKUP_COST,
    MERGE_SCAN_COST,
    MERGE_SHIFT_COST,
    PAIR_COST,
    TokenizePhase,
)

NO_TOKEN = 0xFFFF_FFFF
"""A pair that joins into no token."""

_Work = tuple[np.ndarray, np.ndarray, np.ndarray]


def tokenize_phase(s: Step) -> bool:
    """The tokenizer's phase, as far as the budget allows."""
    if s.run.phase == TokenizePhase.CHARS:
        return _chars(s)
    if s.run.phase == TokenizePhase.PAIRS:
        return _pairs(s)
    return _merges(s)


def _work(s: Step) -> _Work:
    n = work_entries(s.run.prompt_length)
    both = s.u32(Region.WORK, 3 * n)
    return both[:n], both[n : 2 * n], both[2 * n :]


def _lookup_cost(s: Step, length: int) -> int:
    return LOOKUP_COST(probes=s.model.probes, length=length)


def _char_cost(s: Step, length: int) -> int:
    return CHAR_COST(length=length, lookup=_lookup_cost(s, length))


def _pair_cost(s: Step, a: int, b: int) -> int:
    length = s.model.token_lengths[a] + s.model.token_lengths[b]
    return PAIR_COST(length=length, lookup=_lookup_cost(s, length))


def _append_char(s: Step, tokens: np.ndarray, char: bytes) -> None:
    found = s.model.tokenizer.lookup(char)
    pieces = [found] if found is not None else [byte + 3 for byte in char]
    for token in pieces:
        tokens[s.run.work_count] = token
        s.run.work_count += 1


def _chars(s: Step) -> bool:
    run = s.run
    tokens = _work(s)[0]
    start = run.regions[Region.PROMPT]
    text = bytes(s.data[start : start + run.prompt_length])
    progress = False
    if run.work_count == 0:
        s.spend(_char_cost(s, 1))
        tokens[0] = BOS
        run.work_count = 1
        _append_char(s, tokens, b" ")
        progress = True
    while run.cursor < len(text):
        length = _char_length(text, run.cursor)
        try:
            s.spend(_char_cost(s, length))
        except Stop:
            return progress
        _append_char(s, tokens, text[run.cursor : run.cursor + length])
        run.cursor += length
        progress = True
    run.phase, run.cursor = TokenizePhase.PAIRS, 0
    return True


def _look_up_pair(s: Step, work: _Work, i: int) -> None:
    tokens, ids, keys = work
    vocabulary = s.model.tokenizer
    found = vocabulary.lookup(vocabulary.tokens[tokens[i]] + vocabulary.tokens[tokens[i + 1]])
    ids[i] = NO_TOKEN if found is None else found
    keys[i] = 0 if found is None else vocabulary.keys[found]


def _pairs(s: Step) -> bool:
    run = s.run
    work = _work(s)
    progress = False
    while run.cursor + 1 < run.work_count:
        try:
            s.spend(_pair_cost(s, int(work[0][run.cursor]), int(work[0][run.cursor + 1])))
        except Stop:
            return progress
        _look_up_pair(s, work, run.cursor)
        run.cursor += 1
        progress = True
    run.phase, run.cursor = TokenizePhase.MERGE, 0
    return True


def _merges(s: Step) -> bool:
    run = s.run
    work = _work(s)
    tokens, ids, keys = work
    progress = False
    while True:
        n = run.work_count
        live = ids[: n - 1] != NO_TOKEN
        if not live.any():
            try:
                return _finish(s) or progress
            except Stop:
                return progress
        candidates = np.where(live, keys[: n - 1].astype(np.int64), -1)
        best = int(np.argmax(candidates))
        merged = int(ids[best])
        cost = MERGE_SCAN_COST(count=n) + MERGE_SHIFT_COST(shifted=n - best)
        if best > 0:
            cost += _pair_cost(s, int(tokens[best - 1]), merged)
        if best + 2 < n:
            cost += _pair_cost(s, merged, int(tokens[best + 2]))
        try:
            s.spend(cost)
        except Stop:
            return progress
        tokens[best] = merged
        tokens[best + 1 : n - 1] = tokens[best + 2 : n].copy()
        ids[best + 1 : n - 1] = ids[best + 2 : n].copy()
        keys[best + 1 : n - 1] = keys[best + 2 : n].copy()
        ids[n - 2] = keys[n - 2] = tokens[n - 1] = 0
        run.work_count = n - 1
        if best > 0:
            _look_up_pair(s, work, best - 1)
        if best + 2 < n:
            _look_up_pair(s, work, best)
        progress = True


def _finish(s: Step) -> bool:
    """No pair merges any more: the work tokens are the prompt."""
    run = s.run
    n = run.work_count
    s.spend(FINISH_COST(count=n))
    run.prompt_tokens = n
    run.phase = run.cursor = 0
    if n >= run.capacity:
        run.state, run.finish_reason = RunState.FINISHED, FinishReason.PROMPT_TOO_LONG
        return True
    s.u32(Region.TOKENS, n)[:] = _work(s)[0][:n]
    run.token_count = n
    run.state = RunState.RUNNING
    return True


def _char_length(text: bytes, i: int) -> int:
    """The length of the UTF-8 character at ``text[i]``: its lead and continuation bytes."""
    length = 1
    while i + length < len(text) and text[i + length] & 0xC0 == 0x80 and length < 4:
        length += 1
    return length

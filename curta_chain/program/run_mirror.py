"""The program's ``step``, in Python: what a run account holds after every step.

``RunMirror`` holds the bytes it expects a run account to hold and computes the next step
the way ``programs/curta/src/step.c`` does: the same phases in the same order, the same
slices, cut by the same cost model, writing the same regions. The arithmetic is the
off-chain integer core's (``curta_chain.inference``: ``docs/inference.md``), applied to
the row ranges, heads and ids a step covers; the program is checked against it, not
against a copy of itself. After each transaction ``compare`` names the first byte where
the chain differs: the position, the phase and the region.

A step reads section zero and the matrix sections its slice reaches; ``plan`` says which
ones the next step reaches, so the client passes exactly those.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, fields

import numpy as np

from curta_chain.artifact import Artifact
from curta_chain.errors import MirrorMismatchError
from curta_chain.inference.fixed import (
    ACT_BITS,
    exp_weights,
    rmsnorm,
    rotate,
    round_shift,
    sat32,
    silu,
)
from curta_chain.inference.forward import attention
from curta_chain.inference.model import IntModel, Matrix
from curta_chain.inference.sampling import Xorshift64Star
from curta_chain.inference.tokenizer import BOS, STOP_TOKENS, Tokenizer
from curta_chain.program.run_account import (
    HIST_HIGH,
    HIST_LOW,
    HIST_SHIFT,
    RUN_HEADER_SIZE,
    FinishReason,
    PromptKind,
    Region,
    RunAccount,
    RunState,
    SamplePass,
    work_entries,
)

STEP_BUDGET = 1_200_000
"""What a step may spend, in estimated compute units (inference.h)."""
PHASES_PER_LAYER = 9

# The cost model, estimated compute units (forward.c, sample.c, tokenize.c).
COST_EMBED = 100
COST_EMBED_ELEMENT = 12
COST_NORM = 900
COST_NORM_ELEMENT = 38
COST_ROPE = 100
COST_ROPE_ELEMENT = 26
COST_SWIGLU = 100
COST_SWIGLU_ELEMENT = 40
COST_ROWS = 800
COST_ROWS_COLUMN = 10
COST_ROW = 45
COST_MAC_TWENTIETHS = 69
COST_ATTENTION = 200
COST_HEAD = 300
COST_HEAD_ELEMENT = 32
COST_POSITION = 60
COST_POSITION_ELEMENT = 11
COST_PASS = 500
COST_WEIGHT = 55
COST_ID = 14
COST_CHOOSE = 500
COST_BUCKETS = 12 * (HIST_HIGH + HIST_LOW)
COST_CHAR = 80
COST_PAIR = 80
COST_PROBE = 40
COST_PROBE_BYTE = 6
COST_SCAN = 8
COST_SHIFT = 12
COST_FINISH = 500
COST_BYTE = 4

NO_TOKEN = 0xFFFF_FFFF
_ONE_Q16 = 1 << ACT_BITS
_LAYER_PHASE_NAMES = (
    "attention norm",
    "query, key and value rows",
    "rotary",
    "attention heads",
    "attention output rows",
    "feed-forward norm",
    "gate and up rows",
    "SwiGLU",
    "down rows",
)
_TOKENIZER_PHASE_NAMES = ("tokenizer characters", "tokenizer pairs", "tokenizer merges")


def phase_name(header: RunAccount) -> str:
    """A readable name for the phase a run header is in, e.g. ``layer 2 attention heads``."""
    if header.state == RunState.TOKENIZING:
        return _TOKENIZER_PHASE_NAMES[min(header.phase, 2)]
    layers = header.config.n_layers
    if header.phase == 0:
        return "embedding"
    if header.phase <= PHASES_PER_LAYER * layers:
        layer, kind = divmod(header.phase - 1, PHASES_PER_LAYER)
        return f"layer {layer} {_LAYER_PHASE_NAMES[kind]}"
    return ("final norm", "classifier rows", "sampling")[
        min(header.phase - 1 - PHASES_PER_LAYER * layers, 2)
    ]


@dataclass(frozen=True)
class Logged:
    """A token the program logged when it chose it: its index in the run, id and bytes."""

    position: int
    token: int
    piece: bytes


@dataclass
class StepPlan:
    """What the next step does: the sections it reads and the account it leaves."""

    sections: tuple[int, ...]
    """Matrix sections (section zero is always passed first)."""
    data: bytes
    estimated: int
    """Estimated compute units the step spends (the cost model)."""
    logged: list[Logged] = field(default_factory=list)


class _Stop(Exception):
    """The step stops here: the budget, or a section it was not passed."""


class _Machine:
    """One step in progress over a copy of the account's bytes."""

    def __init__(self, mirror: RunMirror, data: bytes, available: Collection[int] | None):
        self.m = mirror
        self.data = bytearray(data)
        self.h = _Header.read(self.data)
        self.budget = STEP_BUDGET
        self.available = available
        self.sections: list[int] = []
        self.logged: list[Logged] = []

    # -- views of the regions --

    def i64(self, region: Region, count: int, start: int = 0) -> np.ndarray:
        offset = self.h.regions[region] + 8 * start
        return np.frombuffer(self.data, "<i8", count, offset)

    def u32(self, region: Region, count: int, start: int = 0) -> np.ndarray:
        offset = self.h.regions[region] + 4 * start
        return np.frombuffer(self.data, "<u4", count, offset)

    def cache(self, region: Region, layer: int, position: int) -> np.ndarray:
        c = self.m.config
        rows = self.h.capacity - 1
        return self.i64(region, c.kv_dim, (layer * rows + position) * c.kv_dim)

    def spend(self, cost: int) -> None:
        if cost > self.budget:
            raise _Stop
        self.budget -= cost

    def need(self, section: int) -> None:
        if section != 0 and section not in self.sections:
            if self.available is not None and section not in self.available:
                raise _Stop
            self.sections.append(section)

    # -- the driver --

    def run(self) -> None:
        progress = False
        while self.h.state != RunState.FINISHED:
            try:
                if self.h.state == RunState.TOKENIZING:
                    done = self.m._tokenizer_step(self)
                else:
                    self.need(self.m._phase_section(self.h))
                    done = self.m._forward_step(self)
            except _Stop:
                done = False
            if not done:
                break
            progress = True
        if not progress:
            raise MirrorMismatchError("the mirror's step could not advance the run")
        self.h.steps += 1
        self.h.write(self.data)


@dataclass
class _Header:
    """The run header's fields as mutable ints (RunAccount is frozen)."""

    values: dict[str, object]

    @classmethod
    def read(cls, data: bytearray) -> _Header:
        account = RunAccount.from_bytes(bytes(data[:RUN_HEADER_SIZE]))
        return cls({f.name: getattr(account, f.name) for f in fields(RunAccount)})

    def write(self, data: bytearray) -> None:
        data[:RUN_HEADER_SIZE] = RunAccount(**self.values).to_bytes()  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        try:
            return self.__dict__["values"][name]
        except KeyError as exc:
            raise AttributeError(name) from exc

    def __setattr__(self, name: str, value: object) -> None:
        if name == "values":
            super().__setattr__(name, value)
        else:
            self.values[name] = value


class RunMirror:
    """Expected bytes of one run account, advanced a step at a time.

    Args:
        artifact: the model's artifact, as its sections on chain decode.
        data: the run account's bytes right after openRun (or at any later step).
        model: the integer model of ``artifact`` (built if not given).
        tokenizer: its tokenizer (built if not given).
    """

    def __init__(
        self,
        artifact: Artifact,
        data: bytes,
        model: IntModel | None = None,
        tokenizer: Tokenizer | None = None,
    ):
        self.artifact = artifact
        self.config = artifact.config
        self.model = model or IntModel.from_artifact(artifact)
        self.tokenizer = tokenizer or Tokenizer.from_artifact(artifact)
        self.data = bytes(data)
        self.token_lengths = [len(t) for t in self.tokenizer.tokens]
        self.probes = self.config.vocab_size.bit_length() + 1
        self.matrix_sections = [m.section for m in artifact.matrices]

    @property
    def header(self) -> RunAccount:
        """The expected header now."""
        return RunAccount.from_bytes(self.data[:RUN_HEADER_SIZE])

    def plan(self, available: Collection[int] | None = None) -> StepPlan:
        """Compute the next step: the sections it reads, the bytes it leaves.

        Args:
            available: the matrix sections the step is passed; by default every section it
                reaches, which the plan then lists.

        Raises:
            MirrorMismatchError: the step cannot advance with these sections (the program
                refuses such a step: MissingWeightAccount).
        """
        machine = _Machine(self, self.data, available)
        machine.run()
        spent = STEP_BUDGET - machine.budget
        return StepPlan(tuple(machine.sections), bytes(machine.data), spent, machine.logged)

    def advance(self, plan: StepPlan) -> None:
        """Take ``plan``'s bytes as the expected state (after the chain agreed)."""
        self.data = plan.data

    def compare(self, chain: bytes, before: RunAccount) -> None:
        """Raise unless ``chain`` equals the expected bytes; name the first difference.

        Args:
            chain: the run account's data as the chain holds it after a step.
            before: the header before that step (to name the position and phase).

        Raises:
            MirrorMismatchError: the chain differs: position, phase, region and bytes.
        """
        if chain == self.data:
            return
        if len(chain) != len(self.data):
            raise MirrorMismatchError(
                f"the run account is {len(chain):,} bytes on chain, {len(self.data):,} in "
                f"the mirror"
            )
        a = np.frombuffer(chain, np.uint8)
        b = np.frombuffer(self.data, np.uint8)
        diff = np.flatnonzero(a != b)
        first, last = int(diff[0]), int(diff[-1])
        where = describe_offset(before, first)
        raise MirrorMismatchError(
            f"after step {before.steps} (position {before.position}, {phase_name(before)}) "
            f"the run account differs at bytes {first}..{last + 1} ({where}): chain "
            f"{bytes(a[first : first + 8]).hex()}, mirror {bytes(b[first : first + 8]).hex()}"
        )

    # -- the forward pass --

    def _phase_section(self, h: _Header) -> int:
        layers = self.config.n_layers
        phase = h.phase
        if phase == 0:
            return self.matrix_sections[0]
        if phase == _classifier(layers):
            return self.matrix_sections[1]
        if phase < _final_norm(layers):
            layer, kind = divmod(phase - 1, PHASES_PER_LAYER)
            if kind in (1, 4, 6, 8):
                return self.matrix_sections[2 + 7 * layer]
        return 0

    def _forward_step(self, s: _Machine) -> bool:
        h, layers = s.h, self.config.n_layers
        phase = h.phase
        if phase == 0:
            return self._embed(s)
        if phase == _final_norm(layers):
            return self._norm(s, 2 * layers)
        if phase == _classifier(layers):
            return self._rows(s, self.model.classifier, "logits")
        if phase == _final_norm(layers) + 2:
            return self._sample(s)
        layer, kind = divmod(phase - 1, PHASES_PER_LAYER)
        weights = self.model.layers[layer]
        if kind == 0:
            return self._norm(s, 2 * layer)
        if kind == 1:
            return self._rows(s, weights.qkv, "qkv", layer)
        if kind == 2:
            return self._rope(s, layer)
        if kind == 3:
            return self._attention(s, layer)
        if kind == 4:
            return self._rows(s, weights.output, "residual_xb")
        if kind == 5:
            return self._norm(s, 2 * layer + 1)
        if kind == 6:
            return self._rows(s, weights.gate_up, "gate_up")
        if kind == 7:
            return self._swiglu(s)
        return self._rows(s, weights.down, "residual_hb")

    def _next_phase(self, s: _Machine) -> None:
        h = s.h
        h.cursor = 0
        if h.phase + 1 == _final_norm(self.config.n_layers) and h.position + 1 < h.prompt_tokens:
            h.position += 1
            h.phase = 0
            return
        h.phase += 1

    def _embed(self, s: _Machine) -> bool:
        c = self.config
        s.spend(COST_EMBED + COST_EMBED_ELEMENT * c.dim)
        token = int(s.u32(Region.TOKENS, 1, s.h.position)[0])
        s.i64(Region.X, c.dim)[:] = self.model.embed(np.array([token]))[0]
        self._next_phase(s)
        return True

    def _norm(self, s: _Machine, index: int) -> bool:
        c = self.config
        s.spend(COST_NORM + COST_NORM_ELEMENT * c.dim)
        x = s.i64(Region.X, c.dim).copy()
        s.i64(Region.XB, c.dim)[:] = rmsnorm(x[None, :], self.model.norm[index])[0]
        self._next_phase(s)
        return True

    def _rows(self, s: _Machine, matrix: Matrix, kind: str, layer: int = 0) -> bool:
        c, h = self.config, s.h
        total, columns = matrix.weights.shape
        padded = _round8(columns)
        per_row = padded * COST_MAC_TWENTIETHS // 20 + COST_ROW
        fixed = COST_ROWS + COST_ROWS_COLUMN * padded
        if s.budget < fixed + per_row:
            raise _Stop
        n = min((s.budget - fixed) // per_row, total - h.cursor)
        s.budget -= fixed + n * per_row
        start, end = h.cursor, h.cursor + n
        source = Region.HB if kind == "residual_hb" else Region.XB
        x = s.i64(source, columns).copy()
        piece = Matrix(matrix.weights[start:end], matrix.scales[start:end], matrix.row_l1)
        y = piece.apply(x[None, :])[0]
        if kind == "qkv":
            q, k, v = s.i64(Region.Q, c.dim), *self._kv_rows(s, layer)
            stacked = np.concatenate([q, k, v])
            stacked[start:end] = y
            q[:], k[:], v[:] = np.split(stacked, [c.dim, c.dim + c.kv_dim])
        elif kind == "gate_up":
            gate, up = s.i64(Region.HB, c.hidden_dim), s.i64(Region.HB2, c.hidden_dim)
            stacked = np.concatenate([gate, up])
            stacked[start:end] = y
            gate[:], up[:] = stacked[: c.hidden_dim], stacked[c.hidden_dim :]
        elif kind == "logits":
            s.i64(Region.LOGITS, c.vocab_size)[start:end] = y
            best = int(np.argmax(y))
            if start == 0 or int(y[best]) > h.best_logit:
                h.best_logit, h.best_token = int(y[best]), start + best
        else:
            out = s.i64(Region.X, c.dim)
            out[start:end] = sat32(out[start:end] + y)
        h.cursor = end
        if end == total:
            self._next_phase(s)
        return True

    def _kv_rows(self, s: _Machine, layer: int) -> tuple[np.ndarray, np.ndarray]:
        return (
            s.cache(Region.KEYS, layer, s.h.position),
            s.cache(Region.VALUES, layer, s.h.position),
        )

    def _rope(self, s: _Machine, layer: int) -> bool:
        c, h = self.config, s.h
        s.spend(COST_ROPE + COST_ROPE_ELEMENT * (c.dim + c.kv_dim))
        cos = self.model.cos[h.position : h.position + 1]
        sin = self.model.sin[h.position : h.position + 1]
        q = s.i64(Region.Q, c.dim)
        q[:] = rotate(q.reshape(1, c.n_heads, c.head_size), cos, sin).reshape(-1)
        k = self._kv_rows(s, layer)[0]
        k[:] = rotate(k.reshape(1, c.n_kv_heads, c.head_size), cos, sin).reshape(-1)
        self._next_phase(s)
        return True

    def _attention(self, s: _Machine, layer: int) -> bool:
        c, h = self.config, s.h
        positions = h.position + 1
        per_head = (
            COST_HEAD
            + COST_HEAD_ELEMENT * c.head_size
            + positions * (COST_POSITION + COST_POSITION_ELEMENT * c.head_size)
        )
        if s.budget < COST_ATTENTION + per_head:
            raise _Stop
        n = min((s.budget - COST_ATTENTION) // per_head, c.n_heads - h.cursor)
        s.budget -= COST_ATTENTION + n * per_head
        rows = h.capacity - 1
        keys = s.i64(Region.KEYS, positions * c.kv_dim, layer * rows * c.kv_dim)
        values = s.i64(Region.VALUES, positions * c.kv_dim, layer * rows * c.kv_dim)
        q = s.i64(Region.Q, c.dim).reshape(1, c.n_heads, c.head_size)
        mixed = attention(
            self.model,
            q,
            keys.reshape(positions, c.kv_dim),
            values.reshape(positions, c.kv_dim),
            h.position,
        )[0]
        lo, hi = h.cursor * c.head_size, (h.cursor + n) * c.head_size
        s.i64(Region.XB, c.dim)[lo:hi] = mixed[lo:hi]
        h.cursor += n
        if h.cursor == c.n_heads:
            self._next_phase(s)
        return True

    def _swiglu(self, s: _Machine) -> bool:
        c = self.config
        s.spend(COST_SWIGLU + COST_SWIGLU_ELEMENT * c.hidden_dim)
        gate, up = s.i64(Region.HB, c.hidden_dim), s.i64(Region.HB2, c.hidden_dim)
        gate[:] = sat32(round_shift(silu(gate.copy(), self.model.silu) * up, ACT_BITS))
        self._next_phase(s)
        return True

    # -- choosing the next token --

    def _sample(self, s: _Machine) -> bool:
        h = s.h
        if h.temperature == 0:
            s.spend(COST_PASS)
            self._choose(s, h.best_token)
            return True
        if h.sample_pass == SamplePass.WEIGHTS:
            return self._weights_pass(s)
        if h.sample_pass == SamplePass.CUT:
            return self._cut_pass(s)
        return self._draw_pass(s)

    def _ids_that_fit(self, s: _Machine, per_id: int, fixed: int) -> int:
        if s.budget < fixed + per_id:
            raise _Stop
        n = min((s.budget - fixed) // per_id, self.config.vocab_size - s.h.cursor)
        s.budget -= fixed + n * per_id
        return n

    def _nucleus(self, h: _Header) -> bool:
        return 0 < h.top_p < _ONE_Q16

    def _hist(self, s: _Machine) -> tuple[np.ndarray, np.ndarray]:
        both = s.i64(Region.HIST, HIST_HIGH + HIST_LOW)
        return both[:HIST_HIGH], both[HIST_HIGH:]

    def _weights_pass(self, s: _Machine) -> bool:
        h = s.h
        n = self._ids_that_fit(s, COST_WEIGHT, COST_PASS)
        start, end = h.cursor, h.cursor + n
        logits = s.i64(Region.LOGITS, self.config.vocab_size)
        high, low = self._hist(s)
        nucleus = self._nucleus(h)
        if start == 0 and nucleus:
            high[:], low[:] = 0, 0
        distance = (h.best_logit - logits[start:end]) << ACT_BITS
        w = exp_weights(distance // h.temperature, self.model.exp)
        logits[start:end] = w
        h.weight_sum += int(w.sum())
        if nucleus:
            np.add.at(high, w >> HIST_SHIFT, w)
        h.cursor = end
        if end == self.config.vocab_size:
            h.cursor = 0
            h.sample_pass = SamplePass.CUT if nucleus else SamplePass.DRAW
            h.kept_sum = h.weight_sum
        return True

    def _cut_pass(self, s: _Machine) -> bool:
        h = s.h
        n = self._ids_that_fit(s, COST_ID, COST_PASS + COST_BUCKETS)
        start, end = h.cursor, h.cursor + n
        high, low = self._hist(s)
        limit = h.top_p * h.weight_sum
        bucket, above = _crossing(high, 0, limit)
        w = s.i64(Region.LOGITS, self.config.vocab_size)[start:end]
        mine = w[(w >> HIST_SHIFT) == bucket]
        np.add.at(low, mine & (HIST_LOW - 1), mine)
        h.cursor = end
        if end == self.config.vocab_size:
            j, above = _crossing(low, above, limit)
            v = bucket << HIST_SHIFT | j
            h.cut_weight = v
            h.cut_count = (limit - (above << ACT_BITS)) // (v << ACT_BITS) + 1
            h.kept_sum = above + h.cut_count * v
            h.cursor = 0
            h.sample_pass = SamplePass.DRAW
        return True

    def _draw_pass(self, s: _Machine) -> bool:
        h = s.h
        n = self._ids_that_fit(s, COST_ID, COST_PASS + COST_CHOOSE)
        if h.cursor == 0:
            rng = Xorshift64Star(0)
            rng.state = h.rng
            h.target = rng.next() % h.kept_sum
            h.rng = rng.state
        w = s.i64(Region.LOGITS, self.config.vocab_size)
        for t in range(h.cursor, h.cursor + n):
            weight = int(w[t])
            if self._nucleus(h) and weight <= h.cut_weight:
                if weight < h.cut_weight or h.cut_seen == h.cut_count:
                    continue
                h.cut_seen += 1
            h.running += weight
            if h.running > h.target:
                s.budget += (h.cursor + n - 1 - t) * COST_ID  # the ids not walked
                self._choose(s, t)
                return True
        h.cursor += n
        return True

    def _choose(self, s: _Machine, token: int) -> None:
        h = s.h
        tokens = s.u32(Region.TOKENS, h.capacity)
        previous = int(tokens[h.position])
        tokens[h.position + 1] = token
        h.token_count = h.position + 2
        h.position += 1
        h.phase = 0
        h.cursor = 0
        h.sample_pass = SamplePass.WEIGHTS
        for name in ("weight_sum", "kept_sum", "cut_weight", "cut_count", "cut_seen"):
            setattr(h, name, 0)
        h.target = h.running = 0
        if token in STOP_TOKENS:
            h.state, h.finish_reason = RunState.FINISHED, FinishReason.END_TOKEN
        elif h.token_count == h.capacity:
            h.state, h.finish_reason = RunState.FINISHED, FinishReason.CAPACITY
        s.logged.append(Logged(h.position, token, self.tokenizer.piece(previous, token)))

    # -- the tokenizer --

    def _tokenizer_step(self, s: _Machine) -> bool:
        if s.h.phase == 0:
            return self._chars(s)
        if s.h.phase == 1:
            return self._pairs(s)
        return self._merges(s)

    def _work(self, s: _Machine) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = work_entries(s.h.prompt_length)
        both = s.u32(Region.WORK, 3 * n)
        return both[:n], both[n : 2 * n], both[2 * n :]

    def _lookup_cost(self, length: int) -> int:
        return self.probes * (COST_PROBE + COST_PROBE_BYTE * length)

    def _char_cost(self, length: int) -> int:
        return COST_CHAR + COST_BYTE * length + self._lookup_cost(length)

    def _pair_cost(self, a: int, b: int) -> int:
        length = self.token_lengths[a] + self.token_lengths[b]
        return COST_PAIR + COST_BYTE * length + self._lookup_cost(length)

    def _append_char(self, s: _Machine, tokens: np.ndarray, char: bytes) -> None:
        found = self.tokenizer.lookup(char)
        pieces = [found] if found is not None else [byte + 3 for byte in char]
        for token in pieces:
            tokens[s.h.work_count] = token
            s.h.work_count += 1

    def _chars(self, s: _Machine) -> bool:
        h = s.h
        tokens = self._work(s)[0]
        text = bytes(s.data[h.regions[Region.PROMPT] : h.regions[Region.PROMPT] + h.prompt_length])
        progress = False
        if h.work_count == 0:
            s.spend(self._char_cost(1))
            tokens[0] = BOS
            h.work_count = 1
            self._append_char(s, tokens, b" ")
            progress = True
        while h.cursor < len(text):
            length = _char_length(text, h.cursor)
            try:
                s.spend(self._char_cost(length))
            except _Stop:
                return progress
            self._append_char(s, tokens, text[h.cursor : h.cursor + length])
            h.cursor += length
            progress = True
        h.phase, h.cursor = 1, 0
        return True

    def _look_up_pair(self, work: tuple[np.ndarray, ...], i: int) -> None:
        tokens, ids, keys = work
        joined = self.tokenizer.tokens[tokens[i]] + self.tokenizer.tokens[tokens[i + 1]]
        found = self.tokenizer.lookup(joined)
        ids[i] = NO_TOKEN if found is None else found
        keys[i] = 0 if found is None else self.tokenizer.keys[found]

    def _pairs(self, s: _Machine) -> bool:
        h = s.h
        work = self._work(s)
        progress = False
        while h.cursor + 1 < h.work_count:
            try:
                s.spend(self._pair_cost(int(work[0][h.cursor]), int(work[0][h.cursor + 1])))
            except _Stop:
                return progress
            self._look_up_pair(work, h.cursor)
            h.cursor += 1
            progress = True
        h.phase, h.cursor = 2, 0
        return True

    def _merges(self, s: _Machine) -> bool:
        h = s.h
        work = self._work(s)
        tokens, ids, keys = work
        progress = False
        while True:
            n = h.work_count
            live = ids[: n - 1] != NO_TOKEN
            if not live.any():
                try:
                    return self._finish(s) or progress
                except _Stop:
                    return progress
            candidates = np.where(live, keys[: n - 1].astype(np.int64), -1)
            best = int(np.argmax(candidates))
            merged = int(ids[best])
            cost = COST_PAIR + COST_SCAN * n + COST_SHIFT * (n - best)
            if best > 0:
                cost += self._pair_cost(int(tokens[best - 1]), merged)
            if best + 2 < n:
                cost += self._pair_cost(merged, int(tokens[best + 2]))
            try:
                s.spend(cost)
            except _Stop:
                return progress
            tokens[best] = merged
            tokens[best + 1 : n - 1] = tokens[best + 2 : n].copy()
            ids[best + 1 : n - 1] = ids[best + 2 : n].copy()
            keys[best + 1 : n - 1] = keys[best + 2 : n].copy()
            ids[n - 2] = keys[n - 2] = tokens[n - 1] = 0
            h.work_count = n - 1
            if best > 0:
                self._look_up_pair(work, best - 1)
            if best + 2 < n:
                self._look_up_pair(work, best)
            progress = True

    def _finish(self, s: _Machine) -> bool:
        h = s.h
        n = h.work_count
        s.spend(COST_FINISH + COST_BYTE * n)
        h.prompt_tokens = n
        h.phase = h.cursor = 0
        if n >= h.capacity:
            h.state, h.finish_reason = RunState.FINISHED, FinishReason.PROMPT_TOO_LONG
            return True
        s.u32(Region.TOKENS, n)[:] = self._work(s)[0][:n]
        h.token_count = n
        h.state = RunState.RUNNING
        return True


def describe_offset(header: RunAccount, offset: int) -> str:
    """Name the region (and element) of a run account byte offset."""
    if offset < RUN_HEADER_SIZE:
        return "the run header"
    regions = header.regions
    for region in reversed(Region):
        if region != Region.END and regions[region] <= offset:
            size = 1 if region == Region.PROMPT and header.prompt_kind == PromptKind.TEXT else 8
            if region in (Region.WORK, Region.TOKENS) or (
                region == Region.PROMPT and header.prompt_kind == PromptKind.TOKENS
            ):
                size = 4
            index = (offset - regions[region]) // size
            return f"{region.name.lower()} region, element {index}"
    return "past the regions"


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


def _char_length(text: bytes, i: int) -> int:
    length = 1
    while i + length < len(text) and text[i + length] & 0xC0 == 0x80 and length < 4:
        length += 1
    return length


def _round8(value: int) -> int:
    return -(-value // 8) * 8


def _final_norm(layers: int) -> int:
    return 1 + PHASES_PER_LAYER * layers


def _classifier(layers: int) -> int:
    return _final_norm(layers) + 1

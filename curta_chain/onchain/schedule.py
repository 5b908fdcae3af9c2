"""The on-chain step schedule: one table for the program and its mirror.

A ``step`` runs a run's phases in a fixed order, each cut into slices by a cost model in
estimated compute units, and reads the weight sections its phases name. That schedule is
a protocol between ``programs/curta`` and ``curta_chain.onchain.mirror``: both must cut
every step at the same place. It is written once, here: the phase enums, the phase order
and what each phase is sliced by, the phase-to-section rule, the step's budget, the
``COST_*`` constants and the cost formulas built from them. A slice depends on the run's
state alone (the budget ends it, never the accounts passed), so the run account after k
landed steps is a function of the run's arguments and k.
``scripts/gen_schedule.py`` writes ``programs/curta/schedule.h`` from this table (generated,
do not edit) and the C includes it; ``tests/program/test_schedule.py`` regenerates it and
compares. The arithmetic the phases do stays written twice, independently, in C and in
numpy: that is what the mirror checks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from curta_chain.artifact.layout import MATRICES_PER_LAYER, MODEL_MATRICES
from curta_chain.onchain.cost_formula import Const, Expr, Formula, Num, Param
from curta_chain.onchain.run_account import HIST_HIGH, HIST_LOW

# -- the cost model's constants (estimated compute units, each a little above what the
# calibration build measures: scripts/bench_program_cu.py --calibrate fits them) --

COST_EMBED = Const("COST_EMBED", 100)
COST_EMBED_ELEMENT = Const("COST_EMBED_ELEMENT", 12)
COST_NORM = Const("COST_NORM", 1100)
COST_NORM_ELEMENT = Const("COST_NORM_ELEMENT", 39)
COST_ROPE = Const("COST_ROPE", 100)
COST_ROPE_ELEMENT = Const("COST_ROPE_ELEMENT", 26)
COST_SWIGLU = Const("COST_SWIGLU", 100)
COST_SWIGLU_ELEMENT = Const("COST_SWIGLU_ELEMENT", 40)
COST_QUAD_COLUMN = Const("COST_QUAD_COLUMN", 13, "the kernel, 4 rows: a column's 4 MACs...")
COST_QUAD_ROUND = Const("COST_QUAD_ROUND", 2, "...a round's test...")
COST_QUAD_CHUNK = Const("COST_QUAD_CHUNK", 28, "...and a chunk's start and end")
COST_TRIPLE_COLUMN = Const("COST_TRIPLE_COLUMN", 10, "the kernel in C, 3 rows: a column...")
COST_TRIPLE_LOOP = Const("COST_TRIPLE_LOOP", 5, "...a round of 8 columns...")
COST_TRIPLE_CALL = Const("COST_TRIPLE_CALL", 30, "...and its start and end")
COST_COPY_HALVES = Const("COST_COPY_HALVES", 5, "a call: a wide column into the frame (halves)...")
COST_CALL = Const("COST_CALL", 120, "...the call...")
COST_CALL_CHUNK = Const("COST_CALL_CHUNK", 30, "...a chunk...")
COST_CALL_TAIL = Const("COST_CALL_TAIL", 60, "...the columns past the rounds...")
COST_CALL_TAIL_COLUMN = Const("COST_CALL_TAIL_COLUMN", 3, "...and each of them")
COST_REMAINDER_TENTHS = Const(
    "COST_REMAINDER_TENTHS", 24, "a matrix's last 1 to 3 rows of a slice, in C: per column..."
)
COST_REMAINDER = Const("COST_REMAINDER", 60, "...and for them")
COST_ROWS = Const("COST_ROWS", 800, "a slice of rows, one lane: the sum of x...")
COST_ROWS_COLUMN = Const("COST_ROWS_COLUMN", 3, "...per weight byte of a row")
COST_ROW = Const("COST_ROW", 31, "a row beyond its MACs: the scale, the store")
COST_BATCH = Const("COST_BATCH", 800, "a slice of rows, two lanes: the plan...")
COST_BATCH_COLUMN = Const("COST_BATCH_COLUMN", 30, "...per weight byte of a row")
COST_BATCH_ROW = Const("COST_BATCH_ROW", 90, "a row of two lanes beyond its MACs")
COST_SEGMENT = Const("COST_SEGMENT", 20, "a row's segment: its lanes unpacked")
ROWS_PER_CALL = Const("ROWS_PER_CALL", 96, "a batch's rows a kernel call takes at most")
COST_ATTENTION = Const("COST_ATTENTION", 200)
COST_HEAD = Const("COST_HEAD", 300)
COST_HEAD_ELEMENT = Const("COST_HEAD_ELEMENT", 32, "per element of the head: its division")
COST_POSITION = Const("COST_POSITION", 60, "per attended position: its score and weight")
COST_POSITION_ELEMENT = Const("COST_POSITION_ELEMENT", 11, "per position and element: two MACs")
COST_PASS = Const("COST_PASS", 500)
COST_WEIGHT = Const("COST_WEIGHT", 55, "an id's weight: a division and the table")
COST_ID = Const("COST_ID", 14, "an id in the cut or the draw")
COST_CHOOSE = Const("COST_CHOOSE", 500, "the draw's generator step, the token appended, logged")
COST_BUCKETS = Const(
    "COST_BUCKETS",
    12 * (HIST_HIGH + HIST_LOW),
    "the scans of both histograms",
    Num(12) * (Const("HIST_HIGH", HIST_HIGH) + Const("HIST_LOW", HIST_LOW)),
)
COST_CHAR = Const("COST_CHAR", 80)
COST_PAIR = Const("COST_PAIR", 80)
COST_PROBE = Const("COST_PROBE", 40)
COST_PROBE_BYTE = Const("COST_PROBE_BYTE", 6)
COST_SCAN = Const("COST_SCAN", 8)
COST_SHIFT = Const("COST_SHIFT", 12)
COST_FINISH = Const("COST_FINISH", 500)
COST_BYTE = Const("COST_BYTE", 4)

COSTS = (
    COST_EMBED, COST_EMBED_ELEMENT, COST_NORM, COST_NORM_ELEMENT, COST_ROPE, COST_ROPE_ELEMENT,
    COST_SWIGLU, COST_SWIGLU_ELEMENT, COST_QUAD_COLUMN, COST_QUAD_ROUND, COST_QUAD_CHUNK,
    COST_TRIPLE_COLUMN, COST_TRIPLE_LOOP, COST_TRIPLE_CALL, COST_COPY_HALVES, COST_CALL,
    COST_CALL_CHUNK, COST_CALL_TAIL, COST_CALL_TAIL_COLUMN, COST_REMAINDER_TENTHS, COST_REMAINDER,
    COST_ROWS, COST_ROWS_COLUMN, COST_ROW, COST_BATCH, COST_BATCH_COLUMN, COST_BATCH_ROW,
    COST_SEGMENT, ROWS_PER_CALL,
    COST_ATTENTION, COST_HEAD, COST_HEAD_ELEMENT, COST_POSITION, COST_POSITION_ELEMENT,
    COST_PASS, COST_WEIGHT, COST_ID, COST_CHOOSE, COST_BUCKETS,
    COST_CHAR, COST_PAIR, COST_PROBE, COST_PROBE_BYTE, COST_SCAN, COST_SHIFT, COST_FINISH,
    COST_BYTE,
)  # fmt: skip
"""Every cost constant, in the generated header's order."""

# -- the cost formulas --


_dim, _kv_dim, _hidden = Param("dim"), Param("kv_dim"), Param("hidden")
_padded, _head_size, _positions = Param("padded"), Param("head_size"), Param("positions")
_probes, _length, _lookup = Param("probes"), Param("length"), Param("lookup")
_count, _shifted = Param("count"), Param("shifted")
_columns, _segments, _matrices = Param("columns"), Param("segments"), Param("matrices")
_kernel_units, _call, _remainder = Param("kernel"), Param("call"), Param("remainder")

KERNEL_WIDE, KERNEL_STEP = 96, 8
"""The kernel's column rounds (``src/matvec.c``): 96 columns a round, then 8."""
KERNEL_CHUNK_ROUNDS = 3
"""Rounds the kernel unrolls from its stack frame at a time (``scripts/gen_kernel.py``)."""


def _split(columns: Expr) -> tuple[Expr, Expr, Expr, Expr]:
    """A kernel call's columns: those in whole rounds, the rest, the chunks, and 1 if rest."""
    wide = columns // KERNEL_WIDE * KERNEL_WIDE
    rest = columns - wide
    chunks = (wide + (KERNEL_CHUNK_ROUNDS * KERNEL_WIDE - 1)) // (KERNEL_CHUNK_ROUNDS * KERNEL_WIDE)
    return wide, rest, chunks, (rest + KERNEL_WIDE - 1) // KERNEL_WIDE


def _kernel_row(columns: Expr) -> Expr:
    """A row's share of a kernel call over `columns`, each part rounded up.

    Its quad's (4 rows) over the whole rounds, and its triple's (3 rows, in C) past them.
    """
    wide, rest, chunks, tail = _split(columns)
    quad = COST_QUAD_COLUMN * wide + COST_QUAD_ROUND * (wide // KERNEL_WIDE)
    triple = COST_TRIPLE_COLUMN * rest + COST_TRIPLE_LOOP * (rest // KERNEL_STEP)
    return (quad + COST_QUAD_CHUNK * chunks + 3) // 4 + (triple + COST_TRIPLE_CALL * tail + 2) // 3


def _kernel_remainder(columns: Expr) -> Expr:
    """A call's last 1 to 3 rows, which go through C over every column, beyond their share."""
    return (COST_REMAINDER_TENTHS * columns + 9) // 10 + COST_REMAINDER


def _kernel_call(columns: Expr) -> Expr:
    """A kernel call over `columns`, beyond its rows: the copies into the frame, the rest."""
    wide, rest, chunks, tail = _split(columns)
    return (
        COST_COPY_HALVES * wide // 2
        + COST_CALL
        + COST_CALL_CHUNK * chunks
        + COST_CALL_TAIL * tail
        + COST_CALL_TAIL_COLUMN * rest
    )


EMBED_COST = Formula("EMBED_COST", ("dim",), COST_EMBED + COST_EMBED_ELEMENT * _dim, "embed")
NORM_COST = Formula("NORM_COST", ("dim",), COST_NORM + COST_NORM_ELEMENT * _dim, "a norm")
ROPE_COST = Formula(
    "ROPE_COST", ("dim", "kv_dim"), COST_ROPE + COST_ROPE_ELEMENT * (_dim + _kv_dim), "rotary"
)
SWIGLU_COST = Formula(
    "SWIGLU_COST", ("hidden",), COST_SWIGLU + COST_SWIGLU_ELEMENT * _hidden, "SwiGLU"
)
KERNEL_ROW = Formula("KERNEL_ROW", ("columns",), _kernel_row(_columns), "a row of a kernel call")
KERNEL_CALL = Formula("KERNEL_CALL", ("columns",), _kernel_call(_columns), "a kernel call")
KERNEL_REMAINDER = Formula(
    "KERNEL_REMAINDER",
    ("columns",),
    _kernel_remainder(_columns),
    "a call's last 1 to 3 rows in C, beyond their share",
)
ROWS_FIXED_COST = Formula(
    "ROWS_FIXED_COST",
    ("padded", "matrices"),
    COST_ROWS
    + COST_ROWS_COLUMN * _padded
    + _matrices * (_kernel_call(_padded) + _kernel_remainder(_padded)),
    "a slice of rows of `padded` weight bytes (the artifact's row length less its header) "
    "of `matrices` stacked matrices: a call each",
)
ROW_COST = Formula("ROW_COST", ("padded",), _kernel_row(_padded) + COST_ROW, "each row of it")
BATCH_FIXED_COST = Formula(
    "BATCH_FIXED_COST",
    ("padded",),
    COST_BATCH + COST_BATCH_COLUMN * _padded,
    "a slice of a batch's rows of `padded` weight bytes: the plan of its lanes",
)
BATCH_SLICE_COST = Formula(
    "BATCH_SLICE_COST",
    ("call", "remainder", "matrices"),
    _matrices * (_call + _remainder),
    "then, by the plan (a row's calls and their last rows), a call of each matrix",
)
BATCH_ROW_COST = Formula(
    "BATCH_ROW_COST",
    ("kernel", "segments"),
    _kernel_units + COST_SEGMENT * _segments + COST_BATCH_ROW,
    "and each row, by the plan: its kernel units and segments",
)
HEAD_COST = Formula(
    "HEAD_COST",
    ("head_size", "positions"),
    COST_HEAD
    + COST_HEAD_ELEMENT * _head_size
    + _positions * (COST_POSITION + COST_POSITION_ELEMENT * _head_size),
    "an attention head over `positions` cached positions (a slice also pays COST_ATTENTION)",
)
LOOKUP_COST = Formula(
    "LOOKUP_COST",
    ("probes", "length"),
    _probes * (COST_PROBE + COST_PROBE_BYTE * _length),
    "a token lookup: a probe per halving of the vocabulary, each comparing `length` bytes",
)
CHAR_COST = Formula(
    "CHAR_COST",
    ("length", "lookup"),
    COST_CHAR + COST_BYTE * _length + _lookup,
    "a prompt character of `length` bytes and its lookup",
)
PAIR_COST = Formula(
    "PAIR_COST",
    ("length", "lookup"),
    COST_PAIR + COST_BYTE * _length + _lookup,
    "an adjacent pair of `length` joined bytes and its lookup",
)
MERGE_SCAN_COST = Formula(
    "MERGE_SCAN_COST", ("count",), COST_PAIR + COST_SCAN * _count, "the best pair of `count`"
)
MERGE_SHIFT_COST = Formula(
    "MERGE_SHIFT_COST", ("shifted",), COST_SHIFT * _shifted, "the tokens a merge shifts"
)
FINISH_COST = Formula(
    "FINISH_COST", ("count",), COST_FINISH + COST_BYTE * _count, "the prompt's `count` tokens"
)

FORMULAS = (
    EMBED_COST,
    NORM_COST,
    ROPE_COST,
    SWIGLU_COST,
    KERNEL_ROW,
    KERNEL_CALL,
    KERNEL_REMAINDER,
    ROWS_FIXED_COST,
    ROW_COST,
    BATCH_FIXED_COST,
    BATCH_SLICE_COST,
    BATCH_ROW_COST,
    HEAD_COST,
    LOOKUP_COST,
    CHAR_COST,
    PAIR_COST,
    MERGE_SCAN_COST,
    MERGE_SHIFT_COST,
    FINISH_COST,
)


def lookup_probes(vocab: int) -> int:
    """Probes a lookup may make: one per bit of the vocabulary size, and one more."""
    return vocab.bit_length() + 1


# -- the step --

STEP_BUDGET = 1_390_000
"""What a step may spend, in estimated compute units."""
STEP_OVERHEAD = 6_000
"""A step's compute units besides its phases' (which the budget bounds): parsing its input of
up to 20 accounts, their checks, the loop from phase to phase (tests measure it)."""
BUDGET_INSTRUCTION_UNITS = 150
"""What each compute-budget instruction of a step's transaction (its limit, its price) costs.
A step's transaction, at most two of them and the step, stays within 1,400,000 units:
``STEP_BUDGET + STEP_OVERHEAD + 2 x BUDGET_INSTRUCTION_UNITS`` (tests check it)."""


# -- the phases --


class Slicing(enum.Enum):
    """What a phase is cut by: done whole in one step, or by rows, heads or ids."""

    WHOLE = "whole"
    ROWS = "rows"
    HEADS = "heads"
    IDS = "ids"


@dataclass(frozen=True)
class PhaseInfo:
    """One phase of the table: how it is sliced, the matrix it reads first, its name.

    Attributes:
        slicing: what the phase is cut by.
        matrix: for a layer phase, the kind (``enum LayerMatrix``) of the first matrix of
            its rows; for a token phase, the matrix's index; None for a phase that reads
            no matrix.
        title: a readable name.
    """

    slicing: Slicing
    matrix: int | None
    title: str


class LayerPhase(enum.IntEnum):
    """A layer's phases, in order (``enum LayerPhase``: ``PH_<name>``)."""

    ATT_NORM = 0
    QKV = 1
    ROPE = 2
    ATTENTION = 3
    OUTPUT = 4
    FFN_NORM = 5
    GATE_UP = 6
    SWIGLU = 7
    DOWN = 8


MAT_EMBEDDING, MAT_CLASSIFIER = range(len(MODEL_MATRICES))  # the layout's order
"""The matrix table's first two entries; the layers' matrices follow (``layer_matrix``)."""
MAT_QUERY, MAT_OUTPUT, MAT_GATE, MAT_DOWN = 0, 3, 4, 5
"""Kinds of a layer's matrices (``enum LayerMatrix``: key 1, value 2 and up 6 follow the
first of their rows)."""

LAYER_PHASES: dict[LayerPhase, PhaseInfo] = {
    LayerPhase.ATT_NORM: PhaseInfo(Slicing.WHOLE, None, "attention norm"),
    LayerPhase.QKV: PhaseInfo(Slicing.ROWS, MAT_QUERY, "query, key and value rows"),
    LayerPhase.ROPE: PhaseInfo(Slicing.WHOLE, None, "rotary"),
    LayerPhase.ATTENTION: PhaseInfo(Slicing.HEADS, None, "attention heads"),
    LayerPhase.OUTPUT: PhaseInfo(Slicing.ROWS, MAT_OUTPUT, "attention output rows"),
    LayerPhase.FFN_NORM: PhaseInfo(Slicing.WHOLE, None, "feed-forward norm"),
    LayerPhase.GATE_UP: PhaseInfo(Slicing.ROWS, MAT_GATE, "gate and up rows"),
    LayerPhase.SWIGLU: PhaseInfo(Slicing.WHOLE, None, "SwiGLU"),
    LayerPhase.DOWN: PhaseInfo(Slicing.ROWS, MAT_DOWN, "down rows"),
}
"""Per layer phase: its slicing, the first matrix of its rows, its name."""
PHASES_PER_LAYER = len(LayerPhase)


class TokenPhase(enum.IntEnum):
    """A token's phases around its layers.

    A run's ``phase`` is EMBED, then 1 + 9 x layer + the layer phase, then FINAL_NORM,
    CLASSIFIER and SAMPLE (``token_phase`` gives the number). A prompt token's position ends
    after its last layer (nothing to sample).
    """

    EMBED = 0
    FINAL_NORM = 1
    CLASSIFIER = 2
    SAMPLE = 3


TOKEN_PHASES: dict[TokenPhase, PhaseInfo] = {
    TokenPhase.EMBED: PhaseInfo(Slicing.WHOLE, MAT_EMBEDDING, "embedding"),
    TokenPhase.FINAL_NORM: PhaseInfo(Slicing.WHOLE, None, "final norm"),
    TokenPhase.CLASSIFIER: PhaseInfo(Slicing.ROWS, MAT_CLASSIFIER, "classifier rows"),
    TokenPhase.SAMPLE: PhaseInfo(Slicing.IDS, None, "sampling"),
}
"""Per token phase: its slicing, its matrix, its name."""


class TokenizePhase(enum.IntEnum):
    """The tokenizer's phases while a text prompt is tokenized (``enum TokenizePhase``)."""

    CHARS = 0
    PAIRS = 1
    MERGE = 2


TOKENIZE_PHASES: dict[TokenizePhase, tuple[str, str]] = {
    TokenizePhase.CHARS: ("tokenizer characters", "one lookup per UTF-8 character"),
    TokenizePhase.PAIRS: ("tokenizer pairs", "look up every adjacent pair once"),
    TokenizePhase.MERGE: (
        "tokenizer merges",
        "merge the best pair and look up its two new neighbours, again and again",
    ),
}
"""Each tokenizer phase's name and what it does."""


def token_phase(phase: TokenPhase, layers: int) -> int:
    """The run's ``phase`` number of a token phase in a model of ``layers`` layers."""
    if phase == TokenPhase.EMBED:
        return 0
    return PHASES_PER_LAYER * layers + phase


@dataclass(frozen=True)
class Phase:
    """A run's ``phase`` number decoded: a token phase, or a layer and its phase."""

    token: TokenPhase | None
    layer: int
    layer_phase: LayerPhase | None

    @classmethod
    def of(cls, phase: int, layers: int) -> Phase:
        """Decode ``phase`` of a model with ``layers`` layers (past SAMPLE reads as SAMPLE)."""
        if phase == 0:
            return cls(TokenPhase.EMBED, 0, None)
        if phase < token_phase(TokenPhase.FINAL_NORM, layers):
            layer, kind = divmod(phase - 1, PHASES_PER_LAYER)
            return cls(None, layer, LayerPhase(kind))
        after = phase - PHASES_PER_LAYER * layers
        return cls(TokenPhase(min(after, TokenPhase.SAMPLE)), 0, None)

    @property
    def info(self) -> PhaseInfo:
        """The table's row for this phase."""
        if self.layer_phase is not None:
            return LAYER_PHASES[self.layer_phase]
        assert self.token is not None
        return TOKEN_PHASES[self.token]

    @property
    def title(self) -> str:
        """A readable name, e.g. ``layer 2 attention heads``."""
        if self.layer_phase is not None:
            return f"layer {self.layer} {self.info.title}"
        return self.info.title

    def matrix(self) -> int | None:
        """The matrix (its index in the artifact's table) whose section the phase reads.

        The phase-to-section rule: a phase that fits the step's budget reads the section of
        its first matrix, and a step that was not passed that section is refused whole
        (MissingWeightAccount). None for a phase that reads no matrix.
        """
        kind = self.info.matrix
        if kind is None or self.layer_phase is None:
            return kind
        return layer_matrix(self.layer, kind)


def layer_matrix(layer: int, kind: int) -> int:
    """A layer's matrix index: 0 embedding, 1 classifier, then 7 per layer (``MAT_*``)."""
    return len(MODEL_MATRICES) + MATRICES_PER_LAYER * layer + kind

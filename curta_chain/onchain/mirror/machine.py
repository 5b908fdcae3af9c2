"""What a step works with (``inference.h``'s ``Step``): the run's bytes, header and budget.

``Step`` holds the run account's bytes, its decoded header, the budget left and the
sections the step has reached; ``MirrorModel`` what every step reads from the model. The
phases are in ``forward``, ``attention``, ``sampling`` and ``tokenizer``, as in the C, and
``step.take_step`` is ``process_step``'s loop over them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from curta_chain.artifact import Artifact
from curta_chain.artifact.layout import ROW_PREFIX
from curta_chain.inference.model import IntModel
from curta_chain.inference.tokenizer import Tokenizer
from curta_chain.onchain.run_account import (
    RUN_HEADER_SIZE,
    Region,
    RunAccount,
    RunState,
    batch_lanes,
)
from curta_chain.onchain.schedule import (
    STEP_BUDGET,
    TOKENIZE_PHASES,
    Phase,
    TokenizePhase,
    TokenPhase,
    lookup_probes,
)


@dataclass(frozen=True)
class Logged:
    """A token the program logged when it chose it: its index in the run, id and bytes."""

    position: int
    token: int
    piece: bytes


def _round8(value: int) -> int:
    return -(-value // 8) * 8


class Stop(Exception):
    """The step stops here: the phase's next slice does not fit what is left of its budget."""


@dataclass
class MirrorModel:
    """What every step of a run reads from its model.

    The integer model, the tokenizer and the artifact's matrix table (row lengths and
    sections, read from it as the program reads them).
    """

    artifact: Artifact
    model: IntModel
    tokenizer: Tokenizer
    token_lengths: list[int] = field(init=False)
    probes: int = field(init=False)

    def __post_init__(self) -> None:
        self.token_lengths = [len(t) for t in self.tokenizer.tokens]
        self.probes = lookup_probes(self.artifact.config.vocab_size)

    def section_of(self, matrix: int) -> int:
        """The section matrix ``matrix`` (its index in the matrix table) is stored in."""
        return self.artifact.matrices[matrix].section

    def padded(self, matrix: int) -> int:
        """The weight bytes of one of the matrix's rows, padding included.

        The artifact's row length less the row's header: what the cost of its rows counts.
        """
        return self.artifact.matrices[matrix].row_bytes - ROW_PREFIX


class Step:
    """One step in progress over the run account's bytes (changed in place).

    Args:
        model: the run's model.
        data: the run account's bytes before the step; the step writes into them.
        oracle: for a dry step, the run's tokens as the off-chain core chooses them: the
            step then cuts its slices (the schedule) without their arithmetic, which is
            all a step count needs (the tokenizer, cheap, runs in full).
    """

    def __init__(
        self, model: MirrorModel, data: bytearray, oracle: Callable[[Step], int] | None = None
    ):
        self.model = model
        self.oracle = oracle
        self.config = model.artifact.config
        self.data = data
        self.run = RunAccount.from_bytes(bytes(data[:RUN_HEADER_SIZE]))
        self.budget = STEP_BUDGET
        self.sections: list[int] = []
        """Matrix sections the step reads, in the order it reaches them."""
        self.logged: list[Logged] = []

    @property
    def dry(self) -> bool:
        """A dry step: the schedule only, the tokens from the oracle.

        Not while a batch of two is under way: its rows' cost depends on its activations
        (the plan of its lanes), so a dry step computes them then.
        """
        return self.oracle is not None and self.lanes == 1

    @property
    def lanes(self) -> int:
        """The positions the run's batch computes (``batch_lanes`` in inference.h)."""
        return batch_lanes(self.run.position, self.run.prompt_tokens)

    def lane_position(self, lane: int) -> int:
        """The position lane ``lane`` computes: lane 0 the batch's last."""
        return self.run.position + self.lanes - 1 - lane

    def lane(self, region: Region, length: int, lane: int) -> np.ndarray:
        """A writable view of lane ``lane``'s vector of ``length`` i64 in a vector region."""
        return self.i64(region, length, lane * _round8(length))

    def i64(self, region: Region, count: int, start: int = 0) -> np.ndarray:
        """A writable view of ``count`` i64 of a region from element ``start``."""
        offset = self.run.regions[region] + 8 * start
        return np.frombuffer(self.data, "<i8", count, offset)

    def u32(self, region: Region, count: int, start: int = 0) -> np.ndarray:
        """A writable view of ``count`` u32 of a region from element ``start``."""
        offset = self.run.regions[region] + 4 * start
        return np.frombuffer(self.data, "<u4", count, offset)

    def cache(self, region: Region, layer: int, position: int) -> np.ndarray:
        """The key (or value) row of a layer and position."""
        kv_dim = self.config.kv_dim
        rows = self.run.capacity - 1
        return self.i64(region, kv_dim, (layer * rows + position) * kv_dim)

    def spend(self, cost: int) -> None:
        """Spend ``cost`` from the budget, or stop the step."""
        if cost > self.budget:
            raise Stop
        self.budget -= cost

    def need(self, matrix: int) -> None:
        """The phase fits the budget and reads ``matrix``'s section: the step reads it.

        A step that is not passed a section it reads is refused whole by the program
        (MissingWeightAccount), so the step's sections are these, whatever is passed.
        """
        section = self.model.section_of(matrix)
        if section != 0 and section not in self.sections:
            self.sections.append(section)

    def next_phase(self) -> None:
        """The phase is done: on to the next.

        After a batch's last layer, on to the position after it while that is still the
        prompt's (the batch samples nothing); else to the final norm of its last position.
        """
        run = self.run
        run.cursor = 0
        ahead = Phase.of(run.phase + 1, self.config.n_layers)
        if ahead.token == TokenPhase.FINAL_NORM:
            last = self.lane_position(0)
            if last + 1 < run.prompt_tokens:
                run.position, run.phase = last + 1, 0
                return
            run.position = last
        run.phase += 1


def phase_name(header: RunAccount) -> str:
    """A readable name for the phase a run header is in, e.g. ``layer 2 attention heads``."""
    if header.state == RunState.TOKENIZING:
        return TOKENIZE_PHASES[TokenizePhase(min(header.phase, TokenizePhase.MERGE))][0]
    return Phase.of(header.phase, header.config.n_layers).title

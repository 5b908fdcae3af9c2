"""``process_step``'s loop (``programs/curta/src/step.c``): phases until the budget ends."""

from __future__ import annotations

from collections.abc import Callable

from curta_chain.errors import StepPlanError
from curta_chain.onchain.mirror.forward import forward_phase
from curta_chain.onchain.mirror.machine import MirrorModel, Step, Stop, phase_name
from curta_chain.onchain.mirror.tokenizer import tokenize_phase
from curta_chain.onchain.run_account import RUN_HEADER_SIZE, RunState


def take_step(
    model: MirrorModel, data: bytearray, oracle: Callable[[Step], int] | None = None
) -> Step:
    """Run one step over ``data`` (changed in place), phase after phase, as the program does.

    With an ``oracle`` the step is dry (``Step``): the same slices, no arithmetic.

    Raises:
        StepPlanError: not even the smallest slice of the run's phase fits a step (the
            program refuses such a step with NothingFits), or the run has finished.
    """
    s = Step(model, data, oracle)
    if _finished(s):
        raise StepPlanError(f"the run finished at step {s.run.steps}: no step is left")
    progress = False
    while not _finished(s):
        try:
            tokenizing = s.run.state == RunState.TOKENIZING
            done = tokenize_phase(s) if tokenizing else forward_phase(s)
        except Stop:
            done = False
        if not done:
            break
        progress = True
    if not progress:
        raise StepPlanError(
            f"step {s.run.steps} ({phase_name(s.run)}) cannot advance the run: nothing fits "
            "its budget (the program refuses it: NothingFits)"
        )
    s.run.steps += 1
    s.data[:RUN_HEADER_SIZE] = s.run.to_bytes()
    return s


def _finished(s: Step) -> bool:
    # A function, not an inline test: each phase may finish the run (mypy would otherwise
    # narrow the state for the whole loop from the check before it).
    return s.run.state == RunState.FINISHED

"""``RunMirror``: the run account's expected bytes after every step, and their comparison.

A step's slice is a function of the run's state alone (its budget, its phases, the
section limit: ``curta_chain.onchain.schedule``), so the run account after k landed steps
is a function of the run's arguments and k, whoever cranks and in whatever order. The
mirror therefore plans ahead on copies of its state: ``steps_to_finish`` counts every
step left, ``plan_ahead`` gives the next steps (each with the sections it reads, for a
client that passes a window of weight accounts), and ``observe`` checks the chain's
account at whatever step count it holds and takes it as the expected state.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np

from curta_chain.artifact import Artifact
from curta_chain.errors import AccountError, MirrorMismatchError, StepPlanError
from curta_chain.inference.model import IntModel
from curta_chain.inference.run import RunPlan, generate
from curta_chain.inference.sampling import SamplingSettings
from curta_chain.inference.tokenizer import Tokenizer
from curta_chain.onchain.mirror.machine import Logged, MirrorModel, Step, phase_name
from curta_chain.onchain.mirror.step import take_step
from curta_chain.onchain.run_account import (
    RUN_HEADER_SIZE,
    PromptKind,
    Region,
    RunAccount,
    RunState,
)
from curta_chain.onchain.schedule import STEP_BUDGET


@dataclass
class StepPlan:
    """What a step does: the sections it reads and the account it leaves."""

    sections: tuple[int, ...]
    """Matrix sections, in the order the step reaches them (section zero is always passed
    first and not listed)."""
    data: bytes
    """The run account after the step."""
    estimated: int
    """Estimated compute units the step spends (the cost model)."""
    steps: int
    """The run's step count after the step."""
    logged: list[Logged] = field(default_factory=list)
    """The tokens the step chooses (the program logs each)."""


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
        self.model = MirrorModel(
            artifact,
            model or IntModel.from_artifact(artifact),
            tokenizer or Tokenizer.from_artifact(artifact),
        )
        self._data = bytes(data)
        self._ahead: list[StepPlan] = []
        """Planned steps right after ``data``, in order (kept until the mirror passes them)."""
        self.units = 0
        """Estimated compute units (the cost model's) of the steps ``observe`` passed."""

    @property
    def data(self) -> bytes:
        """The expected run account now."""
        return self._data

    @property
    def header(self) -> RunAccount:
        """The expected header now (a copy)."""
        return RunAccount.from_bytes(self.data[:RUN_HEADER_SIZE])

    def plan(self, available: Collection[int] | None = None) -> StepPlan:
        """Compute the next step: the sections it reads, the bytes it leaves.

        Args:
            available: the matrix sections the step will be passed; the plan checks that
                they hold every section the step reads (by default it lists them).

        Raises:
            StepPlanError: the step needs a section not in ``available`` (the program
                refuses such a step whole: MissingWeightAccount), or cannot advance.
        """
        plan = self.plan_ahead(1)
        if not plan:
            raise StepPlanError(f"the run finished at step {self.header.steps}: no step is left")
        missing = [n for n in plan[0].sections if available is not None and n not in available]
        if missing:
            raise StepPlanError(
                f"step {plan[0].steps - 1} reads section {missing[0]}, which is not passed "
                f"(it reads {', '.join(map(str, plan[0].sections))}): the program refuses it "
                "with MissingWeightAccount"
            )
        return plan[0]

    def advance(self, plan: StepPlan) -> None:
        """Take ``plan``'s bytes as the expected state (after the chain agreed)."""
        if self._ahead and self._ahead[0] is plan:
            self._ahead.pop(0)
        else:
            self._ahead.clear()
        self._data = plan.data

    def plan_ahead(self, count: int) -> list[StepPlan]:
        """The next ``count`` steps from the expected state, each planned on a copy.

        Fewer when the run finishes first. The plans are kept, so ``plan``, ``observe`` and
        a later ``plan_ahead`` reuse them; each holds a whole run account.

        Raises:
            StepPlanError: a step cannot advance the run (the program would refuse it).
        """
        data = self._ahead[-1].data if self._ahead else self.data
        state = _state(data)
        while len(self._ahead) < count and state != RunState.FINISHED:
            step = take_step(self.model, bytearray(data))
            data, state = bytes(step.data), step.run.state
            spent = STEP_BUDGET - step.budget
            self._ahead.append(
                StepPlan(tuple(step.sections), data, spent, step.run.steps, step.logged)
            )
        return self._ahead[:count]

    def steps_to_finish(self) -> int:
        """How many steps the run takes from the expected state until it finishes.

        Cheap: the slices of a step depend on the arithmetic only through the tokens the
        run chooses, so the off-chain core (``curta_chain.inference.generate``, whole
        positions at once) gives the run's tokens and dry steps over one copy of the
        account cut the slices without their arithmetic. The count is the chain's when
        the program computes what the off-chain core does, which ``observe`` checks.

        Raises:
            StepPlanError: a step cannot advance the run (the program would refuse it).
        """
        return self._dry_run()[0]

    def token_steps(self) -> list[int]:
        """The run's step count right after each token it has still to choose, in order.

        Dry steps, as ``steps_to_finish`` takes: where each token lands in the steps (a
        benchmark counts the slots a token takes from it).

        Raises:
            StepPlanError: a step cannot advance the run (the program would refuse it).
        """
        return self._dry_run()[1]

    def _dry_run(self) -> tuple[int, list[int]]:
        data = bytearray(self.data)
        oracle = _Tokens(self.model)
        run = self.header
        count, chosen, tokens = 0, run.generated, []
        while run.state != RunState.FINISHED:
            run = take_step(self.model, data, oracle).run
            count += 1
            now = 0 if run.state == RunState.TOKENIZING else run.generated
            tokens += [self.header.steps + count] * (now - chosen)
            chosen = now
        return count, tokens

    def state_after(self, steps: int) -> bytes:
        """The expected run account after ``steps`` steps in all (the header's count).

        Raises:
            StepPlanError: ``steps`` is behind the expected state (no earlier state is kept)
                or past the run's last step.
        """
        now = self.header.steps
        if steps < now:
            raise StepPlanError(
                f"step {steps} is behind the mirror, which is at step {now} and keeps no "
                "earlier state"
            )
        if steps == now:
            return self.data
        ahead = self.plan_ahead(steps - now)
        if len(ahead) < steps - now:
            raise StepPlanError(f"the run finishes at step {now + len(ahead)}, before {steps}")
        return ahead[-1].data

    def observe(self, chain: bytes) -> list[Logged]:
        """Check the chain's run account at whatever step count it holds; go on from there.

        The chain may be any number of steps ahead of the mirror (steps in flight that
        landed). Its account must equal the mirror's state after that many steps; then
        that state is the expected one.

        Args:
            chain: the run account's data as the chain holds it.

        Returns:
            The tokens chosen by the steps the mirror passed, in order.

        Raises:
            MirrorMismatchError: the chain's account differs from the mirror's after as many
                steps (position, phase, region and bytes named), or does not decode.
            StepPlanError: the chain's step count is behind the mirror's, or past the run's
                last step.
        """
        try:
            steps = RunAccount.from_bytes(chain).steps
        except AccountError as exc:  # an undecodable header is a mismatch, named as one
            raise MirrorMismatchError(f"the chain's run account: {exc}") from exc
        now = self.header.steps
        expected = self.state_after(steps)
        passed = self._ahead[: steps - now]
        before = RunAccount.from_bytes(passed[-2].data if len(passed) > 1 else self.data)
        _compare(chain, expected, before)
        del self._ahead[: steps - now]
        self._data = expected
        self.units += sum(plan.estimated for plan in passed)
        return [token for plan in passed for token in plan.logged]

    def compare(self, chain: bytes, before: RunAccount) -> None:
        """Raise unless ``chain`` equals the expected bytes; name the first difference.

        Args:
            chain: the run account's data as the chain holds it after a step.
            before: the header before that step (to name the position and phase).

        Raises:
            MirrorMismatchError: the chain differs: position, phase, region and bytes.
        """
        _compare(chain, self.data, before)


class _Tokens:
    """The run's tokens as the off-chain core chooses them, generated when first asked."""

    def __init__(self, model: MirrorModel):
        self.model = model
        self.tokens: list[int] | None = None

    def __call__(self, s: Step) -> int:
        """The token the run chooses at the step's position (its index: position + 1)."""
        if self.tokens is None:
            run = s.run
            prompt = tuple(s.u32(Region.TOKENS, run.prompt_tokens).tolist())
            plan = RunPlan(prompt, run.capacity - run.prompt_tokens)
            settings = SamplingSettings(run.temperature, run.top_p, run.seed)
            self.tokens = [*prompt, *generate(self.model.model, plan, settings)]
        return self.tokens[s.run.position + 1]


def _state(data: bytes | bytearray) -> RunState:
    return RunAccount.from_bytes(bytes(data[:RUN_HEADER_SIZE])).state


def _compare(chain: bytes, expected: bytes, before: RunAccount) -> None:
    if chain == expected:
        return
    if len(chain) != len(expected):
        raise MirrorMismatchError(
            f"the run account is {len(chain):,} bytes on chain, {len(expected):,} in the mirror"
        )
    a = np.frombuffer(chain, np.uint8)
    b = np.frombuffer(expected, np.uint8)
    diff = np.flatnonzero(a != b)
    first, last = int(diff[0]), int(diff[-1])
    where = describe_offset(before, first)
    raise MirrorMismatchError(
        f"after step {before.steps} (position {before.position}, {phase_name(before)}) "
        f"the run account differs at bytes {first}..{last + 1} ({where}): chain "
        f"{bytes(a[first : first + 8]).hex()}, mirror {bytes(b[first : first + 8]).hex()}"
    )


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

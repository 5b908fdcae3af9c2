"""A run: encode the prompt, fill the cache with it, then sample token after token."""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from curta_chain.artifact import ModelConfig
from curta_chain.constants import DEFAULT_STEPS
from curta_chain.errors import PromptError
from curta_chain.inference.forward import KVCache, forward
from curta_chain.inference.model import IntModel
from curta_chain.inference.sampling import SamplingSettings, Xorshift64Star, sample
from curta_chain.inference.tokenizer import STOP_TOKENS, Tokenizer
from curta_chain.reporting import counted


@dataclass(frozen=True)
class RunPlan:
    """A prompt's token ids and the most tokens to generate after them."""

    prompt_ids: tuple[int, ...]
    max_tokens: int


class PlanRunner(Protocol):
    """A forward pass that runs a whole plan itself (``native.NativeModel``, the program's C)."""

    @property
    def config(self) -> ModelConfig:
        """The model's configuration."""
        ...

    def generate(self, plan: RunPlan, settings: SamplingSettings) -> Iterator[int]:
        """Yield the plan's generated token ids one at a time."""
        ...


def plan_run(
    model: IntModel | PlanRunner,
    tokenizer: Tokenizer,
    prompt: str,
    max_tokens: int | None,
    *,
    steps: int | None = None,
) -> RunPlan:
    """Encode ``prompt`` and check that it and ``max_tokens`` new tokens fit the context.

    The prompt's tokens (the opening token included) and the new tokens must together
    fit the model's context. An empty prompt is the opening token alone, as llama2.c's
    ``run.c`` runs with no ``-i``. With ``max_tokens`` None, generate ``DEFAULT_STEPS`` or
    as many as fit. ``steps`` (``-n``), in place of ``max_tokens``, counts as ``run.c``'s
    does (``new_tokens_for_steps``).

    Raises:
        PromptError: a non-UTF-8 prompt, a prompt longer than the context, a
            token count below 1, or more tokens than the context has room for.
    """
    ids = tokenizer.encode(prompt)
    context = model.config.seq_len
    room = context - len(ids)
    if room < 0:
        raise PromptError(
            f"the prompt is {counted(len(ids), 'token')}, longer than the model's context of "
            f"{context}"
        )
    if steps is not None:
        max_tokens = new_tokens_for_steps(steps, len(ids), context)
    elif max_tokens is None:
        max_tokens = min(DEFAULT_STEPS, room)
        if max_tokens == 0:
            raise PromptError(
                f"the prompt's {counted(len(ids), 'token')} fill the model's context of {context}: "
                "no room to generate"
            )
    if max_tokens < 1:
        raise PromptError(f"--steps {max_tokens}: expected at least 1")
    if max_tokens > room:
        raise PromptError(
            f"--steps {max_tokens}: the prompt's {counted(len(ids), 'token')} and "
            f"{max_tokens} new ones "
            f"are past the model's context of {context} (at most {room} new tokens)"
        )
    return RunPlan(tuple(ids), max_tokens)


def new_tokens_for_steps(steps: int, prompt_tokens: int, context: int) -> int:
    """The new tokens of llama2.c's ``run.c -n steps`` after ``prompt_tokens`` (with BOS).

    ``run.c`` runs ``steps`` positions, the prompt's included: each step forwards one
    token and yields the next, the prompt's own until it is used up, then a sampled one;
    0 (or a negative count) or more than the context means the whole context. So
    ``steps - prompt_tokens + 1`` tokens are new. A run here keeps every token, the
    opening one included, within the context (the on-chain run account holds them all),
    so a run to the context's end makes one token fewer than ``run.c``'s.

    Raises:
        PromptError: the prompt takes every step: nothing would be generated.
    """
    if steps <= 0 or steps > context:
        steps = context
    new = min(steps - prompt_tokens + 1, context - prompt_tokens)
    if new < 1:
        raise PromptError(
            f"-n {steps}: the prompt's {counted(prompt_tokens, 'token')} (the opening one "
            "included) take "
            f"every step; nothing is left to generate (-n 0 runs to the context's end)"
        )
    return new


def generate(
    model: IntModel | PlanRunner, plan: RunPlan, settings: SamplingSettings
) -> Iterator[int]:
    """Yield the generated token ids one at a time; stop after token 1 or 2, or the steps.

    Each new token is sampled from the last position's logits and then run at the next
    position (the last one is not run). A ``PlanRunner`` (the program's C) runs it; an
    ``IntModel`` runs numpy, the prompt as one batch of positions: the same integers.
    """
    if isinstance(model, IntModel):
        return _generate(model, plan, settings)
    return model.generate(plan, settings)


def _generate(model: IntModel, plan: RunPlan, settings: SamplingSettings) -> Iterator[int]:
    cache = KVCache.empty(model)
    rng = Xorshift64Star(settings.seed)
    logits = forward(model, cache, plan.prompt_ids)
    for step in range(plan.max_tokens):
        token = sample(logits[-1], settings, model.exp, rng)
        yield token
        if token in STOP_TOKENS or step == plan.max_tokens - 1:
            return
        logits = forward(model, cache, [token])

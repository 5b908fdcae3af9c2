"""A run: encode the prompt, fill the cache with it, then sample token after token."""

from collections.abc import Iterator
from dataclasses import dataclass

from curta_chain.constants import DEFAULT_STEPS
from curta_chain.errors import PromptError
from curta_chain.inference.forward import KVCache, forward
from curta_chain.inference.model import IntModel
from curta_chain.inference.sampling import SamplingSettings, Xorshift64Star, sample
from curta_chain.inference.tokenizer import STOP_TOKENS, Tokenizer


@dataclass(frozen=True)
class RunPlan:
    """A prompt's token ids and the most tokens to generate after them."""

    prompt_ids: tuple[int, ...]
    max_tokens: int


def plan_run(model: IntModel, tokenizer: Tokenizer, prompt: str, max_tokens: int | None) -> RunPlan:
    """Encode ``prompt`` and check that it and ``max_tokens`` new tokens fit the context.

    The prompt's tokens (the opening token included) and the new tokens must together
    fit the model's context. An empty prompt is the opening token alone, as llama2.c's
    ``run.c`` runs with no ``-i``. With ``max_tokens`` None, generate ``DEFAULT_STEPS`` or
    as many as fit.

    Raises:
        PromptError: a non-UTF-8 prompt, a prompt longer than the context, a
            token count below 1, or more tokens than the context has room for.
    """
    ids = tokenizer.encode(prompt)
    context = model.config.seq_len
    room = context - len(ids)
    if room < 0:
        raise PromptError(
            f"the prompt is {len(ids)} tokens, longer than the model's context of {context}"
        )
    if max_tokens is None:
        max_tokens = min(DEFAULT_STEPS, room)
        if max_tokens == 0:
            raise PromptError(
                f"the prompt's {len(ids)} tokens fill the model's context of {context}: "
                "no room to generate"
            )
    if max_tokens < 1:
        raise PromptError(f"--steps {max_tokens}: expected at least 1")
    if max_tokens > room:
        raise PromptError(
            f"--steps {max_tokens}: the prompt's {len(ids)} tokens and {max_tokens} new ones "
            f"are past the model's context of {context} (at most {room} new tokens)"
        )
    return RunPlan(tuple(ids), max_tokens)


def generate(model: IntModel, plan: RunPlan, settings: SamplingSettings) -> Iterator[int]:
    """Yield the generated token ids one at a time; stop after token 1 or 2, or the steps.

    The prompt runs as one batch of positions; each new token is sampled from the last
    position's logits and then run at the next position (the last one is not run).
    """
    cache = KVCache.empty(model)
    rng = Xorshift64Star(settings.seed)
    logits = forward(model, cache, plan.prompt_ids)
    for step in range(plan.max_tokens):
        token = sample(logits[-1], settings, model.exp, rng)
        yield token
        if token in STOP_TOKENS or step == plan.max_tokens - 1:
            return
        logits = forward(model, cache, [token])

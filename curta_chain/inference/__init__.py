"""Run a CURTAW01 model in integers: tokenizer, forward pass and sampling, no floats.

The arithmetic is ``docs/inference.md``, bit for bit: the on-chain program computes the
same integers. A typical run::

    artifact = read_artifact("stories260K.curta")
    model, tokenizer = IntModel.from_artifact(artifact), Tokenizer.from_artifact(artifact)
    plan = plan_run(model, tokenizer, "Once upon a time", max_tokens=64)
    for token in generate(model, plan, SamplingSettings(temperature=0)):
        ...

``teacher_forcing_logits(model, ids)`` returns the Q16 logits at every position of a
token sequence. ``FloatReference`` is llama2.c's float pass, the baseline the
benchmarks and tests compare with; nothing else here uses a float.
"""

from curta_chain.inference.forward import KVCache, forward, teacher_forcing_logits
from curta_chain.inference.model import IntModel
from curta_chain.inference.reference import FloatReference, dequantize
from curta_chain.inference.run import DEFAULT_STEPS, RunPlan, generate, plan_run
from curta_chain.inference.sampling import SamplingSettings, Xorshift64Star, q16, sample
from curta_chain.inference.tokenizer import BOS, EOS, Tokenizer

__all__ = [
    "BOS",
    "DEFAULT_STEPS",
    "EOS",
    "FloatReference",
    "IntModel",
    "KVCache",
    "RunPlan",
    "SamplingSettings",
    "Tokenizer",
    "Xorshift64Star",
    "dequantize",
    "forward",
    "generate",
    "plan_run",
    "q16",
    "sample",
    "teacher_forcing_logits",
]

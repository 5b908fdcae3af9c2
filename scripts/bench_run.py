"""Benchmark: the integer pass's speed against float numpy, and its top-1 agreement.

    .venv/bin/python scripts/bench_run.py [--tokens N] [--repeat R] [--prompts P]
        [--model demo|stories260K] [--agreement-only] [--record]

Speed: a synthetic checkpoint of stories15M's shapes (dim 288, hidden 768, 6 layers,
vocabulary 32,000, context 256; seed 15, as bench_convert.py) is converted, then both
passes generate greedily, one token at a time with their key/value caches: the integer
pass (``curta_chain.inference``) on the artifact, and llama2.c's float32 pass in numpy
(``FloatReference``) on the checkpoint's own floats, the baseline. They alternate R
times on one core (BLAS limited to one thread); the best run of each is printed, with
the ratio.

Agreement: ``--model demo`` (the default) is the demo model trained here
(``curta_chain/demo``, docs/demo-model.md) with its own tokenizer; ``--model stories260K``
is llama2.c's, with its 512-token stand-in tokenizer (the first 512 entries of the Llama 2
tokenizer: its text is not English to this model). Each of P English
prompts is encoded, then continued by llama2.c's float pass on the checkpoint's floats
to 128 positions, once greedily and once sampled (temperature 1.0, top-p 0.9, llama2.c's
defaults, seeded). On every position of those sequences the integer pass's top-1 token
is compared with the float pass on the same int8 weights dequantized (the arithmetic's
own error) and on the checkpoint's floats (adding int8 quantization's); the float pass
on dequantized weights against the checkpoint's floats shows quantization's share.
With ``--model demo``, the share of the words of a greedy 200-token continuation of "Once
upon a time" that are in the corpus generator's vocabulary (docs/demo-model.md).

``--record`` appends what ran to docs/numbers/ (scripts/numbers_page.py renders it): the
speed to inference.jsonl, stories260K's agreement to agreement.jsonl, the demo model's
to demo_model.jsonl.
"""

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"  # one core, before numpy loads BLAS

import argparse  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from cut_tokenizer import cut  # noqa: E402  (scripts/, on the path as the script's folder)
from demo_corpus import vocabulary  # noqa: E402

from curta_chain.artifact.convert import convert_llama2c_bytes  # noqa: E402
from curta_chain.artifact.llama2c import parse_checkpoint  # noqa: E402
from curta_chain.artifact.synthetic import (  # noqa: E402
    STORIES15M,
    llama2c_checkpoint_bytes,
    llama2c_tokenizer_bytes,
)
from curta_chain.demo import DEMO_MODEL, DEMO_TOKENIZER  # noqa: E402
from curta_chain.inference import (  # noqa: E402
    FloatReference,
    IntModel,
    KVCache,
    SamplingSettings,
    Tokenizer,
    Xorshift64Star,
    dequantize,
    forward,
    generate,
    plan_run,
    sample,
    teacher_forcing_logits,
)

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "llama2c"
PROMPTS = [
    "Once upon a time",
    "The little dog ran",
    "Lily wanted to play with her friend",
    "One day, a big bird",
    "Tom was sad because",
    "The sun was shining and",
    "She looked at the box",
    "They went to the park",
]
POSITIONS = 128


def speed(tokens: int, repeat: int) -> tuple[float, float]:
    """Print and return the best tokens a second of the float and the integer pass."""
    checkpoint = llama2c_checkpoint_bytes(STORIES15M, seed=15)
    tokenizer = llama2c_tokenizer_bytes(STORIES15M.vocab_size, seed=15)
    artifact = convert_llama2c_bytes(checkpoint, tokenizer, "15m.bin", "tok.bin")
    start = time.perf_counter()
    model = IntModel.from_artifact(artifact)
    load_s = time.perf_counter() - start
    floats = FloatReference(parse_checkpoint(checkpoint, "15m.bin"))
    greedy = SamplingSettings(temperature=0)

    def integer_run() -> tuple[float, list[int]]:
        cache, token, out = KVCache.empty(model), 1, []
        rng = Xorshift64Star(0)
        begin = time.perf_counter()
        for _ in range(tokens):
            token = sample(forward(model, cache, [token])[0], greedy, model.exp, rng)
            out.append(token)
        return time.perf_counter() - begin, out

    def float_run() -> tuple[float, list[int]]:
        cache, token, out = floats.empty_cache(), 1, []
        begin = time.perf_counter()
        for _ in range(tokens):
            token = int(np.argmax(floats.forward(cache, [token])[0]))
            out.append(token)
        return time.perf_counter() - begin, out

    integer_s = float_s = float("inf")
    for _ in range(repeat):
        seconds, int_tokens = integer_run()
        integer_s = min(integer_s, seconds)
        seconds, float_tokens = float_run()
        float_s = min(float_s, seconds)
    same = sum(a == b for a, b in zip(int_tokens, float_tokens, strict=True))
    int_rate, float_rate = tokens / integer_s, tokens / float_s
    print(
        f"speed: stories15M shapes (synthetic, seed 15), {tokens} greedy tokens, best of {repeat}"
    )
    print(f"  model load      {load_s:.2f} s (artifact to IntModel)")
    print(f"  float numpy     {float_rate:7.1f} tokens/s  (llama2.c's pass in float32, baseline)")
    print(f"  integer         {int_rate:7.1f} tokens/s  (target >= 50)")
    print(f"  ratio           {int_rate / float_rate:7.2f}  (target >= 0.5)")
    print(f"  same greedy tokens as float: {same}/{tokens} (random weights: near-ties abound)")
    return float_rate, int_rate


def continue_float(
    floats: FloatReference, ids: list[int], rng: np.random.Generator | None
) -> list[int]:
    """Extend ``ids`` to POSITIONS with the float pass: greedy, or llama2.c's T=1, top-p 0.9."""
    cache = floats.empty_cache()
    logits = floats.forward(cache, ids)[0]
    ids = list(ids)
    while len(ids) < POSITIONS:
        if rng is None:
            token = int(np.argmax(logits))
        else:
            p = np.exp(logits - logits.max())
            p /= p.sum()
            order = np.argsort(-p, kind="stable")
            kept = order[: int(np.argmax(np.cumsum(p[order]) > 0.9)) + 1]
            token = int(rng.choice(kept, p=p[kept] / p[kept].sum()))
        ids.append(token)
        logits = floats.forward(cache, [token])[0]
    return ids


def checkpoint_files(name: str) -> tuple[bytes, bytes]:
    """Return the llama2.c checkpoint and tokenizer.bin of ``demo`` or ``stories260K``."""
    if name == "demo":
        return DEMO_MODEL.read_bytes(), DEMO_TOKENIZER.read_bytes()
    return (DATA / "stories260K.bin").read_bytes(), cut((DATA / "tokenizer.bin").read_bytes(), 512)


def agreement_counts(
    checkpoint: bytes, tokenizer_file: bytes, prompts: list[str], seeded: bool
) -> tuple[np.ndarray, int]:
    """Count top-1 agreements over ``prompts`` continued to POSITIONS by the float pass.

    Returns (int/dequantized, int/float, dequantized/float) counts, and the positions.
    """
    artifact = convert_llama2c_bytes(checkpoint, tokenizer_file, "model.bin", "tokenizer.bin")
    model, tokenizer = IntModel.from_artifact(artifact), Tokenizer.from_artifact(artifact)
    original = FloatReference(parse_checkpoint(checkpoint, "model.bin"))
    deq = FloatReference(dequantize(artifact))
    counts = np.zeros(3, dtype=np.int64)
    total = 0
    for index, prompt in enumerate(prompts):
        rng = np.random.default_rng(index) if seeded else None
        ids = continue_float(original, tokenizer.encode(prompt), rng)
        ours = teacher_forcing_logits(model, ids).argmax(axis=1)
        theirs = deq.teacher_forcing_logits(ids).argmax(axis=1)
        truth = original.teacher_forcing_logits(ids).argmax(axis=1)
        counts += [(ours == theirs).sum(), (ours == truth).sum(), (theirs == truth).sum()]
        total += len(ids)
    return counts, total


def agreement(prompts: int, name: str) -> list[tuple[str, int, np.ndarray]]:
    """Print and return, greedy and sampled: the positions and the three agreement shares."""
    checkpoint, tokenizer_file = checkpoint_files(name)
    rows = []
    print(f"agreement: {name}, {prompts} prompts continued to {POSITIONS} positions each")
    print(
        f"  {'continuation':<26} {'positions':>9} {'int/deq':>8} {'int/float':>9} {'deq/float':>9}"
    )
    for label, seeded in (("greedy", False), ("sampled T=1.0 top-p 0.9", True)):
        counts, total = agreement_counts(checkpoint, tokenizer_file, PROMPTS[:prompts], seeded)
        share = counts / total
        print(f"  {label:<26} {total:>9} {share[0]:>8.1%} {share[1]:>9.1%} {share[2]:>9.1%}")
        rows.append((label, total, share))
    print("  targets: int/deq >= 95%, int/float >= 85%")
    return rows


WORD = re.compile(r"[A-Za-z]+")


def dictionary_words(tokens: int = 200) -> tuple[int, int]:
    """Of a greedy ``tokens``-token continuation of "Once upon a time" by the demo model, the
    words in the corpus generator's vocabulary, and all its words."""
    artifact = convert_llama2c_bytes(
        DEMO_MODEL.read_bytes(), DEMO_TOKENIZER.read_bytes(), "model.bin", "tokenizer.bin"
    )
    model, tokenizer = IntModel.from_artifact(artifact), Tokenizer.from_artifact(artifact)
    plan = plan_run(model, tokenizer, "Once upon a time", tokens)
    ids = list(generate(model, plan, SamplingSettings(temperature=0)))
    text = tokenizer.decode(ids, plan.prompt_ids[-1]).decode("utf-8", errors="replace")
    words = [w.lower() for w in WORD.findall(text)]
    known = sum(w in vocabulary() for w in words)
    print(f"dictionary: {known} of {len(words)} words of a greedy {tokens}-token continuation")
    return known, len(words)


def record_results(
    args: argparse.Namespace,
    rates: tuple[float, float] | None,
    agreed: list[tuple[str, int, np.ndarray]],
) -> None:
    """Append what ran to docs/numbers/ (inference, agreement or demo_model)."""
    from numbers_page import record

    command = " ".join([".venv/bin/python scripts/bench_run.py", *sys.argv[1:]])
    if rates is not None:
        float_rate, int_rate = rates
        record(
            "inference",
            "Inference speed",
            command,
            ["pass", "tokens/s"],
            [
                ["float numpy (baseline)", f"{float_rate:.1f}"],
                ["integer", f"**{int_rate:.1f}** (target ≥ 50, {met(int_rate >= 50)})"],
                [
                    "ratio",
                    f"**{int_rate / float_rate:.2f}** "
                    f"(target ≥ 0.5, {met(int_rate / float_rate >= 0.5)})",
                ],
            ],
            f"{args.tokens} greedy tokens one at a time on one core, a stories15M-shaped "
            "checkpoint (synthetic weights), against llama2.c's float32 pass in numpy on the "
            f"checkpoint's own floats (best of {args.repeat}, the two alternating: the shared "
            "machine's load falls on both).",
        )
    positions = f"{agreed[0][1] // args.prompts:,}"
    labels = {"greedy": "greedy", "sampled T=1.0 top-p 0.9": "sampled, T = 1.0, top-p 0.9"}
    if args.model == "stories260K":
        record(
            "agreement",
            "Top-1 agreement on stories260K",
            command,
            ["continuation", "int/deq (target ≥ 95%)", "int/float (target ≥ 85%)", "deq/float"],
            [[labels[label], *(f"{x:.1%}" for x in share)] for label, _, share in agreed],
            f"Teacher forcing: {args.prompts} English prompts (stand-in tokenizer) continued by "
            f"llama2.c's float pass to {positions} positions each, {agreed[0][1]:,} positions "
            'per row. "deq" is the float pass on the artifact\'s int8 weights dequantized, so '
            "int/deq is the integer arithmetic's own error and deq/float is int8 "
            "quantization's.",
        )
        return
    known, words = dictionary_words()
    record(
        "demo_model",
        "The demo model's agreement",
        command,
        ["continuation", "top-1 agreement with llama2.c's float pass (target ≥ 95%)"],
        [[label.split()[0], f"{share[1]:.1%}"] for label, _, share in agreed],
        f"Teacher forcing, {agreed[0][1]:,} positions each ({args.prompts} prompts continued by "
        f"llama2.c's float pass to {positions} positions).",
        f"{known / words:.0%} ({known} of {words}) of the words of a greedy 200-token "
        'continuation of "Once upon a time" are in the corpus generator\'s vocabulary.',
    )


def met(ok: bool) -> str:
    return "met" if ok else "not met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=len(PROMPTS))
    parser.add_argument("--model", choices=("demo", "stories260K"), default="demo")
    parser.add_argument("--agreement-only", action="store_true", help="skip the speed runs")
    parser.add_argument("--record", action="store_true", help="append the results to docs/numbers/")
    args = parser.parse_args()
    rates = None if args.agreement_only else speed(args.tokens, args.repeat)
    agreed = agreement(args.prompts, args.model)
    if args.record:
        record_results(args, rates, agreed)


if __name__ == "__main__":
    main()

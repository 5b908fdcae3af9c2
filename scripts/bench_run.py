"""Benchmark: the integer pass's speed against float numpy and llama2.c, and its agreement.

    .venv/bin/python scripts/bench_run.py [--tokens N] [--repeat R] [--prompts P]
        [--model demo|stories260K] [--agreement-only] [--record]
    .venv/bin/python scripts/bench_run.py --llama2c PATH [--rounds 3] [-n 256] [--record]

Speed: a synthetic checkpoint of stories15M's shapes (dim 288, hidden 768, 6 layers,
vocabulary 32,000, context 256; seed 15, as bench_convert.py) is converted, then the
passes generate greedily, one token at a time with their key/value caches: the integer
pass in numpy (``IntModel``) and in the program's C (``NativeModel``) on the artifact, and
llama2.c's float32 pass in numpy (``FloatReference``) on the checkpoint's own floats, the
baseline. They alternate R times on one core (BLAS limited to one thread); the best run
of each is printed, with the ratios.

Against llama2.c (``--llama2c``, a path to its run.c or to a llama2.c checkout): run.c is
built twice here, with -O3 (its Makefile's ``make run``) and with -Ofast -march=native
(``make runfast`` with the README's -march=native), and the same stories15M-shaped
checkpoint is written as llama2.c's files and as an artifact. Then whole processes, as a
user types them: ``curta-chain run ARTIFACT`` and each run.c build on the checkpoint, the
same -n, -t, -p and -s, in turn, for ``--rounds`` rounds after one unmeasured round (page
cache, the native build). Each prints its tokens a second, which run.c and ``run`` count
alike (every token after the first, over the time since the first); the table gives the
median of each, the median wall time of its whole process, and both as ratios to run.c
-Ofast -march=native (above 1: curta-chain is faster).

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
to demo_model.jsonl, the side-by-side with llama2.c to llama2c.jsonl.
"""

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"  # one core, before numpy loads BLAS

import argparse  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from cut_tokenizer import cut  # noqa: E402  (scripts/, on the path as the script's folder)
from demo_corpus import vocabulary  # noqa: E402

from curta_chain.artifact import write_artifact  # noqa: E402
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
from curta_chain.inference.host_build import library  # noqa: E402
from curta_chain.inference.native import NativeModel  # noqa: E402
from curta_chain.inference.run import RunPlan  # noqa: E402

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


def speed(tokens: int, repeat: int) -> tuple[float, float, float]:
    """Print and return the best tokens a second of the float pass, the integer pass in
    numpy and the integer pass in the program's C."""
    checkpoint = llama2c_checkpoint_bytes(STORIES15M, seed=15)
    tokenizer = llama2c_tokenizer_bytes(STORIES15M.vocab_size, seed=15)
    artifact = convert_llama2c_bytes(checkpoint, tokenizer, "15m.bin", "tok.bin")
    start = time.perf_counter()
    model = IntModel.from_artifact(artifact)
    load_s = time.perf_counter() - start
    native = NativeModel.from_artifact(artifact, library())
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

    def native_run() -> tuple[float, list[int]]:
        begin = time.perf_counter()
        out = list(generate(native, RunPlan((1,), tokens), greedy))
        return time.perf_counter() - begin, out

    def float_run() -> tuple[float, list[int]]:
        cache, token, out = floats.empty_cache(), 1, []
        begin = time.perf_counter()
        for _ in range(tokens):
            token = int(np.argmax(floats.forward(cache, [token])[0]))
            out.append(token)
        return time.perf_counter() - begin, out

    integer_s = native_s = float_s = float("inf")
    for _ in range(repeat):
        seconds, int_tokens = integer_run()
        integer_s = min(integer_s, seconds)
        seconds, native_tokens = native_run()
        native_s = min(native_s, seconds)
        seconds, float_tokens = float_run()
        float_s = min(float_s, seconds)
    assert native_tokens == int_tokens, "the program's C and numpy disagree"
    same = sum(a == b for a, b in zip(int_tokens, float_tokens, strict=True))
    int_rate, native_rate, float_rate = tokens / integer_s, tokens / native_s, tokens / float_s
    print(
        f"speed: stories15M shapes (synthetic, seed 15), {tokens} greedy tokens, best of {repeat}"
    )
    print(f"  model load      {load_s:.2f} s (artifact to IntModel)")
    print(f"  float numpy     {float_rate:7.1f} tokens/s  (llama2.c's pass in float32, baseline)")
    print(f"  integer numpy   {int_rate:7.1f} tokens/s  (target >= 50)")
    print(f"  ratio           {int_rate / float_rate:7.2f}  (target >= 0.5)")
    print(f"  integer C       {native_rate:7.1f} tokens/s  (the same tokens as numpy's)")
    print(f"  ratio           {native_rate / float_rate:7.2f}")
    print(f"  same greedy tokens as float: {same}/{tokens} (random weights: near-ties abound)")
    return float_rate, int_rate, native_rate


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
    rates: tuple[float, float, float] | None,
    agreed: list[tuple[str, int, np.ndarray]],
) -> None:
    """Append what ran to docs/numbers/ (inference, agreement or demo_model)."""
    from numbers_page import record

    command = " ".join([".venv/bin/python scripts/bench_run.py", *sys.argv[1:]])
    if rates is not None:
        float_rate, int_rate, native_rate = rates
        record(
            "inference",
            "Inference speed",
            command,
            ["pass", "tokens/s"],
            [
                ["float numpy (baseline)", f"{float_rate:.1f}"],
                ["integer, numpy", f"**{int_rate:.1f}** (target ≥ 50, {met(int_rate >= 50)})"],
                [
                    "ratio",
                    f"**{int_rate / float_rate:.2f}** "
                    f"(target ≥ 0.5, {met(int_rate / float_rate >= 0.5)})",
                ],
                ["integer, the program's C", f"**{native_rate:.1f}**"],
                ["ratio", f"**{native_rate / float_rate:.2f}**"],
            ],
            f"{args.tokens} greedy tokens one at a time on one core, a stories15M-shaped "
            "checkpoint (synthetic weights), against llama2.c's float32 pass in numpy on the "
            f"checkpoint's own floats (best of {args.repeat}, the three alternating: the shared "
            "machine's load falls on all). The program's C gives numpy's tokens.",
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


RUN_C_BUILDS = {
    "run.c -O3": ("-O3",),
    "run.c -Ofast -march=native": ("-Ofast", "-march=native"),
}
"""llama2.c's Makefile's `make run`, and `make runfast` with the README's -march=native."""
FASTEST = "run.c -Ofast -march=native"
CURTA = "curta-chain run"
_RATE = {
    CURTA: re.compile(r"\(([\d.]+) tokens/s"),
    **dict.fromkeys(RUN_C_BUILDS, re.compile(r"achieved tok/s: ([\d.]+)")),
}


def run_c_source(path: Path) -> Path:
    """run.c itself, from its path or a llama2.c checkout's."""
    source = path / "run.c" if path.is_dir() else path
    if not source.is_file():
        raise SystemExit(f"--llama2c {path}: no run.c there")
    return source


def side_by_side(args: argparse.Namespace, folder: Path) -> dict[str, tuple[float, float]]:
    """Build run.c twice, write the checkpoint both ways, time the three in turn.

    Returns each command's median tokens a second and median wall seconds.
    """
    cc = os.environ.get("CC", "cc")
    commands: dict[str, list[str]] = {}
    checkpoint = llama2c_checkpoint_bytes(STORIES15M, seed=15)
    tokenizer = llama2c_tokenizer_bytes(STORIES15M.vocab_size, seed=15)
    (folder / "15m.bin").write_bytes(checkpoint)
    (folder / "tok.bin").write_bytes(tokenizer)
    artifact = folder / "15m.curta"
    write_artifact(convert_llama2c_bytes(checkpoint, tokenizer, "15m.bin", "tok.bin"), artifact)
    sampling = ["-n", str(args.n), "-t", args.temperature, "-p", args.top_p, "-s", str(args.seed)]
    script = Path(sys.executable).parent / "curta-chain"
    runner = [str(script)] if script.exists() else [sys.executable, "-m", "curta_chain"]
    commands[CURTA] = [*runner, "run", str(artifact), *sampling]
    for label, flags in RUN_C_BUILDS.items():
        binary = folder / label.replace(" ", "_")
        source = run_c_source(args.llama2c)
        subprocess.run([cc, *flags, "-o", str(binary), str(source), "-lm"], check=True)
        commands[label] = [str(binary), str(folder / "15m.bin"), "-z", str(folder / "tok.bin")]
        commands[label] += sampling
    rates: dict[str, list[float]] = {label: [] for label in commands}
    walls: dict[str, list[float]] = {label: [] for label in commands}
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    for round_ in range(args.rounds + 1):  # round 0 warms the page cache and the native build
        for label, argv in commands.items():
            begin = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
            wall = time.perf_counter() - begin
            found = _RATE[label].search(done.stderr)
            if done.returncode != 0 or not found:
                raise SystemExit(f"{label}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
            if round_:
                rates[label].append(float(found.group(1)))
                walls[label].append(wall)
    return {
        label: (statistics.median(rates[label]), statistics.median(walls[label]))
        for label in commands
    }


def llama2c_rows(results: dict[str, tuple[float, float]]) -> list[list[str]]:
    """The table: tokens a second, wall time, and both against run.c -Ofast -march=native."""
    fast_rate, fast_wall = results[FASTEST]
    rows = []
    for label, (rate, wall) in results.items():
        bold = "**" if label == CURTA else ""
        rows.append(
            [
                f"`{label}`",
                f"{rate:.1f}",
                f"{wall:.2f}",
                f"{bold}{rate / fast_rate:.2f}{bold}",
                f"{bold}{fast_wall / wall:.2f}{bold}",
            ]
        )
    return rows


LLAMA2C_COLUMNS = [
    "process",
    "tokens/s (median)",
    "wall s (median)",
    "tokens/s ÷ -Ofast's",
    "speed by wall time ÷ -Ofast's",
]


def against_llama2c(args: argparse.Namespace) -> None:
    """Print (and with --record append) the side-by-side table against llama2.c's run.c."""
    with tempfile.TemporaryDirectory(prefix="bench-llama2c-") as tmp:
        results = side_by_side(args, Path(tmp))
    rows = llama2c_rows(results)
    summary = (
        f"stories15M's shapes (synthetic weights, seed 15), `-n {args.n} -t {args.temperature} "
        f"-p {args.top_p} -s {args.seed}` for each (at the context's end run.c makes -n tokens "
        "and curta-chain one fewer: it keeps every token in the context); whole processes in "
        f"turn, the median of {args.rounds} rounds after one unmeasured. `curta-chain run` "
        "computes the chain's integers (the program's C, built for this machine); run.c "
        "computes float32. Each "
        "prints its tokens a second, counted alike: every token after the first, over the time "
        "since the first. The ratios are to run.c -Ofast -march=native: above 1, curta-chain "
        "is faster."
    )
    print(summary)
    widths = [28, 18, 16, 20, 30]
    for row in [LLAMA2C_COLUMNS, *rows]:
        print(
            "  ".join(
                cell.replace("*", "").replace("`", "").ljust(w)
                for cell, w in zip(row, widths, strict=True)
            )
        )
    ratio = results[CURTA][0] / results[FASTEST][0]
    wall_ratio = results[FASTEST][1] / results[CURTA][1]
    verdict = met(ratio >= 1 and wall_ratio >= 1)
    print(f"target: curta-chain run at least 1.0x run.c -Ofast -march=native: {verdict}")
    if args.record:
        from numbers_page import record

        # The checkout's path is this machine's: the command names it LLAMA2C.
        words = ["LLAMA2C" if Path(word) == args.llama2c else word for word in sys.argv[1:]]
        command = " ".join([".venv/bin/python scripts/bench_run.py", *words])
        notes = (
            f"Target: `curta-chain run` at least 1.0x run.c -Ofast -march=native by both "
            f"measures: {verdict}. LLAMA2C is a checkout of github.com/karpathy/llama2.c, or "
            f"its run.c; the compiler `{shutil.which(os.environ.get('CC', 'cc'))}`."
        )
        record(
            "llama2c",
            "Off-chain run against llama2.c",
            command,
            LLAMA2C_COLUMNS,
            rows,
            summary,
            notes,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=len(PROMPTS))
    parser.add_argument("--model", choices=("demo", "stories260K"), default="demo")
    parser.add_argument("--agreement-only", action="store_true", help="skip the speed runs")
    parser.add_argument("--record", action="store_true", help="append the results to docs/numbers/")
    parser.add_argument(
        "--llama2c",
        type=Path,
        metavar="PATH",
        help="run.c, or a llama2.c checkout: only the side-by-side against it",
    )
    parser.add_argument("--rounds", type=int, default=3, help="with --llama2c: measured rounds")
    parser.add_argument("-n", type=int, default=256, help="with --llama2c: run.c's -n, both")
    parser.add_argument("-t", dest="temperature", default="1.0", help="with --llama2c: both")
    parser.add_argument("-p", dest="top_p", default="0.9", help="with --llama2c: both")
    parser.add_argument("-s", dest="seed", type=int, default=1, help="with --llama2c: both")
    args = parser.parse_args()
    if args.llama2c:
        against_llama2c(args)
        return
    rates = None if args.agreement_only else speed(args.tokens, args.repeat)
    agreed = agreement(args.prompts, args.model)
    if args.record:
        record_results(args, rates, agreed)


if __name__ == "__main__":
    main()

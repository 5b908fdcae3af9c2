"""Benchmark: convert a stories15M-shaped checkpoint, and the weights hash against hashlib.

    .venv/bin/python scripts/bench_convert.py [--repeat N]

Builds a synthetic llama2.c checkpoint with stories15M's shapes (dim 288, hidden 768,
6 layers, 6 heads, vocabulary 32,000, context 256, tied; ~61 MB of float32) and a
32,000-token tokenizer in a temporary folder, then prints the best of N timings of:
the conversion from files, the weights hash (hash_steps and weights_hash), and hashlib
SHA-256 over the same bytes in one pass, measured in the same run as the baseline.
"""

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

from curta_chain.artifact import convert_llama2c, hash_steps, weights_hash, write_artifact
from curta_chain.artifact.synthetic import (
    STORIES15M,
    llama2c_checkpoint_bytes,
    llama2c_tokenizer_bytes,
)


def best_of(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--record", action="store_true", help="append the results to docs/numbers/convert.jsonl"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        checkpoint, tokenizer = Path(folder) / "15m.bin", Path(folder) / "tok.bin"
        checkpoint.write_bytes(llama2c_checkpoint_bytes(STORIES15M, seed=15))
        tokenizer.write_bytes(llama2c_tokenizer_bytes(STORIES15M.vocab_size, seed=15))
        artifact = convert_llama2c(checkpoint, tokenizer)
        convert_s = best_of(args.repeat, lambda: convert_llama2c(checkpoint, tokenizer))
        out = Path(folder) / "15m.curta"
        write_s = best_of(args.repeat, lambda: write_artifact(artifact, out))
        size_in = checkpoint.stat().st_size

    sections = artifact.sections
    total = len(artifact.data)
    baseline_s = best_of(args.repeat, lambda: hashlib.sha256(artifact.data).digest())
    chain_s = best_of(args.repeat, lambda: weights_hash(sections))
    steps_s = best_of(args.repeat, lambda: sum(1 for _ in hash_steps(sections)))

    mb = 1e6
    print(f"checkpoint   {size_in:,} bytes (stories15M shapes, synthetic, seed 15)")
    print(f"artifact     {total:,} bytes in {len(sections)} sections")
    print(f"convert      {convert_s:.3f} s  (read, quantize, tables, encode, full decode check)")
    print(f"write        {write_s:.3f} s  (atomic, fsync)")
    print(f"hashlib      {total / baseline_s / mb:,.0f} MB/s  one-pass SHA-256 (baseline)")
    print(
        f"weights_hash {total / chain_s / mb:,.0f} MB/s  ratio {baseline_s / chain_s:.3f} "
        "(target >= 0.9)"
    )
    print(f"hash_steps   {total / steps_s / mb:,.0f} MB/s  ratio {baseline_s / steps_s:.3f}")
    print(f"weights hash {weights_hash(sections).hex()}")
    if args.record:
        from numbers_page import record

        record(
            "convert",
            "Conversion and hashing",
            ".venv/bin/python scripts/bench_convert.py --record",
            ["measure", "value"],
            [
                ["checkpoint (stories15M shapes, synthetic)", f"{size_in:,} bytes"],
                ["artifact", f"{total:,} bytes, {len(sections)} sections"],
                [
                    "convert (read, quantize, tables, encode, full decode check)",
                    f"{convert_s:.2f} s",
                ],
                ["weights hash", f"{total / chain_s / mb:,.0f} MB/s"],
                [
                    "weights hash / hashlib on the same bytes in one pass",
                    f"**{baseline_s / chain_s:.2f}×** (target ≥ 0.9)",
                ],
            ],
            f"Best of {args.repeat}.",
            "The two are the same SHA-256, so the ratio is 1 within the machine's noise.",
        )


if __name__ == "__main__":
    main()

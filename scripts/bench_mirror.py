"""Time the run mirror's planning for a pipelining client: every step counted, every step planned.

For stories260K (64 tokens) and the stories15M shape (8 tokens), each after a 6-token
prompt, greedy: ``RunMirror.steps_to_finish`` (dry steps, tokens from the
off-chain core) against ``plan_ahead`` of every step (the arithmetic of each, as a client
that checks every state does). Prints one line per model.

Usage: python scripts/bench_mirror.py
"""

from __future__ import annotations

import time

from bench_inference import stories15m, stories260k
from solders.pubkey import Pubkey

from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import opened_run_data

PROMPT = [1, 300, 400, 450, 500, 100]
"""Token ids every vocabulary has (stories260K's is 512)."""


def main() -> None:
    """Print the step count and both times for each model."""
    for name, artifact, tokens in (
        ("stories260K", stories260k(), 64),
        ("stories15M shape", stories15m(), 8),
    ):
        capacity = len(PROMPT) + tokens
        key = Pubkey.default()
        opened = opened_run_data(artifact.config, key, key, capacity, PROMPT)
        mirror = RunMirror(artifact, opened)
        started = time.perf_counter()
        steps = mirror.steps_to_finish()
        counted = time.perf_counter() - started
        started = time.perf_counter()
        planned = len(mirror.plan_ahead(steps + 1))
        planning = time.perf_counter() - started
        assert planned == steps, (planned, steps)
        print(
            f"{name}: {tokens} tokens after {len(PROMPT)}, {steps} steps; steps_to_finish "
            f"{counted:.1f} s, every step planned {planning:.1f} s"
        )


if __name__ == "__main__":
    main()

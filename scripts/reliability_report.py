"""Run the reliability scenarios N times and print docs/reliability.md's table.

Each round runs every module of tests/reliability/ (crash and resume, deploy resume,
localnet restart, RPC faults, issue 21's cluster rows, bad input, hostile chain, the
attacks of issue 9, the spend confirmation) under pytest with a different fault seed; each
scenario that passes appends its numbers to a JSON-lines log, and the table is built from
that log. A scenario counts as losing nothing when every run of it ended sealed and
verified with zero lamports and zero bytes beyond a clean run.

    .venv/bin/python scripts/reliability_report.py --runs 3
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODULES = [
    "tests/reliability/test_crash_resume.py",
    "tests/reliability/test_localnet_restart.py",
    "tests/reliability/test_rpc_faults.py",
    "tests/reliability/test_cluster_rows.py",
    "tests/reliability/test_bad_input.py",
    "tests/reliability/test_hostile_chain.py",
    "tests/reliability/test_deploy_resume.py",
    "tests/reliability/test_attacks.py",
    "tests/reliability/test_spend_confirmation.py",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds of every scenario")
    parser.add_argument("-k", default="", help="pytest -k expression to pick scenarios")
    args = parser.parse_args()

    rows: dict[str, list[dict]] = defaultdict(list)
    failures = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            log = Path(folder) / f"run-{run}.jsonl"
            # One process: the rows time each scenario on a machine no other test shares.
            command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
            command += MODULES
            if args.k:
                command += ["-k", args.k]
            env = {
                **os.environ,
                "CURTA_RELIABILITY_LOG": str(log),
                "CURTA_RELIABILITY_SEED": str(1000 + run),
            }
            done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
            summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
            print(f"round {run + 1}/{args.runs}: {summary}", file=sys.stderr)
            if done.returncode != 0:
                failures += 1
                print(done.stdout[-4000:], file=sys.stderr)
            if log.exists():
                for line in log.read_text().splitlines():
                    entry = json.loads(line)
                    rows[entry.pop("scenario")].append(entry)

    print("| scenario | runs | faults injected | what was lost |")
    print("| --- | ---: | --- | --- |")
    for scenario, entries in rows.items():
        print(f"| {scenario} | {len(entries)} | {_injected(entries)} | {_lost(entries)} |")
    minutes = (time.monotonic() - started) / 60
    print(f"\n{args.runs} rounds in {minutes:.1f} min; rounds with a failure: {failures}")
    return 1 if failures else 0


def _injected(entries: list[dict]) -> str:
    faults = sum(sum(e.get("faults", {}).values()) for e in entries)
    requests = sum(e.get("requests", 0) for e in entries)
    return f"{faults:,} in {requests:,} requests" if requests else ""


def _lost(entries: list[dict]) -> str:
    lamports = max(e.get("lost_lamports", 0) for e in entries)
    resent = max(e.get("resent_bytes", 0) for e in entries)
    duplicates = max(e.get("duplicate_writes", 0) for e in entries)
    if lamports == 0 and resent == 0:
        return "nothing"
    bound = max(e.get("bound_bytes", 0) for e in entries)
    parts = []
    if resent:
        parts.append(f"at most {resent:,} bytes sent again (window bound {bound:,})")
    if lamports:
        parts.append(
            f"at most {lamports:,} lamports: fees of {duplicates} writes landed twice; no rent"
        )
    else:
        parts.append("no lamports")
    return "; ".join(parts)


if __name__ == "__main__":
    sys.exit(main())

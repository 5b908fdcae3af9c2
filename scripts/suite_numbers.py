"""Record the test suite's time and its 25 slowest tests from a run's pytest output.

    .venv/bin/python -m pytest -q > suite.txt   (addopts add --durations=25)
    .venv/bin/python scripts/suite_numbers.py suite.txt --note "what else ran on the machine"

Appends to docs/numbers/tests.jsonl (the counts and the time) and docs/numbers/
tests_slowest.jsonl (the slowest phases), then rewrites docs/numbers.md.
"""

import argparse
import re
import sys
from pathlib import Path

from numbers_page import PAGE, record, render

COMMAND = (
    ".venv/bin/python -m pytest -q > suite.txt; .venv/bin/python scripts/suite_numbers.py suite.txt"
)
DURATION = re.compile(r"^(\d+\.\d+)s (call|setup|teardown) +(tests/.+)$")
SUMMARY = re.compile(r"^=* ?(.*\d+ (?:passed|failed).*) in ([\d.]+)s(?: \(([\d:]+)\))? ?=*$")


def parse(text: str) -> tuple[dict[str, int], float, list[tuple[float, str, str]]]:
    """The summary's counts, its seconds and the durations section's rows from pytest's output.

    Raises:
        SystemExit: the output has no final summary line (the run did not finish).
    """
    counts: dict[str, int] = {}
    seconds: float | None = None
    for line in text.splitlines():
        match = SUMMARY.match(line.strip())
        if match:
            for part in match[1].split(", "):
                number, _, word = part.partition(" ")
                counts[word] = int(number)
            seconds = float(match[2])
    if seconds is None:
        raise SystemExit("no pytest summary line (`N passed ... in Ss`): did the run finish?")
    slowest = [
        (float(m[1]), m[2], m[3])
        for m in (DURATION.match(line.strip()) for line in text.splitlines())
        if m
    ]
    return counts, seconds, slowest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="pytest's output with --durations=25")
    parser.add_argument("--note", default="", help="the conditions of the run (load, machine)")
    args = parser.parse_args()
    counts, seconds, slowest = parse(args.output.read_text())
    minutes, rest = divmod(round(seconds), 60)
    rows = [[word, f"{number:,}"] for word, number in counts.items()]
    rows.append(["time in the tests", f"{minutes} min {rest} s"])
    record(
        "tests",
        "The test suite",
        COMMAND,
        ["measure", "value"],
        rows,
        summary=(
            "The whole suite, the README's test command (three pytest-xdist workers), on a "
            "2-core machine."
        ),
        notes=args.note,
    )
    record(
        "tests_slowest",
        "The suite's 25 slowest tests",
        COMMAND,
        ["test", "phase", "seconds"],
        [[f"`{test}`", phase, f"{s:.2f}"] for s, phase, test in slowest],
        summary="The same run's `--durations=25`: the slowest setups, calls and teardowns.",
        notes=args.note,
    )
    PAGE.write_text(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())

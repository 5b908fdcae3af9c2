"""How long `curta-chain --help` takes, against the interpreter starting with nothing.

Prints the median wall time of N runs of each, in this run, and the ratio; and, from
`python -X importtime`, what importing the CLI costs against importing the libraries a
chain command needs (what every --help paid before the CLI imported them lazily). Then how
long a chain command takes to fail against a node that is not there, beyond `--help`: a
refused connection (the transport's first-contact grace, 1 s) and a host name that does
not resolve (at once). The tests check what these failures say; their speed is measured
here. Numbers vary with machine load; the ratios and differences less so.
"""

import argparse
import re
import socket
import statistics
import subprocess
import sys
import time

RUNS = 15
FAILURE_RUNS = 5
NOBODY = "11111111111111111111111111111111"


def wall(argv: list[str], runs: int = RUNS, check: bool = True) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=check, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def failing(url: str) -> float:
    """Median seconds `curta-chain status` takes to fail against ``url``."""
    argv = [sys.executable, "-m", "curta_chain", "status", NOBODY, "-u", url, "-C", "/dev/null"]
    return wall(argv, FAILURE_RUNS, check=False)


def import_us(module: str) -> int:
    """Cumulative microseconds ``import module`` takes, per -X importtime."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    line = [x for x in done.stderr.splitlines() if re.search(rf"\| {re.escape(module)}$", x)][-1]
    return int(line.split("|")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--record", action="store_true", help="append the results to docs/numbers/cli_startup.jsonl"
    )
    args = parser.parse_args()
    baseline = wall([sys.executable, "-c", "pass"])
    help_ = wall([sys.executable, "-m", "curta_chain", "--help"])
    print(f"python -c pass              {baseline * 1000:7.1f} ms (median of {RUNS})")
    print(f"curta-chain --help          {help_ * 1000:7.1f} ms  ({help_ / baseline:.1f}x bare)")
    cli = import_us("curta_chain.cli")
    chain = import_us("curta_chain.chain.publish")
    print(f"import curta_chain.cli      {cli / 1000:7.1f} ms")
    print(f"import the chain libraries  {chain / 1000:7.1f} ms  ({chain / cli:.1f}x the CLI's)")
    refused = failing(f"http://127.0.0.1:{free_port()}")
    unresolvable = failing("http://curta-chain-test.invalid:8899")
    for label, seconds in (("refused connection", refused), ("unresolvable host", unresolvable)):
        print(
            f"{label:<27} {seconds * 1000:7.1f} ms  (--help + {seconds - help_:.2f} s, "
            f"median of {FAILURE_RUNS})"
        )
    if args.record:
        from numbers_page import record

        record(
            "cli_startup",
            "CLI startup",
            ".venv/bin/python scripts/bench_cli_startup.py --record",
            ["measure", "value"],
            [
                ["`curta-chain --help`", f"{help_ * 1000:.0f} ms (target < 200 ms)"],
                ["`python -c pass`, the same run", f"{baseline * 1000:.0f} ms"],
                ["a refused connection fails in", f"{refused:.1f} s"],
                ["an unresolvable host fails in", f"{unresolvable:.1f} s"],
            ],
            f"Medians of {RUNS} runs (--help) and {FAILURE_RUNS} (the failures).",
            "The failures include the command's imports; a refused connection is retried for "
            "half a second first, for a localnet still starting.",
        )


if __name__ == "__main__":
    main()

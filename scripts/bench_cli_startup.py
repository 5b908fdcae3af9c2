"""How long `curta-chain --help` takes, against the interpreter starting with nothing.

Prints the median wall time of N runs of each, in this run, and the ratio; and, from
`python -X importtime`, what importing the CLI costs against importing the libraries a
chain command needs (what every --help paid before the CLI imported them lazily).
Numbers vary with machine load; the ratios less so.
"""

import re
import statistics
import subprocess
import sys
import time

RUNS = 15


def wall(argv: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


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
    baseline = wall([sys.executable, "-c", "pass"])
    help_ = wall([sys.executable, "-m", "curta_chain", "--help"])
    print(f"python -c pass              {baseline * 1000:7.1f} ms (median of {RUNS})")
    print(f"curta-chain --help          {help_ * 1000:7.1f} ms  ({help_ / baseline:.1f}x bare)")
    cli = import_us("curta_chain.cli")
    chain = import_us("curta_chain.chain.publish")
    print(f"import curta_chain.cli      {cli / 1000:7.1f} ms")
    print(f"import the chain libraries  {chain / 1000:7.1f} ms  ({chain / cli:.1f}x the CLI's)")


if __name__ == "__main__":
    main()

"""``curta-chain --help`` loads none of the heavy libraries (and so starts in ~0.1 s).

The wall-clock figure is ``scripts/bench_cli_startup.py``'s to print; a test on a loaded
machine can only check what is imported, which is what decides the time.
"""

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "solana", "solders", "httpx", "asyncio")
"""What a --help has no use for: each costs tens to hundreds of milliseconds."""

PROBE = """
import json, sys
from curta_chain.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})), file=sys.stderr)
"""


def imported_by(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["publish", "--help"],
        ["keygen", "new", "--help"],
        ["verify", "--help"],
        ["pubish"],  # a typo's suggestion, too
    ],
    ids=" ".join,
)
def test_help_imports_no_heavy_library(argv):
    loaded = imported_by(*argv)
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_a_command_that_runs_does_load_them():
    # The probe can see the libraries: without this, an empty answer would pass the test above.
    loaded = imported_by("status", "11111111111111111111111111111111", "-u", "http://127.0.0.1:9")
    assert {"solders", "httpx", "asyncio"} <= loaded

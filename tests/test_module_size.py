"""Every module of the package fits in 450 lines: one concept a file, read in one sitting.

A module that outgrows it holds two things; split it where they part (as ``chain/rpc.py``
gave its transaction reads to ``chain/transaction_reads.py``), never by trimming comments.
"""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "curta_chain"
MAX_LINES = 450


def test_no_module_is_longer_than_450_lines():
    long = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_the_count_sees_every_module():
    # Guards the glob above: the package's modules are found, the nested ones included.
    found = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}
    assert {"cli/__init__.py", "chain/rpc.py", "onchain/mirror/forward.py"} <= found

"""Write programs/curta/schedule.h from the step schedule's table (curta_chain/program/schedule.py).

The header is generated: edit the table, then run this (``--check`` only says whether the
header is current, exit 1 when not; the program's build runs that check first).

Usage: python scripts/gen_schedule.py [--check] [--header PATH]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from curta_chain.fsutil import atomic_write
from curta_chain.program.schedule import HEADER_PATH, c_header

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) the generated header; 0 when it is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    parser.add_argument(
        "--header",
        type=Path,
        default=ROOT / HEADER_PATH,
        help=f"the header (default {HEADER_PATH})",
    )
    args = parser.parse_args(argv)
    path: Path = args.header
    text = c_header()
    current = path.read_text() if path.exists() else None
    if args.check:
        if current != text:
            print(
                f"{path}: stale, not the table's header: run scripts/gen_schedule.py",
                file=sys.stderr,
            )
            return 1
        return 0
    if current != text:
        atomic_write(path, text.encode())
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

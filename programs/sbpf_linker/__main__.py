"""The linker's command line: link BPF objects into an SBPF v0 or v3 program.

Usage: ``python -m sbpf_linker [--sbpf-version 0|3] output.so input.o [input.o ...]``
(``programs/`` on the path: ``scripts/setup.sh`` puts it there).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from curta_chain.errors import BuildError, InputError
from curta_chain.fsutil import atomic_write
from sbpf_linker.elf import SBPF_V0, SBPF_VERSIONS
from sbpf_linker.link import link


def main(argv: list[str]) -> int:
    """Link the BPF objects named on the command line into an SBPF program."""
    parser = argparse.ArgumentParser(prog="python -m sbpf_linker", description=main.__doc__)
    parser.add_argument("--sbpf-version", type=int, choices=SBPF_VERSIONS, default=SBPF_V0)
    parser.add_argument("output", type=Path)
    parser.add_argument("inputs", type=Path, nargs="+")
    args = parser.parse_args(argv[1:])
    try:
        objects = [path.read_bytes() for path in args.inputs]
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        program = link(objects, [str(p) for p in args.inputs], args.sbpf_version)
        atomic_write(args.output, program)
    except (BuildError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

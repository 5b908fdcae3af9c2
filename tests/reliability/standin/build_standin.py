"""Build the tests' stand-in program (``standin.c``) with the curta toolchain.

The result, ``standin.so``, is committed so that the tests need no compiler; a test
rebuilds it and compares when clang-14 is installed.

Usage: python tests/reliability/standin/build_standin.py [--out PATH]
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from build_program import CFLAGS, CLANG, WARNINGS
from sbpf_linker import link

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

SDK = ROOT / "programs" / "curta"
DEFAULT_OUT = HERE / "standin.so"


def build_standin() -> bytes:
    """Compile and link ``standin.c``; return the program's bytes."""
    with tempfile.TemporaryDirectory(prefix="standin-") as tmp:
        obj = Path(tmp) / "standin.o"
        subprocess.run(
            [
                CLANG,
                *CFLAGS,
                *WARNINGS,
                "-mcpu=v2",
                "-I",
                str(SDK),
                "-c",
                "standin.c",
                "-o",
                str(obj),
            ],
            cwd=HERE,
            check=True,
            capture_output=True,
        )
        return link([obj.read_bytes()], ["standin.c"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    program = build_standin()
    args.out.write_bytes(program)
    print(f"{args.out}: {len(program)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Build the curta program: clang-14 (BPF, -mcpu=v2) per source file, then our SBPF linker.

The build is reproducible: the same sources give the same bytes (the linker keeps no path
or timestamp, and sources are compiled in sorted order with relative paths).

Usage: python scripts/build_program.py [--out PATH]   (default curta_chain/program/curta.so)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM_DIR = ROOT / "programs" / "curta"
DEFAULT_OUT = ROOT / "curta_chain" / "program" / "curta.so"
sys.path.insert(0, str(PROGRAM_DIR))
sys.path.insert(0, str(ROOT))

from sbpf_link import link  # noqa: E402

from curta_chain.errors import BuildError  # noqa: E402
from curta_chain.fsutil import atomic_write  # noqa: E402

CLANG = "clang-14"
CFLAGS = [
    "-target", "bpf", "-mcpu=v2", "-O2", "-std=c11",
    "-ffreestanding", "-fno-builtin", "-fno-stack-protector", "-fno-addrsig",
    "-Wall", "-Wextra", "-Werror",
    # Schedule in source order: the matvec kernel (src/matvec.c) is written in the order
    # that needs the fewest registers; LLVM's default BPF scheduler hoists its loads and
    # spills. Other code changes by a unit or two at most (scripts/bench_program_cu.py).
    "-mllvm", "-pre-RA-sched=source",
]  # fmt: skip


def _run(argv: list[str], cwd: Path) -> None:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise BuildError(
            f"{argv[0]} not found: install clang-14 (apt-get install clang-14)"
        ) from exc
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise BuildError(f"{argv[0]} failed: {detail[0] if detail else done.returncode}")


def build_program(out: Path = DEFAULT_OUT, extra_flags: tuple[str, ...] = ()) -> bytes:
    """Compile and link the program; write it to ``out`` and return its bytes.

    ``extra_flags`` go to clang after the usual ones (``-DCALIBRATE`` for the build that
    logs every phase's compute units: scripts/bench_program_cu.py --calibrate).
    """
    sources = sorted(p.relative_to(PROGRAM_DIR) for p in (PROGRAM_DIR / "src").glob("*.c"))
    if not sources:
        raise BuildError(f"{PROGRAM_DIR / 'src'}: no C sources")
    with tempfile.TemporaryDirectory(prefix="curta-build-") as tmp:
        objects = []
        for source in sources:
            obj = Path(tmp) / (source.stem + ".o")
            _run([CLANG, *CFLAGS, *extra_flags, "-c", str(source), "-o", str(obj)], PROGRAM_DIR)
            objects.append(obj.read_bytes())
        program = link(objects, [str(s) for s in sources])
    atomic_write(out, program)
    return program


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write curta.so")
    args = parser.parse_args()
    try:
        program = build_program(args.out)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{args.out}: {len(program)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

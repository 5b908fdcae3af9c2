"""Build the curta program, SBPF v0 and v3: clang-14 (BPF) per source file, then our linker.

Each build in ``curta_chain.program.builds.BUILDS`` compiles every source with the first
``-mcpu`` of its list and links the objects for its SBPF version; when the link refuses
that code (the v3 build's ALU32 check), it tries the next one and says so. The builds are
reproducible: the same sources give the same bytes (the linker keeps no path or timestamp,
and sources are compiled in sorted order with relative paths).

Usage: python scripts/build_program.py [--out-dir DIR]   (default curta_chain/program)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from sbpf_link import link
except ModuleNotFoundError as missing:  # the venv lacks setup.sh's path file
    raise SystemExit(
        f"{missing}: programs/curta is not on this environment's path; run bash scripts/setup.sh"
    ) from missing

from curta_chain.errors import BuildError, InputError
from curta_chain.fsutil import atomic_write
from curta_chain.program.builds import BUILDS, ProgramBuild
from curta_chain.program.builds import PROGRAM_DIR as DEFAULT_OUT_DIR

ROOT = Path(__file__).resolve().parent.parent
PROGRAM_DIR = ROOT / "programs" / "curta"
CLANG = "clang-14"
CFLAGS = [
    "-target", "bpf", "-O2", "-std=c11",
    "-ffreestanding", "-fno-builtin", "-fno-stack-protector", "-fno-addrsig",
    # Schedule in source order: the matvec kernel (src/matvec.c) is written in the order
    # that needs the fewest registers; LLVM's default BPF scheduler hoists its loads and
    # spills. Other code changes by a unit or two at most (scripts/bench_program_cu.py).
    "-mllvm", "-pre-RA-sched=source",
]  # fmt: skip
"""How every object is compiled (then ``-mcpu``): the build's and the linker tests' code."""
WARNINGS = ["-Wall", "-Wextra", "-Werror"]
"""The program's sources (and the tests' stand-in) compile without a warning."""


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


def _compile_and_link(
    sources: list[Path], cpu: str, sbpf_version: int, extra_flags: tuple[str, ...] = ()
) -> bytes:
    with tempfile.TemporaryDirectory(prefix="curta-build-") as tmp:
        objects = []
        for source in sources:
            obj = Path(tmp) / (source.stem + ".o")
            flags = [*CFLAGS, *WARNINGS, f"-mcpu={cpu}", *extra_flags]
            _run([CLANG, *flags, "-c", str(source), "-o", str(obj)], PROGRAM_DIR)
            objects.append(obj.read_bytes())
        return link(objects, [str(s) for s in sources], sbpf_version)


def build_one(build: ProgramBuild, extra_flags: tuple[str, ...] = ()) -> tuple[bytes, str]:
    """Compile every source for ``build`` and link them; return the bytes and the -mcpu used.

    ``extra_flags`` go to clang after the usual ones (``-DCALIBRATE`` for the build that
    logs every phase's compute units: scripts/bench_program_cu.py --calibrate).
    """
    sources = sorted(p.relative_to(PROGRAM_DIR) for p in (PROGRAM_DIR / "src").glob("*.c"))
    if not sources:
        raise BuildError(f"{PROGRAM_DIR / 'src'}: no C sources")
    *preferred, last = build.clang_cpus
    for cpu in preferred:
        try:
            return _compile_and_link(sources, cpu, build.sbpf_version, extra_flags), cpu
        except BuildError as exc:
            print(f"{build.file_name}: -mcpu={cpu}: {exc}; trying -mcpu={last}", file=sys.stderr)
    return _compile_and_link(sources, last, build.sbpf_version, extra_flags), last


def build_program(out_dir: Path = DEFAULT_OUT_DIR) -> dict[str, tuple[bytes, str]]:
    """Build every program build; write each into ``out_dir``.

    Nothing is written unless every build succeeds.

    Returns:
        File name -> (the program's bytes, the -mcpu its code was compiled for).
    """
    programs = {build.file_name: build_one(build) for build in BUILDS}
    out_dir.mkdir(parents=True, exist_ok=True)
    for file_name, (program, _) in programs.items():
        atomic_write(out_dir / file_name, program)
    return programs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out-dir", type=Path, default=DEFAULT_OUT_DIR, help="where to write the .so files"
    )
    args = parser.parse_args()
    try:
        programs = build_program(args.out_dir)
    except (BuildError, InputError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for file_name, (program, cpu) in programs.items():
        print(f"{args.out_dir / file_name}: {len(program)} bytes (-mcpu={cpu})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Build the curta program, SBPF v0 and v3: clang-14 (BPF) per source file, then our linker.

Each build in ``curta_chain.program.builds.BUILDS`` compiles every source with the first
``-mcpu`` of its list and links the objects for its SBPF version; when the link refuses one
source's code (the v3 build's ALU32 check), that source is compiled with the next one and
the build says so. The builds are
reproducible: the same sources give the same bytes (the linker keeps no path or timestamp,
and sources are compiled in sorted order with relative paths).

Usage: python scripts/build_program.py [--out-dir DIR]   (default curta_chain/program)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

try:
    import gen_kernel
    import gen_layout
    import gen_schedule
    from sbpf_linker import SignExtensionError, link
except ModuleNotFoundError as missing:  # the venv lacks setup.sh's path file
    raise SystemExit(
        f"{missing}: programs/ is not on this environment's path; run bash scripts/setup.sh"
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
GENERATED_HEADERS = (
    (gen_schedule, "curta_chain/onchain/schedule.py's table"),
    (gen_layout, "curta_chain/artifact/layout.py"),
    (gen_kernel, "scripts/gen_kernel.py's assembly"),
)
"""The headers generated from Python, each with its generator; a build refuses a stale one."""
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


def _compile(source: Path, cpu: str, out_dir: Path, extra_flags: tuple[str, ...]) -> bytes:
    obj = out_dir / f"{source.stem}.{cpu}.o"
    flags = [*CFLAGS, *WARNINGS, f"-mcpu={cpu}", *extra_flags]
    _run([CLANG, *flags, "-c", str(source), "-o", str(obj)], PROGRAM_DIR)
    return obj.read_bytes()


def _describe(cpu_of: dict[Path, str]) -> str:
    """``v3``, or ``v3, v2 for src/a.c, src/b.c``: the -mcpu of most sources, then the rest."""
    (main, _), *others = Counter(cpu_of.values()).most_common()
    parts = [main]
    for cpu, _ in others:
        parts.append(f"{cpu} for {', '.join(str(s) for s, c in cpu_of.items() if c == cpu)}")
    return ", ".join(parts)


def build_one(build: ProgramBuild, extra_flags: tuple[str, ...] = ()) -> tuple[bytes, str]:
    """Compile every source for ``build`` and link them; return the bytes and the -mcpu used.

    Every source starts at the build's first ``-mcpu``. When the v3 link refuses a source's
    ALU32 code (a sign-extended 32-bit result read as 64 bits: ``sbpf_linker.alu32``), that source
    alone is compiled again with the next ``-mcpu`` and the link retried, so the sources the
    proof accepts keep their v3 code. ``extra_flags`` go to clang after the usual ones
    (``-DCALIBRATE`` for the build that logs every phase's compute units:
    scripts/bench_program_cu.py --calibrate).
    """
    for generator, source in GENERATED_HEADERS:
        header = ROOT / generator.HEADER_PATH
        if not header.exists() or header.read_text() != generator.c_header():
            raise BuildError(
                f"{generator.HEADER_PATH} differs from {source}: "
                f"run python scripts/{generator.__name__}.py"
            )
    sources = sorted(p.relative_to(PROGRAM_DIR) for p in (PROGRAM_DIR / "src").glob("*.c"))
    if not sources:
        raise BuildError(f"{PROGRAM_DIR / 'src'}: no C sources")
    cpu_of = dict.fromkeys(sources, build.clang_cpus[0])
    with tempfile.TemporaryDirectory(prefix="curta-build-") as tmp:
        objects: dict[tuple[Path, str], bytes] = {}
        while True:
            for source, cpu in cpu_of.items():
                if (source, cpu) not in objects:
                    objects[source, cpu] = _compile(source, cpu, Path(tmp), extra_flags)
            chosen = [objects[source, cpu] for source, cpu in cpu_of.items()]
            try:
                return link(chosen, [str(s) for s in sources], build.sbpf_version), _describe(
                    cpu_of
                )
            except SignExtensionError as exc:
                if exc.obj is None:
                    raise
                source = sources[exc.obj]
                cpus = build.clang_cpus
                position = cpus.index(cpu_of[source])
                if position + 1 == len(cpus):
                    raise
                cpu_of[source] = cpus[position + 1]
                print(
                    f"{build.file_name}: {source}: -mcpu={cpus[position]}: {exc.detail}; "
                    f"compiling it with -mcpu={cpu_of[source]}",
                    file=sys.stderr,
                )


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

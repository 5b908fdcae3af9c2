"""Build the on-chain program's C for this machine, once, into the per-user cache.

The library (``libcurta_host.so``) is the sources of ``programs/curta/src`` compiled as
they are, but for ``src/matvec.c`` (its kernel is SBPF assembly), plus
``programs/curta/host``: the syscalls and heap the host gives the program (``host.h``,
``host_sdk.c``), ``row_sums`` in place of ``matvec.c``'s (``host_matvec.c``: AVX2, or
portable C), attention's products with AVX2 (``host_attend.c``; the program's own
``key_dots`` and ``value_sums`` are renamed ``sbpf_*`` and remain its fallback) and the run
it exports (``host_run.c``). ``native.py`` loads it.

It is built on first use, or by ``scripts/setup.sh`` (``python -m
curta_chain.inference.host_build``), into ``${XDG_CACHE_HOME:-~/.cache}/curta-chain/native/
<key>/``, where the key hashes the compiler, the flags and every source byte: a changed
source builds a new library, and a library never runs older C than the checkout holds.
The compiler is ``$CC`` (words split as a shell would), else ``cc``, ``gcc``, ``clang`` or
``clang-14`` on ``PATH``. Compiling takes a few seconds of one core; nothing is installed elsewhere.
"""

import contextlib
import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from curta_chain.errors import BuildError

PROGRAM_DIR = Path(__file__).resolve().parents[1] / "program" / "c"
"""The program's C: in a checkout a link to ``programs/curta``, in a wheel its package data
(the headers and the ``src`` and ``host`` sources)."""
LIBRARY = "libcurta_host.so"
CFLAGS = (
    "-O2", "-std=gnu11", "-fPIC", "-fvisibility=hidden", "-fno-strict-aliasing",
    "-include", "host/host.h",
)  # fmt: skip
"""How every source is compiled. No -march: the AVX2 kernels are chosen at run time, so the
library runs on any x86-64 that shares the cache. Hidden symbols: calls between the
program's files are direct; host_run.c exports its functions by name."""
REPLACED = {"src/matvec.c": "host/host_matvec.c"}
"""The program's sources the host cannot compile (SBPF assembly), and what stands in for each."""
RENAMED = {"src/attend.c": ("key_dots", "value_sums")}
"""The program's kernels that host/host_attend.c takes over, and the file that defines them."""
COMPILERS = ("cc", "gcc", "clang", "clang-14")
"""Looked for on PATH in this order; clang-14 is the one that builds the program itself."""
_LOG = "build.log"


def sources(program: Path = PROGRAM_DIR) -> list[Path]:
    """The C files of the library, relative to ``program``: the program's, then the host's.

    The program's files the host replaces (``REPLACED``) are left out.

    Raises:
        BuildError: the program's C is not there (a copy of the package that lost its
            package data, or a ``program`` folder that is not the program's).
    """
    found = sorted(p.relative_to(program) for p in (program / "src").glob("*.c"))
    if not found:
        raise BuildError(f"{program / 'src'}: the program's C sources are not here")
    host = sorted(p.relative_to(program) for p in (program / "host").glob("*.c"))
    return [*(name for name in found if str(name) not in REPLACED), *host]


def compiler(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The C compiler's command words: ``$CC``, else the first of ``COMPILERS`` on PATH.

    Raises:
        BuildError: ``$CC`` names no program, or none of ``COMPILERS`` is on PATH.
    """
    path = environ.get("PATH", "")
    if environ.get("CC"):
        words = shlex.split(environ["CC"])
        found = shutil.which(words[0], path=path) if words else None
        if not found:
            raise BuildError(f"CC={environ['CC']!r}: no such program")
        return [found, *words[1:]]
    for name in COMPILERS:
        found = shutil.which(name, path=path)
        if found:
            return [found]
    raise BuildError(f"no C compiler ({', '.join(COMPILERS)} or $CC) on PATH")


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/curta-chain/native``."""
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME", "~")) / ".cache")
    return Path(base).expanduser() / "curta-chain" / "native"


def build_key(cc: list[str], program: Path = PROGRAM_DIR) -> str:
    """A hash of the compiler (its path, size and time), the flags and every source byte."""
    digest = hashlib.sha256()
    stat = os.stat(cc[0])
    digest.update(
        f"{cc}\0{stat.st_size}\0{stat.st_mtime_ns}\0{CFLAGS}\0{RENAMED}\0{REPLACED}\0".encode()
    )
    headers = sorted(p.relative_to(program) for p in program.rglob("*.h"))
    for name in [*sources(program), *headers]:
        digest.update(f"{name}\0".encode())
        digest.update((program / name).read_bytes())
    return digest.hexdigest()[:24]


def library(
    environ: Mapping[str, str] = os.environ,
    program: Path = PROGRAM_DIR,
    on_build: Callable[[], None] | None = None,
) -> Path:
    """The library for this checkout's C and this compiler, built first if it is not cached.

    Args:
        environ: where ``CC``, ``PATH``, ``XDG_CACHE_HOME`` and ``HOME`` are read.
        program: the program's folder (``programs/curta``).
        on_build: called before a build starts (it takes seconds).

    Raises:
        BuildError: no sources, no compiler, or a compile or link that failed (the message
            names the log with the compiler's output).
    """
    sources(program)  # no C here says so before a missing compiler would
    cc = compiler(environ)
    folder = cache_root(environ) / build_key(cc, program)
    target = folder / LIBRARY
    if target.exists():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / ".lock", "w")  # noqa: SIM115 (held until the build is done)
    except OSError as exc:
        raise BuildError(f"{folder}: cannot write the build: {exc.strerror}") from exc
    with lock:
        # Another process may be building the same key: wait for it, then use its library.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            if on_build is not None:
                on_build()
            _build(cc, program, folder)
    return target


def _build(cc: list[str], program: Path, folder: Path) -> None:
    """Compile every source into objects, link them, and move the library into ``folder``."""
    import tempfile  # a build's own: a run that finds its library starts sooner without them
    from concurrent.futures import ThreadPoolExecutor

    log = folder / _LOG
    with tempfile.TemporaryDirectory(prefix="build-", dir=folder) as tmp:
        work = Path(tmp)

        def compile_one(source: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
            obj = work / f"{str(source).replace('/', '_')}.o"
            renames = [f"-D{name}=sbpf_{name}" for name in RENAMED.get(str(source), ())]
            argv = [*cc, *CFLAGS, *renames, "-c", str(source), "-o", str(obj)]
            return obj, _run(argv, program)

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            compiled = list(pool.map(compile_one, sources(program)))
        output = "".join(done.stdout + done.stderr for _, done in compiled)
        failed = [done for _, done in compiled if done.returncode != 0]
        if not failed:
            linked = work / LIBRARY
            link_flags = ["-Wl,--no-undefined"] if sys.platform.startswith("linux") else []
            objects = [str(obj) for obj, _ in compiled]
            done = _run([*cc, "-shared", *link_flags, "-o", str(linked), *objects], program)
            output += done.stdout + done.stderr
            failed = [done] if done.returncode != 0 else []
        with contextlib.suppress(OSError):
            log.write_text(output)
        if failed:
            first = next((line for line in output.splitlines() if "error" in line), "")
            raise BuildError(
                f"the C build failed ({first.strip() or f'exit {failed[0].returncode}'}); "
                f"the compiler's output is in {log}"
            )
        os.replace(linked, folder / LIBRARY)


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as exc:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: {exc.strerror}\n")


def main() -> int:
    """Build the library now (scripts/setup.sh); say where it is, or why it is not."""
    try:
        path = library()
    except BuildError as exc:
        print(f"the native forward pass is not built: {exc}; `run` uses numpy", file=sys.stderr)
        return 0
    print(f"native forward pass: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

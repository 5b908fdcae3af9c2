"""The build: reproducible bytes, the loader's strict rules, and the linker's refusals."""

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import build_program
import pytest
from sbpf_linker import SYSCALLS, link
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.transaction import Transaction

from curta_chain.errors import BuildError
from curta_chain.program import PROGRAM_BINARY, shipped_programs

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "programs"
"""Where the linker's package is: ``python -m sbpf_linker`` runs from there."""

CLANG = shutil.which("clang-14")
needs_clang = pytest.mark.skipif(
    CLANG is None, reason="clang-14 is not installed (CI installs it with apt-get install clang-14)"
)


def cflags(cpu: str) -> list[str]:
    """The build's own flags (scripts/build_program.py) for ``-mcpu=cpu`` code."""
    return [*build_program.CFLAGS, f"-mcpu={cpu}"]


CFLAGS = cflags("v2")


def compile_c(tmp_path: Path, source: str, name: str = "x", flags: list[str] = CFLAGS) -> bytes:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    obj = tmp_path / f"{name}.o"
    subprocess.run([CLANG, *flags, "-c", str(src), "-o", str(obj)], check=True, capture_output=True)
    return obj.read_bytes()


def sections(elf: bytes) -> list[dict]:
    shoff, shentsize, shnum, shstrndx = (
        struct.unpack_from("<Q", elf, 0x28)[0],
        *struct.unpack_from("<HHH", elf, 0x3A),
    )
    rows = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = elf[rows[shstrndx][4] :]
    out = []
    for r in rows:
        name = names[r[0] : names.index(b"\0", r[0])].decode()
        out.append(
            {"name": name, "type": r[1], "flags": r[2], "addr": r[3], "offset": r[4], "size": r[5]}
        )
    return out


def run(program: bytes, data: bytes = b"") -> tuple[bool, list[str], object]:
    svm = LiteSVM()
    pid = Pubkey.new_unique()
    svm.add_program(pid, program)
    payer = Keypair()
    svm.airdrop(payer.pubkey(), 10**9)
    ix = Instruction(pid, data, [])
    tx = Transaction([payer], Message([ix], payer.pubkey()), svm.latest_blockhash())
    meta = svm.send_transaction(tx)
    if hasattr(meta, "err"):
        return False, list(meta.meta().logs()), meta.err()
    return True, list(meta.logs()), None


@needs_clang
def test_rebuild_gives_the_committed_bytes(tmp_path: Path):
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_program.py"), "--out-dir", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    for program in shipped_programs():
        rebuilt = (tmp_path / program.path.name).read_bytes()
        assert rebuilt == program.elf, f"{program.name}: rerun scripts/build_program.py"


def test_shipped_program_meets_the_strict_loader_rules():
    elf = PROGRAM_BINARY.read_bytes()
    assert elf[:8] == b"\x7fELF\x02\x01\x01\x00"
    e_type, machine, _, entry = struct.unpack_from("<HHIQ", elf, 16)
    assert (e_type, machine, struct.unpack_from("<I", elf, 0x30)[0]) == (3, 247, 0)
    secs = sections(elf)
    assert secs[0]["type"] == 0
    assert [s["name"] for s in secs].count(".text") == 1
    text = next(s for s in secs if s["name"] == ".text")
    assert text["addr"] <= entry < text["addr"] + text["size"] and (entry - text["addr"]) % 8 == 0
    last_end = 0
    for s in secs[1:]:
        assert len(s["name"]) <= 15
        assert not s["flags"] & 0x1, f"{s['name']} is writable"
        if s["flags"] & 0x2:
            assert s["addr"] == s["offset"], s["name"]
        assert s["offset"] >= last_end, "sections overlap or are out of order"
        last_end = s["offset"] + s["size"]
    dynsym = next(s for s in secs if s["name"] == ".dynsym")
    dynstr = next(s for s in secs if s["name"] == ".dynstr")
    strings = elf[dynstr["offset"] : dynstr["offset"] + dynstr["size"]]
    names = set()
    for off in range(dynsym["offset"] + 24, dynsym["offset"] + dynsym["size"], 24):
        start = struct.unpack_from("<I", elf, off)[0]
        names.add(strings[start : strings.index(b"\0", start)].decode())
    assert names - {"entrypoint"} <= SYSCALLS
    assert {"sol_log_", "sol_sha256", "sol_memcpy_"} <= names

    # What the loader does to calls: imm -1 must carry a syscall relocation, any other imm
    # is a pc-relative call that must land inside .text.
    reldyn = next(s for s in secs if s["name"] == ".rel.dyn")
    relocated = set()
    for off in range(reldyn["offset"], reldyn["offset"] + reldyn["size"], 16):
        r_offset, r_info = struct.unpack_from("<QQ", elf, off)
        assert r_info & 0xFFFFFFFF == 10
        assert elf[r_offset] == 0x85 and struct.unpack_from("<i", elf, r_offset + 4)[0] == -1
        relocated.add(r_offset)
    n_insns = text["size"] // 8
    pc = 0
    while pc < n_insns:
        at = text["offset"] + pc * 8
        opcode = elf[at]
        assert opcode & 0x07 != 0x06, f"JMP32 at pc {pc}"
        if opcode == 0x85:
            imm = struct.unpack_from("<i", elf, at + 4)[0]
            if imm == -1:
                assert at in relocated, f"unresolved call at pc {pc}"
            else:
                assert 0 <= pc + 1 + imm < n_insns, f"call out of .text at pc {pc}"
        pc += 2 if opcode == 0x18 else 1


@needs_clang
def test_linked_program_with_rodata_pointer_tables_and_calls_across_objects(tmp_path: Path):
    a = compile_c(
        tmp_path,
        """
        typedef unsigned long u64;
        extern void sol_log_(const char *, u64);
        u64 twice(u64 x);
        static const char *const words[] = {"zero", "one!", "two?"};
        static const u64 weights[4] = {7, 11, 13, 17};
        u64 entrypoint(const unsigned char *input) {
          u64 n = *(const u64 *)input;  /* 0 accounts */
          const unsigned char *data = input + 16;
          sol_log_(words[data[0] % 3], 4);
          return twice(weights[data[1] & 3]) + n;
        }
        """,
        "a",
    )
    b = compile_c(tmp_path, "unsigned long twice(unsigned long x) { return 2 * x + 1; }", "b")
    ok, logs, err = run(link([a, b], ["a.o", "b.o"]), bytes([2, 3]))
    assert not ok and "Program log: two?" in logs
    assert "Custom(35)" in str(err)  # 2 * 17 + 1


@needs_clang
def test_undefined_function_is_refused_by_name(tmp_path: Path):
    obj = compile_c(
        tmp_path,
        "void not_a_syscall(void); unsigned long entrypoint(void) { not_a_syscall(); return 0; }",
    )
    with pytest.raises(BuildError, match=r"undefined symbol 'not_a_syscall'"):
        link([obj], ["x.o"])


@needs_clang
def test_undefined_data_is_refused_by_name(tmp_path: Path):
    obj = compile_c(
        tmp_path, "extern const char table[]; unsigned long entrypoint(void) { return table[3]; }"
    )
    with pytest.raises(BuildError, match=r"undefined symbol 'table'"):
        link([obj], ["x.o"])


@needs_clang
@pytest.mark.parametrize("kind", [3, 99])
def test_unknown_relocation_kind_is_refused(tmp_path: Path, kind: int):
    obj = bytearray(
        compile_c(
            tmp_path,
            'static const char s[] = "hi";'
            "unsigned long entrypoint(void) { return (unsigned long)s; }",
        )
    )
    rel = next(s for s in sections(bytes(obj)) if s["name"] == ".rel.text")
    info_at = rel["offset"] + 8
    struct.pack_into("<I", obj, info_at, kind)  # the low half of r_info is the kind
    with pytest.raises(BuildError, match=rf"unknown relocation kind {kind}"):
        link([bytes(obj)], ["x.o"])


@needs_clang
@pytest.mark.parametrize(
    ("source", "flags", "match"),
    [
        (
            "static unsigned long n; unsigned long entrypoint(void) { return n++; }",
            CFLAGS,
            "writable section .bss",
        ),
        (
            "unsigned long n = 4; unsigned long entrypoint(void) { return n++; }",
            CFLAGS,
            "writable section .data",
        ),
        (
            "unsigned long f(unsigned long x) { return x + 1; }"
            "unsigned long entrypoint(void) { return f(2); }",
            [*CFLAGS, "-ffunction-sections"],
            "exactly one executable section",
        ),
        (
            "unsigned long entrypoint(const unsigned int *p) { return p[0] < p[1]; }",
            cflags("v3"),
            "JMP32",
        ),
        ("unsigned long main(void) { return 0; }", CFLAGS, "no global function named 'entrypoint'"),
    ],
)
def test_objects_the_loader_would_reject_are_refused(tmp_path: Path, source, flags, match):
    obj = compile_c(tmp_path, source, flags=flags)
    with pytest.raises(BuildError, match=match):
        link([obj], ["x.o"])


@needs_clang
def test_symbol_defined_twice_is_refused(tmp_path: Path):
    a = compile_c(tmp_path, "unsigned long entrypoint(void) { return 0; }", "a")
    b = compile_c(tmp_path, "unsigned long entrypoint(void) { return 1; }", "b")
    with pytest.raises(BuildError, match="defined twice"):
        link([a, b], ["a.o", "b.o"])


def test_non_bpf_input_is_refused():
    with pytest.raises(BuildError, match="not an ELF"):
        link([b"hello"], ["hello.txt"])
    with pytest.raises(BuildError, match="BPF relocatable"):
        link([PROGRAM_BINARY.read_bytes()], ["curta.so"])
    with pytest.raises(BuildError, match="no objects"):
        link([], [])


def test_build_without_clang_says_what_to_install(tmp_path: Path):
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "build_program.py"),
            "--out-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path)},
    )
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == "error: clang-14 not found: install clang-14 (apt-get install clang-14)"
    )
    assert not list(tmp_path.iterdir())


@needs_clang
def test_linker_command_line(tmp_path: Path):
    good = tmp_path / "good.o"
    good.write_bytes(compile_c(tmp_path, "unsigned long entrypoint(void) { return 0; }", "good"))
    bad = tmp_path / "bad.o"
    bad.write_bytes(
        compile_c(
            tmp_path, "void nope(void); unsigned long entrypoint(void) { nope(); return 0; }", "bad"
        )
    )
    linker = [sys.executable, "-m", "sbpf_linker"]
    out = tmp_path / "good.so"
    subprocess.run([*linker, str(out), str(good)], check=True, cwd=PROGRAMS)
    ok, _, err = run(out.read_bytes())
    assert ok, err
    done = subprocess.run(
        [*linker, str(tmp_path / "bad.so"), str(bad)], capture_output=True, text=True, cwd=PROGRAMS
    )
    assert done.returncode == 1 and "undefined symbol 'nope'" in done.stderr
    assert not (tmp_path / "bad.so").exists()
    assert subprocess.run(linker, capture_output=True, cwd=PROGRAMS).returncode == 2
    missing = subprocess.run(
        [*linker, str(out), str(tmp_path / "none.o")], capture_output=True, text=True, cwd=PROGRAMS
    )
    assert missing.returncode == 1 and "none.o: No such file" in missing.stderr

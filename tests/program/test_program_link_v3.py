"""The SBPF v3 link: SIMD-0189's layout, static syscalls, and what clang's v3 code may do.

Programs linked here run in npm litesvm 1.5 (Agave 4.3), the runtime that has the v3 of
solana-sbpf 0.23; the same sources linked as v0 run in solders' LiteSVM for comparison.
"""

import hashlib
import struct
import subprocess
import sys
from pathlib import Path

import build_program
import pytest
from runtimes import Outcome, Runtime, Session
from sbpf_linker import SBPF_V0, SBPF_V3, SYSCALLS, link, murmur3_32, relocate
from sbpf_linker.alu32 import check_upper_halves
from solders.instruction import Instruction
from solders.pubkey import Pubkey
from test_program_build import CFLAGS, PROGRAMS, cflags, compile_c, needs_clang, run, sections

from curta_chain.errors import BuildError
from curta_chain.program import BUILDS, shipped_program, shipped_program_for, shipped_programs

V3_CFLAGS = cflags("v3")
TEXT_VADDR = 1 << 32


def run_v3(runtime: Runtime, program: bytes, data: bytes = b"") -> Outcome:
    program_id = Pubkey.new_unique()
    runtime.add_program(program_id, program)
    return Session(runtime).send([Instruction(program_id, data, [])])


def test_murmur3_gives_the_loaders_syscall_keys():
    # SIMD-0178's example (abort) and keys the v0 loader writes (SBPF-NOTES section 4).
    assert murmur3_32(b"abort") == 0xB6FC1A11
    assert murmur3_32(b"sol_log_") == 0x207559BD
    assert murmur3_32(b"sol_sha256") == 0x11F49D86
    assert murmur3_32(b"sol_memcpy_") == 0x717CC4A3
    assert murmur3_32(b"entrypoint") == 0x71E3CF81
    assert murmur3_32(b"") == 0


def test_shipped_v3_meets_simd_0189_and_the_local_verifier():
    elf = shipped_program("sbpf-v3").elf
    ident, _, machine, version, entry, phoff = struct.unpack_from("<16sHHIQQ", elf)
    flags, ehsize, phentsize, phnum = struct.unpack_from("<IHHH", elf, 0x30)
    assert ident == b"\x7fELF\x02\x01\x01" + bytes(9)
    assert (machine, version, phoff, flags, ehsize, phentsize, phnum) == (247, 1, 64, 3, 64, 56, 2)
    headers = [struct.unpack_from("<IIQQQQQQ", elf, 64 + 56 * i) for i in range(2)]
    expected_offset = 64 + 2 * 56
    for (p_type, p_flags, offset, vaddr, paddr, filesz, memsz, _), (flags_, vaddr_) in zip(
        headers, [(4, 0), (1, TEXT_VADDR)], strict=True
    ):
        assert (p_type, p_flags, vaddr, paddr) == (1, flags_, vaddr_, vaddr_)
        assert offset == expected_offset and offset % 8 == 0 and filesz % 8 == 0
        assert filesz == memsz and offset + filesz <= len(elf)
        expected_offset += filesz
    rodata_off = headers[0][2]
    text_off, text_size = headers[1][2], headers[1][5]
    assert elf[rodata_off : rodata_off + 8] == bytes(8), "no object at NULL"
    assert TEXT_VADDR <= entry < TEXT_VADDR + text_size and entry % 8 == 0
    names = {s["name"] for s in sections(elf)}
    assert names == {"", ".rodata", ".text", ".shstrtab"}, "no relocations, no dynamic table"

    keys = {murmur3_32(name.encode()) for name in SYSCALLS}
    text = elf[text_off : text_off + text_size]
    pc, n = 0, text_size // 8
    calls = {0: 0, 1: 0}
    while pc < n:
        opcode, regs, _, imm = struct.unpack_from("<BBhi", text, pc * 8)
        if opcode == 0x85:  # call: a static syscall (source 0) or a pc-relative call (1)
            source = regs >> 4
            calls[source] += 1
            if source == 0:
                assert imm & 0xFFFFFFFF in keys, f"unregistered syscall at pc {pc}"
            else:
                assert source == 1 and imm != -1 and 0 <= pc + 1 + imm < n, f"call at pc {pc}"
        pc += 2 if opcode == 0x18 else 1
    assert calls[0] and calls[1]


def test_shipped_builds_are_the_packaged_files():
    programs = shipped_programs()
    assert [(p.name, p.sbpf_version) for p in programs] == [("sbpf-v0", 0), ("sbpf-v3", 3)]
    for program in programs:
        assert struct.unpack_from("<I", program.elf, 0x30)[0] == program.sbpf_version
        assert program.sha256 == hashlib.sha256(program.path.read_bytes()).hexdigest()
        # The upgradeable loader pads program data with zeros up to its maximum length.
        assert shipped_program_for(program.elf) == program
        assert shipped_program_for(program.elf + bytes(4096)) == program
        assert shipped_program_for(program.elf + b"\x01") is None
        assert shipped_program_for(program.elf[:-1]) is None
    assert shipped_program_for(b"") is None
    with pytest.raises(KeyError):
        shipped_program("sbpf-v9")


PROGRAM_A = """
typedef unsigned long u64;
extern void sol_log_(const char *, u64);
u64 twice(u64 x);
static u64 thrice(u64 x) { return 3 * x; }
static const char *const words[] = {"zero", "one!", "two?", "3333"};
static const u64 weights[4] = {7, 11, 13, 17};
static u64 (*const ops[2])(u64) = {twice, thrice};
u64 entrypoint(const unsigned char *input) {
  const unsigned char *data = input + 16;  /* no accounts: count, data length, data */
  sol_log_(words[data[0] & 3], 4);
  return ops[data[2] & 1](weights[data[1] & 3]);
}
"""


@needs_clang
def test_v3_link_runs_tables_calls_across_objects_and_callx(tmp_path: Path, node_all: Runtime):
    results = {}
    for version, flags in ((SBPF_V0, CFLAGS), (SBPF_V3, V3_CFLAGS)):
        a = compile_c(tmp_path, PROGRAM_A, f"a{version}", flags)
        b = compile_c(
            tmp_path,
            "unsigned long twice(unsigned long x) { return 2 * x + 1; }",
            f"b{version}",
            flags,
        )
        program = link([a, b], ["a.o", "b.o"], version)
        assert struct.unpack_from("<I", program, 0x30)[0] == version
        for data, expected in ((bytes([2, 3, 0]), 35), (bytes([1, 1, 1]), 33)):
            if version == SBPF_V0:
                ok, logs, err = run(program, data)
                results[(version, data)] = (ok, f"Custom({expected})" in str(err), logs[1])
            else:
                outcome = run_v3(node_all, program, data)
                results[(version, data)] = (outcome.ok, outcome.code == expected, outcome.logs[1])
    assert results[(SBPF_V3, bytes([2, 3, 0]))] == (False, True, "Program log: two?")
    assert results[(SBPF_V3, bytes([1, 1, 1]))] == (False, True, "Program log: one!")
    for (_, data), result in results.items():
        assert result == results[(SBPF_V3, data)]


SIGN_EXTENDED = """
typedef unsigned long u64; typedef unsigned int u32;
u64 identity(u64 x);
u64 entrypoint(const unsigned char *input) {
  u32 a = *(const u32 *)(input + 16), b = *(const u32 *)(input + 20);
  return identity((u64)(a + b)) == 0x80000000UL ? 7 : 9;  /* (u64) of a u32: zero-extended */
}
"""
IDENTITY = "unsigned long identity(unsigned long x) { return x; }"
COMPARED_32 = """
unsigned int below(unsigned int a, unsigned int b) { return a + b < b; } /* 32-bit use only */
"""


@needs_clang
def test_a_sign_extended_half_read_as_64_bits_is_refused_and_would_be_wrong(
    tmp_path: Path, node_all: Runtime, monkeypatch
):
    data = struct.pack("<II", 0x7FFF_FFFF, 1)  # a + b = 0x8000_0000: bit 31 set
    v2 = [compile_c(tmp_path, SIGN_EXTENDED, "s2"), compile_c(tmp_path, IDENTITY, "i2")]
    v3 = [
        compile_c(tmp_path, SIGN_EXTENDED, "s3", V3_CFLAGS),
        compile_c(tmp_path, IDENTITY, "i3", V3_CFLAGS),
    ]
    with pytest.raises(BuildError, match=r"sign extension SBPF v3 gives the add32 at \.text\+0x"):
        link(v3, ["s.o", "i.o"], SBPF_V3)
    # C says 7: the v0 build (no ALU32) and the v3 build of -mcpu=v2 code agree.
    assert "Custom(7)" in str(run(link(v2, ["s.o", "i.o"], SBPF_V0), data)[2])
    assert run_v3(node_all, link(v2, ["s.o", "i.o"], SBPF_V3), data).code == 7
    # Without the check, clang's v3 code returns 9 on SBPF v3: the hazard is real.
    monkeypatch.setattr(relocate, "check_upper_halves", lambda *args: None)
    assert run_v3(node_all, link(v3, ["s.o", "i.o"], SBPF_V3), data).code == 9


@needs_clang
def test_v3_link_of_a_narrow_use_passes_the_check(tmp_path: Path):
    # A 32-bit add whose result is only stored as 32 bits: clang's v3 code is exact.
    source = """
    typedef unsigned long u64; typedef unsigned int u32;
    u64 entrypoint(unsigned char *input) {
      u32 *count = (u32 *)(input + 16);
      *count += 1;
      return 0;
    }
    """
    program = link([compile_c(tmp_path, source, "narrow", V3_CFLAGS)], ["narrow.o"], SBPF_V3)
    text_off, text_size = struct.unpack_from("<Q24xQ", program, 64 + 56 + 8)
    opcodes = program[text_off : text_off + text_size : 8]
    assert {0x04, 0x0C} & set(opcodes), "the 32-bit add is there"


def test_unknown_sbpf_version_is_refused():
    with pytest.raises(BuildError, match="SBPF version 2"):
        link([b"x"], ["x.o"], 2)


@needs_clang
def test_linker_command_line_writes_v3(tmp_path: Path, node_all: Runtime):
    obj = tmp_path / "good.o"
    obj.write_bytes(compile_c(tmp_path, "unsigned long entrypoint(void) { return 5; }", "good"))
    out = tmp_path / "good.so"
    linker = [sys.executable, "-m", "sbpf_linker"]
    subprocess.run([*linker, "--sbpf-version", "3", str(out), str(obj)], check=True, cwd=PROGRAMS)
    assert struct.unpack_from("<I", out.read_bytes(), 0x30)[0] == 3
    assert run_v3(node_all, out.read_bytes()).code == 5
    done = subprocess.run(
        [*linker, "--sbpf-version", "2", str(out), str(obj)], capture_output=True, cwd=PROGRAMS
    )
    assert done.returncode == 2


@needs_clang
def test_the_v3_build_compiles_only_the_refused_source_with_v2(
    tmp_path: Path, node_all: Runtime, monkeypatch, capsys
):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_text(SIGN_EXTENDED)
    (tmp_path / "src" / "b.c").write_text(IDENTITY)
    (tmp_path / "src" / "c.c").write_text(COMPARED_32)
    script = build_program
    monkeypatch.setattr(script, "PROGRAM_DIR", tmp_path)
    program, cpu = script.build_one(next(b for b in BUILDS if b.sbpf_version == SBPF_V3))
    assert cpu == "v3, v2 for src/a.c" and struct.unpack_from("<I", program, 0x30)[0] == SBPF_V3
    assert capsys.readouterr().err.startswith("curta_v3.so: src/a.c: -mcpu=v3: .text+0x")
    data = struct.pack("<II", 0x7FFF_FFFF, 1)  # bit 31 of the sum set: v2 code gets it right
    assert run_v3(node_all, program, data).code == 7
    assert script.build_one(next(b for b in BUILDS if b.sbpf_version == SBPF_V0))[1] == "v2"


def insn(opcode: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", opcode, src << 4 | dst, off, imm)


ADD32 = insn(0x0C, 1, 2)  # w1 += w2: SBPF v3 sign-extends the result
EXIT = insn(0x95)
SOL_LOG = insn(0x85, imm=murmur3_32(b"sol_log_"))


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        ([ADD32, insn(0x63, 10, 1, -8), insn(0xB7, 0), EXIT], None),  # 4-byte store
        ([ADD32, insn(0xBC, 1, 1), insn(0xBF, 0, 1), EXIT], None),  # w1 = w1 zero-extends
        ([ADD32, insn(0x1E, 1, 2, 0), insn(0xB7, 0), EXIT], None),  # 32-bit comparison
        ([ADD32, insn(0xBF, 3, 1), insn(0xB7, 0), EXIT], None),  # copied, never read
        ([ADD32, insn(0x7B, 10, 1, -8), insn(0xB7, 0), EXIT], "an 8-byte store"),
        ([ADD32, insn(0x1D, 1, 2, 0), insn(0xB7, 0), EXIT], "a 64-bit comparison"),
        ([ADD32, insn(0x71, 0, 1), EXIT], "a load's address"),
        ([ADD32, insn(0xBF, 0, 1), EXIT], "the entrypoint's return value"),
        ([insn(0x04, 2, 0, 0, 1), SOL_LOG, insn(0xB7, 0), EXIT], "a syscall argument"),
        ([insn(0x04, 3, 0, 0, 1), SOL_LOG, insn(0xB7, 0), EXIT], None),  # sol_log_ reads r1, r2
    ],
)
def test_the_upper_half_check_on_hand_written_bytecode(body, refused):
    text = b"".join(body)
    keys = {murmur3_32(b"sol_log_"): 2}
    if refused is None:
        check_upper_halves(text, 0, keys, "x.o")
    else:
        with pytest.raises(BuildError, match=f"{refused} reads r"):
            check_upper_halves(text, 0, keys, "x.o")


def test_the_check_follows_a_tainted_result_through_a_call_and_back():
    # entry: w1 += w2; call f; r0 += 1 (64-bit); exit.  f: r0 = r1; exit.
    body = [ADD32, insn(0x85, src=1, imm=2), insn(0x07, 0, 0, 0, 1), EXIT, insn(0xBF, 0, 1), EXIT]
    with pytest.raises(BuildError, match=r"\.text\+0x10: a 64-bit operation reads r0"):
        check_upper_halves(b"".join(body), 0, {}, "x.o")


@needs_clang
def test_an_ebpf_helper_call_is_refused_in_v3(tmp_path: Path):
    # `call 7` with source 0: an eBPF helper to clang, an unregistered syscall to SBPF v3.
    source = "unsigned long entrypoint(void) { return ((unsigned long (*)(void))7)(); }"
    with pytest.raises(BuildError, match=r"\.text\+0x0: call 7 is neither a registered syscall"):
        link([compile_c(tmp_path, source)], ["x.o"], SBPF_V3)

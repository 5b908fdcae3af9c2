"""Link clang-14 ``-target bpf`` relocatable objects into an SBPF v0 or v3 program.

Upstream ld.lld refuses BPF relocations in shared output, and no Solana toolchain can be
installed here, so this module does the one job the loader needs: it takes the ELF64
relocatable objects clang wrote (one per C file) and writes one ET_DYN ELF for the SBPF
version asked, to the deployment loader's strict rules. Both versions share the input side:
exactly one ``.text``; every ``.rodata*`` input merged into one read-only block; no writable
section (``.data``/``.bss`` with content stop the link); data addresses in ``lddw``, local
calls and pointer tables in ``.rodata`` resolved here. The output holds no timestamp or
path: the same objects give the same bytes.

**SBPF v0** (``e_flags`` 0; solana-sbpf ``src/elf.rs`` ``load_with_lenient_parser``,
``relocate``): the read-only region maps file offset X at ``0x1_0000_0000 + X``, so every
mapped section has ``sh_addr == sh_offset``; section names are at most 15 bytes and symbol
names at most 63. Syscalls are left to the loader: their ``call`` keeps ``imm = -1`` and
gets an ``R_BPF_64_32`` dynamic relocation against a name agave registers (the loader
treats any other ``imm`` as a pc-relative call). JMP32 instructions are refused: v0's
verifier rejects the class.

**SBPF v3** (``e_flags`` 3; SIMD-0178 static syscalls, SIMD-0189 stricter ELF headers,
SIMD-0377 eBPF ISA compatibility; solana-sbpf 0.23 ``src/elf.rs``
``load_with_strict_parser``, ``src/program.rs`` ``SBPFVersion``, ``src/interpreter.rs``):

* the program headers follow the ELF header at offset 64 and are exactly two ``PT_LOAD``
  entries: read-only data (``PF_R``, vaddr 0) starting right after the program-header
  table, then the bytecode (``PF_X``, vaddr ``1 << 32``) right after it; offsets and sizes
  multiples of 8, ``p_filesz == p_memsz``; ``e_machine`` EM_BPF, ``e_entry`` inside the
  bytecode. Nothing is relocated at load time: no ``.dynamic``, ``.dynsym``, ``.rel.dyn``.
  Section headers are ignored by the loader; we still write ``.rodata``, ``.text`` and
  ``.shstrtab`` so that readelf and objdump read the file.
* ``lddw`` holds the final address: read-only data at its offset in the read-only segment,
  code at ``(1 << 32) + 8 * pc``. The first 8 bytes of the read-only segment are zero and
  hold no object, so no C object has the address NULL (0).
* a syscall is ``call`` with source register 0 and the murmur3-32 hash of its name as
  immediate (``ebpf::hash_symbol_name``); a local call is ``call`` with source 1 and a
  pc-relative immediate (never -1: the ``LocalVerifier`` refuses it); ``callx`` names its
  register in the destination field (clang-14 puts it in the immediate, as v0 wants).
* JMP32 is allowed. ALU32 ``add``/``sub``/``mul`` results are sign-extended to 64 bits
  (``Interpreter::sign_extension``; only v2 zero-extends), while clang's ``-mcpu=v3``
  code assumes eBPF's zero extension, so ``sbpf_alu32.check_upper_halves`` proves that no
  such upper half is ever read as 64 bits before the link succeeds.

Usage: ``python sbpf_link.py [--sbpf-version 0|3] output.so input.o [input.o ...]``.
"""

from __future__ import annotations

import argparse
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sbpf_alu32 import SignExtensionError, check_upper_halves

from curta_chain.errors import BuildError, InputError
from curta_chain.fsutil import atomic_write

SBPF_V0, SBPF_V3 = 0, 3
"""The SBPF versions this linker writes; each is the ``e_flags`` value of its ELF."""
SBPF_VERSIONS = (SBPF_V0, SBPF_V3)

MM_RODATA_START = 0x1_0000_0000
"""v0: where the loader maps file offset 0 of the read-only region."""
MM_BYTECODE_START = 0x1_0000_0000
"""v3: the virtual address of the bytecode segment's first instruction."""
V3_RODATA_GUARD = 8
"""v3: zero bytes at read-only address 0, so that no object has the address NULL."""

# ELF constants used here (System V gABI; EM_BPF from the Linux ABI).
ET_REL, ET_DYN = 1, 3
EM_BPF = 247
SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA = 0, 1, 2, 3, 4
SHT_DYNAMIC, SHT_NOBITS, SHT_REL, SHT_DYNSYM = 6, 8, 9, 11
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHN_UNDEF = 0
STB_GLOBAL = 1
STT_NOTYPE, STT_FUNC = 0, 2
PT_LOAD, PT_DYNAMIC = 1, 2
PF_X, PF_R = 1, 4
DT_NULL, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT = 0, 5, 6, 10, 11
DT_REL, DT_RELSZ, DT_RELENT = 17, 18, 19

R_BPF_NONE = 0
R_BPF_64_64 = 1
R_BPF_64_ABS64 = 2
R_BPF_64_32 = 10
RELOCATION_NAMES = {
    0: "R_BPF_NONE",
    1: "R_BPF_64_64",
    2: "R_BPF_64_ABS64",
    3: "R_BPF_64_ABS32",
    4: "R_BPF_64_NODYLD32",
    8: "R_BPF_64_RELATIVE",
    10: "R_BPF_64_32",
}

OPCODE_LDDW = 0x18
OPCODE_CALL = 0x85
OPCODE_CALLX = 0x8D
BPF_CLASS_JMP32 = 0x06
CALL_SOURCE_LOCAL = 1
"""v3: ``call`` with source register 1 is a pc-relative call inside the program."""

MAX_SECTION_NAME = 15
MAX_SYMBOL_NAME = 63

SYSCALL_ARGUMENTS = {
    "abort": 0,
    "sol_panic_": 4,
    "sol_log_": 2,
    "sol_log_64_": 5,
    "sol_log_compute_units_": 0,
    "sol_log_pubkey": 1,
    "sol_log_data": 2,
    "sol_sha256": 3,
    "sol_keccak256": 3,
    "sol_secp256k1_recover": 4,
    "sol_memcpy_": 3,
    "sol_memmove_": 3,
    "sol_memset_": 3,
    "sol_memcmp_": 4,
    "sol_create_program_address": 4,
    "sol_try_find_program_address": 5,
    "sol_invoke_signed_c": 5,
    "sol_invoke_signed_rust": 5,
    "sol_get_clock_sysvar": 1,
    "sol_get_rent_sysvar": 1,
    "sol_get_epoch_schedule_sysvar": 1,
    "sol_set_return_data": 2,
    "sol_get_return_data": 3,
    "sol_get_stack_height": 0,
    "sol_get_processed_sibling_instruction": 5,
}
"""Syscalls agave registers with no feature gate (2.2 and 4.3 alike), so a deploy finds them,
with the number of argument registers (r1..) each reads (its C signature).

Feature-gated ones (sol_blake3, sol_get_sysvar, ...) and sol_alloc_free_ (refused at deploy)
are left out on purpose.
"""
SYSCALLS = frozenset(SYSCALL_ARGUMENTS)

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")
_SYM = struct.Struct("<IBBHQQ")
_REL = struct.Struct("<QQ")
_DYN = struct.Struct("<qQ")


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 (x86, 32-bit): the key of a syscall, ``murmur3_32(name)`` with seed 0.

    solana-sbpf ``ebpf::hash_symbol_name`` hashes the name's bytes this way; SIMD-0178
    gives ``abort`` = 0xb6fc1a11 as its example.
    """
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF

    def scramble(k: int) -> int:
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        return (k * c2) & mask

    h = seed
    body = len(data) // 4 * 4
    for i in range(0, body, 4):
        h ^= scramble(int.from_bytes(data[i : i + 4], "little"))
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    if body < len(data):
        h ^= scramble(int.from_bytes(data[body:], "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    return h ^ (h >> 16)


@dataclass
class _Section:
    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int


@dataclass
class _Symbol:
    name: str
    info: int
    shndx: int
    value: int


@dataclass
class _Object:
    data: bytes
    sections: list[_Section]
    symbols: list[_Symbol] = field(default_factory=list)

    def content(self, section: _Section) -> bytes:
        if section.type == SHT_NOBITS:
            return bytes(section.size)
        return self.data[section.offset : section.offset + section.size]


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def _parse_object(data: bytes, origin: str) -> _Object:
    if len(data) < _EHDR.size or data[:4] != b"\x7fELF":
        raise BuildError(f"{origin}: not an ELF file")
    ident, e_type, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx = (
        _EHDR.unpack_from(data)
    )
    if ident[4] != 2 or ident[5] != 1:
        raise BuildError(f"{origin}: expected a 64-bit little-endian ELF")
    if e_type != ET_REL or machine != EM_BPF:
        raise BuildError(
            f"{origin}: expected a BPF relocatable object (e_type 1, e_machine 247), "
            f"got e_type {e_type}, e_machine {machine}"
        )
    if shentsize != _SHDR.size or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        raise BuildError(f"{origin}: section header table is malformed")
    raw = [_SHDR.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    names_hdr = raw[shstrndx]
    names = data[names_hdr[4] : names_hdr[4] + names_hdr[5]]
    sections = [
        _Section(i, _cstr(names, r[0]), r[1], r[2], r[4], r[5], r[6], r[7], r[8], r[9])
        for i, r in enumerate(raw)
    ]
    obj = _Object(data, sections)
    symtabs = [s for s in sections if s.type == SHT_SYMTAB]
    if symtabs:
        symtab = symtabs[0]
        strtab = obj.content(sections[symtab.link])
        body = obj.content(symtab)
        for off in range(0, len(body) - _SYM.size + 1, _SYM.size):
            name, info, _, shndx, value, _ = _SYM.unpack_from(body, off)
            obj.symbols.append(_Symbol(_cstr(strtab, name), info, shndx, value))
    return obj


def _align(value: int, alignment: int) -> int:
    alignment = max(alignment, 1)
    return (value + alignment - 1) // alignment * alignment


@dataclass
class _Piece:
    """One kept input section and where it lands in the output file."""

    obj: int
    section: _Section
    offset: int


@dataclass
class _Layout:
    """Where every kept input section of every object lands, and the segments' addresses.

    ``text_off``/``rodata_off`` are file offsets of the two blocks; ``text_vaddr`` and
    ``rodata_vaddr`` are the virtual addresses the program sees at those offsets. In v3 the
    read-only block starts with ``V3_RODATA_GUARD`` zero bytes (``rodata_off`` is the
    segment's start, the guard included).
    """

    version: int
    text: list[_Piece] = field(default_factory=list)
    rodata: list[_Piece] = field(default_factory=list)
    text_off: int = 0
    text_size: int = 0
    rodata_off: int = 0
    rodata_size: int = 0
    text_vaddr: int = 0
    rodata_vaddr: int = 0

    def vaddr(self, offset: int, is_code: bool) -> int:
        """The virtual address of the byte at file offset ``offset``."""
        if is_code:
            return self.text_vaddr + offset - self.text_off
        return self.rodata_vaddr + offset - self.rodata_off


def _kept_sections(obj: _Object, origin: str) -> tuple[_Section, list[_Section]]:
    """The object's one .text and its .rodata* sections, after refusing what cannot load."""
    texts: list[_Section] = []
    rodata: list[_Section] = []
    for sec in obj.sections:
        if not sec.flags & SHF_ALLOC:
            continue  # debug info, BTF, address-significance tables: not mapped, dropped
        if sec.flags & SHF_EXECINSTR:
            texts.append(sec)
        elif sec.flags & SHF_WRITE:
            if sec.size:
                raise BuildError(
                    f"{origin}: writable section {sec.name} ({sec.size} bytes): SBPF has no "
                    "mutable globals; use the stack, the heap or account data"
                )
        elif sec.name == ".rodata" or sec.name.startswith(".rodata."):
            if sec.size:
                rodata.append(sec)
        elif sec.size:
            raise BuildError(f"{origin}: section {sec.name} cannot be mapped by the SBPF loader")
    if len(texts) != 1 or texts[0].name != ".text":
        found = ", ".join(s.name for s in texts) or "none"
        raise BuildError(
            f"{origin}: expected exactly one executable section named .text, found {found} "
            "(compile without -ffunction-sections)"
        )
    return texts[0], rodata


def _place_text(layout: _Layout, kept: list[tuple[_Section, list[_Section]]], start: int) -> int:
    offset = layout.text_off = start
    for i, (text, _) in enumerate(kept):
        offset = _align(offset, 8)
        layout.text.append(_Piece(i, text, offset))
        offset += text.size
    layout.text_size = offset - start
    return offset


def _place_rodata(layout: _Layout, kept: list[tuple[_Section, list[_Section]]], start: int) -> int:
    """Lay the .rodata* inputs out from ``start`` (already aligned for all of them)."""
    offset = start
    for i, (_, rodata) in enumerate(kept):
        for sec in rodata:
            offset = _align(offset, sec.align)
            layout.rodata.append(_Piece(i, sec, offset))
            offset += sec.size
    return offset


def _plan(objects: list[_Object], origins: list[str], version: int) -> _Layout:
    layout = _Layout(version)
    kept = [_kept_sections(obj, origin) for obj, origin in zip(objects, origins, strict=True)]
    rodata_align = max([8, *(sec.align for _, rodata in kept for sec in rodata)])
    if version == SBPF_V0:
        # Text, then rodata, each mapped at 0x1_0000_0000 + its file offset.
        n_phdrs = 4 if any(rodata for _, rodata in kept) else 3
        end = _place_text(layout, kept, _align(_EHDR.size + n_phdrs * _PHDR.size, 8))
        layout.rodata_off = _align(end, rodata_align)
        layout.rodata_size = _place_rodata(layout, kept, layout.rodata_off) - layout.rodata_off
        layout.text_vaddr = MM_RODATA_START + layout.text_off
        layout.rodata_vaddr = MM_RODATA_START + layout.rodata_off
        return layout
    # v3: the read-only segment right after the two program headers, then the bytecode. The
    # segment starts at a multiple of 16 (176), so vaddr and file offset align alike up to 16.
    layout.rodata_off = _EHDR.size + 2 * _PHDR.size
    if rodata_align > 16:
        raise BuildError(f"{', '.join(origins)}: read-only data aligned to {rodata_align} bytes")
    end = _place_rodata(layout, kept, layout.rodata_off + V3_RODATA_GUARD)
    layout.rodata_size = _align(end - layout.rodata_off, 8)
    _place_text(layout, kept, layout.rodata_off + layout.rodata_size)
    layout.rodata_vaddr = 0
    layout.text_vaddr = MM_BYTECODE_START
    return layout


def _check_v0_instructions(text: bytes, origin: str) -> None:
    pc = 0
    while pc * 8 < len(text):
        opcode = text[pc * 8]
        if opcode & 0x07 == BPF_CLASS_JMP32:
            raise BuildError(
                f"{origin}: .text+{pc * 8:#x}: JMP32 instruction (opcode {opcode:#04x}); "
                "SBPF v0 rejects it: compile with -mcpu=v2"
            )
        pc += 2 if opcode == OPCODE_LDDW else 1


def _finish_v3_calls(text: bytearray, origin: str) -> None:
    """Encode ``callx`` for v3 and apply the ``LocalVerifier``'s rules to every ``call``.

    clang-14 names a ``callx`` register in the immediate (as v0 wants); v3 reads it from the
    destination field. A ``call`` must be a registered syscall (source 0, a known key) or a
    pc-relative call (source 1, never -1): solana-sbpf ``src/verifier.rs`` ``LocalVerifier``,
    which ``solana program deploy`` runs; the deploying validator checks neither.
    """
    keys = {murmur3_32(name.encode()) for name in SYSCALLS}
    pc = 0
    while pc * 8 < len(text):
        at = pc * 8
        opcode, imm = text[at], struct.unpack_from("<i", text, at + 4)[0]
        if opcode == OPCODE_CALLX:
            if not 0 <= imm <= 9:
                raise BuildError(f"{origin}: .text+{at:#x}: callx of register {imm}")
            text[at + 1] = imm
            struct.pack_into("<i", text, at + 4, 0)
        elif opcode == OPCODE_CALL and text[at + 1] >> 4 != CALL_SOURCE_LOCAL:
            if imm & 0xFFFFFFFF not in keys:
                raise BuildError(
                    f"{origin}: .text+{at:#x}: call {imm} is neither a registered syscall nor "
                    "a function of the program (an eBPF helper call?)"
                )
        elif opcode == OPCODE_CALL and imm == -1:
            raise BuildError(f"{origin}: .text+{at:#x}: unresolved local call")
        pc += 2 if opcode == OPCODE_LDDW else 1


@dataclass
class _Linked:
    """The linked image (file offsets 0 to the end of the last block) and what it needs."""

    image: bytearray
    layout: _Layout
    entry: int
    syscall_sites: list[tuple[int, str]]

    @property
    def text(self) -> bytes:
        start = self.layout.text_off
        return bytes(self.image[start : start + self.layout.text_size])


@dataclass
class _Target:
    """Where a relocation's symbol resolved: a file offset (None when undefined)."""

    offset: int | None
    is_code: bool


class _Resolver:
    """Symbol resolution over every object: local sections first, then the global table."""

    def __init__(self, objects: list[_Object], origins: list[str], layout: _Layout) -> None:
        self.objects, self.origins = objects, origins
        self.placed = {(p.obj, p.section.index): p.offset for p in layout.text + layout.rodata}
        self.code = {(p.obj, p.section.index) for p in layout.text}
        self.globals: dict[str, tuple[int, int, int]] = {}
        for i, obj in enumerate(objects):
            for sym in obj.symbols:
                if sym.info >> 4 != STB_GLOBAL or (i, sym.shndx) not in self.placed:
                    continue
                if sym.name in self.globals:
                    raise BuildError(f"{origins[i]}: symbol {sym.name!r} is defined twice")
                self.globals[sym.name] = (self.placed[(i, sym.shndx)] + sym.value, i, sym.shndx)

    def entry(self) -> int:
        if "entrypoint" not in self.globals:
            raise BuildError(f"{', '.join(self.origins)}: no global function named 'entrypoint'")
        offset, obj, section = self.globals["entrypoint"]
        if (obj, section) not in self.code:
            raise BuildError(f"{self.origins[obj]}: 'entrypoint' is not a function in .text")
        return offset

    def target(self, obj: int, sym: _Symbol, site: str) -> _Target:
        if sym.shndx == SHN_UNDEF:
            hit = self.globals.get(sym.name)
            if hit is None:
                return _Target(None, False)
            return _Target(hit[0], (hit[1], hit[2]) in self.code)
        if (obj, sym.shndx) in self.placed:
            return _Target(self.placed[(obj, sym.shndx)] + sym.value, (obj, sym.shndx) in self.code)
        sections = self.objects[obj].sections
        sec_name = sections[sym.shndx].name if sym.shndx < len(sections) else "?"
        raise BuildError(
            f"{self.origins[obj]}: {site}: symbol {sym.name or sec_name!r} lives in section "
            f"{sec_name}, which is not linked into the program"
        )


def _relocate_call(
    image: bytearray, where: int, sym: _Symbol, target: _Target, version: int, ctx: str
) -> str | None:
    """Resolve an ``R_BPF_64_32`` call; return the syscall name when v0's loader must bind it."""
    if image[where] != OPCODE_CALL:
        raise BuildError(f"{ctx}: R_BPF_64_32 not on a call")
    if target.offset is None:
        if sym.name not in SYSCALLS:
            raise BuildError(
                f"{ctx}: undefined symbol {sym.name!r} called: neither defined in the "
                "program nor a registered syscall"
            )
        if version == SBPF_V0:
            # The loader treats any imm other than -1 as a pc-relative call.
            struct.pack_into("<i", image, where + 4, -1)
            return sym.name
        image[where + 1] = 0  # v3 static syscall: source 0, the name's hash as immediate
        struct.pack_into("<I", image, where + 4, murmur3_32(sym.name.encode()))
        return None
    if not target.is_code or (target.offset - where) % 8:
        raise BuildError(f"{ctx}: call to {sym.name!r}, which is not code")
    struct.pack_into("<i", image, where + 4, (target.offset - where) // 8 - 1)
    if version == SBPF_V3:
        image[where + 1] = CALL_SOURCE_LOCAL << 4
    return None


def _relocate_one(
    image: bytearray,
    layout: _Layout,
    where: int,
    kind: int,
    in_text: bool,
    sym: _Symbol,
    target: _Target,
    ctx: str,
) -> str | None:
    """Apply one relocation in place; return the syscall name when v0's loader must bind it.

    ``ctx`` is "<object>: <section>+<offset>" for messages.
    """
    if in_text and kind == R_BPF_64_64:
        if image[where] != OPCODE_LDDW:
            raise BuildError(f"{ctx}: R_BPF_64_64 not on an lddw")
        if target.offset is None:
            raise BuildError(f"{ctx}: undefined symbol {sym.name!r} (data)")
        addend = struct.unpack_from("<I", image, where + 4)[0]
        value = layout.vaddr(target.offset, target.is_code) + addend
        struct.pack_into("<I", image, where + 4, value & 0xFFFFFFFF)
        struct.pack_into("<I", image, where + 12, value >> 32)
        return None
    if in_text and kind == R_BPF_64_32:
        return _relocate_call(image, where, sym, target, layout.version, ctx)
    if not in_text and kind == R_BPF_64_ABS64:
        if target.offset is None:
            raise BuildError(f"{ctx}: undefined symbol {sym.name!r} (pointer)")
        addend = struct.unpack_from("<Q", image, where)[0]
        struct.pack_into("<Q", image, where, layout.vaddr(target.offset, target.is_code) + addend)
        return None
    label = RELOCATION_NAMES.get(kind, "unknown")
    raise BuildError(f"{ctx}: unknown relocation kind {kind} ({label}) against {sym.name!r}")


def _resolve(objects: list[_Object], origins: list[str], layout: _Layout) -> _Linked:
    """Copy the kept sections into place and apply every relocation."""
    end = max(layout.text_off + layout.text_size, layout.rodata_off + layout.rodata_size)
    image = bytearray(end)
    for piece in layout.text + layout.rodata:
        content = objects[piece.obj].content(piece.section)
        image[piece.offset : piece.offset + len(content)] = content
    resolver = _Resolver(objects, origins, layout)
    entry = resolver.entry()

    syscall_sites: list[tuple[int, str]] = []
    for i, obj in enumerate(objects):
        for rel_sec in obj.sections:
            if rel_sec.type == SHT_RELA:
                raise BuildError(f"{origins[i]}: {rel_sec.name}: RELA relocations are unsupported")
            if rel_sec.type != SHT_REL or (i, rel_sec.info) not in resolver.placed:
                continue
            in_text = (i, rel_sec.info) in resolver.code
            base = resolver.placed[(i, rel_sec.info)]
            body = obj.content(rel_sec)
            for off in range(0, len(body) - _REL.size + 1, _REL.size):
                r_offset, r_info = _REL.unpack_from(body, off)
                kind, sym_index = r_info & 0xFFFFFFFF, r_info >> 32
                ctx = f"{origins[i]}: {obj.sections[rel_sec.info].name}+{r_offset:#x}"
                if kind == R_BPF_NONE:
                    continue
                if sym_index >= len(obj.symbols):
                    raise BuildError(f"{ctx}: bad symbol index {sym_index}")
                sym = obj.symbols[sym_index]
                target = resolver.target(i, sym, ctx)
                where = base + r_offset
                syscall = _relocate_one(image, layout, where, kind, in_text, sym, target, ctx)
                if syscall:
                    syscall_sites.append((where, syscall))
    origin = ", ".join(origins)
    text = image[layout.text_off : layout.text_off + layout.text_size]
    if layout.version == SBPF_V0:
        _check_v0_instructions(bytes(text), origin)
    else:
        _finish_v3_calls(text, origin)
        entry_pc = (entry - layout.text_off) // 8
        arguments = {murmur3_32(name.encode()): n for name, n in SYSCALL_ARGUMENTS.items()}
        try:
            check_upper_halves(bytes(text), entry_pc, arguments, origin)
        except SignExtensionError as exc:
            exc.obj = _object_at(layout, exc.source_offset)
            raise
        image[layout.text_off : layout.text_off + layout.text_size] = text
    return _Linked(image, layout, entry, syscall_sites)


def _object_at(layout: _Layout, text_offset: int) -> int | None:
    """The index of the object whose code holds byte ``text_offset`` of the linked .text."""
    at = layout.text_off + text_offset
    for piece in layout.text:
        if piece.offset <= at < piece.offset + piece.section.size:
            return piece.obj
    return None


class _StringTable:
    def __init__(self) -> None:
        self.data = bytearray(b"\0")
        self.index: dict[str, int] = {"": 0}

    def add(self, name: str) -> int:
        if name not in self.index:
            self.index[name] = len(self.data)
            self.data += name.encode() + b"\0"
        return self.index[name]


@dataclass
class _Dynamic:
    """.dynamic, .dynsym, .dynstr and .rel.dyn, laid out from ``start`` on."""

    start: int
    dynamic: bytes
    dynsym: bytes
    dynstr: bytes
    reldyn: bytes
    dynsym_off: int
    dynstr_off: int
    reldyn_off: int

    @property
    def end(self) -> int:
        return self.reldyn_off + len(self.reldyn)


def _dynamic_tables(linked: _Linked, origin: str) -> _Dynamic:
    """v0: export ``entrypoint`` and one undefined symbol per syscall, with its call sites."""
    syscalls = sorted({name for _, name in linked.syscall_sites})
    dynstr = _StringTable()
    for name in ["entrypoint", *syscalls]:
        if len(name) > MAX_SYMBOL_NAME:
            raise BuildError(f"{origin}: symbol {name!r} is longer than {MAX_SYMBOL_NAME} bytes")
    text_shndx = 1  # .text is always the first section after the null one
    dynsym = bytearray(_SYM.size)
    dynsym += _SYM.pack(
        dynstr.add("entrypoint"), STB_GLOBAL << 4 | STT_FUNC, 0, text_shndx, linked.entry, 0
    )
    index: dict[str, int] = {}
    for name in syscalls:
        index[name] = len(dynsym) // _SYM.size
        dynsym += _SYM.pack(dynstr.add(name), STB_GLOBAL << 4 | STT_NOTYPE, 0, SHN_UNDEF, 0, 0)
    reldyn = b"".join(
        _REL.pack(offset, index[name] << 32 | R_BPF_64_32) for offset, name in linked.syscall_sites
    )

    start = _align(len(linked.image), 8)
    n_entries = 4 + (3 if reldyn else 0) + 1  # the DT_NULL terminator is the last
    dynsym_off = start + n_entries * _DYN.size
    dynstr_off = dynsym_off + len(dynsym)
    reldyn_off = _align(dynstr_off + len(dynstr.data), 8)
    entries = [
        (DT_SYMTAB, dynsym_off),
        (DT_SYMENT, _SYM.size),
        (DT_STRTAB, dynstr_off),
        (DT_STRSZ, len(dynstr.data)),
    ]
    if reldyn:  # the loader insists on DT_RELSZ > 0 whenever DT_REL is present
        entries += [(DT_REL, reldyn_off), (DT_RELSZ, len(reldyn)), (DT_RELENT, _REL.size)]
    entries.append((DT_NULL, 0))
    dynamic = b"".join(_DYN.pack(tag, value) for tag, value in entries)
    return _Dynamic(
        start,
        dynamic,
        bytes(dynsym),
        bytes(dynstr.data),
        reldyn,
        dynsym_off,
        dynstr_off,
        reldyn_off,
    )


# A section header row before packing: (name, type, flags, addr, offset, size, link, info,
# align, entsize).
_SectionRow = tuple[str, int, int, int, int, int, int, int, int, int]


def _pack_elf(
    out: bytearray,
    *,
    flags: int,
    entry: int,
    phdrs: list[tuple[int, int, int, int, int, int]],
    sections: list[_SectionRow],
    shoff: int,
    shstr: _StringTable,
) -> None:
    """Write the ELF header, the program headers and the section headers into ``out``.

    A program header is (type, flags, offset, vaddr, size, align); the contents are the
    caller's.
    """
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    _EHDR.pack_into(
        out, 0, ident, ET_DYN, EM_BPF, 1, entry, _EHDR.size, shoff, flags,
        _EHDR.size, _PHDR.size, len(phdrs), _SHDR.size, len(sections), len(sections) - 1,
    )  # fmt: skip
    for i, (p_type, p_flags, offset, vaddr, size, align) in enumerate(phdrs):
        _PHDR.pack_into(
            out, _EHDR.size + i * _PHDR.size, p_type, p_flags, offset, vaddr, vaddr, size, size,
            align,
        )  # fmt: skip
    for i, (name, s_type, s_flags, addr, offset, size, link, info, align, entsize) in enumerate(
        sections
    ):
        _SHDR.pack_into(
            out, shoff + i * _SHDR.size, shstr.index[name], s_type, s_flags, addr, offset, size,
            link, info, align, entsize,
        )  # fmt: skip


def _section_names(sections: list[_SectionRow], origin: str) -> _StringTable:
    shstr = _StringTable()
    for name in [row[0] for row in sections] + [".shstrtab"]:
        if len(name) > MAX_SECTION_NAME:
            raise BuildError(f"{origin}: section name {name} is longer than {MAX_SECTION_NAME}")
        shstr.add(name)
    return shstr


def _write_v0(linked: _Linked, origin: str) -> bytes:
    """Lay out headers, sections and program headers around the linked image (SBPF v0)."""
    dyn = _dynamic_tables(linked, origin)
    layout = linked.layout
    text_flags = SHF_ALLOC | SHF_EXECINSTR
    # Index 0 is SHT_NULL. v0: a mapped section's vaddr is its file offset.
    sections: list[_SectionRow] = [("", SHT_NULL, 0, 0, 0, 0, 0, 0, 0, 0)]
    sections.append(
        (".text", SHT_PROGBITS, text_flags, layout.text_off, layout.text_off, layout.text_size,
         0, 0, 8, 0)
    )  # fmt: skip
    if layout.rodata_size:
        sections.append(
            (".rodata", SHT_PROGBITS, SHF_ALLOC, layout.rodata_off, layout.rodata_off,
             layout.rodata_size, 0, 0, 8, 0)
        )  # fmt: skip
    dynsym_shndx, dynstr_shndx = len(sections) + 1, len(sections) + 2
    sections += [
        (".dynamic", SHT_DYNAMIC, SHF_ALLOC, dyn.start, dyn.start, len(dyn.dynamic),
         dynstr_shndx, 0, 8, 16),
        (".dynsym", SHT_DYNSYM, SHF_ALLOC, dyn.dynsym_off, dyn.dynsym_off, len(dyn.dynsym),
         dynstr_shndx, 1, 8, 24),
        (".dynstr", SHT_STRTAB, SHF_ALLOC, dyn.dynstr_off, dyn.dynstr_off, len(dyn.dynstr),
         0, 0, 1, 0),
    ]  # fmt: skip
    if dyn.reldyn:
        sections.append(
            (".rel.dyn", SHT_REL, SHF_ALLOC, dyn.reldyn_off, dyn.reldyn_off, len(dyn.reldyn),
             dynsym_shndx, 0, 8, 16)
        )  # fmt: skip
    shstr = _section_names(sections, origin)
    sections.append((".shstrtab", SHT_STRTAB, 0, 0, dyn.end, len(shstr.data), 0, 0, 1, 0))
    shoff = _align(dyn.end + len(shstr.data), 8)

    phdrs = [(PT_LOAD, PF_R | PF_X, layout.text_off, layout.text_off, layout.text_size, 4096)]
    if layout.rodata_size:
        phdrs.append(
            (PT_LOAD, PF_R, layout.rodata_off, layout.rodata_off, layout.rodata_size, 4096)
        )
    phdrs.append((PT_LOAD, PF_R, dyn.start, dyn.start, dyn.end - dyn.start, 4096))
    phdrs.append((PT_DYNAMIC, PF_R, dyn.start, dyn.start, len(dyn.dynamic), 8))
    if _EHDR.size + len(phdrs) * _PHDR.size > layout.text_off:
        raise BuildError(f"{origin}: program headers overlap .text")

    out = bytearray(shoff + len(sections) * _SHDR.size)
    out[layout.text_off : len(linked.image)] = linked.image[layout.text_off :]
    for offset, blob in [
        (dyn.start, dyn.dynamic),
        (dyn.dynsym_off, dyn.dynsym),
        (dyn.dynstr_off, dyn.dynstr),
        (dyn.reldyn_off, dyn.reldyn),
        (dyn.end, shstr.data),
    ]:
        out[offset : offset + len(blob)] = blob
    _pack_elf(
        out, flags=SBPF_V0, entry=linked.entry, phdrs=phdrs, sections=sections, shoff=shoff,
        shstr=shstr,
    )  # fmt: skip
    return bytes(out)


def _write_v3(linked: _Linked, origin: str) -> bytes:
    """Lay out the SIMD-0189 file: header, two program headers, rodata, bytecode, sections."""
    layout = linked.layout
    text_end = layout.text_off + layout.text_size
    sections: list[_SectionRow] = [
        ("", SHT_NULL, 0, 0, 0, 0, 0, 0, 0, 0),
        (".rodata", SHT_PROGBITS, SHF_ALLOC, layout.rodata_vaddr, layout.rodata_off,
         layout.rodata_size, 0, 0, 8, 0),
        (".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, layout.text_vaddr, layout.text_off,
         layout.text_size, 0, 0, 8, 0),
    ]  # fmt: skip
    shstr = _section_names(sections, origin)
    sections.append((".shstrtab", SHT_STRTAB, 0, 0, text_end, len(shstr.data), 0, 0, 1, 0))
    shoff = _align(text_end + len(shstr.data), 8)
    phdrs = [
        (PT_LOAD, PF_R, layout.rodata_off, layout.rodata_vaddr, layout.rodata_size, 8),
        (PT_LOAD, PF_X, layout.text_off, layout.text_vaddr, layout.text_size, 8),
    ]
    out = bytearray(shoff + len(sections) * _SHDR.size)
    out[layout.rodata_off : text_end] = linked.image[layout.rodata_off : text_end]
    out[text_end : text_end + len(shstr.data)] = shstr.data
    entry = layout.vaddr(linked.entry, is_code=True)
    _pack_elf(
        out, flags=SBPF_V3, entry=entry, phdrs=phdrs, sections=sections, shoff=shoff,
        shstr=shstr,
    )  # fmt: skip
    return bytes(out)


def link(objects: list[bytes], origins: list[str] | None = None, version: int = SBPF_V0) -> bytes:
    """Link BPF relocatable objects into one SBPF shared object.

    Args:
        objects: the ELF64 ``ET_REL`` objects clang-14 wrote, in link order.
        origins: a name for each object in error messages (usually its path).
        version: ``SBPF_V0`` or ``SBPF_V3``; written as the ELF's ``e_flags``.

    Returns:
        The bytes of the ``ET_DYN`` program, ready for the loader.

    Raises:
        BuildError: an object is not BPF, holds a writable or unmappable section or
            several code sections, a relocation kind is unknown, a symbol is undefined
            and not a syscall or defined twice, no ``entrypoint`` function exists, or the
            code uses what the version forbids (v0: JMP32; v3: a sign-extended 32-bit
            result read as 64 bits, a ``SignExtensionError`` naming the object whose code
            wrote it).
    """
    if version not in SBPF_VERSIONS:
        raise BuildError(f"SBPF version {version}: this linker writes v0 and v3")
    names = origins or [f"<object {i}>" for i in range(len(objects))]
    if not objects:
        raise BuildError("no objects to link")
    parsed = [_parse_object(data, origin) for data, origin in zip(objects, names, strict=True)]
    layout = _plan(parsed, names, version)
    linked = _resolve(parsed, names, layout)
    origin = ", ".join(names)
    return _write_v0(linked, origin) if version == SBPF_V0 else _write_v3(linked, origin)


def main(argv: list[str]) -> int:
    """Link the BPF objects named on the command line into an SBPF program."""
    parser = argparse.ArgumentParser(prog="sbpf_link.py", description=main.__doc__)
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

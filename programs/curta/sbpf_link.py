"""Link a clang-14 ``-target bpf -mcpu=v2`` relocatable object into an SBPF v0 program.

Upstream ld.lld refuses BPF relocations in shared output, and no Solana toolchain can be
installed here, so this module does the one job the loader needs: it takes the ELF64
relocatable objects clang wrote (one per C file) and writes one ET_DYN ELF that the v0
loader accepts under its strict deployment rules:

* every mapped section has ``sh_addr == sh_offset`` (the read-only region maps file
  offset X at ``0x1_0000_0000 + X``);
* exactly one ``.text``; every ``.rodata*`` input is merged into one ``.rodata``
  (the loader maps no other name);
* no writable section (``.data``/``.bss`` with content stop the link);
* section names of at most 15 bytes and symbol names of at most 63;
* calls to undefined names are allowed only for registered syscalls; they keep
  ``imm = -1`` and get an ``R_BPF_64_32`` dynamic relocation the loader resolves.

Everything else is resolved here: ``lddw`` of data gets the final virtual address,
local calls get their pc-relative offset, pointer tables in ``.rodata`` get absolute
addresses. So the only dynamic relocations are the syscall ones. The output holds no
timestamp or path: the same object gives the same bytes.

Usage: ``python sbpf_link.py output.so input.o [input.o ...]``.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

from curta_chain.errors import BuildError, InputError
from curta_chain.fsutil import atomic_write

MM_RODATA_START = 0x1_0000_0000
"""Where the loader maps file offset 0 of the read-only region."""

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
BPF_CLASS_JMP32 = 0x06

MAX_SECTION_NAME = 15
MAX_SYMBOL_NAME = 63

SYSCALLS = frozenset(
    {
        "abort",
        "sol_panic_",
        "sol_log_",
        "sol_log_64_",
        "sol_log_compute_units_",
        "sol_log_pubkey",
        "sol_log_data",
        "sol_sha256",
        "sol_keccak256",
        "sol_secp256k1_recover",
        "sol_memcpy_",
        "sol_memmove_",
        "sol_memset_",
        "sol_memcmp_",
        "sol_create_program_address",
        "sol_try_find_program_address",
        "sol_invoke_signed_c",
        "sol_invoke_signed_rust",
        "sol_get_clock_sysvar",
        "sol_get_rent_sysvar",
        "sol_get_epoch_schedule_sysvar",
        "sol_set_return_data",
        "sol_get_return_data",
        "sol_get_stack_height",
        "sol_get_processed_sibling_instruction",
    }
)
"""Syscalls agave 2.2 registers with no feature gate, so a strict deploy resolves them anywhere.

Feature-gated ones (sol_blake3, sol_get_sysvar, ...) and sol_alloc_free_ (refused at deploy)
are left out on purpose.
"""

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")
_SYM = struct.Struct("<IBBHQQ")
_REL = struct.Struct("<QQ")
_DYN = struct.Struct("<qQ")


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
    """Where every kept input section of every object lands, as file offsets."""

    text: list[_Piece] = field(default_factory=list)
    rodata: list[_Piece] = field(default_factory=list)
    text_size: int = 0
    rodata_size: int = 0
    rodata_align: int = 1


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


def _plan(objects: list[_Object], origins: list[str], n_phdrs: int) -> _Layout:
    layout = _Layout()
    kept = [_kept_sections(obj, origin) for obj, origin in zip(objects, origins, strict=True)]
    text_off = _align(_EHDR.size + n_phdrs * _PHDR.size, 8)
    offset = text_off
    for i, (text, _) in enumerate(kept):
        offset = _align(offset, 8)
        layout.text.append(_Piece(i, text, offset))
        offset += text.size
    layout.text_size = offset - text_off
    for _, rodata in kept:
        for sec in rodata:
            layout.rodata_align = max(layout.rodata_align, sec.align, 8)
    rodata_off = _align(offset, layout.rodata_align)
    offset = rodata_off
    for i, (_, rodata) in enumerate(kept):
        for sec in rodata:
            offset = _align(offset, sec.align)
            layout.rodata.append(_Piece(i, sec, offset))
            offset += sec.size
    layout.rodata_size = offset - rodata_off
    return layout


def _check_instructions(text: bytes, origin: str) -> None:
    pc = 0
    while pc * 8 < len(text):
        opcode = text[pc * 8]
        if opcode & 0x07 == BPF_CLASS_JMP32:
            raise BuildError(
                f"{origin}: .text+{pc * 8:#x}: JMP32 instruction (opcode {opcode:#04x}); "
                "SBPF v0 rejects it: compile with -mcpu=v2"
            )
        pc += 2 if opcode == OPCODE_LDDW else 1


@dataclass
class _Linked:
    """The linked read-only image (file offsets 0 to the end of .rodata) and what it needs."""

    image: bytearray
    text_off: int
    text_size: int
    rodata_off: int
    rodata_size: int
    entry: int
    syscall_sites: list[tuple[int, str]]


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


def _relocate_one(
    image: bytearray, where: int, kind: int, in_text: bool, sym: _Symbol, target: _Target, ctx: str
) -> str | None:
    """Apply one relocation in place; return the syscall name when the site calls one.

    ``ctx`` is "<object>: <section>+<offset>" for messages.
    """
    if in_text and kind == R_BPF_64_64:
        if image[where] != OPCODE_LDDW:
            raise BuildError(f"{ctx}: R_BPF_64_64 not on an lddw")
        if target.offset is None:
            raise BuildError(f"{ctx}: undefined symbol {sym.name!r} (data)")
        value = MM_RODATA_START + target.offset + struct.unpack_from("<I", image, where + 4)[0]
        struct.pack_into("<I", image, where + 4, value & 0xFFFFFFFF)
        struct.pack_into("<I", image, where + 12, value >> 32)
        return None
    if in_text and kind == R_BPF_64_32:
        if image[where] != OPCODE_CALL:
            raise BuildError(f"{ctx}: R_BPF_64_32 not on a call")
        if target.offset is None:
            if sym.name not in SYSCALLS:
                raise BuildError(
                    f"{ctx}: undefined symbol {sym.name!r} called: neither defined in the "
                    "program nor a registered syscall"
                )
            # The loader treats any imm other than -1 as a pc-relative call.
            struct.pack_into("<i", image, where + 4, -1)
            return sym.name
        if not target.is_code or (target.offset - where) % 8:
            raise BuildError(f"{ctx}: call to {sym.name!r}, which is not code")
        struct.pack_into("<i", image, where + 4, (target.offset - where) // 8 - 1)
        return None
    if not in_text and kind == R_BPF_64_ABS64:
        if target.offset is None:
            raise BuildError(f"{ctx}: undefined symbol {sym.name!r} (pointer)")
        addend = struct.unpack_from("<Q", image, where)[0]
        struct.pack_into("<Q", image, where, MM_RODATA_START + target.offset + addend)
        return None
    label = RELOCATION_NAMES.get(kind, "unknown")
    raise BuildError(f"{ctx}: unknown relocation kind {kind} ({label}) against {sym.name!r}")


def _resolve(objects: list[_Object], origins: list[str], layout: _Layout) -> _Linked:
    """Copy the kept sections into place and apply every relocation."""
    text_off = layout.text[0].offset
    rodata_off = layout.rodata[0].offset if layout.rodata else text_off + layout.text_size
    image = bytearray(rodata_off + layout.rodata_size)
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
                syscall = _relocate_one(image, base + r_offset, kind, in_text, sym, target, ctx)
                if syscall:
                    syscall_sites.append((base + r_offset, syscall))
    text = bytes(image[text_off : text_off + layout.text_size])
    _check_instructions(text, ", ".join(origins))
    return _Linked(
        image, text_off, layout.text_size, rodata_off, layout.rodata_size, entry, syscall_sites
    )


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
    """Export ``entrypoint`` and one undefined symbol per syscall, with its call sites."""
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


def _write_elf(linked: _Linked, dyn: _Dynamic, origin: str) -> bytes:
    """Lay out headers, sections and program headers around the linked image."""
    # (name, type, flags, offset, size, link, info, align, entsize); index 0 is SHT_NULL.
    sections: list[tuple] = [("", SHT_NULL, 0, 0, 0, 0, 0, 0, 0)]
    text_flags = SHF_ALLOC | SHF_EXECINSTR
    sections.append(
        (".text", SHT_PROGBITS, text_flags, linked.text_off, linked.text_size, 0, 0, 8, 0)
    )
    if linked.rodata_size:
        sections.append(
            (".rodata", SHT_PROGBITS, SHF_ALLOC, linked.rodata_off, linked.rodata_size, 0, 0, 8, 0)
        )
    dynsym_shndx, dynstr_shndx = len(sections) + 1, len(sections) + 2
    sections += [
        (".dynamic", SHT_DYNAMIC, SHF_ALLOC, dyn.start, len(dyn.dynamic), dynstr_shndx, 0, 8, 16),
        (".dynsym", SHT_DYNSYM, SHF_ALLOC, dyn.dynsym_off, len(dyn.dynsym), dynstr_shndx, 1, 8, 24),
        (".dynstr", SHT_STRTAB, SHF_ALLOC, dyn.dynstr_off, len(dyn.dynstr), 0, 0, 1, 0),
    ]
    if dyn.reldyn:
        sections.append(
            (
                ".rel.dyn",
                SHT_REL,
                SHF_ALLOC,
                dyn.reldyn_off,
                len(dyn.reldyn),
                dynsym_shndx,
                0,
                8,
                16,
            )
        )
    shstr = _StringTable()
    for sec in [*sections, (".shstrtab",)]:
        if len(sec[0]) > MAX_SECTION_NAME:
            raise BuildError(f"{origin}: section name {sec[0]} is longer than {MAX_SECTION_NAME}")
        shstr.add(sec[0])
    sections.append((".shstrtab", SHT_STRTAB, 0, dyn.end, len(shstr.data), 0, 0, 1, 0))
    shoff = _align(dyn.end + len(shstr.data), 8)

    phdrs = [(PT_LOAD, PF_R | PF_X, linked.text_off, linked.text_size)]
    if linked.rodata_size:
        phdrs.append((PT_LOAD, PF_R, linked.rodata_off, linked.rodata_size))
    phdrs.append((PT_LOAD, PF_R, dyn.start, dyn.end - dyn.start))
    phdrs.append((PT_DYNAMIC, PF_R, dyn.start, len(dyn.dynamic)))
    if _EHDR.size + len(phdrs) * _PHDR.size > linked.text_off:
        raise BuildError(f"{origin}: program headers overlap .text")

    out = bytearray(shoff + len(sections) * _SHDR.size)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    _EHDR.pack_into(
        out, 0, ident, ET_DYN, EM_BPF, 1, linked.entry, _EHDR.size, shoff, 0,
        _EHDR.size, _PHDR.size, len(phdrs), _SHDR.size, len(sections), len(sections) - 1,
    )  # fmt: skip
    for i, (p_type, p_flags, offset, size) in enumerate(phdrs):
        align = 8 if p_type == PT_DYNAMIC else 4096
        _PHDR.pack_into(
            out, _EHDR.size + i * _PHDR.size, p_type, p_flags, offset, offset, offset, size, size,
            align,
        )  # fmt: skip
    out[linked.text_off : len(linked.image)] = linked.image[linked.text_off :]
    for offset, blob in [
        (dyn.start, dyn.dynamic),
        (dyn.dynsym_off, dyn.dynsym),
        (dyn.dynstr_off, dyn.dynstr),
        (dyn.reldyn_off, dyn.reldyn),
        (dyn.end, shstr.data),
    ]:
        out[offset : offset + len(blob)] = blob
    for i, (name, s_type, flags, offset, size, s_link, info, align, entsize) in enumerate(sections):
        addr = offset if flags & SHF_ALLOC else 0  # v0: a mapped section's vaddr is its offset
        _SHDR.pack_into(
            out, shoff + i * _SHDR.size, shstr.index[name], s_type, flags, addr, offset, size,
            s_link, info, align, entsize,
        )  # fmt: skip
    return bytes(out)


def link(objects: list[bytes], origins: list[str] | None = None) -> bytes:
    """Link BPF relocatable objects into one SBPF v0 shared object.

    Args:
        objects: the ELF64 ``ET_REL`` objects clang-14 wrote, in link order.
        origins: a name for each object in error messages (usually its path).

    Returns:
        The bytes of the ``ET_DYN`` program, ready for the loader.

    Raises:
        BuildError: an object is not BPF, holds a writable or unmappable section or
            several code sections, a relocation kind is unknown, a symbol is undefined
            and not a syscall or defined twice, or no ``entrypoint`` function exists.
    """
    names = origins or [f"<object {i}>" for i in range(len(objects))]
    if not objects:
        raise BuildError("no objects to link")
    parsed = [_parse_object(data, origin) for data, origin in zip(objects, names, strict=True)]
    has_rodata = any(
        _kept_sections(obj, origin)[1] for obj, origin in zip(parsed, names, strict=True)
    )
    layout = _plan(parsed, names, n_phdrs=4 if has_rodata else 3)
    linked = _resolve(parsed, names, layout)
    origin = ", ".join(names)
    return _write_elf(linked, _dynamic_tables(linked, origin), origin)


def main(argv: list[str]) -> int:
    """Link ``argv[2:]`` (BPF objects) into ``argv[1]`` (an SBPF program)."""
    if len(argv) < 3:
        print("usage: sbpf_link.py output.so input.o [input.o ...]", file=sys.stderr)
        return 2
    try:
        objects = [Path(a).read_bytes() for a in argv[2:]]
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        atomic_write(argv[1], link(objects, argv[2:]))
    except (BuildError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

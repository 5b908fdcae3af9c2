"""Writing the program: the ``ET_DYN`` ELF around the relocated image, SBPF v0 or v3.

v0 adds the dynamic tables through which the loader binds syscalls (``.dynamic``,
``.dynsym``, ``.dynstr``, ``.rel.dyn``) and maps each section at its file offset; v3 writes
the two program headers SIMD-0189 fixes and no dynamic table. Both write section headers
and ``.shstrtab`` so that readelf and objdump read the file.
"""

from __future__ import annotations

from dataclasses import dataclass

from curta_chain.errors import BuildError
from sbpf_linker.elf import (
    DT_NULL,
    DT_REL,
    DT_RELENT,
    DT_RELSZ,
    DT_STRSZ,
    DT_STRTAB,
    DT_SYMENT,
    DT_SYMTAB,
    DYN,
    EHDR,
    EM_BPF,
    ET_DYN,
    MAX_SECTION_NAME,
    MAX_SYMBOL_NAME,
    PF_R,
    PF_X,
    PHDR,
    PT_DYNAMIC,
    PT_LOAD,
    R_BPF_64_32,
    REL,
    SBPF_V0,
    SBPF_V3,
    SHDR,
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHN_UNDEF,
    SHT_DYNAMIC,
    SHT_DYNSYM,
    SHT_NULL,
    SHT_PROGBITS,
    SHT_REL,
    SHT_STRTAB,
    STB_GLOBAL,
    STT_FUNC,
    STT_NOTYPE,
    SYM,
    align,
)
from sbpf_linker.relocate import Linked


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


def _dynamic_tables(linked: Linked, origin: str) -> _Dynamic:
    """v0: export ``entrypoint`` and one undefined symbol per syscall, with its call sites."""
    syscalls = sorted({name for _, name in linked.syscall_sites})
    dynstr = _StringTable()
    for name in ["entrypoint", *syscalls]:
        if len(name) > MAX_SYMBOL_NAME:
            raise BuildError(f"{origin}: symbol {name!r} is longer than {MAX_SYMBOL_NAME} bytes")
    text_shndx = 1  # .text is always the first section after the null one
    dynsym = bytearray(SYM.size)
    dynsym += SYM.pack(
        dynstr.add("entrypoint"), STB_GLOBAL << 4 | STT_FUNC, 0, text_shndx, linked.entry, 0
    )
    index: dict[str, int] = {}
    for name in syscalls:
        index[name] = len(dynsym) // SYM.size
        dynsym += SYM.pack(dynstr.add(name), STB_GLOBAL << 4 | STT_NOTYPE, 0, SHN_UNDEF, 0, 0)
    reldyn = b"".join(
        REL.pack(offset, index[name] << 32 | R_BPF_64_32) for offset, name in linked.syscall_sites
    )

    start = align(len(linked.image), 8)
    n_entries = 4 + (3 if reldyn else 0) + 1  # the DT_NULL terminator is the last
    dynsym_off = start + n_entries * DYN.size
    dynstr_off = dynsym_off + len(dynsym)
    reldyn_off = align(dynstr_off + len(dynstr.data), 8)
    entries = [
        (DT_SYMTAB, dynsym_off),
        (DT_SYMENT, SYM.size),
        (DT_STRTAB, dynstr_off),
        (DT_STRSZ, len(dynstr.data)),
    ]
    if reldyn:  # the loader insists on DT_RELSZ > 0 whenever DT_REL is present
        entries += [(DT_REL, reldyn_off), (DT_RELSZ, len(reldyn)), (DT_RELENT, REL.size)]
    entries.append((DT_NULL, 0))
    dynamic = b"".join(DYN.pack(tag, value) for tag, value in entries)
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
    EHDR.pack_into(
        out, 0, ident, ET_DYN, EM_BPF, 1, entry, EHDR.size, shoff, flags,
        EHDR.size, PHDR.size, len(phdrs), SHDR.size, len(sections), len(sections) - 1,
    )  # fmt: skip
    for i, (p_type, p_flags, offset, vaddr, size, p_align) in enumerate(phdrs):
        PHDR.pack_into(
            out, EHDR.size + i * PHDR.size, p_type, p_flags, offset, vaddr, vaddr, size, size,
            p_align,
        )  # fmt: skip
    for i, (name, s_type, s_flags, addr, offset, size, link, info, s_align, entsize) in enumerate(
        sections
    ):
        SHDR.pack_into(
            out, shoff + i * SHDR.size, shstr.index[name], s_type, s_flags, addr, offset, size,
            link, info, s_align, entsize,
        )  # fmt: skip


def _section_names(sections: list[_SectionRow], origin: str) -> _StringTable:
    shstr = _StringTable()
    for name in [row[0] for row in sections] + [".shstrtab"]:
        if len(name) > MAX_SECTION_NAME:
            raise BuildError(f"{origin}: section name {name} is longer than {MAX_SECTION_NAME}")
        shstr.add(name)
    return shstr


def write_v0(linked: Linked, origin: str) -> bytes:
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
    shoff = align(dyn.end + len(shstr.data), 8)

    phdrs = [(PT_LOAD, PF_R | PF_X, layout.text_off, layout.text_off, layout.text_size, 4096)]
    if layout.rodata_size:
        phdrs.append(
            (PT_LOAD, PF_R, layout.rodata_off, layout.rodata_off, layout.rodata_size, 4096)
        )
    phdrs.append((PT_LOAD, PF_R, dyn.start, dyn.start, dyn.end - dyn.start, 4096))
    phdrs.append((PT_DYNAMIC, PF_R, dyn.start, dyn.start, len(dyn.dynamic), 8))
    if EHDR.size + len(phdrs) * PHDR.size > layout.text_off:
        raise BuildError(f"{origin}: program headers overlap .text")

    out = bytearray(shoff + len(sections) * SHDR.size)
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


def write_v3(linked: Linked, origin: str) -> bytes:
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
    shoff = align(text_end + len(shstr.data), 8)
    phdrs = [
        (PT_LOAD, PF_R, layout.rodata_off, layout.rodata_vaddr, layout.rodata_size, 8),
        (PT_LOAD, PF_X, layout.text_off, layout.text_vaddr, layout.text_size, 8),
    ]
    out = bytearray(shoff + len(sections) * SHDR.size)
    out[layout.rodata_off : text_end] = linked.image[layout.rodata_off : text_end]
    out[text_end : text_end + len(shstr.data)] = shstr.data
    entry = layout.vaddr(linked.entry, is_code=True)
    _pack_elf(
        out, flags=SBPF_V3, entry=entry, phdrs=phdrs, sections=sections, shoff=shoff,
        shstr=shstr,
    )  # fmt: skip
    return bytes(out)

"""Reading the linker's input: clang-14's ELF64 relocatable objects, one per C file.

``parse_object`` reads an object's section headers and symbol table; ``kept_sections`` picks
what the program maps from it (its one ``.text`` and its ``.rodata*``) and refuses what the
SBPF loader cannot map (writable data, other allocated sections, split code).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from curta_chain.errors import BuildError
from sbpf_linker.elf import (
    EHDR,
    EM_BPF,
    ET_REL,
    SHDR,
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHF_WRITE,
    SHT_NOBITS,
    SHT_SYMTAB,
    SYM,
)


@dataclass
class Section:
    """One section header of an input object, its name resolved."""

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
class Symbol:
    """One entry of an input object's symbol table, its name resolved."""

    name: str
    info: int
    shndx: int
    value: int


@dataclass
class ObjectFile:
    """A relocatable object as read: its bytes, section headers and symbols."""

    data: bytes
    sections: list[Section]
    symbols: list[Symbol] = field(default_factory=list)

    def content(self, section: Section) -> bytes:
        """Return the bytes ``section`` holds (zeros for ``SHT_NOBITS``)."""
        if section.type == SHT_NOBITS:
            return bytes(section.size)
        return self.data[section.offset : section.offset + section.size]


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def parse_object(data: bytes, origin: str) -> ObjectFile:
    """Read a BPF ``ET_REL`` object's section headers and symbols; ``origin`` names it in errors."""
    if len(data) < EHDR.size or data[:4] != b"\x7fELF":
        raise BuildError(f"{origin}: not an ELF file")
    ident, e_type, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx = (
        EHDR.unpack_from(data)
    )
    if ident[4] != 2 or ident[5] != 1:
        raise BuildError(f"{origin}: expected a 64-bit little-endian ELF")
    if e_type != ET_REL or machine != EM_BPF:
        raise BuildError(
            f"{origin}: expected a BPF relocatable object (e_type 1, e_machine 247), "
            f"got e_type {e_type}, e_machine {machine}"
        )
    if shentsize != SHDR.size or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        raise BuildError(f"{origin}: section header table is malformed")
    raw = [SHDR.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    names_hdr = raw[shstrndx]
    names = data[names_hdr[4] : names_hdr[4] + names_hdr[5]]
    sections = [
        Section(i, _cstr(names, r[0]), r[1], r[2], r[4], r[5], r[6], r[7], r[8], r[9])
        for i, r in enumerate(raw)
    ]
    obj = ObjectFile(data, sections)
    symtabs = [s for s in sections if s.type == SHT_SYMTAB]
    if symtabs:
        symtab = symtabs[0]
        strtab = obj.content(sections[symtab.link])
        body = obj.content(symtab)
        for off in range(0, len(body) - SYM.size + 1, SYM.size):
            name, info, _, shndx, value, _ = SYM.unpack_from(body, off)
            obj.symbols.append(Symbol(_cstr(strtab, name), info, shndx, value))
    return obj


def kept_sections(obj: ObjectFile, origin: str) -> tuple[Section, list[Section]]:
    """The object's one .text and its .rodata* sections, after refusing what cannot load."""
    texts: list[Section] = []
    rodata: list[Section] = []
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

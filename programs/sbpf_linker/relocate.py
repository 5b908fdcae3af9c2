"""Relocating: where each kept input section lands, and every relocation applied there.

``plan_layout`` places the objects' ``.text`` and ``.rodata*`` sections in the output file
and gives each block its virtual address (v0 and v3 differ: see ``link``);
``resolve`` copies them into place, resolves symbols across objects, applies each
relocation, and checks the code against what the version forbids (v0: JMP32; v3: calls the
``LocalVerifier`` refuses, ALU32 results ``alu32`` cannot prove exact).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from curta_chain.errors import BuildError
from sbpf_linker.alu32 import SignExtensionError, check_upper_halves
from sbpf_linker.elf import (
    BPF_CLASS_JMP32,
    CALL_SOURCE_LOCAL,
    EHDR,
    MM_BYTECODE_START,
    MM_RODATA_START,
    OPCODE_CALL,
    OPCODE_CALLX,
    OPCODE_LDDW,
    PHDR,
    R_BPF_64_32,
    R_BPF_64_64,
    R_BPF_64_ABS64,
    R_BPF_NONE,
    REL,
    RELOCATION_NAMES,
    SBPF_V0,
    SBPF_V3,
    SHN_UNDEF,
    SHT_REL,
    SHT_RELA,
    STB_GLOBAL,
    SYSCALL_ARGUMENTS,
    SYSCALLS,
    V3_RODATA_GUARD,
    align,
    murmur3_32,
)
from sbpf_linker.objects import ObjectFile, Section, Symbol, kept_sections


@dataclass
class Piece:
    """One kept input section and where it lands in the output file."""

    obj: int
    section: Section
    offset: int


@dataclass
class Layout:
    """Where every kept input section of every object lands, and the segments' addresses.

    ``text_off``/``rodata_off`` are file offsets of the two blocks; ``text_vaddr`` and
    ``rodata_vaddr`` are the virtual addresses the program sees at those offsets. In v3 the
    read-only block starts with ``V3_RODATA_GUARD`` zero bytes (``rodata_off`` is the
    segment's start, the guard included).
    """

    version: int
    text: list[Piece] = field(default_factory=list)
    rodata: list[Piece] = field(default_factory=list)
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


def _place_text(layout: Layout, kept: list[tuple[Section, list[Section]]], start: int) -> int:
    offset = layout.text_off = start
    for i, (text, _) in enumerate(kept):
        offset = align(offset, 8)
        layout.text.append(Piece(i, text, offset))
        offset += text.size
    layout.text_size = offset - start
    return offset


def _place_rodata(layout: Layout, kept: list[tuple[Section, list[Section]]], start: int) -> int:
    """Lay the .rodata* inputs out from ``start`` (already aligned for all of them)."""
    offset = start
    for i, (_, rodata) in enumerate(kept):
        for sec in rodata:
            offset = align(offset, sec.align)
            layout.rodata.append(Piece(i, sec, offset))
            offset += sec.size
    return offset


def plan_layout(objects: list[ObjectFile], origins: list[str], version: int) -> Layout:
    """Place every object's ``.text`` and ``.rodata*`` for ``version`` (see ``Layout``)."""
    layout = Layout(version)
    kept = [kept_sections(obj, origin) for obj, origin in zip(objects, origins, strict=True)]
    rodata_align = max([8, *(sec.align for _, rodata in kept for sec in rodata)])
    if version == SBPF_V0:
        # Text, then rodata, each mapped at 0x1_0000_0000 + its file offset.
        n_phdrs = 4 if any(rodata for _, rodata in kept) else 3
        end = _place_text(layout, kept, align(EHDR.size + n_phdrs * PHDR.size, 8))
        layout.rodata_off = align(end, rodata_align)
        layout.rodata_size = _place_rodata(layout, kept, layout.rodata_off) - layout.rodata_off
        layout.text_vaddr = MM_RODATA_START + layout.text_off
        layout.rodata_vaddr = MM_RODATA_START + layout.rodata_off
        return layout
    # v3: the read-only segment right after the two program headers, then the bytecode. The
    # segment starts at a multiple of 16 (176), so vaddr and file offset align alike up to 16.
    layout.rodata_off = EHDR.size + 2 * PHDR.size
    if rodata_align > 16:
        raise BuildError(f"{', '.join(origins)}: read-only data aligned to {rodata_align} bytes")
    end = _place_rodata(layout, kept, layout.rodata_off + V3_RODATA_GUARD)
    layout.rodata_size = align(end - layout.rodata_off, 8)
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
class Linked:
    """The linked image (file offsets 0 to the end of the last block) and what it needs."""

    image: bytearray
    layout: Layout
    entry: int
    syscall_sites: list[tuple[int, str]]


@dataclass
class _Target:
    """Where a relocation's symbol resolved: a file offset (None when undefined)."""

    offset: int | None
    is_code: bool


class _Resolver:
    """Symbol resolution over every object: local sections first, then the global table."""

    def __init__(self, objects: list[ObjectFile], origins: list[str], layout: Layout) -> None:
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

    def target(self, obj: int, sym: Symbol, site: str) -> _Target:
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
    image: bytearray, where: int, sym: Symbol, target: _Target, version: int, ctx: str
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
    layout: Layout,
    where: int,
    kind: int,
    in_text: bool,
    sym: Symbol,
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


def resolve(objects: list[ObjectFile], origins: list[str], layout: Layout) -> Linked:
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
            for off in range(0, len(body) - REL.size + 1, REL.size):
                r_offset, r_info = REL.unpack_from(body, off)
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
    return Linked(image, layout, entry, syscall_sites)


def _object_at(layout: Layout, text_offset: int) -> int | None:
    """The index of the object whose code holds byte ``text_offset`` of the linked .text."""
    at = layout.text_off + text_offset
    for piece in layout.text:
        if piece.offset <= at < piece.offset + piece.section.size:
            return piece.obj
    return None

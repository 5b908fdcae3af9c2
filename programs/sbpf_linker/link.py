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
  code assumes eBPF's zero extension, so ``alu32.check_upper_halves`` proves that no
  such upper half is ever read as 64 bits before the link succeeds.

The linker's parts, one module each beside this one: ``objects`` reads the objects,
``relocate`` places their sections and applies the relocations, ``write`` writes
the ELF; ``elf`` holds the constants they share; ``__main__`` is the command line.
"""

from __future__ import annotations

from curta_chain.errors import BuildError
from sbpf_linker.elf import SBPF_V0, SBPF_V3, SBPF_VERSIONS, SYSCALLS, murmur3_32
from sbpf_linker.objects import parse_object
from sbpf_linker.relocate import plan_layout, resolve
from sbpf_linker.write import write_v0, write_v3

__all__ = ["SBPF_V0", "SBPF_V3", "SBPF_VERSIONS", "SYSCALLS", "link", "murmur3_32"]


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
    parsed = [parse_object(data, origin) for data, origin in zip(objects, names, strict=True)]
    layout = plan_layout(parsed, names, version)
    linked = resolve(parsed, names, layout)
    origin = ", ".join(names)
    return write_v0(linked, origin) if version == SBPF_V0 else write_v3(linked, origin)

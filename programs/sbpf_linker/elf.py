"""What the SBPF linker's parts share: ELF64 and SBPF constants, record layouts, syscalls.

The linker reads clang's relocatable objects (``objects``), places their sections and
applies their relocations (``relocate``), and writes the program's ELF
(``write``); ``link`` joins them and states each SBPF version's rules with the
solana-sbpf source for each.
"""

from __future__ import annotations

import struct

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

# ELF64 records (System V gABI): header, section header, program header, symbol, REL
# relocation, dynamic entry.
EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
SHDR = struct.Struct("<IIQQQQIIQQ")
PHDR = struct.Struct("<IIQQQQQQ")
SYM = struct.Struct("<IBBHQQ")
REL = struct.Struct("<QQ")
DYN = struct.Struct("<qQ")


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


def align(value: int, alignment: int) -> int:
    """Round ``value`` up to a multiple of ``alignment`` (0 and 1 leave it as it is)."""
    alignment = max(alignment, 1)
    return (value + alignment - 1) // alignment * alignment

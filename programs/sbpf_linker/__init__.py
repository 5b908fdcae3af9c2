"""The SBPF linker: clang-14 ``-target bpf`` objects in, a Solana SBPF v0 or v3 program out.

A build tool, not part of the ``curta_chain`` package: ``scripts/build_program.py`` links
the program of ``programs/curta`` with it, and the tests link their snippets with it.
``link`` (``sbpf_linker.link``) is the entry point; ``python -m sbpf_linker`` the command
line. ``README.md`` beside this file says what each module holds.
"""

from sbpf_linker.alu32 import SignExtensionError
from sbpf_linker.elf import SBPF_V0, SBPF_V3, SBPF_VERSIONS, SYSCALLS, murmur3_32
from sbpf_linker.link import link

__all__ = [
    "SBPF_V0",
    "SBPF_V3",
    "SBPF_VERSIONS",
    "SYSCALLS",
    "SignExtensionError",
    "link",
    "murmur3_32",
]

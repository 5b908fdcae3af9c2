"""The program builds that ship in this package: the only bytes a curta program id may hold.

One C source and one IDL, built twice by ``scripts/build_program.py`` from the table here:

- ``sbpf-v0`` (``curta.so``, ``e_flags`` 0): what every Agave release runs, and what the
  embedded localnet preloads. Clusters where SIMD-0500 (``disable_sbpf_v0_v1_v2_deployment``)
  is active refuse to deploy it, though they still run it.
- ``sbpf-v3`` (``curta_v3.so``, ``e_flags`` 3): static syscalls, the strict ELF layout and
  JMP32 (SIMD-0178, 0189, 0377), for clusters where
  ``enable_sbpf_v3_deployment_and_execution`` is active (mainnet since epoch 993). Agave 2.x
  had an older, incompatible "v3" and cannot run it.

``shipped_programs()`` is the one place every other module finds them: ``deploy`` puts the
one ``curta_chain.chain.features.select_build`` picks on a cluster, and the chain commands
check with ``shipped_program_for`` that a program id holds one of them, byte for byte.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROGRAM_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class ProgramBuild:
    """How one build is made: ``scripts/build_program.py`` reads this."""

    name: str
    """A short name for messages and ``--output json``: ``sbpf-v0``."""
    sbpf_version: int
    """The SBPF version, written as the ELF's ``e_flags``."""
    file_name: str
    """The file in this package."""
    clang_cpus: tuple[str, ...]
    """clang-14's ``-mcpu`` values, tried in order for each source until the link accepts it.

    v0 takes v2 code only (no JMP32). v3 prefers v3 code (JMP32 and ALU32, 1 to 3 CU less
    per instruction) and compiles a source with v2 when the linker cannot prove that clang's
    ALU32 code is exact under SBPF (``programs/sbpf_linker/alu32.py``).
    """


BUILDS: tuple[ProgramBuild, ...] = (
    ProgramBuild("sbpf-v0", 0, "curta.so", ("v2",)),
    ProgramBuild("sbpf-v3", 3, "curta_v3.so", ("v3", "v2")),
)
"""Every build, by SBPF version."""

PROGRAM_BINARY: Path = PROGRAM_DIR / BUILDS[0].file_name
"""The SBPF v0 build, the one a localnet preloads (every runtime here runs it)."""


def find_program_binary() -> Path | None:
    """Return ``PROGRAM_BINARY``, or None when this install has none (nothing to preload)."""
    return PROGRAM_BINARY if PROGRAM_BINARY.is_file() else None


@dataclass(frozen=True)
class ShippedProgram:
    """One build of the curta program in this package."""

    name: str
    """A short name for messages: ``sbpf-v0``, ``sbpf-v3``."""
    path: Path
    sbpf_version: int

    @property
    def elf(self) -> bytes:
        """The ELF's bytes."""
        return _read(self.path)

    @property
    def sha256(self) -> str:
        """The SHA-256 of the ELF, hex: what ``sha256sum`` prints for the file."""
        return hashlib.sha256(self.elf).hexdigest()

    def matches(self, program_bytes: bytes) -> bool:
        """True when ``program_bytes`` is this ELF, followed by nothing but zero bytes.

        The upgradeable loader keeps a program's ELF in its program-data account after a
        45-byte header, padded with zeros to the maximum length chosen at deploy time.
        """
        elf = self.elf
        return program_bytes[: len(elf)] == elf and not any(program_bytes[len(elf) :])


@cache
def _read(path: Path) -> bytes:
    return path.read_bytes()


@cache
def shipped_programs() -> tuple[ShippedProgram, ...]:
    """Every build in this package, by SBPF version (v0, then v3).

    Returns:
        The builds; each knows its name, path, SBPF version, bytes and SHA-256.
    """
    return tuple(ShippedProgram(b.name, PROGRAM_DIR / b.file_name, b.sbpf_version) for b in BUILDS)


def shipped_program(name: str) -> ShippedProgram:
    """The build called ``name`` (``sbpf-v0`` or ``sbpf-v3``).

    Raises:
        KeyError: no build has that name.
    """
    for program in shipped_programs():
        if program.name == name:
            return program
    raise KeyError(name)


def shipped_program_for(program_bytes: bytes) -> ShippedProgram | None:
    """The shipped build whose ELF ``program_bytes`` holds (zero padding allowed), or None.

    Args:
        program_bytes: a program's ELF as a cluster keeps it: the program-data account's
            data after its 45-byte header (upgradeable loader), or a loader-v2 program
            account's data.
    """
    for program in shipped_programs():
        if program.matches(program_bytes):
            return program
    return None

"""Is the program at a program id really curta? Read its deployed bytes and compare.

Every chain command trusts the program it talks to: whoever controls that program controls
every model under it. So before anything is sent, the program account is read and its
deployed bytes compared with the builds shipped in this package (or a hash the user names
with ``--program-hash``). Both loaders a cluster runs programs from are handled:

- loader v2: the ELF is the program account's data;
- the upgradeable loader: the program account names its program data, whose ELF follows a
  45-byte header (last deploy slot, upgrade authority) and is padded with zeros up to the
  maximum length chosen at deploy time. The address it names must be the one derived from
  the program id, where the runtime loads it from.

A build matches when the deployed bytes are the build followed only by zeros. The hash
printed for bytes that match no build covers the ELF as far as its own headers say it
extends (the section and program header tables, every section and segment), which is what
``sha256sum`` prints for the file that was deployed.
"""

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain.chain import loader
from curta_chain.chain.rpc import AccountInfo, RpcClient
from curta_chain.errors import AccountError, ProgramCheckError
from curta_chain.program import ShippedProgram, shipped_program_for, shipped_programs

HOW_TO_GET_A_PROGRAM = (
    "deploy the shipped program with `curta-chain deploy`, or pass --program-id ADDRESS"
)
"""What a user without a program on a cluster should do next."""
NOBODY = Pubkey.default()
"""An upgrade authority nobody can sign for: solana-test-validator's ``--bpf-program`` sets
it to mean upgrades disabled."""


@dataclass(frozen=True)
class DeployedProgram:
    """A program as deployed: where, by which loader, which bytes, who may change them."""

    program_id: Pubkey
    loader: Pubkey
    programdata: Pubkey | None
    """The upgradeable loader's program-data account (None under loader v2)."""
    upgrade_authority: Pubkey | None
    """Who may replace the bytes; None when nobody can (final, the default address, or
    loader v2)."""
    last_deploy_slot: int | None
    """The slot the program data was last written (upgradeable loader only)."""
    elf_length: int
    sha256: str
    """The SHA-256 (hex) of the deployed ELF."""
    build: ShippedProgram | None
    """The shipped build these bytes are, byte for byte (zeros after it allowed)."""
    hashes: tuple[str, ...]
    """Every hash ``--program-hash`` may name for these bytes (with and without padding)."""
    digests: tuple[tuple[str, str], ...]
    """(address, sha256 of owner, executable flag and data) of each account read."""

    @property
    def upgradeable(self) -> bool:
        """Whether someone can still replace the program's bytes."""
        return self.upgrade_authority is not None

    def describe(self) -> list[str]:
        """The lines verify prints first about the program it trusts."""
        build = f"shipped build {self.build.name}" if self.build else "NOT a shipped build"
        slot = "-" if self.last_deploy_slot is None else f"{self.last_deploy_slot:,}"
        lines = [
            f"program        {self.program_id}",
            f"program sha256 {self.sha256} ({self.elf_length:,} bytes, {build})",
            f"upgrade auth.  {self.upgrade_authority or 'none: nobody can change the program'}",
            f"last deployed  slot {slot}",
        ]
        if self.upgradeable:
            lines.append(
                f"WARNING: the program can still be upgraded by {self.upgrade_authority}: "
                f"whoever holds that key can change this model (use --require-final to refuse)"
            )
        return lines

    def to_json(self) -> dict[str, object]:
        """The program as JSON values."""
        return {
            "program_id": str(self.program_id),
            "loader": str(self.loader),
            "programdata": str(self.programdata) if self.programdata else None,
            "upgrade_authority": str(self.upgrade_authority) if self.upgrade_authority else None,
            "last_deploy_slot": self.last_deploy_slot,
            "sha256": self.sha256,
            "elf_length": self.elf_length,
            "shipped_build": self.build.name if self.build else None,
            "upgradeable": self.upgradeable,
        }


async def read_program(client: RpcClient, program_id: Pubkey) -> DeployedProgram:
    """Read the program at ``program_id`` and identify its bytes.

    Raises:
        ProgramCheckError: no account there, or not an executable program of a BPF loader.
    """
    info = await client.account(program_id)
    if info is None:
        raise ProgramCheckError(
            f"program {program_id}: no such account on {client.url}; {HOW_TO_GET_A_PROGRAM}"
        )
    if not info.executable:
        owner = "the System Program: a wallet" if info.owner == SYSTEM_PROGRAM_ID else info.owner
        raise ProgramCheckError(
            f"program {program_id} is not an executable program (owned by {owner}); "
            f"{HOW_TO_GET_A_PROGRAM}"
        )
    digests = [_digest(program_id, info)]
    if info.owner == loader.LOADER_V2:
        return _identify(program_id, info.owner, None, None, None, info.data, digests)
    if info.owner != loader.LOADER_V3:
        raise ProgramCheckError(
            f"program {program_id} is owned by {info.owner}, not by a BPF loader "
            f"curta-chain checks ({loader.LOADER_V2} or {loader.LOADER_V3})"
        )
    state = _state(info.data, f"program {program_id}")
    if not isinstance(state, loader.ProgramState):
        raise ProgramCheckError(f"program {program_id}: its loader state is not a program")
    derived = loader.programdata_address(program_id)
    if state.programdata != derived:
        # The loader keeps a program's bytes at one address only: a program account (or a
        # node) naming another would have us hash bytes the runtime never runs.
        raise ProgramCheckError(
            f"program {program_id} names {state.programdata} as its program data; the loader "
            f"keeps it at {derived}"
        )
    data_info = await client.account(state.programdata)
    if data_info is None or data_info.owner != loader.LOADER_V3:
        raise ProgramCheckError(
            f"program {program_id}: its program data {state.programdata} is missing "
            f"(the program was closed)"
        )
    header = _state(data_info.data, f"program data {state.programdata}")
    if not isinstance(header, loader.ProgramDataState):
        raise ProgramCheckError(f"program data {state.programdata} is not program data")
    digests.append(_digest(state.programdata, data_info))
    authority = header.upgrade_authority
    if authority == NOBODY:
        authority = None
    return _identify(
        program_id,
        info.owner,
        state.programdata,
        authority,
        header.slot,
        data_info.data[loader.PROGRAMDATA_METADATA_SIZE :],
        digests,
    )


def check_program(program: DeployedProgram, trusted_hashes: Sequence[str] = ()) -> None:
    """Refuse a program whose bytes are neither a shipped build nor a trusted hash.

    Raises:
        ProgramCheckError: one line naming the program, its hash and the shipped builds'.
    """
    if program.build is not None or any(h.lower() in program.hashes for h in trusted_hashes):
        return
    builds = ", ".join(f"{b.name} {b.sha256}" for b in shipped_programs())
    raise ProgramCheckError(
        f"program {program.program_id} holds {program.elf_length:,} bytes with sha256 "
        f"{program.sha256}, not a build shipped with curta-chain ({builds}); refusing it "
        f"(--program-hash names a build you trust)"
    )


def _state(data: bytes, what: str) -> loader.LoaderState:
    try:
        return loader.decode_state(data, what)
    except AccountError as exc:
        raise ProgramCheckError(str(exc)) from exc


def _digest(address: Pubkey, info: AccountInfo) -> tuple[str, str]:
    body = bytes(info.owner) + bytes([info.executable]) + info.data
    return str(address), hashlib.sha256(body).hexdigest()


def _identify(
    program_id: Pubkey,
    owner: Pubkey,
    programdata: Pubkey | None,
    authority: Pubkey | None,
    slot: int | None,
    deployed: bytes,
    digests: list[tuple[str, str]],
) -> DeployedProgram:
    """Name the shipped build ``deployed`` is (zeros may follow it), and hash it either way."""
    build = shipped_program_for(deployed)
    stripped = len(deployed.rstrip(b"\0"))
    length = len(build.elf) if build is not None else max(elf_extent(deployed), stripped)
    lengths = {length, stripped, len(deployed)}
    hashes = tuple(sorted(hashlib.sha256(deployed[:n]).hexdigest() for n in lengths))
    return DeployedProgram(
        program_id=program_id,
        loader=owner,
        programdata=programdata,
        upgrade_authority=authority,
        last_deploy_slot=slot,
        elf_length=length,
        sha256=hashlib.sha256(deployed[:length]).hexdigest(),
        build=build,
        hashes=hashes,
        digests=tuple(digests),
    )


_ELF_MAGIC = b"\x7fELF\x02\x01"  # ELF64, little-endian
_ELF_HEADER = struct.Struct("<32xQQ6xHHHHH")  # e_phoff, e_shoff, e_phentsize .. e_shnum
_PROGRAM_HEADER = struct.Struct("<8xQ8x8xQ")  # p_offset, p_filesz
_SECTION_HEADER = struct.Struct("<4xI16xQQ")  # sh_type, sh_offset, sh_size
_SHT_NOBITS = 8


def elf_extent(data: bytes) -> int:
    """How far an ELF64 file's own headers say it extends (0 if ``data`` is not one).

    The largest end of the header tables, of every program segment and of every section
    that has file bytes, capped at ``len(data)``.
    """
    if not data.startswith(_ELF_MAGIC) or len(data) < 64:
        return 0
    phoff, shoff, phentsize, phnum, shentsize, shnum, _ = _ELF_HEADER.unpack_from(data)
    end = max(64, phoff + phnum * phentsize, shoff + shnum * shentsize)
    for i in range(phnum):
        at = phoff + i * phentsize
        if phentsize >= _PROGRAM_HEADER.size and at + _PROGRAM_HEADER.size <= len(data):
            offset, size = _PROGRAM_HEADER.unpack_from(data, at)
            end = max(end, offset + size)
    for i in range(shnum):
        at = shoff + i * shentsize
        if shentsize >= _SECTION_HEADER.size and at + _SECTION_HEADER.size <= len(data):
            kind, offset, size = _SECTION_HEADER.unpack_from(data, at)
            if kind != _SHT_NOBITS:
                end = max(end, offset + size)
    return min(end, len(data))

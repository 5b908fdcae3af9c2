"""Reading a program and naming its bytes: both loaders, padding, the hashes a user may name."""

import asyncio
import hashlib

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.chain import loader
from curta_chain.chain.context import ChainContext
from curta_chain.chain.deploy import deploy, plan_deploy
from curta_chain.chain.program_check import (
    _identify,
    check_program,
    elf_extent,
    read_program,
)
from curta_chain.chain.rpc import RpcClient
from curta_chain.chain.transport import HttpTransport
from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.errors import AccountError, ProgramCheckError
from curta_chain.program import shipped_program, shipped_programs

BUILD = shipped_programs()[0]
V3 = shipped_program("sbpf-v3")
"""What the localnet deploys: it refuses SBPF v0 deployments (SIMD-0500), as agave 4 does."""
PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)


def read(url: str, program_id: Pubkey):
    async def run():
        client = RpcClient(HttpTransport(url))
        try:
            return await read_program(client, program_id)
        finally:
            await client.aclose()

    return asyncio.run(run())


def test_the_shipped_builds_hash_as_sha256sum_does_and_end_where_their_headers_say():
    for build in shipped_programs():
        assert build.sha256 == hashlib.sha256(build.path.read_bytes()).hexdigest()
        assert elf_extent(build.elf) == len(build.elf)
    assert elf_extent(b"not an elf") == 0


def test_the_localnet_program_is_a_shipped_build_nobody_can_upgrade(localnet):
    program = read(localnet.url, PROGRAM_ID)
    # Preloaded as solana-test-validator's --bpf-program: the default address as authority.
    assert program.loader == loader.LOADER_V3
    assert program.programdata == loader.programdata_address(PROGRAM_ID)
    assert program.build == BUILD and program.sha256 == BUILD.sha256
    assert not program.upgradeable and program.last_deploy_slot == 0
    check_program(program)


def test_an_upgradeable_deploy_is_read_through_its_program_data(localnet, fund):
    payer, program = fund(localnet.url, 10), Keypair()

    async def run():
        client = RpcClient(HttpTransport(localnet.url))
        try:
            ctx = ChainContext(client, program.pubkey(), payer)
            await deploy(ctx, program, await plan_deploy(ctx, program, V3, False))
        finally:
            await client.aclose()

    asyncio.run(run())
    found = read(localnet.url, program.pubkey())
    assert found.loader == loader.LOADER_V3
    assert found.programdata == loader.programdata_address(program.pubkey())
    assert found.upgrade_authority == payer.pubkey() and found.upgradeable
    assert found.build == V3 and found.last_deploy_slot > 0
    assert [line.split()[0] for line in found.describe()] == [
        "program", "program", "upgrade", "last", "WARNING:",
    ]  # fmt: skip


def test_padding_after_the_elf_is_allowed_and_both_hashes_can_be_named():
    # Program data holds the ELF and then zeros up to the maximum length chosen at deploy.
    padded = BUILD.elf + bytes(4_096)
    found = _identify(PROGRAM_ID, loader.LOADER_V3, None, None, 7, padded, [])
    assert found.build == BUILD and found.sha256 == BUILD.sha256
    assert found.elf_length == len(BUILD.elf)
    # Another ELF: its hash covers what its headers say it spans, or its bytes without the
    # trailing zeros, or everything; --program-hash may name any of them.
    other = bytearray(BUILD.elf)
    other[len(other) // 2] ^= 1  # a byte of code, not of a header
    found = _identify(PROGRAM_ID, loader.LOADER_V3, None, None, 7, bytes(other) + bytes(64), [])
    assert found.build is None
    assert found.sha256 == hashlib.sha256(bytes(other)).hexdigest()
    assert hashlib.sha256(bytes(other)).hexdigest() in found.hashes
    with pytest.raises(ProgramCheckError, match="not a build shipped with curta-chain"):
        check_program(found)
    check_program(found, [found.sha256.upper()])


def test_loader_states_are_refused_when_malformed():
    with pytest.raises(AccountError, match="too short for a loader state"):
        loader.decode_state(b"\x02\x00", "x")
    with pytest.raises(AccountError, match="loader state tag 9 is unknown"):
        loader.decode_state(b"\x09\x00\x00\x00", "x")
    with pytest.raises(AccountError, match="too short for loader state 3"):
        loader.decode_state(b"\x03\x00\x00\x00" + bytes(8), "x")
    authority = Keypair().pubkey()
    # UpgradeableLoaderState::ProgramData in bincode: tag 3, the slot, Option<Pubkey>.
    data = (3).to_bytes(4, "little") + (42).to_bytes(8, "little") + b"\x01" + bytes(authority)
    assert loader.decode_state(data + b"elf", "x") == loader.ProgramDataState(42, authority)
    final = (3).to_bytes(4, "little") + (1).to_bytes(8, "little") + bytes(33)
    assert loader.decode_state(final, "x") == loader.ProgramDataState(1, None)

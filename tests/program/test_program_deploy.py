"""The deployment loader's strict checks accept the shipped builds and refuse broken copies.

LiteSVM's add_program uses the lenient execution loader for v0. A deploy through the
upgradeable loader runs the strict one (``reject_broken_elfs``): for v0, two deliberately
broken copies prove that this path really is the strict one. v3 has only a strict parser
(SIMD-0189), so a v3 copy with a broken program header is refused everywhere.

Features are looked up by name in each runtime (``Runtime.feature``): SIMD-0500 refuses v0
deployments, so the solders runtime here runs with that feature off.
"""

import struct

import pytest
from runtimes import Runtime, Session, SoldersRuntime
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.pubkey import Pubkey

from curta_chain.program import MODEL_ACCOUNT_SIZE, ModelAccount, create_model, shipped_program
from curta_chain.protocol.features import DISABLE_SBPF_V0

V0, V3 = shipped_program("sbpf-v0"), shipped_program("sbpf-v3")


@pytest.fixture(scope="module")
def session() -> Session:
    return Session(SoldersRuntime(without=[DISABLE_SBPF_V0]))


def test_strict_deploy_accepts_the_shipped_program_and_it_runs(session: Session):
    deployment = session.deploy(V0.elf)
    assert deployment.outcome.ok, deployment.outcome.logs
    program_id = deployment.program_id
    assert f"Deployed program {program_id}" in deployment.outcome.logs

    model = Keypair()
    declared = bytes(range(32))
    account = session.new_account(model.pubkey(), MODEL_ACCOUNT_SIZE, program_id)
    ix = create_model(program_id, session.payer.pubkey(), model.pubkey(), declared, [1, 1])
    session.must([account, ix], [model])
    decoded = ModelAccount.from_bytes(session.runtime.account(model.pubkey()).data)
    assert decoded.declared_hash == declared


def _section(elf: bytes, name: bytes) -> tuple[int, int]:
    """(offset of its section header, offset of its data) for the named section."""
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shnum, shstrndx = struct.unpack_from("<HH", elf, 0x3C)
    names_at = struct.unpack_from("<Q", elf, shoff + shstrndx * 64 + 24)[0]
    for i in range(shnum):
        header = shoff + i * 64
        at = names_at + struct.unpack_from("<I", elf, header)[0]
        if elf[at : at + len(name) + 1] == name + b"\0":
            return header, struct.unpack_from("<Q", elf, header + 24)[0]
    raise AssertionError(name)


def test_strict_deploy_rejects_what_the_lenient_loader_takes(session: Session):
    elf = bytearray(V0.elf)
    shifted = bytearray(elf)
    header, _ = _section(bytes(shifted), b".rodata")
    struct.pack_into(
        "<Q", shifted, header + 16, struct.unpack_from("<Q", shifted, header + 16)[0] + 8
    )
    unknown = bytearray(elf)
    _, dynstr = _section(bytes(unknown), b".dynstr")
    at = unknown.index(b"sol_log_\0", dynstr)
    unknown[at : at + 8] = b"sol_lag_"
    for broken in (shifted, unknown):
        LiteSVM().add_program(Pubkey.new_unique(), bytes(broken))  # the lenient loader: fine
        outcome = session.deploy(bytes(broken)).outcome
        assert not outcome.ok
        assert any("ELF error" in line or "failed" in line for line in outcome.logs), outcome.logs


def test_a_v3_program_header_out_of_place_is_refused(node_all: Runtime):
    broken = bytearray(V3.elf)
    bytecode_header = 64 + 56
    struct.pack_into("<Q", broken, bytecode_header + 16, 2 << 32)  # p_vaddr of the bytecode
    outcome = Session(node_all).deploy(bytes(broken)).outcome
    assert not outcome.ok and "Invalid ELF program header" in outcome.logs, outcome.logs
    with pytest.raises(RuntimeError, match="Invalid ELF program header"):
        node_all.add_program(Pubkey.new_unique(), bytes(broken))

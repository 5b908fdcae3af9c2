"""The strict deployment loader (reject_broken_elfs) accepts the shipped program.

LiteSVM's add_program uses the lenient execution loader. A real deploy through the
upgradeable loader (v3) runs the strict one, but SIMD-0167's feature
EmhbpdVtZ2hWRGFWBDjn2i3SJD8Z36z4mpMcZJEnebnP turns new v3 deployments off; with that one
feature inactive (every other feature on) LiteSVM deploys exactly as a validator would.
Two deliberately broken copies prove that this path really is the strict one.
"""

import struct

import pytest
from curta_svm import weights_hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.litesvm import FeatureSet, LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.sysvar import CLOCK, RENT
from solders.transaction import Transaction

from curta_chain.program import MODEL_ACCOUNT_SIZE, PROGRAM_BINARY, ModelAccount, create_model

LOADER_V3 = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")
V3_DEPLOYMENTS_OFF = Pubkey.from_string("EmhbpdVtZ2hWRGFWBDjn2i3SJD8Z36z4mpMcZJEnebnP")
BUFFER_METADATA = 37  # UpgradeableLoaderState::Buffer: tag (4) + Option<authority> (33)
PROGRAM_ACCOUNT = 36  # UpgradeableLoaderState::Program: tag (4) + programdata address (32)
WRITE_CHUNK = 900


class Deployer:
    def __init__(self) -> None:
        features = FeatureSet.all_enabled().active
        features.pop(V3_DEPLOYMENTS_OFF)
        feature_set = FeatureSet(features, {V3_DEPLOYMENTS_OFF})
        self.svm = (
            LiteSVM.default()
            .with_builtins(feature_set)
            .with_precompiles(feature_set)
            .with_sysvars()
            .with_lamports(10**18)
        )
        self.payer = Keypair()
        self.svm.airdrop(self.payer.pubkey(), 1_000 * 10**9)

    def send(self, ixs: list[Instruction], signers: list[Keypair] = ()):
        tx = Transaction(
            [self.payer, *signers], Message(ixs, self.payer.pubkey()), self.svm.latest_blockhash()
        )
        meta = self.svm.send_transaction(tx)
        if hasattr(meta, "err"):
            return meta.err(), list(meta.meta().logs())
        return None, list(meta.logs())

    def new_account(self, kp: Keypair, size: int, owner: Pubkey) -> Instruction:
        return create_account(
            CreateAccountParams(
                from_pubkey=self.payer.pubkey(),
                to_pubkey=kp.pubkey(),
                lamports=self.svm.minimum_balance_for_rent_exemption(size),
                space=size,
                owner=owner,
            )
        )

    def deploy(self, elf: bytes) -> tuple[Pubkey, object, list[str]]:
        """Buffer, write, DeployWithMaxDataLen (bincode: u32 tag, then the fields)."""
        payer = self.payer.pubkey()
        buffer, program = Keypair(), Keypair()
        init = Instruction(
            LOADER_V3,
            struct.pack("<I", 0),
            [AccountMeta(buffer.pubkey(), False, True), AccountMeta(payer, False, False)],
        )
        err, logs = self.send(
            [self.new_account(buffer, BUFFER_METADATA + len(elf), LOADER_V3), init], [buffer]
        )
        assert err is None, logs
        for offset in range(0, len(elf), WRITE_CHUNK):
            chunk = elf[offset : offset + WRITE_CHUNK]
            write = Instruction(
                LOADER_V3,
                struct.pack("<IIQ", 1, offset, len(chunk)) + chunk,
                [AccountMeta(buffer.pubkey(), False, True), AccountMeta(payer, True, False)],
            )
            err, logs = self.send([write])
            assert err is None, logs
        programdata, _ = Pubkey.find_program_address([bytes(program.pubkey())], LOADER_V3)
        deploy = Instruction(
            LOADER_V3,
            struct.pack("<IQ", 2, len(elf)),
            [
                AccountMeta(payer, True, True),
                AccountMeta(programdata, False, True),
                AccountMeta(program.pubkey(), False, True),
                AccountMeta(buffer.pubkey(), False, True),
                AccountMeta(RENT, False, False),
                AccountMeta(CLOCK, False, False),
                AccountMeta(Pubkey.default(), False, False),
                AccountMeta(payer, True, False),
            ],
        )
        create = self.new_account(program, PROGRAM_ACCOUNT, LOADER_V3)
        err, logs = self.send([create, deploy], [program])
        return program.pubkey(), err, logs


@pytest.fixture(scope="module")
def deployer() -> Deployer:
    return Deployer()


def test_strict_deploy_accepts_the_shipped_program_and_it_runs(deployer: Deployer):
    program_id, err, logs = deployer.deploy(PROGRAM_BINARY.read_bytes())
    assert err is None, logs
    assert f"Deployed program {program_id}" in logs
    deployer.svm.warp_to_slot(
        deployer.svm.get_clock().slot + 1
    )  # deployed code is visible next slot

    model = Keypair()
    declared = weights_hash([b"a", b"b"])
    ixs = [
        deployer.new_account(model, MODEL_ACCOUNT_SIZE, program_id),
        create_model(program_id, deployer.payer.pubkey(), model.pubkey(), declared, [1, 1]),
    ]
    err, logs = deployer.send(ixs, [model])
    assert err is None, logs
    decoded = ModelAccount.from_bytes(bytes(deployer.svm.get_account(model.pubkey()).data))
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


def test_strict_deploy_rejects_what_the_lenient_loader_takes(deployer: Deployer):
    elf = bytearray(PROGRAM_BINARY.read_bytes())
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
        _, err, logs = deployer.deploy(bytes(broken))
        assert err is not None and any("ELF error" in line or "failed" in line for line in logs), (
            logs
        )

"""The upgradeable loader's transactions that ``deploy`` sends, as specs.

``DeployTransactions`` builds them for one payer (who pays, and is the buffer's and the
program's upgrade authority) and ``Budget``: create and initialize the buffer, write the ELF
into it (legacy or v1: a v1 transaction carries several Writes of at most
``loader.MAX_WRITE_DATA`` bytes), deploy it into a new program, and make the program final.
They are signed and landed as the curta program's are (``specs.sign``, ``sender.py``).
"""

from dataclasses import dataclass, field
from functools import cache

from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV1
from solders.pubkey import Pubkey

from curta_chain.chain import loader
from curta_chain.chain.features import TxVersion
from curta_chain.chain.plan import NewAccount, WritePiece
from curta_chain.chain.specs import Budget, TxSpec, message, new_account
from curta_chain.protocol import sizes

# The loader's, measured in LiteSVM (InitializeBuffer 2,520, Write 2,370, create +
# DeployWithMaxDataLen + SetAuthority 5,040), with margin.
BUFFER_CU = 10_000
BUFFER_WRITE_CU = 5_000
DEPLOY_CU = 50_000
SET_AUTHORITY_CU = 10_000


@dataclass(frozen=True)
class DeployTransactions:
    """The upgradeable loader's transactions of one deploy.

    ``payer`` pays, and is the buffer's and the program's upgrade authority.
    """

    payer: Pubkey
    budget: Budget = field(default_factory=Budget)

    def create_buffer(self, buffer: Keypair, funding: NewAccount) -> TxSpec:
        """Create the buffer (``funding``) and initialize it with the payer as its authority."""
        create = new_account(self.payer, funding, loader.LOADER_V3)
        init = loader.initialize_buffer(buffer.pubkey(), self.payer)
        return TxSpec((*self.budget.instructions(BUFFER_CU), *create, init), (buffer,))

    def write(
        self, buffer: Pubkey, elf: bytes, piece: WritePiece, version: TxVersion = "legacy"
    ) -> TxSpec:
        """Write ``piece`` of the ELF into the buffer, as a ``version`` transaction.

        The loader takes at most ``loader.MAX_WRITE_DATA`` bytes a Write, so a v1 piece goes
        as consecutive Writes in its one transaction.
        """
        end = piece.offset + piece.length
        ixs = [
            loader.write(buffer, self.payer, at, elf[at : min(at + loader.MAX_WRITE_DATA, end)])
            for at in range(piece.offset, end, loader.MAX_WRITE_DATA)
        ] or [loader.write(buffer, self.payer, piece.offset, b"")]
        units = BUFFER_WRITE_CU * len(ixs)
        return self.budget.spec(units, ixs, version, payload_bytes=piece.length)

    def chunk(self, version: TxVersion = "legacy") -> int:
        """The most ELF bytes one Write transaction carries (the payer is the authority)."""
        if version == "legacy":
            return loader.max_write_chunk(self.budget.limit_compute or self.budget.priced)
        return _v1_write_chunk(self.budget.priced)

    def deploy(
        self,
        program_keypair: Keypair,
        buffer: Pubkey,
        funding: NewAccount,
        elf_length: int,
        final: bool,
    ) -> TxSpec:
        """Create the program (``funding``) and deploy the buffer into it (and make it final)."""
        program_id = program_keypair.pubkey()
        ixs: list[Instruction] = [
            *new_account(self.payer, funding, loader.LOADER_V3),
            loader.deploy_with_max_data_len(self.payer, program_id, buffer, self.payer, elf_length),
        ]
        if final:
            ixs.append(loader.set_upgrade_authority(program_id, self.payer, None))
        return TxSpec((*self.budget.instructions(DEPLOY_CU), *ixs), (program_keypair,))

    def make_final(self, program_id: Pubkey) -> TxSpec:
        """Remove a deployed program's upgrade authority: it is never upgradeable again."""
        final = loader.set_upgrade_authority(program_id, self.payer, None)
        return TxSpec((*self.budget.instructions(SET_AUTHORITY_CU), final))


@cache
def _v1_write_chunk(priced: bool) -> int:
    """The ELF bytes of a v1 buffer Write: its size depends on which config fields are set."""
    payer, buffer = Pubkey(bytes([1] * 32)), Pubkey(bytes([2] * 32))
    txs = DeployTransactions(payer, Budget(compute_unit_price=0 if priced else None))

    def write(data: bytes) -> Message | MessageV1:
        spec = txs.write(buffer, data, WritePiece(0, 0, len(data)), "v1")
        return message(spec, payer, Hash.default())

    return sizes.largest_payload(write)

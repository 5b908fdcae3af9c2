"""Transactions as specs: what to sign, built by pure functions, no network.

``TxSpec`` is a transaction before it is signed (instructions, extra signers, the weight
bytes it carries); ``sign`` signs one; ``Transactions`` builds the curta program's for one
program, authority, payer and ``Budget``. The sender (``sender.py``) signs and lands them.

Compute units: on a real cluster the scheduler charges each transaction the compute units
it requests against a per-account budget per block, so a write asking for the default
200,000 lands ~60 per block per account. With ``Budget.limit_compute`` every transaction
asks for what it needs (measured on the program, with a margin) and, with a price, pays a
priority fee. The ~40 bytes those instructions take come out of each write's payload.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import (
    AllocateParams,
    AssignParams,
    CreateAccountParams,
    TransferParams,
    allocate,
    assign,
    create_account,
    transfer,
)
from solders.transaction import Transaction

from curta_chain import program
from curta_chain.chain.plan import NewAccount, PublishPlan, WritePiece

# Compute units each transaction asks for: what scripts/bench_program_cu.py measures for the
# largest case (18 sections), plus the compute-budget and system instructions, with margin.
CREATE_MODEL_CU = 5_000
BIND_CU = 5_000
WRITE_CU = 1_000
BEGIN_SEALING_CU = 5_000
SEAL_STEP_CU = 40_000
REOPEN_CU = 5_000
CLOSE_CU = 5_000


@dataclass(frozen=True)
class TxSpec:
    """One transaction to land: its instructions, signers besides the payer, bytes carried."""

    instructions: tuple[Instruction, ...]
    signers: tuple[Keypair, ...] = ()
    payload_bytes: int = 0


def sign(
    spec: TxSpec, payer: Keypair, blockhash: Hash, cosigners: Sequence[Keypair] = ()
) -> Transaction:
    """Sign ``spec`` with its payer, its own signers and the cosigners it needs.

    The payer pays the fee; of ``cosigners``, only those the instructions name as signers
    sign (a seal step needs none, a write needs the authority).
    """
    message = Message.new_with_blockhash(spec.instructions, payer.pubkey(), blockhash)
    required = set(message.account_keys[: message.header.num_required_signatures])
    keys: dict[Pubkey, Keypair] = {}
    for keypair in (payer, *spec.signers, *cosigners):
        if keypair.pubkey() in required:
            keys.setdefault(keypair.pubkey(), keypair)
    return Transaction(list(keys.values()), message, blockhash)


@dataclass(frozen=True)
class Budget:
    """Whether transactions carry compute-budget instructions, and the price if any.

    ``separate_fee_payer``: a fee payer other than the authority signs every transaction,
    which leaves a write 96 bytes less room (a key and a signature).
    """

    limit_compute: bool = False
    compute_unit_price: int | None = None
    separate_fee_payer: bool = False

    def instructions(self, units: int) -> tuple[Instruction, ...]:
        """The compute-budget instructions for a transaction needing ``units``."""
        out: list[Instruction] = []
        if self.limit_compute or self.compute_unit_price is not None:
            out.append(set_compute_unit_limit(units))
        if self.compute_unit_price is not None:
            out.append(set_compute_unit_price(self.compute_unit_price))
        return tuple(out)

    def write_payload(self) -> int:
        """The most weight bytes one write transaction can carry under this budget."""
        # Sized for a limit and a price: without the price this leaves ~10 bytes unused.
        return program.max_write_payload(
            with_compute_budget=self.limit_compute or self.compute_unit_price is not None,
            fee_payer=self.separate_fee_payer,
        )


def new_account(payer: Pubkey, account: NewAccount, owner: Pubkey) -> tuple[Instruction, ...]:
    """Create ``account`` (its keypair signs the transaction) for ``owner``, funded by ``payer``.

    ``create_account`` refuses an address that already holds lamports, and anyone can send
    lamports to any address. So when the account's address holds some already, it
    allocates and assigns itself (it signs) and the payer sends only what the rent still
    needs.
    """
    address, space = account.address, account.size
    if not account.existing:
        params = CreateAccountParams(
            from_pubkey=payer, to_pubkey=address, lamports=account.rent, space=space, owner=owner
        )
        return (create_account(params),)
    top_up = (
        (transfer(TransferParams(from_pubkey=payer, to_pubkey=address, lamports=account.transfer)),)
        if account.transfer
        else ()
    )
    return (
        *top_up,
        allocate(AllocateParams(pubkey=address, space=space)),
        assign(AssignParams(pubkey=address, owner=owner)),
    )


@dataclass(frozen=True)
class Transactions:
    """The curta program's transactions for one program, authority, payer and budget.

    Attributes:
        program_id: the curta program.
        authority: the model's authority (it signs what the program asks it to).
        payer: who funds the accounts created (and pays the fees: ``Sender.payer``).
        budget: the compute-budget instructions each transaction carries.
    """

    program_id: Pubkey
    authority: Pubkey
    payer: Pubkey
    budget: Budget = field(default_factory=Budget)

    def create_model(
        self,
        model: Keypair,
        weights_hash: bytes,
        section_lengths: Sequence[int],
        funding: NewAccount,
    ) -> TxSpec:
        """Create the model account (``funding``) and declare its hash, in one transaction."""
        create = new_account(self.payer, funding, self.program_id)
        declare = program.create_model(
            self.program_id, self.authority, model.pubkey(), weights_hash, list(section_lengths)
        )
        return TxSpec((*self.budget.instructions(CREATE_MODEL_CU), *create, declare), (model,))

    def bind(self, model: Pubkey, weight: Keypair, section: int, funding: NewAccount) -> TxSpec:
        """Create weight account ``section`` (``funding``) and bind it, in one transaction.

        An account that exists but is bound to nothing could not have its rent recovered, so
        the two never go apart.
        """
        create = new_account(self.payer, funding, self.program_id)
        bind = program.bind_weight_account(
            self.program_id, self.authority, model, weight.pubkey(), section
        )
        return TxSpec((*self.budget.instructions(BIND_CU), *create, bind), (weight,))

    def writes(self, plan: PublishPlan, sections: Sequence[bytes]) -> list[TxSpec]:
        """One write transaction per planned piece."""
        prefix = self.budget.instructions(WRITE_CU)
        return [
            self._write(plan.weight_accounts[p.section], sections, p, prefix) for p in plan.writes
        ]

    def _write(
        self,
        account: Pubkey,
        sections: Sequence[bytes],
        piece: WritePiece,
        prefix: tuple[Instruction, ...],
    ) -> TxSpec:
        data = bytes(sections[piece.section][piece.offset : piece.offset + piece.length])
        write = program.write_weights(self.program_id, self.authority, account, piece.offset, data)
        return TxSpec((*prefix, write), (), piece.length)

    def begin_sealing(self, model: Pubkey) -> TxSpec:
        """Begin sealing ``model``."""
        ix = program.begin_sealing(self.program_id, self.authority, model)
        return self._authority(ix, BEGIN_SEALING_CU)

    def seal_step(self, model: Pubkey, weight: Pubkey, step: int) -> TxSpec:
        """Seal step ``step``. Its compute-unit limit varies with it (SEAL_STEP_CU + step % 4096).

        Consecutive steps are otherwise the same instructions and can share a blockhash, so
        they would be one signature that the cluster processes once: the varying limit makes
        each step its own transaction.
        """
        limit = set_compute_unit_limit(SEAL_STEP_CU + step % 4096)
        extra = self.budget.instructions(SEAL_STEP_CU)[1:]  # the price, if any
        ix = program.seal_step(self.program_id, model, [weight], step)
        return TxSpec((limit, *extra, ix))

    def reopens(self, plan: PublishPlan) -> list[TxSpec]:
        """One reopen per weight account of the plan's failed model that is still frozen."""
        return [
            self._authority(
                program.reopen(
                    self.program_id, self.authority, plan.model, plan.weight_accounts[i], i
                ),
                REOPEN_CU,
            )
            for i in plan.reopen_sections
        ]

    def closes(
        self, model: Pubkey, bound: Sequence[tuple[int, Pubkey]]
    ) -> tuple[list[TxSpec], TxSpec]:
        """Closing a model: one closeWeightAccount per bound ``(section, account)``, then the model.

        The first list may go out together; the model's close must wait until they have landed.
        """
        weights = [
            self._authority(
                program.close_weight_account(
                    self.program_id, self.authority, model, account, section
                ),
                CLOSE_CU,
            )
            for section, account in bound
        ]
        last = self._authority(
            program.close_model(self.program_id, self.authority, model), CLOSE_CU
        )
        return weights, last

    def _authority(self, instruction: Instruction, units: int) -> TxSpec:
        """A transaction of one authority instruction (begin sealing, reopen, close)."""
        return TxSpec((*self.budget.instructions(units), instruction))

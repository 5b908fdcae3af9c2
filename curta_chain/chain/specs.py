"""A publish plan turned into transactions: pure functions, no network.

Compute units: on a real cluster the scheduler charges each transaction the compute units
it requests against a per-account budget per block, so a write asking for the default
200,000 lands ~60 per block per account. With ``Budget.limit_compute`` every transaction
asks for what it needs (measured on the program, with a margin) and, with a price, pays a
priority fee. The ~40 bytes those instructions take come out of each write's payload.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.instruction import Instruction
from solders.keypair import Keypair
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

from curta_chain import program
from curta_chain.chain.plan import PublishPlan, WritePiece
from curta_chain.chain.sender import TxSpec
from curta_chain.constants import WEIGHT_HEADER_SIZE

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


def new_account(
    payer: Pubkey, address: Pubkey, space: int, owner: Pubkey, rent: int, existing: int = 0
) -> tuple[Instruction, ...]:
    """Create ``address`` (its keypair signs the transaction) with ``space`` bytes for ``owner``.

    ``create_account`` refuses an address that already holds lamports, and anyone can send
    lamports to any address. So when ``existing`` lamports are there, the address allocates
    and assigns itself (it signs) and the payer sends only what the rent still needs.
    """
    if not existing:
        params = CreateAccountParams(
            from_pubkey=payer, to_pubkey=address, lamports=rent, space=space, owner=owner
        )
        return (create_account(params),)
    top_up = (
        (transfer(TransferParams(from_pubkey=payer, to_pubkey=address, lamports=rent - existing)),)
        if rent > existing
        else ()
    )
    return (
        *top_up,
        allocate(AllocateParams(pubkey=address, space=space)),
        assign(AssignParams(pubkey=address, owner=owner)),
    )


def create_model_spec(
    program_id: Pubkey,
    authority: Keypair,
    model: Keypair,
    weights_hash: bytes,
    section_lengths: Sequence[int],
    rent: int,
    budget: Budget,
    existing: int = 0,
    funder: Pubkey | None = None,
) -> TxSpec:
    """Create the model account and declare its hash, in one transaction.

    ``existing``: lamports the model's address already holds (see ``new_account``);
    ``funder`` pays the rent (default: the authority).
    """
    create = new_account(
        funder or authority.pubkey(),
        model.pubkey(),
        program.MODEL_ACCOUNT_SIZE,
        program_id,
        rent,
        existing,
    )
    declare = program.create_model(
        program_id, authority.pubkey(), model.pubkey(), weights_hash, list(section_lengths)
    )
    return TxSpec((*budget.instructions(CREATE_MODEL_CU), *create, declare), (model,))


def bind_spec(
    program_id: Pubkey,
    authority: Keypair,
    model: Pubkey,
    weight: Keypair,
    section: int,
    length: int,
    rent: int,
    budget: Budget,
    existing: int = 0,
    funder: Pubkey | None = None,
) -> TxSpec:
    """Create weight account ``section`` and bind it to its slot, in one transaction.

    An account that exists but is bound to nothing could not have its rent recovered, so
    the two never go apart. ``existing``: lamports the address already holds; ``funder``
    pays the rent (default: the authority).
    """
    create = new_account(
        funder or authority.pubkey(),
        weight.pubkey(),
        WEIGHT_HEADER_SIZE + length,
        program_id,
        rent,
        existing,
    )
    bind = program.bind_weight_account(
        program_id, authority.pubkey(), model, weight.pubkey(), section
    )
    return TxSpec((*budget.instructions(BIND_CU), *create, bind), (weight,))


def write_specs(
    program_id: Pubkey,
    authority: Pubkey,
    plan: PublishPlan,
    sections: Sequence[bytes],
    budget: Budget,
) -> list[TxSpec]:
    """One write transaction per planned piece."""
    prefix = budget.instructions(WRITE_CU)
    return [
        _write_spec(program_id, authority, plan.weight_accounts[p.section], sections, p, prefix)
        for p in plan.writes
    ]


def _write_spec(
    program_id: Pubkey,
    authority: Pubkey,
    account: Pubkey,
    sections: Sequence[bytes],
    piece: WritePiece,
    prefix: tuple[Instruction, ...],
) -> TxSpec:
    data = bytes(sections[piece.section][piece.offset : piece.offset + piece.length])
    write = program.write_weights(program_id, authority, account, piece.offset, data)
    return TxSpec((*prefix, write), (), piece.length)


def seal_step_spec(
    program_id: Pubkey, model: Pubkey, weight: Pubkey, step: int, budget: Budget
) -> TxSpec:
    """One seal step. Its compute-unit limit varies with ``step`` (SEAL_STEP_CU + step % 4096).

    Consecutive steps are otherwise the same instructions and can share a blockhash, so
    they would be one signature that the cluster processes once: the varying limit makes
    each step its own transaction.
    """
    limit = set_compute_unit_limit(SEAL_STEP_CU + step % 4096)
    extra = budget.instructions(SEAL_STEP_CU)[1:]  # the price, if any
    return TxSpec((limit, *extra, program.seal_step(program_id, model, weight)))


def reopen_specs(
    program_id: Pubkey, authority: Pubkey, plan: PublishPlan, budget: Budget
) -> list[TxSpec]:
    """One reopen per weight account of the plan's failed model that is still frozen."""
    return [
        authority_spec(
            program.reopen(program_id, authority, plan.model, plan.weight_accounts[i], i),
            REOPEN_CU,
            budget,
        )
        for i in plan.reopen_sections
    ]


def close_specs(
    program_id: Pubkey,
    authority: Pubkey,
    model: Pubkey,
    bound: Sequence[tuple[int, Pubkey]],
    budget: Budget,
) -> tuple[list[TxSpec], TxSpec]:
    """Closing a model: one closeWeightAccount per bound ``(section, account)``, then the model.

    The first list may go out together; the model's close must wait until they have landed.
    """
    weights = [
        authority_spec(
            program.close_weight_account(program_id, authority, model, account, section),
            CLOSE_CU,
            budget,
        )
        for section, account in bound
    ]
    last = authority_spec(program.close_model(program_id, authority, model), CLOSE_CU, budget)
    return weights, last


def authority_spec(instruction: Instruction, units: int, budget: Budget) -> TxSpec:
    """A transaction of one authority instruction (begin sealing, reopen, close)."""
    return TxSpec((*budget.instructions(units), instruction))

"""Transactions as specs: pure, so every spec is checked by what it holds and how it signs."""

import pytest
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain import program
from curta_chain.chain.keys import ClusterScope
from curta_chain.chain.plan import NewAccount, PublishPlan, WritePiece
from curta_chain.chain.specs import Budget, Transactions, TxSpec, new_account, sign
from curta_chain.constants import MAX_TRANSACTION_SIZE

PROGRAM_ID = Pubkey.from_string("CurtaLoca1netProgram111111111111111111111111")
AUTHORITY, PAYER = Keypair(), Keypair()
BLOCKHASH = Hash.new_unique()
BUDGETS = [
    Budget(),
    Budget(limit_compute=True),
    Budget(compute_unit_price=1_000),
    Budget(limit_compute=True, compute_unit_price=1_000, separate_fee_payer=True),
    Budget(separate_fee_payer=True),
]


def test_a_budget_adds_a_limit_and_a_price_only_when_asked():
    assert Budget().instructions(5_000) == ()
    assert Budget(limit_compute=True).instructions(5_000) == (set_compute_unit_limit(5_000),)
    assert Budget(compute_unit_price=7).instructions(5_000) == (
        set_compute_unit_limit(5_000),
        set_compute_unit_price(7),
    )
    assert Budget().write_payload() == program.MAX_WRITE_PAYLOAD == 1_010
    # Sized for a limit and a price, whichever the budget asks for.
    assert Budget(limit_compute=True).write_payload() == 958
    assert Budget(separate_fee_payer=True).write_payload() == 1_010 - 96


def plan_of(section_lengths: list[int], payload: int) -> PublishPlan:
    weights = tuple(Keypair().pubkey() for _ in section_lengths)
    writes = tuple(
        WritePiece(i, at, min(payload, n - at))
        for i, n in enumerate(section_lengths)
        for at in range(0, n, payload)
    )
    return PublishPlan(
        model=Keypair().pubkey(),
        weights_hash=bytes(32),
        scope=ClusterScope("LocaLGenesis1111111111111111111111111111111", PROGRAM_ID),
        section_lengths=tuple(section_lengths),
        weight_accounts=weights,
        state="uploading",
        create_model=False,
        reopen_sections=(0, 1),
        create_sections=(),
        writes=writes,
        payload_per_write=payload,
        new_accounts=(),
        fee_lamports=0,
    )


@pytest.mark.parametrize("budget", BUDGETS)
def test_every_write_fits_one_transaction_and_carries_its_piece(budget: Budget):
    payer = PAYER if budget.separate_fee_payer else AUTHORITY
    txs = Transactions(PROGRAM_ID, AUTHORITY.pubkey(), payer.pubkey(), budget)
    sections = [bytes(range(256)) * 10, b"\7" * 1_500]
    plan = plan_of([len(s) for s in sections], budget.write_payload())
    specs = txs.writes(plan, sections)
    assert [s.payload_bytes for s in specs] == [p.length for p in plan.writes]
    for spec in specs:
        wire = bytes(sign(spec, payer, BLOCKHASH, (AUTHORITY,)))
        assert len(wire) <= MAX_TRANSACTION_SIZE
    full = [s for s in specs if s.payload_bytes == budget.write_payload()]
    # The payload is the most that fits: a full piece comes within a price instruction
    # (14 bytes: the budget may ask for a limit without one) of the limit.
    size = len(bytes(sign(full[0], payer, BLOCKHASH, (AUTHORITY,))))
    assert MAX_TRANSACTION_SIZE - 14 <= size <= MAX_TRANSACTION_SIZE


def test_seal_steps_with_distinct_labels_are_different_transactions():
    txs = Transactions(PROGRAM_ID, AUTHORITY.pubkey(), AUTHORITY.pubkey())
    model, weights = Keypair().pubkey(), [Keypair().pubkey(), Keypair().pubkey()]
    steps = [txs.seal_step(model, weights, i) for i in range(5)]
    assert len({bytes(s.instructions[-1].data) for s in steps}) == 5
    assert [m.pubkey for m in steps[0].instructions[-1].accounts] == [model, *weights]
    priced = Transactions(
        PROGRAM_ID, AUTHORITY.pubkey(), AUTHORITY.pubkey(), Budget(compute_unit_price=3)
    )
    step = priced.seal_step(model, weights[:1], 1)
    assert step.instructions[:2] == (set_compute_unit_limit(40_000), set_compute_unit_price(3))
    # Anyone cranks: a seal step needs no signature but the payer's.
    signed = sign(steps[0], PAYER, BLOCKHASH, (AUTHORITY,))
    assert signed.message.header.num_required_signatures == 1


def test_a_new_account_is_created_or_if_funded_already_allocated_assigned_and_topped_up():
    address = Keypair().pubkey()
    (create,) = new_account(PAYER.pubkey(), NewAccount(address, 100, 5_000), PROGRAM_ID)
    assert create.program_id == SYSTEM_PROGRAM_ID and create.accounts[1].pubkey == address
    topped = new_account(
        PAYER.pubkey(), NewAccount(address, 100, 5_000, existing=1_000), PROGRAM_ID
    )
    assert len(topped) == 3  # transfer 4,000, allocate, assign
    assert topped[1].accounts[0].is_signer and topped[2].accounts[0].is_signer
    covered = new_account(
        PAYER.pubkey(), NewAccount(address, 100, 5_000, existing=9_000), PROGRAM_ID
    )
    assert len(covered) == 2  # nothing to send: allocate and assign


def test_create_and_bind_are_signed_by_the_new_account_and_funded_by_the_payer():
    txs = Transactions(PROGRAM_ID, AUTHORITY.pubkey(), PAYER.pubkey())
    model, weight = Keypair(), Keypair()
    funding = NewAccount(model.pubkey(), program.MODEL_ACCOUNT_SIZE, 6_848_640)
    create = txs.create_model(model, bytes(32), [10, 20], funding)
    assert create.signers == (model,)
    assert create.instructions[0].accounts[0].pubkey == PAYER.pubkey()
    bind = txs.bind(model.pubkey(), weight, 1, NewAccount(weight.pubkey(), 2_068, 15_285_120))
    assert bind.signers == (weight,)
    signed = sign(bind, PAYER, BLOCKHASH, (AUTHORITY, Keypair()))
    keys = signed.message.account_keys[: signed.message.header.num_required_signatures]
    assert set(keys) == {PAYER.pubkey(), AUTHORITY.pubkey(), weight.pubkey()}


def test_reopens_and_closes_name_one_weight_account_each():
    txs = Transactions(
        PROGRAM_ID, AUTHORITY.pubkey(), AUTHORITY.pubkey(), Budget(limit_compute=True)
    )
    plan = plan_of([10, 20], 1_000)
    reopens = txs.reopens(plan)
    assert len(reopens) == 2
    assert [spec.instructions[0] for spec in reopens] == [set_compute_unit_limit(5_000)] * 2
    weights, last = txs.closes(plan.model, list(enumerate(plan.weight_accounts)))
    assert len(weights) == 2
    named = [{m.pubkey for m in s.instructions[-1].accounts} for s in weights]
    assert all(len(keys & set(plan.weight_accounts)) == 1 for keys in named)
    assert {m.pubkey for m in last.instructions[-1].accounts} == {AUTHORITY.pubkey(), plan.model}
    assert isinstance(txs.begin_sealing(plan.model), TxSpec)

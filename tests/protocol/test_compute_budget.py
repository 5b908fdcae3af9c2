"""The compute budget and fees as Agave reads them (curta_chain/protocol/compute_budget.py).

Agave's rule (``ComputeBudgetInstructionDetails::process_instruction``): each kind of
compute-budget instruction may appear once; a second one fails the transaction with
``DuplicateInstruction``, data that does not decode with ``InvalidInstructionData``, and
bytes after a value are not looked at. The localnet's fees and its loaded-data limit and the
client's fee arithmetic all read this one parser.
"""

import pytest
from solders.compute_budget import ID as SOLDERS_COMPUTE_BUDGET_ID
from solders.compute_budget import (
    request_heap_frame,
    set_compute_unit_limit,
    set_compute_unit_price,
)
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message, MessageV0, MessageV1, TransactionConfig
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from curta_chain.constants import MAX_COMPUTE_UNITS, MAX_LOADED_ACCOUNTS_DATA_SIZE
from curta_chain.localnet.loaded_data import loaded_accounts_data_size_limit
from curta_chain.protocol.compute_budget import (
    COMPUTE_BUDGET_PROGRAM_ID,
    ComputeBudget,
    compute_budget,
    priority_fee,
    set_loaded_accounts_data_size_limit,
    signature_count,
    transaction_fee,
)

MIB = 1024 * 1024
PAYER = Keypair().pubkey()
CALL = Instruction(Keypair().pubkey(), b"", [AccountMeta(PAYER, True, True)])
"""An instruction of a program that is not a builtin."""


def budget_of(*instructions: Instruction) -> ComputeBudget | None:
    return compute_budget(Message([*instructions, CALL], PAYER))


def test_the_program_id_is_solders_own():
    assert COMPUTE_BUDGET_PROGRAM_ID == SOLDERS_COMPUTE_BUDGET_ID


def test_defaults_without_compute_budget_instructions():
    assert budget_of() == ComputeBudget(200_000, 0, MAX_LOADED_ACCOUNTS_DATA_SIZE, 32 * 1024)
    assert compute_budget(Message([CALL] * 8, PAYER)).unit_limit == MAX_COMPUTE_UNITS


def test_a_builtins_instruction_defaults_to_3000_units_as_simd_0170_has_it():
    pay = transfer(TransferParams(from_pubkey=PAYER, to_pubkey=Keypair().pubkey(), lamports=1))
    assert budget_of(pay).unit_limit == 203_000  # the validator's "of 203000" log line
    # A compute-budget instruction is a builtin's too; the price is paid on that limit.
    message = Message([set_compute_unit_price(1_000_000), pay], PAYER)
    assert compute_budget(message).unit_limit == 6_000
    assert transaction_fee(message) == 5_000 + 6_000
    assert compute_budget(Message([pay] * 500, PAYER)).unit_limit == MAX_COMPUTE_UNITS


def test_each_request_is_read_and_capped_as_the_runtime_caps_it():
    budget = budget_of(
        set_compute_unit_limit(2_000_000),
        set_compute_unit_price(7),
        request_heap_frame(64 * 1024),
        set_loaded_accounts_data_size_limit(2**32 - 1),
    )
    assert budget == ComputeBudget(MAX_COMPUTE_UNITS, 7, 64 * MIB, 64 * 1024)
    asked = budget_of(set_loaded_accounts_data_size_limit(1_000))
    assert asked.loaded_accounts_data_size_limit == 1_000
    # 0 is read as asked: the runtime refuses it before loading (the localnet's load_limit).
    assert budget_of(set_loaded_accounts_data_size_limit(0)).loaded_accounts_data_size_limit == 0


def test_bytes_after_a_value_are_ignored_as_the_runtime_decoder_ignores_them():
    data = bytes([2]) + (5_000).to_bytes(4, "little") + b"\xff"  # SetComputeUnitLimit, 1 more
    padded = Instruction(COMPUTE_BUDGET_PROGRAM_ID, data, [])
    assert budget_of(padded).unit_limit == 5_000


@pytest.mark.parametrize(
    "budget",
    [
        pytest.param([set_compute_unit_limit(1), set_compute_unit_limit(2)], id="limit twice"),
        pytest.param([set_compute_unit_price(1), set_compute_unit_price(1)], id="price twice"),
        pytest.param([request_heap_frame(64 * 1024)] * 2, id="heap twice"),
        pytest.param(
            [set_loaded_accounts_data_size_limit(5), set_loaded_accounts_data_size_limit(6)],
            id="loaded-data limit twice",
        ),
        pytest.param([Instruction(COMPUTE_BUDGET_PROGRAM_ID, bytes([4, 1, 0, 0]), [])], id="short"),
        pytest.param(
            [Instruction(COMPUTE_BUDGET_PROGRAM_ID, bytes([0, 1, 0, 0, 0]), [])], id="retired tag 0"
        ),
        pytest.param([Instruction(COMPUTE_BUDGET_PROGRAM_ID, bytes([9]), [])], id="unknown tag"),
        pytest.param([Instruction(COMPUTE_BUDGET_PROGRAM_ID, b"", [])], id="empty"),
        pytest.param([request_heap_frame(1_000)], id="heap not a multiple of 1 KiB"),
        pytest.param([request_heap_frame(512 * 1024)], id="heap above 256 KiB"),
    ],
)
def test_instructions_the_runtime_refuses_leave_no_budget_and_no_fee(budget):
    message = Message([*budget, CALL], PAYER)
    assert compute_budget(message) is None
    assert loaded_accounts_data_size_limit(message) is None
    assert priority_fee(message) == 0
    assert transaction_fee(message) == 5_000


def test_the_priority_fee_is_price_times_limit_rounded_up_to_a_lamport():
    message = Message([set_compute_unit_limit(300_001), set_compute_unit_price(10), CALL], PAYER)
    assert priority_fee(message) == 4  # 3,000,010 micro-lamports
    assert transaction_fee(message) == 5_004
    assert transaction_fee(message, priority=0) == 5_000


@pytest.mark.parametrize(
    "precompile",
    [
        "Ed25519SigVerify111111111111111111111111111",
        "KeccakSecp256k11111111111111111111111111111",
        "Secp256r1SigVerify1111111111111111111111111",
    ],
)
def test_a_precompiles_signatures_are_charged_as_the_runtime_charges_them(precompile: str):
    # Three signatures claimed in the instruction's first byte: the runtime charges them
    # with the transaction's own, whether or not they verify (these do not).
    payer = Keypair()
    claim = Instruction(Pubkey.from_string(precompile), bytes([3, 0]) + bytes(42), [])
    message = Message([claim], payer.pubkey())
    assert signature_count(message) == 4
    assert transaction_fee(message) == 20_000
    svm = LiteSVM()
    svm.airdrop(payer.pubkey(), 10**9)
    before = svm.get_balance(payer.pubkey())
    tx = Transaction([payer], message, svm.latest_blockhash())
    svm.send_transaction(tx)
    assert before - (svm.get_balance(payer.pubkey()) or 0) == transaction_fee(message)


def test_an_empty_precompile_instruction_claims_no_signature():
    empty = Instruction(Pubkey.from_string("Ed25519SigVerify111111111111111111111111111"), b"", [])
    assert signature_count(Message([empty, CALL], PAYER)) == 1


@pytest.mark.parametrize("version", ["legacy", "v0", "v1"])
def test_the_fee_is_exact_for_every_transaction_version(version: str):
    price = (set_compute_unit_limit(40_000), set_compute_unit_price(250_000))
    if version == "legacy":
        message: Message | MessageV0 | MessageV1 = Message([*price, CALL], PAYER)
    elif version == "v0":
        message = MessageV0.try_compile(PAYER, [*price, CALL], [], Hash.default())
    else:
        # A v1 message's compute-budget instructions configure nothing: its config does.
        config = TransactionConfig(priority_fee=777, compute_unit_limit=40_000)
        message = MessageV1.try_compile(PAYER, [*price, CALL], Hash.default(), config)
    expected = 5_000 + (777 if version == "v1" else 10_000)
    assert transaction_fee(message) == expected

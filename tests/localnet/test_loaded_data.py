"""The loaded-account-data count (SIMD-0186), rule by rule, on accounts set directly.

The limit it is held to is the compute budget's (tests/test_compute_budget.py)."""

from solders.account import Account
from solders.address_lookup_table_account import AddressLookupTableAccount
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey

from curta_chain.localnet.loaded_data import (
    ADDRESS_LOOKUP_TABLE_BASE_SIZE,
    INSTRUCTIONS_SYSVAR_ID,
    loaded_accounts_data_size,
)
from curta_chain.protocol.loader import LOADER_V3

MIB = 1024 * 1024
SYSTEM = Pubkey.default()
PAYER = Keypair().pubkey()
LOADER_V2 = Pubkey.from_string("BPFLoader2111111111111111111111111111111111")


def account(size: int, owner: Pubkey = SYSTEM, lamports: int = 1, data: bytes | None = None):
    return Account(lamports, data if data is not None else bytes(size), owner, False, 0)


def program_account(programdata: Pubkey) -> Account:
    """A LoaderV3 program account: UpgradeableLoaderState::Program, 36 bytes."""
    data = (2).to_bytes(4, "little") + bytes(programdata)
    return Account(1, data, LOADER_V3, True, 0)


def size_of(
    accounts: dict[Pubkey, Account], *instructions: Instruction, message=None, looked_up=()
) -> int:
    message = message or Message(list(instructions), PAYER)
    return loaded_accounts_data_size(message, accounts.get, looked_up)


def touching(program: Pubkey, *keys: Pubkey) -> Instruction:
    return Instruction(program, b"", [AccountMeta(k, False, False) for k in keys])


def test_every_account_is_64_bytes_plus_its_data_fee_payer_and_program_included():
    program, a, b = Keypair().pubkey(), Keypair().pubkey(), Keypair().pubkey()
    accounts = {
        PAYER: account(0),
        program: account(
            15_176, owner=Pubkey.from_string("BPFLoader2111111111111111111111111111111111")
        ),
        a: account(10 * MIB),
        b: account(856),
    }
    assert size_of(accounts, touching(program, a, b)) == 4 * 64 + 15_176 + 10 * MIB + 856


def test_missing_accounts_count_nothing_and_neither_does_one_without_lamports():
    program, gone, drained = Keypair().pubkey(), Keypair().pubkey(), Keypair().pubkey()
    accounts = {PAYER: account(0), program: account(100), drained: account(5_000, lamports=0)}
    assert size_of(accounts, touching(program, gone, drained)) == 2 * 64 + 100


def test_the_instructions_sysvar_counts_nothing():
    program = Keypair().pubkey()
    accounts = {PAYER: account(0), program: account(0), INSTRUCTIONS_SYSVAR_ID: account(9_999)}
    assert size_of(accounts, touching(program, INSTRUCTIONS_SYSVAR_ID)) == 2 * 64


def test_an_upgradeable_program_brings_its_programdata_once():
    program, programdata = Keypair().pubkey(), Keypair().pubkey()
    other_user = Keypair().pubkey()
    accounts = {
        PAYER: account(0),
        program: program_account(programdata),
        programdata: account(45 + 30_000, owner=LOADER_V3),
        other_user: account(0),
    }
    # As the instruction's program, and named again as an account: programdata counts once.
    invoked = Instruction(program, b"", [AccountMeta(program, False, False)])
    expected = 64 + (64 + 36) + (64 + 45 + 30_000)
    assert size_of(accounts, invoked) == expected
    # Only named (for a CPI), not invoked: counted all the same.
    assert size_of(accounts, touching(other_user, program)) == expected + 64
    # Named itself: counted as a key, not a second time for the program.
    both = Instruction(program, b"", [AccountMeta(programdata, False, False)])
    assert size_of(accounts, both) == expected


def test_a_program_whose_programdata_is_missing_or_not_loaderv3_adds_nothing():
    program, programdata = Keypair().pubkey(), Keypair().pubkey()
    accounts = {PAYER: account(0), program: program_account(programdata)}
    assert size_of(accounts, touching(program)) == 64 + 64 + 36
    # The same bytes under another owner are not a LoaderV3 program.
    accounts[program] = account(36, data=bytes(program_account(programdata).data))
    accounts[programdata] = account(1_000)
    assert size_of(accounts, touching(program)) == 64 + 64 + 36


def test_each_lookup_table_costs_8248_and_its_addresses_count_as_accounts():
    program, table, looked = Keypair().pubkey(), Keypair().pubkey(), Keypair().pubkey()
    accounts = {PAYER: account(0), program: account(0), table: account(56 + 32), looked: account(7)}
    lookup = AddressLookupTableAccount(table, [looked])
    ix = touching(program, looked)
    message = MessageV0.try_compile(PAYER, [ix], [lookup], Hash.default())
    assert len(message.address_table_lookups) == 1
    # The table account itself is not a key: only its flat cost counts.
    expected = ADDRESS_LOOKUP_TABLE_BASE_SIZE + 64 + 64 + (64 + 7)
    assert size_of(accounts, message=message, looked_up=[looked]) == expected

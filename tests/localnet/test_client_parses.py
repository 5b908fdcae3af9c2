"""solana-py's Client and AsyncClient against one localnet: every method they have, parsed
by solders' response types, each answer checked for its values (not just that it parsed).

One localnet (on a manual clock) serves the whole module: an airdrop, a memo, an SPL
Token mint with an associated account, then 33 slots so everything is finalized.
"""

import asyncio
import dataclasses
import json
from dataclasses import dataclass

import pytest
from localnet_helpers import advance_slots, result
from reference_client import Client
from solana.rpc.async_api import AsyncClient
from solana.rpc.models import TokenAccountOpts
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import ID as SYSTEM_PROGRAM_ID
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import VersionedTransaction
from spl.token.instructions import (
    create_associated_token_account,
    get_associated_token_address,
    initialize_mint,
    mint_to,
)
from spl.token.models import InitializeMintParams, MintToParams

from curta_chain.localnet import LocalnetHandle, ManualClock, start_in_thread
from curta_chain.localnet.parsed_programs import MEMO_PROGRAMS, TOKEN_PROGRAM
from curta_chain.localnet.parsed_tokens import MINT_SIZE

SOL = 10**9


@dataclass
class Chain:
    handle: LocalnetHandle
    client: Client
    payer: Keypair
    airdrop: Signature
    memo: Signature
    mint: Pubkey
    holder: Pubkey
    token_account: Pubkey
    slot: int


def _send(client: Client, payer: Keypair, instructions: list, *signers: Keypair) -> Signature:
    blockhash = client.get_latest_blockhash().value.blockhash
    message = Message.new_with_blockhash(instructions, payer.pubkey(), blockhash)
    return client.send_transaction(VersionedTransaction(message, [payer, *signers])).value


@pytest.fixture(scope="module")
def chain() -> Chain:
    clock = ManualClock()
    handle = start_in_thread(now=clock)
    client = Client(handle.url, "confirmed")
    payer = Keypair()
    airdrop = client.request_airdrop(payer.pubkey(), 10 * SOL).value
    memo = _send(client, payer, [Instruction(MEMO_PROGRAMS[0], b"hello curta", [])])
    mint = Keypair()
    holder = Keypair().pubkey()
    rent = client.get_minimum_balance_for_rent_exemption(MINT_SIZE).value
    _send(
        client,
        payer,
        [
            create_account(
                CreateAccountParams(
                    from_pubkey=payer.pubkey(),
                    to_pubkey=mint.pubkey(),
                    lamports=rent,
                    space=MINT_SIZE,
                    owner=TOKEN_PROGRAM,
                )
            ),
            initialize_mint(
                InitializeMintParams(
                    decimals=6,
                    program_id=TOKEN_PROGRAM,
                    mint=mint.pubkey(),
                    mint_authority=payer.pubkey(),
                )
            ),
            create_associated_token_account(payer.pubkey(), holder, mint.pubkey()),
            mint_to(
                MintToParams(
                    program_id=TOKEN_PROGRAM,
                    mint=mint.pubkey(),
                    dest=get_associated_token_address(holder, mint.pubkey()),
                    mint_authority=payer.pubkey(),
                    amount=1_500_000,
                )
            ),
        ],
        mint,
    )
    slot = result(handle.url, "getSlot", [{"commitment": "processed"}])
    advance_slots(clock, 33)
    yield Chain(
        handle,
        client,
        payer,
        airdrop,
        memo,
        mint.pubkey(),
        holder,
        get_associated_token_address(holder, mint.pubkey()),
        slot,
    )
    handle.stop()


def check_account(chain: Chain) -> None:
    value = chain.client.get_account_info(chain.payer.pubkey()).value
    assert value.owner == SYSTEM_PROGRAM_ID and 0 < value.lamports < 10 * SOL


def check_account_parsed(chain: Chain) -> None:
    value = chain.client.get_account_info_json_parsed(chain.token_account).value
    info = value.data.parsed["info"]
    assert value.data.program == "spl-token"
    assert info["owner"] == str(chain.holder) and info["mint"] == str(chain.mint)
    assert info["tokenAmount"]["uiAmountString"] == "1.5"


def check_multiple_parsed(chain: Chain) -> None:
    values = chain.client.get_multiple_accounts_json_parsed([chain.mint, Pubkey.new_unique()]).value
    assert values[0].data.parsed["info"]["supply"] == "1500000" and values[1] is None


def check_program_accounts_parsed(chain: Chain) -> None:
    values = chain.client.get_program_accounts_json_parsed(TOKEN_PROGRAM).value
    assert sorted(str(item.pubkey) for item in values) == sorted(
        [str(chain.mint), str(chain.token_account)]
    )


def check_transaction_parsed(chain: Chain) -> None:
    tx = chain.client.get_transaction(chain.airdrop, "jsonParsed").value.transaction
    parsed = tx.transaction.message.instructions[0].parsed
    assert parsed["type"] == "transfer" and parsed["info"]["lamports"] == 10 * SOL


def check_transaction_base64(chain: Chain) -> None:
    tx = chain.client.get_transaction(chain.airdrop, "base64").value.transaction
    assert tx.transaction.signatures[0] == chain.airdrop


def check_transaction_v0(chain: Chain) -> None:
    found = chain.client.get_transaction(chain.airdrop, max_supported_transaction_version=0)
    assert str(found.value.transaction.version) == "Legacy.Legacy"


def check_token_balances(chain: Chain) -> None:
    signature = chain.client.get_signatures_for_address(chain.mint).value[0].signature
    meta = chain.client.get_transaction(signature, "jsonParsed").value.transaction.meta
    assert [b.ui_token_amount.amount for b in meta.post_token_balances] == ["1500000"]
    assert meta.pre_token_balances == []


def check_signatures_for_address(chain: Chain) -> None:
    found = chain.client.get_signatures_for_address(chain.payer.pubkey()).value
    assert len(found) == 3 and found[-1].signature == chain.airdrop
    memos = [item.memo for item in found if item.memo]
    assert memos == ["[11] hello curta"]
    assert all(
        str(item.confirmation_status) == "TransactionConfirmationStatus.Finalized" for item in found
    )
    limited = chain.client.get_signatures_for_address(chain.payer.pubkey(), limit=1).value
    assert limited[0].signature == found[0].signature


def check_block(chain: Chain) -> None:
    block = chain.client.get_block(chain.slot, max_supported_transaction_version=0).value
    assert block.block_height == chain.slot and block.parent_slot == chain.slot - 1
    assert len(block.transactions) == 3  # everything landed in the first slot


def check_blocks(chain: Chain) -> None:
    blocks = chain.client.get_blocks(0).value
    assert blocks == list(range(0, chain.slot + 2))  # up to the finalized slot
    assert chain.client.get_first_available_block().value == 0
    assert chain.client.get_minimum_ledger_slot().value == 0


def check_statuses(chain: Chain) -> None:
    (status,) = chain.client.get_signature_statuses([chain.airdrop]).value
    assert str(status.confirmation_status) == "TransactionConfirmationStatus.Finalized"


def check_epoch(chain: Chain) -> None:
    info = chain.client.get_epoch_info().value
    assert info.absolute_slot == chain.slot + 32 and info.slots_in_epoch == 432_000
    schedule = chain.client.get_epoch_schedule().value
    assert schedule.slots_per_epoch == 432_000 and not schedule.warmup


def check_counts_and_heights(chain: Chain) -> None:
    assert chain.client.get_transaction_count().value == 3
    assert chain.client.get_block_height().value == chain.slot + 32
    assert chain.client.get_slot().value == chain.slot + 32


def check_block_time(chain: Chain) -> None:
    assert chain.client.get_block_time(chain.slot).value > 1_700_000_000


def check_identity_and_leaders(chain: Chain) -> None:
    identity = chain.client.get_identity().value.identity
    assert chain.client.get_slot_leader().value == identity
    schedule = chain.client.get_leader_schedule().value
    assert list(schedule) == [identity] and len(schedule[identity]) == 432_000
    (node,) = chain.client.get_cluster_nodes().value
    node = json.loads(node.to_json())
    assert node["pubkey"] == str(identity) and node["rpc"] == chain.handle.url[7:]


def check_economics(chain: Chain) -> None:
    supply = chain.client.get_supply().value
    assert supply.total == supply.circulating > 500_000_000 * SOL
    largest = chain.client.get_largest_accounts().value
    assert len(largest) == 20 and largest[0].lamports > largest[-1].lamports
    assert chain.client.get_inflation_governor().value.initial == 0.08
    assert chain.client.get_inflation_rate().value.total == 0.08
    assert chain.client.get_inflation_reward([chain.payer.pubkey()]).value == [None]
    votes = chain.client.get_vote_accounts().value
    assert votes.current == [] and votes.delinquent == []


def check_commitment_and_samples(chain: Chain) -> None:
    commitment = chain.client.get_block_commitment(chain.slot).value
    assert commitment.total_stake == 0
    samples = chain.client.get_recent_performance_samples().value
    assert samples == []  # a sample covers 60 s; the clock has moved 13 s


def check_tokens(chain: Chain) -> None:
    client = chain.client
    balance = client.get_token_account_balance(chain.token_account).value
    assert balance.amount == "1500000" and balance.decimals == 6
    assert client.get_token_supply(chain.mint).value.ui_amount_string == "1.5"
    (largest,) = client.get_token_largest_accounts(chain.mint).value
    assert largest.address == chain.token_account
    owned = client.get_token_accounts_by_owner(chain.holder, TokenAccountOpts(mint=chain.mint))
    assert [item.pubkey for item in owned.value] == [chain.token_account]
    parsed = client.get_token_accounts_by_owner_json_parsed(
        chain.holder, TokenAccountOpts(program_id=TOKEN_PROGRAM)
    ).value
    assert parsed[0].account.data.parsed["info"]["state"] == "initialized"
    delegated = client.get_token_accounts_by_delegate(
        chain.holder, TokenAccountOpts(program_id=TOKEN_PROGRAM)
    )
    assert delegated.value == []


def check_genesis_version_blockhash(chain: Chain) -> None:
    assert chain.client.get_genesis_hash().value == chain.client.get_genesis_hash().value
    assert chain.client.get_version().value.solana_core == "2.2.0"
    latest = chain.client.get_latest_blockhash("finalized").value
    assert latest.last_valid_block_height == chain.slot + 1 + 150  # finalized: slot + 1
    valid = result(chain.handle.url, "isBlockhashValid", [str(latest.blockhash)])
    assert valid["value"] is True


def check_balance(chain: Chain) -> None:
    assert chain.client.get_balance(chain.holder, "processed").value == 0
    assert chain.client.get_balance(chain.payer.pubkey()).value > 9 * SOL


CHECKS = [
    check_account,
    check_account_parsed,
    check_multiple_parsed,
    check_program_accounts_parsed,
    check_transaction_parsed,
    check_transaction_base64,
    check_transaction_v0,
    check_token_balances,
    check_signatures_for_address,
    check_block,
    check_blocks,
    check_statuses,
    check_epoch,
    check_counts_and_heights,
    check_block_time,
    check_identity_and_leaders,
    check_economics,
    check_commitment_and_samples,
    check_tokens,
    check_genesis_version_blockhash,
    check_balance,
]


class AsyncAsSync:
    """AsyncClient's methods called as Client's are: each call runs on a fresh client."""

    def __init__(self, url: str, commitment: str):
        self.url, self.commitment = url, commitment

    def __getattr__(self, name: str):
        def call(*args, **kwargs):
            async def run():
                async with AsyncClient(self.url, self.commitment) as client:
                    return await getattr(client, name)(*args, **kwargs)

            return asyncio.run(run())

        return call


@pytest.mark.parametrize("kind", ["Client", "AsyncClient"])
@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__[6:])
def test_client_parses(chain, check, kind):
    if kind == "AsyncClient":
        chain = dataclasses.replace(chain, client=AsyncAsSync(chain.handle.url, "confirmed"))
    check(chain)

"""The largest model the spec allows, through its whole life, within a validator's limits.

18 sections, 79,228,720 bytes: more than the 64 MiB of account data a validator loads for
one transaction. Every transaction here is measured before it runs (``Chain.send``) and
stays far below that; the one the old design needed (every weight account at once) would
not. The bytes go in by ``set_account`` (78,000 writes would add nothing here: each write to
an account loads the same accounts), with one real write per section measured.
"""

import pytest
from curta_svm import PROGRAM_ID, Chain, Published
from solders.account import Account
from solders.instruction import AccountMeta, Instruction
from solders.message import Message

from curta_chain.artifact import Artifact
from curta_chain.constants import (
    MAX_ACCOUNT_SIZE,
    MAX_LOADED_ACCOUNTS_DATA_SIZE,
    MAX_SECTIONS,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.localnet.loaded_data import loaded_accounts_data_size
from curta_chain.program import MAX_WRITE_PAYLOAD, ModelState, begin_sealing, write_weights

ONE_WEIGHT_ACCOUNT_AT_MOST = MAX_ACCOUNT_SIZE + 128 * 1024
"""A transaction loads one weight account, the model, the programs (curta's build is about
100 KB) and the payer: no more."""


def fill(chain: Chain, pub: Published, sections: list[bytes]) -> None:
    """Put each section's bytes in place: one real write, then the rest set directly."""
    auth = chain.authority.pubkey()
    for key, section in zip(pub.weight_keys, sections, strict=True):
        chain.must([write_weights(PROGRAM_ID, auth, key, 0, section[:MAX_WRITE_PAYLOAD])])
        held = chain.svm.get_account(key)
        data = bytes(held.data)[:WEIGHT_HEADER_SIZE] + section
        chain.svm.set_account(key, Account(held.lamports, data, held.owner, False, 0))


def on_chain(chain: Chain, key) -> bytes:
    return bytes(chain.svm.get_account(key).data)[WEIGHT_HEADER_SIZE:]


@pytest.fixture(scope="module")
def chain() -> Chain:
    return Chain()


def test_publish_fail_reopen_seal_and_verify_the_largest_model(chain: Chain, largest: Artifact):
    sections = [bytes(s) for s in largest.sections]
    assert len(sections) == MAX_SECTIONS
    assert sum(map(len, sections)) == 79_228_720 > MAX_LOADED_ACCOUNTS_DATA_SIZE
    pub = chain.publish(sections, declared=largest.weights_hash(), write=False)
    bad = bytearray(sections[17])
    bad[-1] ^= 1
    fill(chain, pub, [*sections[:17], bytes(bad)])
    chain.loaded_sizes.clear()

    # What the old beginSealing loaded, every weight account at once: a validator refuses it.
    auth, address = chain.authority.pubkey(), pub.model.pubkey()
    begin = begin_sealing(PROGRAM_ID, auth, address)
    every = [AccountMeta(k, False, True) for k in pub.weight_keys]
    old = Instruction(PROGRAM_ID, begin.data, [*begin.accounts, *every])
    old_size = loaded_accounts_data_size(Message([old], auth), chain.svm.get_account)
    assert old_size > MAX_LOADED_ACCOUNTS_DATA_SIZE

    chain.begin(pub)
    failed = chain.seal(pub)
    assert failed.state == ModelState.FAILED and failed.frozen_count == MAX_SECTIONS
    reopened = chain.reopen_all(pub)
    assert (reopened.state, reopened.frozen_count) == (ModelState.UPLOADING, 0)
    fix = write_weights(PROGRAM_ID, auth, pub.weight_keys[17], len(bad) - 1, sections[17][-1:])
    chain.must([fix])
    chain.begin(pub)
    sealed = chain.seal(pub)

    # verify: sealed against the declared hash, and every byte on chain is the artifact's.
    assert sealed.state == ModelState.SEALED
    assert sealed.running_hash == sealed.declared_hash == largest.weights_hash()
    assert sealed.chunks_hashed == sum(-(-len(s) // 65_536) for s in sections) == 1_212
    assert all(on_chain(chain, k) == s for k, s in zip(pub.weight_keys, sections, strict=True))
    steps = 2 * 1_212
    assert len(chain.loaded_sizes) == 2 + steps + MAX_SECTIONS + 1
    assert max(chain.loaded_sizes) < ONE_WEIGHT_ACCOUNT_AT_MOST
    print(f"largest loaded: {max(chain.loaded_sizes):,} bytes; old beginSealing: {old_size:,}")


def test_an_unsealed_largest_model_closes_with_every_lamport_back(chain: Chain, largest: Artifact):
    lengths = [len(s) for s in largest.sections]
    pub = chain.publish([bytes(n) for n in lengths], declared=bytes(32), write=False)
    chain.begin(pub)  # sealing, the seal inside section 1: two weight accounts frozen
    for _ in range(14):
        chain.seal_step(pub)
    assert chain.model(pub.model.pubkey()).frozen_count == 2
    keys = [pub.model.pubkey(), *pub.weight_keys]
    held = sum(chain.svm.get_balance(k) for k in keys)
    before = chain.svm.get_balance(chain.authority.pubkey())
    chain.loaded_sizes.clear()
    chain.close_all(pub)
    assert len(chain.loaded_sizes) == MAX_SECTIONS + 1
    assert max(chain.loaded_sizes) < ONE_WEIGHT_ACCOUNT_AT_MOST
    assert chain.svm.get_balance(chain.authority.pubkey()) == before + held - 5_000 * 19
    assert not any(chain.svm.get_balance(k) for k in keys)
    print(f"rent of the largest model: {held:,} lamports")

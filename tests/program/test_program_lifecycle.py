"""Every instruction's success path, in the real runtime."""

import os

from curta_svm import PROGRAM_ID, Chain, weights_hash
from solders.pubkey import Pubkey

from curta_chain.constants import MAX_SECTION_SIZE, WEIGHT_HEADER_SIZE
from curta_chain.program import (
    ModelState,
    close_model,
    close_weight_account,
    reopen,
    seal_step,
    write_weights,
)


def test_publish_and_seal_reaches_sealed(chain: Chain):
    sections = [os.urandom(70_000), os.urandom(3_000)]
    pub = chain.publish(sections)
    model = chain.model(pub.model.pubkey())
    assert model.state == ModelState.UPLOADING
    assert model.authority == chain.authority.pubkey()
    assert model.declared_hash == weights_hash(sections)
    assert model.running_hash == bytes(32)
    assert (model.section_count, model.bound_count) == (2, 2)
    assert [s.length for s in model.sections] == [70_000, 3_000]
    assert [s.weight_account for s in model.sections] == pub.weight_keys
    for index, weight in enumerate(pub.weights):
        data = bytes(chain.svm.get_account(weight.pubkey()).data)
        assert data[WEIGHT_HEADER_SIZE:] == sections[index]
        assert data[88:WEIGHT_HEADER_SIZE] == bytes(WEIGHT_HEADER_SIZE - 88)
        header = chain.header(weight.pubkey())
        assert header.model == pub.model.pubkey()
        assert header.authority == chain.authority.pubkey()
        assert (header.section_index, header.frozen, header.section_length) == (
            index,
            False,
            len(sections[index]),
        )

    chain.svm.warp_to_slot(4_321)
    chain.begin(pub)
    model = chain.model(pub.model.pubkey())
    assert model.state == ModelState.SEALING
    assert (model.cursor_section, model.cursor_offset, model.chunks_hashed) == (0, 0, 0)
    assert model.seal_slot == 4_321  # the Clock slot at which this seal began
    # beginSealing freezes nothing: each section freezes when the seal enters it.
    assert model.frozen_count == 0
    assert not any(chain.header(k).frozen for k in pub.weight_keys)

    sealed = chain.seal(pub)
    assert sealed.state == ModelState.SEALED
    assert sealed.chunks_hashed == 3  # 65,536 + 4,464 of section 0, then section 1 whole
    assert (sealed.cursor_section, sealed.cursor_offset) == (2, 0)
    assert sealed.running_hash == weights_hash(sections)
    assert sealed.frozen_count == 2 and sealed.seal_slot == 4_321
    assert all(chain.header(k).frozen for k in pub.weight_keys)


def test_seal_cursor_advances_chunk_by_chunk_freezing_each_section_as_it_enters(chain: Chain):
    sections = [os.urandom(65_536 * 2 + 1), os.urandom(65_536)]
    pub = chain.publish(sections)
    chain.begin(pub)
    expected = [(0, 65_536, [True, False]), (0, 131_072, [True, False]), (1, 0, [True, False])]
    expected.append((2, 0, [True, True]))
    for section, offset, frozen in expected:
        cursor = chain.model(pub.model.pubkey()).cursor_section
        chain.must([seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.weight_keys[cursor]], 0)])
        model = chain.model(pub.model.pubkey())
        assert (model.cursor_section, model.cursor_offset) == (section, offset)
        assert [chain.header(k).frozen for k in pub.weight_keys] == frozen
        assert model.frozen_count == sum(frozen)
    assert model.state == ModelState.SEALED
    assert model.chunks_hashed == 4


def test_a_section_the_seal_has_not_entered_takes_writes_and_the_seal_hashes_them(chain: Chain):
    good = [os.urandom(70_000), os.urandom(3_000)]
    stale = [good[0], bytes(3_000)]
    pub = chain.publish(stale, declared=weights_hash(good))
    chain.begin(pub)
    chain.must([seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.weight_keys[0]], 0)])
    chain.write_all(pub.weight_keys[1], good[1])  # section 1: not entered, still open
    assert chain.seal(pub).state == ModelState.SEALED


def test_wrong_declared_hash_fails_then_reopen_fix_and_reseal(chain: Chain):
    good = [os.urandom(5_000), os.urandom(2_000)]
    bad = [good[0][:100] + bytes([good[0][100] ^ 1]) + good[0][101:], good[1]]
    pub = chain.publish(bad, declared=weights_hash(good))
    chain.begin(pub)
    failed = chain.seal(pub)
    assert failed.state == ModelState.FAILED
    assert failed.running_hash == weights_hash(bad)

    assert failed.frozen_count == 2

    auth, address = chain.authority.pubkey(), pub.model.pubkey()
    chain.must([reopen(PROGRAM_ID, auth, address, pub.weight_keys[0], 0)])
    model = chain.model(address)
    # One weight account reopened: it takes writes again, the model stays failed.
    assert (model.state, model.frozen_count) == (ModelState.FAILED, 1)
    assert [chain.header(k).frozen for k in pub.weight_keys] == [False, True]
    fix = write_weights(PROGRAM_ID, auth, pub.weight_keys[0], 100, good[0][100:101])
    chain.must([fix])

    chain.must([reopen(PROGRAM_ID, auth, address, pub.weight_keys[1], 1)])
    model = chain.model(address)
    assert (model.state, model.frozen_count, model.seal_slot) == (ModelState.UPLOADING, 0, 0)
    assert (model.running_hash, model.chunks_hashed, model.cursor_section) == (bytes(32), 0, 0)
    assert not any(chain.header(k).frozen for k in pub.weight_keys)
    chain.begin(pub)
    assert chain.seal(pub).state == ModelState.SEALED


def _close_and_check(chain: Chain, pub) -> None:
    keys = [pub.model.pubkey(), *pub.weight_keys]
    held = sum(chain.svm.get_balance(k) or 0 for k in keys)
    bound = chain.model(pub.model.pubkey()).bound_count
    before = chain.svm.get_balance(chain.authority.pubkey())
    chain.close_all(pub)
    after = chain.svm.get_balance(chain.authority.pubkey())
    assert after == before + held - 5_000 * (bound + 1)  # one signature's fee a transaction
    for key in keys:
        account = chain.svm.get_account(key)
        assert account is None or (account.lamports == 0 and len(account.data) == 0)


def test_close_an_uploading_model_returns_every_lamport(chain: Chain):
    pub = chain.publish([os.urandom(3_000), os.urandom(10)])
    _close_and_check(chain, pub)


def test_close_a_partly_bound_model(chain: Chain):
    sections = [os.urandom(100), os.urandom(200), os.urandom(300)]
    pub = chain.publish(sections, bind=False, write=False)
    chain.must(chain.bind_ixs(pub.model.pubkey(), pub.weights[2], 2, 300), [pub.weights[2]])
    chain.must(chain.bind_ixs(pub.model.pubkey(), pub.weights[0], 0, 100), [pub.weights[0]])
    assert chain.model(pub.model.pubkey()).bound_count == 2
    _close_and_check(chain, pub)


def test_a_model_with_nothing_bound_closes_at_once(chain: Chain):
    pub = chain.publish([b"a", b"b"], bind=False, write=False)
    _close_and_check(chain, pub)


def test_close_a_sealing_and_a_failed_model(chain: Chain):
    pub = chain.publish([os.urandom(70_000), os.urandom(10)], declared=bytes(32))
    chain.begin(pub)
    chain.must([seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.weight_keys[0]], 0)])
    assert chain.model(pub.model.pubkey()).state == ModelState.SEALING
    _close_and_check(chain, pub)

    failed = chain.publish([os.urandom(10), os.urandom(10)], declared=bytes(32))
    chain.begin(failed)
    assert chain.seal(failed).state == ModelState.FAILED
    _close_and_check(chain, failed)


def test_closing_goes_one_weight_account_at_a_time_and_is_one_way(chain: Chain):
    pub = chain.publish([os.urandom(10), os.urandom(10)], declared=bytes(32))
    chain.begin(pub)
    assert chain.seal(pub).state == ModelState.FAILED
    auth, address = chain.authority.pubkey(), pub.model.pubkey()
    held = chain.svm.get_balance(pub.weight_keys[1])
    before = chain.svm.get_balance(auth)
    chain.must([close_weight_account(PROGRAM_ID, auth, address, pub.weight_keys[1], 1)])
    assert chain.svm.get_balance(auth) == before + held - 5_000
    model = chain.model(address)
    assert (model.state, model.bound_count, model.frozen_count) == (ModelState.CLOSING, 1, 1)
    assert model.sections[1].weight_account == Pubkey.default()
    assert not chain.svm.get_balance(pub.weight_keys[1])  # gone: no lamports, no data
    # A closing model takes no reopen, no seal, no bind: only more closes.
    refused = chain.send([reopen(PROGRAM_ID, auth, address, pub.weight_keys[0], 0)])
    assert refused.error == "ModelNotFailed"
    chain.must([close_weight_account(PROGRAM_ID, auth, address, pub.weight_keys[0], 0)])
    chain.must([close_model(PROGRAM_ID, auth, address)])
    assert not chain.svm.get_balance(address)


def test_largest_section_account_binds_writes_and_seals_its_last_byte(chain: Chain):
    sections = [bytes(MAX_SECTION_SIZE), b"\x01"]
    pub = chain.publish(sections, declared=bytes(32), write=False)
    tail = write_weights(
        PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], MAX_SECTION_SIZE - 3, b"abc"
    )
    chain.must([tail])
    chain.write_all(pub.weight_keys[1], b"\x01")
    data = bytes(chain.svm.get_account(pub.weight_keys[0]).data)
    assert len(data) == 10_485_760 and data[-3:] == b"abc"

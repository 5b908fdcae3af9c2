"""Every instruction's success path, in the real runtime."""

import os

from curta_svm import PROGRAM_ID, Chain, weights_hash

from curta_chain.constants import MAX_SECTION_SIZE, WEIGHT_HEADER_SIZE
from curta_chain.program import ModelState, close_model, reopen, seal_step, write_weights


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

    chain.begin(pub)
    model = chain.model(pub.model.pubkey())
    assert model.state == ModelState.SEALING
    assert (model.cursor_section, model.cursor_offset, model.chunks_hashed) == (0, 0, 0)
    assert all(chain.header(k).frozen for k in pub.weight_keys)

    sealed = chain.seal(pub)
    assert sealed.state == ModelState.SEALED
    assert sealed.chunks_hashed == 3  # 65,536 + 4,464 of section 0, then section 1 whole
    assert (sealed.cursor_section, sealed.cursor_offset) == (2, 0)
    assert sealed.running_hash == weights_hash(sections)


def test_seal_cursor_advances_chunk_by_chunk(chain: Chain):
    sections = [os.urandom(65_536 * 2 + 1), os.urandom(65_536)]
    pub = chain.publish(sections)
    chain.begin(pub)
    expected = [(0, 65_536), (0, 131_072), (1, 0), (2, 0)]
    for section, offset in expected:
        cursor = chain.model(pub.model.pubkey()).cursor_section
        chain.must([seal_step(PROGRAM_ID, pub.model.pubkey(), pub.weight_keys[cursor])])
        model = chain.model(pub.model.pubkey())
        assert (model.cursor_section, model.cursor_offset) == (section, offset)
    assert model.state == ModelState.SEALED
    assert model.chunks_hashed == 4


def test_wrong_declared_hash_fails_then_reopen_fix_and_reseal(chain: Chain):
    good = [os.urandom(5_000), os.urandom(2_000)]
    bad = [good[0][:100] + bytes([good[0][100] ^ 1]) + good[0][101:], good[1]]
    pub = chain.publish(bad, declared=weights_hash(good))
    chain.begin(pub)
    failed = chain.seal(pub)
    assert failed.state == ModelState.FAILED
    assert failed.running_hash == weights_hash(bad)

    chain.must([reopen(PROGRAM_ID, chain.authority.pubkey(), pub.model.pubkey(), pub.weight_keys)])
    model = chain.model(pub.model.pubkey())
    assert model.state == ModelState.UPLOADING
    assert (model.running_hash, model.chunks_hashed, model.cursor_section) == (bytes(32), 0, 0)
    assert not any(chain.header(k).frozen for k in pub.weight_keys)

    fix = write_weights(
        PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], 100, good[0][100:101]
    )
    chain.must([fix])
    chain.begin(pub)
    assert chain.seal(pub).state == ModelState.SEALED


def _close_and_check(chain: Chain, pub, bound_keys) -> None:
    keys = [pub.model.pubkey(), *pub.weight_keys]
    held = sum(chain.svm.get_balance(k) or 0 for k in keys)
    before = chain.svm.get_balance(chain.authority.pubkey())
    ix = close_model(PROGRAM_ID, chain.authority.pubkey(), pub.model.pubkey(), bound_keys)
    chain.must([ix])
    after = chain.svm.get_balance(chain.authority.pubkey())
    assert after == before + held - 5_000  # one signature's fee
    for key in keys:
        account = chain.svm.get_account(key)
        assert account is None or (account.lamports == 0 and len(account.data) == 0)


def test_close_an_uploading_model_returns_every_lamport(chain: Chain):
    pub = chain.publish([os.urandom(3_000), os.urandom(10)])
    _close_and_check(chain, pub, pub.weight_keys)


def test_close_a_partly_bound_model(chain: Chain):
    sections = [os.urandom(100), os.urandom(200), os.urandom(300)]
    pub = chain.publish(sections, bind=False, write=False)
    chain.must(chain.bind_ixs(pub.model.pubkey(), pub.weights[2], 2, 300), [pub.weights[2]])
    chain.must(chain.bind_ixs(pub.model.pubkey(), pub.weights[0], 0, 100), [pub.weights[0]])
    assert chain.model(pub.model.pubkey()).bound_count == 2
    _close_and_check(chain, pub, [pub.weight_keys[0], pub.weight_keys[2]])


def test_close_a_sealing_and_a_failed_model(chain: Chain):
    pub = chain.publish([os.urandom(70_000), os.urandom(10)], declared=bytes(32))
    chain.begin(pub)
    chain.must([seal_step(PROGRAM_ID, pub.model.pubkey(), pub.weight_keys[0])])
    assert chain.model(pub.model.pubkey()).state == ModelState.SEALING
    _close_and_check(chain, pub, pub.weight_keys)

    failed = chain.publish([os.urandom(10), os.urandom(10)], declared=bytes(32))
    chain.begin(failed)
    assert chain.seal(failed).state == ModelState.FAILED
    _close_and_check(chain, failed, failed.weight_keys)


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

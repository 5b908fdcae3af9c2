"""Every refusal: the named error from the IDL, one log line, and no account changed."""

import os
from collections.abc import Sequence

import pytest
from curta_svm import PROGRAM_ID, Chain, Published
from solders.account import Account
from solders.compute_budget import set_compute_unit_price
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.constants import MAX_SECTION_SIZE, WEIGHT_HEADER_SIZE
from curta_chain.program import (
    MODEL_ACCOUNT_SIZE,
    ModelState,
    WeightHeader,
    begin_sealing,
    bind_weight_account,
    close_model,
    close_weight_account,
    create_model,
    reopen,
    seal_step,
    write_weights,
)

SYSTEM_PROGRAM = Pubkey.default()


def state(chain: Chain, keys: Sequence[Pubkey]) -> list:
    out = []
    for key in keys:
        account = chain.svm.get_account(key)
        out.append(
            None if account is None else (account.lamports, bytes(account.data), account.owner)
        )
    return out


def refused(
    chain: Chain,
    ixs: Sequence[Instruction],
    name: str,
    watch: Sequence[Pubkey],
    signers: Sequence[Keypair] = (),
) -> None:
    """Send ``ixs``; assert the program refused with ``name``, logged it, and changed nothing."""
    before = state(chain, watch)
    result = chain.send(ixs, signers)
    assert not result.ok, result.logs
    assert result.error == name, (result.raw_error, result.logs)
    assert any(line.startswith(f"Program log: {name}:") for line in result.logs), result.logs
    assert state(chain, watch) == before


def metas(ix: Instruction, **changes: tuple[bool, bool]) -> Instruction:
    """The same instruction with account i's (signer, writable) flags replaced: a{i}=(s, w)."""
    accounts = list(ix.accounts)
    for key, (signer, writable) in changes.items():
        i = int(key[1:])
        accounts[i] = AccountMeta(accounts[i].pubkey, signer, writable)
    return Instruction(ix.program_id, ix.data, accounts)


def keys_of(pub: Published) -> list[Pubkey]:
    return [pub.model.pubkey(), *pub.weight_keys]


@pytest.fixture
def pub(chain: Chain) -> Published:
    return chain.publish([os.urandom(3_000), os.urandom(500)])


@pytest.fixture
def sealed(chain: Chain, pub: Published) -> Published:
    chain.begin(pub)
    assert chain.seal(pub).state == ModelState.SEALED
    return pub


@pytest.fixture
def failed(chain: Chain) -> Published:
    failed = chain.publish([b"a", b"b"], declared=bytes(32))
    chain.begin(failed)
    assert chain.seal(failed).state == ModelState.FAILED
    return failed


# -- signer that is not the authority ------------------------------------------------------


def test_write_by_a_non_authority(chain: Chain, pub: Published):
    other = chain.funded()
    ix = write_weights(PROGRAM_ID, other.pubkey(), pub.weight_keys[0], 0, b"x")
    refused(chain, [ix], "WrongAuthority", keys_of(pub), [other])


def test_bind_by_a_non_authority(chain: Chain, pub: Published):
    other = chain.funded()
    weight = Keypair()
    create = chain.new_account(weight, WEIGHT_HEADER_SIZE + 10)
    model = Keypair()
    chain.must(chain.create_model_ixs(model, bytes(32), [10, 10]), [model])
    ix = bind_weight_account(PROGRAM_ID, other.pubkey(), model.pubkey(), weight.pubkey(), 0)
    refused(chain, [create, ix], "WrongAuthority", [model.pubkey()], [other, weight])


def test_begin_by_a_non_authority(chain: Chain, pub: Published):
    other = chain.funded()
    ix = begin_sealing(PROGRAM_ID, other.pubkey(), pub.model.pubkey())
    refused(chain, [ix], "WrongAuthority", keys_of(pub), [other])


def test_reopen_by_a_non_authority(chain: Chain, failed: Published):
    other = chain.funded()
    ix = reopen(PROGRAM_ID, other.pubkey(), failed.model.pubkey(), failed.weight_keys[0], 0)
    refused(chain, [ix], "WrongAuthority", keys_of(failed), [other])


def test_close_by_a_non_authority(chain: Chain, pub: Published):
    other = chain.funded()
    m, w = pub.model.pubkey(), pub.weight_keys
    for ix in (
        close_weight_account(PROGRAM_ID, other.pubkey(), m, w[1], 1),
        close_model(PROGRAM_ID, other.pubkey(), m),
    ):
        refused(chain, [ix], "WrongAuthority", keys_of(pub), [other])


@pytest.mark.parametrize(
    "which", ["write", "bind", "begin", "reopen", "close-weight", "close", "create"]
)
def test_authority_that_did_not_sign(chain: Chain, pub: Published, which: str):
    auth = chain.authority.pubkey()
    m, w = pub.model.pubkey(), pub.weight_keys
    ix = {
        "write": lambda: write_weights(PROGRAM_ID, auth, w[0], 0, b"x"),
        "bind": lambda: bind_weight_account(PROGRAM_ID, auth, m, w[0], 0),
        "begin": lambda: begin_sealing(PROGRAM_ID, auth, m),
        "reopen": lambda: reopen(PROGRAM_ID, auth, m, w[0], 0),
        "close-weight": lambda: close_weight_account(PROGRAM_ID, auth, m, w[0], 0),
        "close": lambda: close_model(PROGRAM_ID, auth, m),
        "create": lambda: create_model(PROGRAM_ID, auth, m, bytes(32), [1, 1]),
    }[which]()
    # The fee payer must sign, so an outsider pays and the authority only appears unsigned.
    payer = chain.funded()
    before = state(chain, keys_of(pub))
    others = {"bind": [pub.weights[0]], "create": [pub.model]}.get(which, [])
    unsigned = metas(ix, a0=(False, ix.accounts[0].is_writable))
    result = chain.send([unsigned], others, payer=payer)
    assert result.error == "MissingSignature", result.logs
    assert state(chain, keys_of(pub)) == before


# -- write bounds -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offset", "length"),
    [(3_000, 1), (2_999, 2), (0, 3_001), (0xFFFF_FFFF, 1_000), (4_000, 0)],
)
def test_write_out_of_bounds(chain: Chain, pub: Published, offset: int, length: int):
    ix = write_weights(
        PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], offset, bytes(length)
    )
    refused(chain, [ix], "WriteOutOfBounds", keys_of(pub))


def test_write_ending_exactly_at_the_section_end_is_accepted(chain: Chain, pub: Published):
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], 2_990, b"z" * 10)
    chain.must([ix])
    assert bytes(chain.svm.get_account(pub.weight_keys[0]).data)[-10:] == b"z" * 10


@pytest.mark.parametrize("cut", [1, 8, 12, 15])
def test_write_with_truncated_instruction_data(chain: Chain, pub: Published, cut: int):
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], 0, b"abcd")
    short = Instruction(PROGRAM_ID, bytes(ix.data)[: len(ix.data) - cut], ix.accounts)
    name = "InvalidInstructionData"
    refused(chain, [short], name, keys_of(pub))


def test_write_with_trailing_bytes(chain: Chain, pub: Published):
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], 0, b"abcd")
    longer = Instruction(PROGRAM_ID, bytes(ix.data) + b"!", ix.accounts)
    refused(chain, [longer], "InvalidInstructionData", keys_of(pub))


def test_write_to_a_weight_account_not_writable(chain: Chain, pub: Published):
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], 0, b"x")
    refused(chain, [metas(ix, a1=(False, False))], "AccountNotWritable", keys_of(pub))


def test_write_to_the_model_account(chain: Chain, pub: Published):
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.model.pubkey(), 0, b"x")
    refused(chain, [ix], "WrongAccountSize", keys_of(pub))


def test_write_to_an_account_of_another_program(chain: Chain, pub: Published):
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), chain.funded().pubkey(), 0, b"x")
    refused(chain, [ix], "WrongAccountOwner", keys_of(pub))


def test_write_into_a_section_the_seal_has_entered(chain: Chain, pub: Published):
    chain.begin(pub)
    chain.must([seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.weight_keys[0]], 0)])
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], 0, b"x")
    refused(chain, [ix], "WeightAccountFrozen", keys_of(pub))


def test_write_into_a_section_the_seal_is_inside(chain: Chain):
    big = chain.publish([os.urandom(70_000), os.urandom(10)])
    chain.begin(big)
    chain.must([seal_step(PROGRAM_ID, big.model.pubkey(), [big.weight_keys[0]], 0)])
    assert chain.model(big.model.pubkey()).cursor_offset == 65_536
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), big.weight_keys[0], 69_999, b"x")
    refused(chain, [ix], "WeightAccountFrozen", keys_of(big))


def test_write_after_sealed(chain: Chain, sealed: Published):
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), sealed.weight_keys[0], 0, b"x")
    refused(chain, [ix], "WeightAccountFrozen", keys_of(sealed))


# -- create ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lengths", "name"),
    [
        ([10], "BadSectionCount"),
        ([10] * 19, "BadSectionCount"),
        ([], "BadSectionCount"),
        ([10, 0], "BadSectionLength"),
        ([MAX_SECTION_SIZE + 1, 10], "BadSectionLength"),
        ([2**64 - 1, 10], "BadSectionLength"),
    ],
)
def test_create_with_bad_sections(chain: Chain, lengths: list[int], name: str):
    model = Keypair()
    ixs = chain.create_model_ixs(model, bytes(32), lengths)
    refused(chain, ixs, name, [model.pubkey()], [model])


def test_create_with_the_largest_section_and_most_sections(chain: Chain):
    model = Keypair()
    chain.must(chain.create_model_ixs(model, bytes(32), [MAX_SECTION_SIZE] * 18), [model])
    assert chain.model(model.pubkey()).section_count == 18


def test_create_twice_on_the_same_account(chain: Chain, pub: Published):
    ix = create_model(PROGRAM_ID, chain.authority.pubkey(), pub.model.pubkey(), bytes(32), [1, 1])
    refused(chain, [ix], "AccountNotFresh", keys_of(pub), [pub.model])


def test_create_on_a_model_account_of_the_wrong_size(chain: Chain):
    model = Keypair()
    ixs = chain.create_model_ixs(model, bytes(32), [1, 1], size=MODEL_ACCOUNT_SIZE + 1)
    refused(chain, ixs, "WrongAccountSize", [model.pubkey()], [model])


def test_create_on_an_account_the_program_does_not_own(chain: Chain):
    model = Keypair()
    create = chain.new_account(model, MODEL_ACCOUNT_SIZE, owner=SYSTEM_PROGRAM)
    ix = create_model(PROGRAM_ID, chain.authority.pubkey(), model.pubkey(), bytes(32), [1, 1])
    refused(chain, [create, ix], "WrongAccountOwner", [model.pubkey()], [model])


def test_create_with_the_model_unsigned(chain: Chain):
    model = Keypair()
    chain.must([chain.new_account(model, MODEL_ACCOUNT_SIZE)], [model])
    ix = create_model(PROGRAM_ID, chain.authority.pubkey(), model.pubkey(), bytes(32), [1, 1])
    refused(chain, [metas(ix, a1=(False, True))], "MissingSignature", [model.pubkey()])


def test_create_with_the_model_read_only(chain: Chain):
    model = Keypair()
    chain.must([chain.new_account(model, MODEL_ACCOUNT_SIZE)], [model])
    ix = create_model(PROGRAM_ID, chain.authority.pubkey(), model.pubkey(), bytes(32), [1, 1])
    refused(chain, [metas(ix, a1=(True, False))], "AccountNotWritable", [model.pubkey()], [model])


def test_create_with_a_length_list_that_disagrees_with_its_count(chain: Chain):
    model = Keypair()
    ixs = chain.create_model_ixs(model, bytes(32), [5, 5, 5])
    data = bytearray(ixs[1].data)
    data[40:44] = (2).to_bytes(4, "little")  # claims 2 lengths, carries 3
    ixs[1] = Instruction(PROGRAM_ID, bytes(data), ixs[1].accounts)
    refused(chain, ixs, "InvalidInstructionData", [model.pubkey()], [model])


def test_create_with_authority_and_model_the_same_account(chain: Chain):
    model = Keypair()
    ixs = chain.create_model_ixs(model, bytes(32), [1, 1])
    ixs[1] = create_model(PROGRAM_ID, model.pubkey(), model.pubkey(), bytes(32), [1, 1])
    refused(chain, ixs, "DuplicateAccount", [model.pubkey()], [model])


# -- bind --------------------------------------------------------------------------------------


@pytest.fixture
def fresh(chain: Chain) -> Published:
    """A model with two slots of 100 and 200 bytes, nothing bound."""
    return chain.publish([bytes(100), bytes(200)], bind=False, write=False)


def _bind(chain: Chain, fresh: Published, index: int, size: int, owner: Pubkey = PROGRAM_ID):
    weight = Keypair()
    create = chain.new_account(weight, size, owner=owner)
    ix = bind_weight_account(
        PROGRAM_ID, chain.authority.pubkey(), fresh.model.pubkey(), weight.pubkey(), index
    )
    return weight, [create, ix]


def test_bind_a_weight_account_of_the_wrong_size(chain: Chain, fresh: Published):
    weight, ixs = _bind(chain, fresh, 0, WEIGHT_HEADER_SIZE + 101)
    refused(chain, ixs, "WrongAccountSize", [fresh.model.pubkey()], [weight])
    weight, ixs = _bind(chain, fresh, 0, WEIGHT_HEADER_SIZE + 200)
    refused(chain, ixs, "WrongAccountSize", [fresh.model.pubkey()], [weight])


def test_bind_a_weight_account_of_the_wrong_owner(chain: Chain, fresh: Published):
    weight, ixs = _bind(chain, fresh, 0, WEIGHT_HEADER_SIZE + 100, owner=SYSTEM_PROGRAM)
    refused(chain, ixs, "WrongAccountOwner", [fresh.model.pubkey()], [weight])


def test_bind_to_a_model_of_another_program(chain: Chain, fresh: Published):
    weight = Keypair()
    create = chain.new_account(weight, WEIGHT_HEADER_SIZE + 100)
    stranger = chain.funded().pubkey()
    ix = bind_weight_account(PROGRAM_ID, chain.authority.pubkey(), stranger, weight.pubkey(), 0)
    refused(chain, [create, ix], "WrongAccountOwner", [stranger], [weight])


def test_bind_with_a_weight_account_as_the_model(chain: Chain, pub: Published):
    weight = Keypair()
    create = chain.new_account(weight, WEIGHT_HEADER_SIZE + 10)
    ix = bind_weight_account(
        PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], weight.pubkey(), 0
    )
    refused(chain, [create, ix], "WrongAccountSize", keys_of(pub), [weight])


def test_bind_an_unsigned_weight_account(chain: Chain, fresh: Published):
    weight, ixs = _bind(chain, fresh, 0, WEIGHT_HEADER_SIZE + 100)
    chain.must(ixs[:1], [weight])
    refused(chain, [metas(ixs[1], a2=(False, True))], "MissingSignature", [fresh.model.pubkey()])


def test_bind_with_the_model_read_only(chain: Chain, fresh: Published):
    weight, ixs = _bind(chain, fresh, 0, WEIGHT_HEADER_SIZE + 100)
    ixs[1] = metas(ixs[1], a1=(False, False))
    refused(chain, ixs, "AccountNotWritable", [fresh.model.pubkey()], [weight])


def test_bind_a_slot_out_of_range(chain: Chain, fresh: Published):
    weight, ixs = _bind(chain, fresh, 2, WEIGHT_HEADER_SIZE + 100)
    refused(chain, ixs, "SectionIndexOutOfRange", [fresh.model.pubkey()], [weight])


def test_bind_twice(chain: Chain, fresh: Published):
    first, ixs = _bind(chain, fresh, 0, WEIGHT_HEADER_SIZE + 100)
    chain.must(ixs, [first])
    second, ixs = _bind(chain, fresh, 0, WEIGHT_HEADER_SIZE + 100)
    refused(chain, ixs, "SlotAlreadyBound", [fresh.model.pubkey(), first.pubkey()], [second])
    # The bound account again, for the other slot: its header is no longer fresh.
    ix = bind_weight_account(
        PROGRAM_ID, chain.authority.pubkey(), fresh.model.pubkey(), first.pubkey(), 1
    )
    refused(chain, [ix], "WrongAccountSize", [fresh.model.pubkey(), first.pubkey()], [first])


def test_bind_a_used_account_of_the_right_size(chain: Chain):
    pub = chain.publish([bytes(100), bytes(100)], bind=False, write=False)
    first, ixs = _bind(chain, pub, 0, WEIGHT_HEADER_SIZE + 100)
    chain.must(ixs, [first])
    ix = bind_weight_account(
        PROGRAM_ID, chain.authority.pubkey(), pub.model.pubkey(), first.pubkey(), 1
    )
    refused(chain, [ix], "AccountNotFresh", [pub.model.pubkey(), first.pubkey()], [first])


def test_bind_after_sealing_began(chain: Chain, pub: Published):
    chain.begin(pub)
    weight = Keypair()
    create = chain.new_account(weight, WEIGHT_HEADER_SIZE + 10)
    ix = bind_weight_account(
        PROGRAM_ID, chain.authority.pubkey(), pub.model.pubkey(), weight.pubkey(), 0
    )
    refused(chain, [create, ix], "ModelNotUploading", keys_of(pub), [weight])


# -- begin sealing -----------------------------------------------------------------------------


def test_begin_with_an_unbound_slot(chain: Chain, fresh: Published):
    weight, ixs = _bind(chain, fresh, 1, WEIGHT_HEADER_SIZE + 200)
    chain.must(ixs, [weight])
    ix = begin_sealing(PROGRAM_ID, chain.authority.pubkey(), fresh.model.pubkey())
    refused(chain, [ix], "UnboundSlot", [fresh.model.pubkey(), weight.pubkey()])


def test_begin_with_a_read_only_model(chain: Chain, pub: Published):
    ix = begin_sealing(PROGRAM_ID, chain.authority.pubkey(), pub.model.pubkey())
    refused(chain, [metas(ix, a1=(False, False))], "AccountNotWritable", keys_of(pub))


def test_begin_twice(chain: Chain, pub: Published):
    chain.begin(pub)
    ix = begin_sealing(PROGRAM_ID, chain.authority.pubkey(), pub.model.pubkey())
    refused(chain, [ix], "ModelNotUploading", keys_of(pub))


def test_begin_with_a_weight_account_as_the_model(chain: Chain, pub: Published):
    ix = begin_sealing(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0])
    refused(chain, [ix], "WrongAccountSize", keys_of(pub))


def test_begin_on_a_failed_or_closing_model(chain: Chain, failed: Published):
    auth, m = chain.authority.pubkey(), failed.model.pubkey()
    ix = begin_sealing(PROGRAM_ID, auth, m)
    refused(chain, [ix], "ModelNotUploading", keys_of(failed))
    chain.must([reopen(PROGRAM_ID, auth, m, failed.weight_keys[0], 0)])
    refused(chain, [ix], "ModelNotUploading", keys_of(failed))  # one of two reopened
    chain.must([close_weight_account(PROGRAM_ID, auth, m, failed.weight_keys[0], 0)])
    refused(chain, [ix], "ModelNotUploading", keys_of(failed))


def _forge_header(chain: Chain, key: Pubkey, **changes) -> None:
    """Rewrite a header with set_account: a state no transaction can reach, for defence checks."""
    account = chain.svm.get_account(key)
    data = bytes(account.data)
    header = WeightHeader.from_bytes(data)
    fields = {**header.__dict__, **changes}
    forged = WeightHeader(**fields).to_bytes() + data[WEIGHT_HEADER_SIZE:]
    chain.svm.set_account(
        key,
        Account(account.lamports, forged, account.owner, account.executable, account.rent_epoch),
    )


# -- seal step ---------------------------------------------------------------------------------


def test_seal_step_before_begin(chain: Chain, pub: Published):
    ix = seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.weight_keys[0]], 0)
    refused(chain, [ix], "ModelNotSealing", keys_of(pub))


def test_seal_step_after_sealed(chain: Chain, sealed: Published):
    ix = seal_step(PROGRAM_ID, sealed.model.pubkey(), [sealed.weight_keys[1]], 0)
    refused(chain, [ix], "ModelNotSealing", keys_of(sealed))


def test_seal_step_with_the_wrong_weight_account(chain: Chain, pub: Published):
    other = chain.publish([bytes(3_000), bytes(500)], write=False)
    chain.begin(pub)
    chain.begin(other)
    for wrong in (pub.weight_keys[1], other.weight_keys[0]):
        ix = seal_step(PROGRAM_ID, pub.model.pubkey(), [wrong], 0)
        refused(chain, [ix], "WrongWeightAccount", keys_of(pub) + keys_of(other))


def test_seal_step_with_a_read_only_model(chain: Chain, pub: Published):
    chain.begin(pub)
    ix = seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.weight_keys[0]], 0)
    refused(chain, [metas(ix, a0=(False, False))], "AccountNotWritable", keys_of(pub))


def test_seal_step_with_the_model_twice(chain: Chain, pub: Published):
    chain.begin(pub)
    ix = seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.model.pubkey()], 0)
    refused(chain, [ix], "DuplicateAccount", keys_of(pub))


def test_seal_step_with_a_read_only_weight_account(chain: Chain, pub: Published):
    chain.begin(pub)
    ix = seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.weight_keys[0]], 0)
    refused(chain, [metas(ix, a1=(False, False))], "AccountNotWritable", keys_of(pub))


def test_seal_step_inside_a_section_a_forgery_unfroze(chain: Chain):
    big = chain.publish([os.urandom(70_000), os.urandom(10)])
    chain.begin(big)
    ix = seal_step(PROGRAM_ID, big.model.pubkey(), [big.weight_keys[0]], 0)
    chain.must([ix])
    _forge_header(chain, big.weight_keys[0], frozen=False)
    refused(chain, [ix], "WeightAccountNotFrozen", keys_of(big))


def test_seal_step_entering_a_section_a_forgery_froze(chain: Chain, pub: Published):
    chain.begin(pub)
    _forge_header(chain, pub.weight_keys[0], frozen=True)
    ix = seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.weight_keys[0]], 0)
    refused(chain, [ix], "WeightAccountFrozen", keys_of(pub))


def test_seal_step_of_a_closing_model(chain: Chain, pub: Published):
    chain.begin(pub)
    auth, m = chain.authority.pubkey(), pub.model.pubkey()
    chain.must([close_weight_account(PROGRAM_ID, auth, m, pub.weight_keys[1], 1)])
    ix = seal_step(PROGRAM_ID, m, [pub.weight_keys[0]], 0)
    refused(chain, [ix], "ModelNotSealing", keys_of(pub))


def test_seal_step_with_forged_header_of_another_model_or_slot(chain: Chain, pub: Published):
    chain.begin(pub)
    _forge_header(chain, pub.weight_keys[0], section_index=1)
    ix = seal_step(PROGRAM_ID, pub.model.pubkey(), [pub.weight_keys[0]], 0)
    refused(chain, [ix], "WeightAccountOfAnotherSlot", keys_of(pub))
    _forge_header(chain, pub.weight_keys[0], section_index=0, model=Keypair().pubkey())
    refused(chain, [ix], "WeightAccountOfAnotherModel", keys_of(pub))


def test_seal_step_of_an_account_of_another_program(chain: Chain, pub: Published):
    chain.begin(pub)
    ix = seal_step(PROGRAM_ID, chain.funded().pubkey(), [pub.weight_keys[0]], 0)
    refused(chain, [ix], "WrongAccountOwner", keys_of(pub))


# -- reopen and close --------------------------------------------------------------------------


def test_reopen_or_close_a_sealed_model(chain: Chain, sealed: Published):
    auth, m, w = chain.authority.pubkey(), sealed.model.pubkey(), sealed.weight_keys
    for ix in (
        reopen(PROGRAM_ID, auth, m, w[0], 0),
        close_weight_account(PROGRAM_ID, auth, m, w[0], 0),
        close_model(PROGRAM_ID, auth, m),
    ):
        refused(chain, [ix], "ModelSealed", keys_of(sealed))


@pytest.mark.parametrize("when", ["uploading", "sealing", "closing"])
def test_reopen_a_model_that_did_not_fail(chain: Chain, pub: Published, when: str):
    auth, m, w = chain.authority.pubkey(), pub.model.pubkey(), pub.weight_keys
    if when == "sealing":
        chain.begin(pub)
    if when == "closing":
        chain.must([close_weight_account(PROGRAM_ID, auth, m, w[1], 1)])
    ix = reopen(PROGRAM_ID, auth, m, w[0], 0)
    refused(chain, [ix], "ModelNotFailed", keys_of(pub))


def test_reopen_the_same_weight_account_twice(chain: Chain, failed: Published):
    ix = reopen(
        PROGRAM_ID, chain.authority.pubkey(), failed.model.pubkey(), failed.weight_keys[1], 1
    )
    chain.must([ix])
    refused(chain, [metas(ix)], "WeightAccountNotFrozen", keys_of(failed))


@pytest.mark.parametrize("build", [reopen, close_weight_account], ids=["reopen", "close"])
def test_reopen_and_close_a_slot_out_of_range(chain: Chain, failed: Published, build):
    ix = build(
        PROGRAM_ID, chain.authority.pubkey(), failed.model.pubkey(), failed.weight_keys[0], 2
    )
    refused(chain, [ix], "SectionIndexOutOfRange", keys_of(failed))


@pytest.mark.parametrize("build", [reopen, close_weight_account], ids=["reopen", "close"])
@pytest.mark.parametrize("order", ["other slot", "other model", "the model", "not writable"])
def test_reopen_and_close_with_the_wrong_weight_account(
    chain: Chain, failed: Published, build, order: str
):
    other = chain.publish([b"a", b"b"], write=False)
    m, w = failed.model.pubkey(), failed.weight_keys
    given, name = {
        "other slot": (w[1], "WrongWeightAccount"),
        "other model": (other.weight_keys[0], "WrongWeightAccount"),
        "the model": (m, "DuplicateAccount"),
        "not writable": (w[0], "AccountNotWritable"),
    }[order]
    ix = build(PROGRAM_ID, chain.authority.pubkey(), m, given, 0)
    if order == "not writable":
        ix = metas(ix, a2=(False, False))
    refused(chain, [ix], name, keys_of(failed) + keys_of(other))


def test_close_an_unbound_slot(chain: Chain, fresh: Published):
    weight, ixs = _bind(chain, fresh, 1, WEIGHT_HEADER_SIZE + 200)
    chain.must(ixs, [weight])
    ix = close_weight_account(
        PROGRAM_ID, chain.authority.pubkey(), fresh.model.pubkey(), weight.pubkey(), 0
    )
    refused(chain, [ix], "UnboundSlot", [fresh.model.pubkey(), weight.pubkey()])


def test_close_a_weight_account_twice(chain: Chain, pub: Published):
    auth, m, w = chain.authority.pubkey(), pub.model.pubkey(), pub.weight_keys
    chain.must([close_weight_account(PROGRAM_ID, auth, m, w[0], 0)])
    # Signed afresh (another compute-unit price, so another transaction): the account is
    # the system program's now.
    again = close_weight_account(PROGRAM_ID, auth, m, w[0], 0)
    refused(chain, [set_compute_unit_price(1), again], "WrongAccountOwner", keys_of(pub))


def test_close_the_model_while_weight_accounts_are_bound(chain: Chain, pub: Published):
    auth, m = chain.authority.pubkey(), pub.model.pubkey()
    ix = close_model(PROGRAM_ID, auth, m)
    refused(chain, [ix], "WeightAccountsStillBound", keys_of(pub))
    chain.must([close_weight_account(PROGRAM_ID, auth, m, pub.weight_keys[0], 0)])
    refused(chain, [ix], "WeightAccountsStillBound", keys_of(pub))


@pytest.mark.parametrize("which", ["close-weight", "close"])
def test_close_with_a_read_only_authority(chain: Chain, fresh: Published, which: str):
    auth, m = chain.authority.pubkey(), fresh.model.pubkey()
    weight, ixs = _bind(chain, fresh, 1, WEIGHT_HEADER_SIZE + 200)
    if which == "close-weight":
        chain.must(ixs, [weight])
    ix = {
        "close-weight": lambda: close_weight_account(PROGRAM_ID, auth, m, weight.pubkey(), 1),
        "close": lambda: close_model(PROGRAM_ID, auth, m),
    }[which]()
    payer = chain.funded()
    watch = [m, weight.pubkey()]
    before = state(chain, watch)
    result = chain.send([metas(ix, a0=(True, False))], [chain.authority], payer=payer)
    assert result.error == "AccountNotWritable", result.logs
    assert state(chain, watch) == before


# -- shape of the instruction ------------------------------------------------------------------


def test_unknown_discriminator(chain: Chain, pub: Published):
    ix = Instruction(PROGRAM_ID, b"\x00" * 8, [AccountMeta(pub.model.pubkey(), False, True)])
    refused(chain, [ix], "UnknownInstruction", keys_of(pub))


@pytest.mark.parametrize("size", [0, 1, 7])
def test_no_discriminator(chain: Chain, pub: Published, size: int):
    ix = Instruction(PROGRAM_ID, b"\x01" * size, [AccountMeta(pub.model.pubkey(), False, True)])
    refused(chain, [ix], "InvalidInstructionData", keys_of(pub))


def _every_instruction(pub: Published, auth: Pubkey) -> dict[str, Instruction]:
    m, w = pub.model.pubkey(), pub.weight_keys
    return {
        "write": write_weights(PROGRAM_ID, auth, w[0], 0, b"x"),
        "bind": bind_weight_account(PROGRAM_ID, auth, m, w[0], 0),
        "begin": begin_sealing(PROGRAM_ID, auth, m),
        "seal": seal_step(PROGRAM_ID, m, [w[0]], 0),
        "reopen": reopen(PROGRAM_ID, auth, m, w[0], 0),
        "close-weight": close_weight_account(PROGRAM_ID, auth, m, w[0], 0),
        "close": close_model(PROGRAM_ID, auth, m),
        "create": create_model(PROGRAM_ID, auth, m, bytes(32), [1, 1]),
    }


@pytest.mark.parametrize(
    ("name", "keep"),
    [
        ("write", 1),
        ("bind", 2),
        ("begin", 1),
        ("seal", 1),
        ("reopen", 2),
        ("close-weight", 2),
        ("close", 1),
        ("create", 1),
    ],
)
def test_not_enough_accounts(chain: Chain, pub: Published, name: str, keep: int):
    ix = _every_instruction(pub, chain.authority.pubkey())[name]
    cut = Instruction(PROGRAM_ID, ix.data, list(ix.accounts)[:keep])
    refused(chain, [cut], "NotEnoughAccounts", keys_of(pub))


@pytest.mark.parametrize("name", ["begin", "seal", "reopen", "close-weight", "close", "bind"])
@pytest.mark.parametrize("change", ["a byte more", "a byte less"])
def test_arguments_of_the_wrong_length(chain: Chain, pub: Published, name: str, change: str):
    ix = _every_instruction(pub, chain.authority.pubkey())[name]
    data = bytes(ix.data) + b"\x00" if change == "a byte more" else bytes(ix.data)[:-1]
    signers = [pub.weights[0]] if name == "bind" else []
    wrong = Instruction(PROGRAM_ID, data, ix.accounts)
    refused(chain, [wrong], "InvalidInstructionData", keys_of(pub), signers)


def test_more_accounts_than_the_parser_holds(chain: Chain, pub: Published):
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], 0, b"x")
    many = list(ix.accounts) + [ix.accounts[1]] * 63  # duplicates: 65 accounts, 2 keys
    refused(chain, [Instruction(PROGRAM_ID, ix.data, many)], "TooManyAccounts", keys_of(pub))


def test_write_with_the_authority_passed_as_the_weight_account(chain: Chain, pub: Published):
    auth = chain.authority.pubkey()
    ix = write_weights(PROGRAM_ID, auth, auth, 0, b"x")
    refused(chain, [ix], "DuplicateAccount", keys_of(pub))


def test_duplicate_records_are_parsed_past(chain: Chain, pub: Published):
    """Trailing duplicates shift the instruction data; the program must still find it."""
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[1], 7, b"dup-ok")
    extra = [ix.accounts[0], ix.accounts[1], ix.accounts[0]]
    chain.must([Instruction(PROGRAM_ID, ix.data, list(ix.accounts) + extra)])
    data = bytes(chain.svm.get_account(pub.weight_keys[1]).data)
    assert data[WEIGHT_HEADER_SIZE + 7 : WEIGHT_HEADER_SIZE + 13] == b"dup-ok"

"""Every refusal of openRun, step and closeRun: the named error, one log line, nothing changed."""

import pytest
from curta_svm import CU_LIMIT, PROGRAM_ID, Chain, Published
from run_svm import account_data, crank, open_ixs, step_ix
from solders.compute_budget import set_compute_unit_limit
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from test_program_refusals import metas, refused

from curta_chain.artifact import Artifact
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import RunAccount
from curta_chain.program import close_run, step

PROMPT = b"Once upon a time"


@pytest.fixture
def sealed(chain: Chain, stories260k: Artifact) -> Published:
    return chain.install_sealed(stories260k.sections)


@pytest.fixture
def opened(chain: Chain, sealed: Published, stories260k: Artifact) -> Keypair:
    run = Keypair()
    assert chain.send(open_ixs(chain, sealed, stories260k, run, 24, PROMPT), [run]).ok
    return run


def watched(pub: Published, *more) -> list:
    return [pub.model.pubkey(), *pub.weight_keys, *(k.pubkey() for k in more)]


def step_now(chain: Chain, pub: Published, run: Keypair, sections=(1,), expected=None):
    if expected is None:
        expected = RunAccount.from_bytes(account_data(chain, run.pubkey())).steps
    return [set_compute_unit_limit(CU_LIMIT), step_ix(pub, run.pubkey(), sections, expected)]


# -- openRun --------------------------------------------------------------------------------


def open_refused(chain, pub, artifact, name, capacity=24, prompt=PROMPT, **kw):
    run = Keypair()
    ixs = open_ixs(chain, pub, artifact, run, capacity, prompt, **kw)
    refused(chain, ixs, name, watched(pub, run), [run])


@pytest.mark.parametrize(
    ("capacity", "prompt", "sampling", "name"),
    [
        (1, PROMPT, {}, "BadCapacity"),
        (513, PROMPT, {}, "BadCapacity"),
        (24, b"", {}, "BadPrompt"),
        (24, b"caf\xc3", {}, "BadPrompt"),  # a cut UTF-8 character
        (24, b"\xed\xa0\x80", {}, "BadPrompt"),  # a surrogate
        (24, b"x" * 2049, {}, "BadPrompt"),
        (24, [1, 512], {}, "BadPrompt"),  # past the vocabulary
        (3, [1, 2, 3], {}, "BadPrompt"),  # no room to generate
        (24, PROMPT, {"top_p": 65_537}, "BadSampling"),
    ],
)
def test_open_refuses_bad_arguments(chain, sealed, stories260k, capacity, prompt, sampling, name):
    open_refused(chain, sealed, stories260k, name, capacity, prompt, **sampling)


def test_open_refuses_a_model_that_is_not_sealed(chain, stories260k):
    uploading = chain.publish([stories260k.sections[0], bytes(100)], write=False)
    open_refused(chain, uploading, stories260k, "ModelNotSealed")


def test_open_refuses_a_section_zero_that_is_not_a_curtaw01_header(chain, stories260k):
    junk = chain.install_sealed([bytes(8192), stories260k.sections[1]])
    open_refused(chain, junk, stories260k, "BadArtifact")


def test_open_refuses_another_section_or_model_as_section_zero(chain, sealed, stories260k):
    other = chain.install_sealed(stories260k.sections)
    for section_zero in (sealed.weight_keys[1], other.weight_keys[0]):
        run = Keypair()
        ixs = open_ixs(chain, sealed, stories260k, run, 24, PROMPT)
        accounts = list(ixs[-1].accounts)
        accounts[3] = AccountMeta(section_zero, False, False)
        ixs[-1] = Instruction(PROGRAM_ID, ixs[-1].data, accounts)
        refused(chain, ixs, "WrongWeightAccount", watched(sealed, run), [run])


def test_open_refuses_a_wrong_size_a_used_account_and_a_missing_signature(
    chain, sealed, stories260k, opened
):
    open_refused(chain, sealed, stories260k, "WrongAccountSize", size=5000)
    again = open_ixs(chain, sealed, stories260k, opened, 24, PROMPT)[::2]  # no create_account
    refused(chain, again, "AccountNotFresh", watched(sealed, opened), [opened])
    run = Keypair()
    ixs = open_ixs(chain, sealed, stories260k, run, 24, PROMPT)
    chain.must(ixs[1:2], [run])
    refused(
        chain, [ixs[0], metas(ixs[2], a1=(False, True))], "MissingSignature", watched(sealed, run)
    )


# -- step -----------------------------------------------------------------------------------


def test_a_step_lands_whatever_its_label(chain, sealed, stories260k, opened):
    # The label is not read (StepOutOfOrder is retired): each landed step is the next slice.
    mirror = RunMirror(stories260k, account_data(chain, opened.pubkey()))
    for label in (1, 5, 2**64 - 1):
        before = mirror.header
        plan = mirror.plan()
        chain.must(step_now(chain, sealed, opened, plan.sections, expected=label))
        mirror.advance(plan)
        mirror.compare(account_data(chain, opened.pubkey()), before)


def test_step_refuses_a_phase_whose_section_is_not_passed(chain, sealed, stories260k, opened):
    # Tokenizing needs section zero only; the forward pass needs the matrices' section.
    crank_to_running(chain, sealed, stories260k, opened)
    refused(
        chain, step_now(chain, sealed, opened, ()), "MissingWeightAccount", watched(sealed, opened)
    )


def crank_to_running(chain, sealed, artifact, run):
    while RunAccount.from_bytes(account_data(chain, run.pubkey())).state == 0:
        crank(chain, sealed, artifact, run.pubkey(), limit=1)


def test_step_refuses_wrong_weight_accounts(chain, sealed, stories260k, opened):
    other = chain.install_sealed(stories260k.sections)
    other_run = Keypair()
    assert chain.send(open_ixs(chain, other, stories260k, other_run, 24, PROMPT), [other_run]).ok
    run = opened.pubkey()
    expected = 0
    cases = [
        ([other.weight_keys[0], sealed.weight_keys[1]], "WeightAccountOfAnotherModel"),
        ([sealed.weight_keys[0], other.weight_keys[1]], "WeightAccountOfAnotherModel"),
        ([sealed.weight_keys[1], sealed.weight_keys[0]], "WrongWeightAccount"),
        ([sealed.weight_keys[0], other_run.pubkey()], "WrongDiscriminator"),
        ([sealed.weight_keys[0], Keypair().pubkey()], "WrongAccountOwner"),
    ]
    for keys, name in cases:
        ixs = [
            set_compute_unit_limit(CU_LIMIT),
            step(PROGRAM_ID, run, sealed.model.pubkey(), keys, expected),
        ]
        refused(chain, ixs, name, watched(sealed, opened))


def test_step_refuses_too_many_or_duplicate_accounts(chain, sealed, stories260k, opened):
    run = opened.pubkey()
    five = [sealed.weight_keys[0], *[Keypair().pubkey() for _ in range(4)]]
    ix = step(PROGRAM_ID, run, sealed.model.pubkey(), five, 0)
    refused(chain, [ix], "TooManyWeightAccounts", watched(sealed, opened))
    twice = step(PROGRAM_ID, run, sealed.model.pubkey(), [sealed.weight_keys[0]] * 2, 0)
    refused(chain, [twice], "DuplicateAccount", watched(sealed, opened))
    readonly = metas(step_now(chain, sealed, opened)[1], a0=(False, False))
    refused(chain, [readonly], "AccountNotWritable", watched(sealed, opened))


def test_step_refuses_another_models_run(chain, sealed, stories260k, opened):
    other = chain.install_sealed(stories260k.sections)
    ix = step(PROGRAM_ID, opened.pubkey(), other.model.pubkey(), other.weight_keys, 0)
    refused(chain, [ix], "RunOfAnotherModel", [*watched(sealed, opened), *watched(other)])


def test_step_refuses_a_finished_and_a_closed_run(chain, sealed, stories260k):
    run = Keypair()
    assert chain.send(open_ixs(chain, sealed, stories260k, run, 2, [1]), [run]).ok
    crank(chain, sealed, stories260k, run.pubkey())
    refused(chain, step_now(chain, sealed, run), "RunFinished", watched(sealed, run))
    chain.must([close_run(PROGRAM_ID, chain.authority.pubkey(), run.pubkey())])
    ixs = [set_compute_unit_limit(CU_LIMIT), step_ix(sealed, run.pubkey(), (1,), 1)]
    refused(chain, ixs, "RunClosed", watched(sealed, run))


# -- closeRun -------------------------------------------------------------------------------


def test_close_refuses_anyone_but_the_opener(chain, sealed, stories260k, opened):
    stranger = chain.funded()
    ix = close_run(PROGRAM_ID, stranger.pubkey(), opened.pubkey())
    refused(chain, [ix], "WrongOpener", watched(sealed, opened), [stranger])
    # A run someone else opened: the fee payer cannot close it without its opener's signature.
    theirs = Keypair()
    ixs = open_ixs(chain, sealed, stories260k, theirs, 24, PROMPT, opener=stranger.pubkey())
    chain.must(ixs, [theirs, stranger])
    ix = metas(close_run(PROGRAM_ID, stranger.pubkey(), theirs.pubkey()), a0=(False, True))
    refused(chain, [ix], "MissingSignature", watched(sealed, theirs))
    refused(
        chain,
        [close_run(PROGRAM_ID, chain.authority.pubkey(), sealed.model.pubkey())],
        "WrongDiscriminator",
        watched(sealed, opened),
    )

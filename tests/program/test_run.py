"""On-chain inference in LiteSVM: runs equal the off-chain integer core, every step mirrored."""

import pytest
from curta_svm import CU_LIMIT, PROGRAM_ID, Chain, Published
from run_svm import account_data, crank, open_ixs, step_ix, tokens_of
from solders.account import Account
from solders.compute_budget import set_compute_unit_limit
from solders.keypair import Keypair

from curta_chain.artifact import Artifact
from curta_chain.errors import MirrorMismatchError
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, generate, plan_run
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import (
    FinishReason,
    PromptKind,
    Region,
    RunAccount,
    RunState,
    opened_run_data,
    run_layout,
)
from curta_chain.program import close_run

PROMPT = "Once upon a time"


@pytest.fixture(scope="module")
def model260k(stories260k: Artifact) -> tuple[IntModel, Tokenizer]:
    return IntModel.from_artifact(stories260k), Tokenizer.from_artifact(stories260k)


@pytest.fixture
def sealed(chain: Chain, stories260k: Artifact) -> Published:
    return chain.install_sealed(stories260k.sections)


def off_chain(model260k, prompt: str, steps: int, settings: SamplingSettings) -> list[int]:
    model, tokenizer = model260k
    plan = plan_run(model, tokenizer, prompt, steps)
    return [*plan.prompt_ids, *generate(model, plan, settings)]


def open_and_crank(chain, sealed, artifact, capacity, prompt, **sampling):
    run = Keypair()
    result = chain.send(open_ixs(chain, sealed, artifact, run, capacity, prompt, **sampling), [run])
    assert result.ok, result.logs[-3:]
    cranked, mirror = crank(chain, sealed, artifact, run.pubkey())
    return run, cranked, mirror


@pytest.mark.parametrize(
    "settings",
    [
        SamplingSettings(0, 0, 0),
        SamplingSettings(58_982, 58_982, 2024),
        SamplingSettings(65_536, 0, 7),
    ],
    ids=["greedy", "temperature-0.9-top-p-0.9", "temperature-1"],
)
def test_32_tokens_equal_the_off_chain_run(chain, sealed, stories260k, model260k, settings):
    want = off_chain(model260k, PROMPT, 32, settings)
    prompt_tokens = len(model260k[1].encode(PROMPT))
    run, cranked, _ = open_and_crank(
        chain,
        sealed,
        stories260k,
        prompt_tokens + 32,
        PROMPT.encode(),
        temperature=settings.temperature,
        top_p=settings.top_p,
        seed=settings.seed,
    )
    data = account_data(chain, run.pubkey())
    assert tokens_of(data) == want
    header = RunAccount.from_bytes(data)
    assert header.state == RunState.FINISHED and header.prompt_tokens == prompt_tokens
    assert [logged.token for logged in cranked.logged] == want[prompt_tokens:]
    tokenizer = model260k[1]
    assert b"".join(logged.piece for logged in cranked.logged) == tokenizer.decode(
        want[prompt_tokens:], previous=want[prompt_tokens - 1]
    )
    # One stories260K token in at most two transactions, wherever the run is.
    generated = {p: n for p, n in cranked.steps_per_position.items() if p >= prompt_tokens - 1}
    assert max(generated.values()) <= 2, cranked.steps_per_position


def test_a_run_opened_from_token_ids(chain, sealed, stories260k, model260k):
    ids = model260k[1].encode(PROMPT)
    want = off_chain(model260k, PROMPT, 6, SamplingSettings(0, 0, 0))
    run, _, _ = open_and_crank(chain, sealed, stories260k, len(ids) + 6, ids)
    data = account_data(chain, run.pubkey())
    assert tokens_of(data) == want
    assert RunAccount.from_bytes(data).prompt_kind == PromptKind.TOKENS


def test_the_program_lays_out_the_run_as_the_client_computes(chain, sealed, stories260k):
    for capacity, prompt in [(2, [1]), (40, b"Hi"), (512, b"x" * 300), (9, [1, 2, 3])]:
        run = Keypair()
        assert chain.send(open_ixs(chain, sealed, stories260k, run, capacity, prompt), [run]).ok
        header = RunAccount.from_bytes(account_data(chain, run.pubkey()))
        kind = PromptKind.TEXT if isinstance(prompt, bytes) else PromptKind.TOKENS
        assert header.regions == run_layout(stories260k.config, capacity, kind, len(prompt))
        assert header.to_bytes() == account_data(chain, run.pubkey())[:512]
        assert header.regions[Region.END] == len(account_data(chain, run.pubkey()))


def test_a_prompt_that_fills_the_capacity_finishes_without_a_token(chain, sealed, stories260k):
    run, cranked, _ = open_and_crank(chain, sealed, stories260k, 3, b"Once upon a time")
    header = RunAccount.from_bytes(account_data(chain, run.pubkey()))
    assert header.state == RunState.FINISHED
    assert header.finish_reason == FinishReason.PROMPT_TOO_LONG
    assert header.token_count == 0 and cranked.logged == []


def test_the_mirror_names_a_corrupted_byte(chain, sealed, stories260k):
    run = Keypair()
    prompt = PROMPT.encode()
    assert chain.send(open_ixs(chain, sealed, stories260k, run, 24, prompt), [run]).ok
    crank(chain, sealed, stories260k, run.pubkey(), limit=2)
    mirror = RunMirror(stories260k, account_data(chain, run.pubkey()))
    before = mirror.header
    plan = mirror.plan()
    ixs = [
        set_compute_unit_limit(CU_LIMIT),
        step_ix(sealed, run.pubkey(), plan.sections, before.steps),
    ]
    assert chain.send(ixs).ok
    mirror.advance(plan)
    mirror.compare(account_data(chain, run.pubkey()), before)
    # The step's output with one byte of layer 0's cached key at position 1 flipped.
    kv_dim = stories260k.config.kv_dim
    at = before.regions[Region.KEYS] + 8 * kv_dim + 3
    account = chain.svm.get_account(run.pubkey())
    data = bytearray(account.data)
    data[at] ^= 0x40
    corrupted = Account(account.lamports, bytes(data), account.owner, False, 0)
    chain.svm.set_account(run.pubkey(), corrupted)
    with pytest.raises(
        MirrorMismatchError,
        match=rf"after step 2 \(position \d+, .*\) .* at bytes {at}\.\.{at + 1} "
        rf"\(keys region, element {kv_dim}\)",
    ):
        mirror.compare(account_data(chain, run.pubkey()), before)


def test_close_returns_the_rent_to_the_opener(chain, sealed, stories260k):
    run = Keypair()
    assert chain.send(open_ixs(chain, sealed, stories260k, run, 8, b"Hello"), [run]).ok
    rent = chain.svm.get_account(run.pubkey()).lamports
    before = chain.svm.get_balance(chain.authority.pubkey())
    result = chain.send([close_run(PROGRAM_ID, chain.authority.pubkey(), run.pubkey())])
    assert result.ok
    assert chain.svm.get_balance(chain.authority.pubkey()) == before + rent - 5000
    gone = chain.svm.get_account(run.pubkey())
    assert gone is None or (gone.lamports == 0 and not gone.data)


def test_open_run_leaves_what_the_client_computes(chain, sealed, stories260k):
    for capacity, prompt, sampling in [
        (40, b"Hi there", (0, 0, 0)),
        (9, [1, 5, 7], (6, 7, 2**64 - 1)),
    ]:
        run = Keypair()
        temperature, top_p, seed = sampling
        ixs = open_ixs(chain, sealed, stories260k, run, capacity, prompt, temperature, top_p, seed)
        assert chain.send(ixs, [run]).ok
        want = opened_run_data(
            stories260k.config,
            sealed.model.pubkey(),
            chain.authority.pubkey(),
            capacity,
            prompt,
            temperature,
            top_p,
            seed,
        )
        assert account_data(chain, run.pubkey()) == want

"""Issue 19's exploits, run as the attacker ran them, in both runtimes with both builds.

Each target is a runtime and a build: solders 0.29's LiteSVM (Agave 4.1) and npm litesvm
(Agave 4.3), every feature on, each with the v0 and the v3 build. Models are published
and sealed there by real transactions (``runtimes.publish``), tiny synthetic ones, so the
module stays within seconds.

- A sealed hostile model (an exponential table whose entry 0 is above 2^30, a zero
  exponential table, a matrix offset that wraps past 2^64, SiLU and rotary tables and the
  1/sqrt(head size) out of docs/inference.md's bounds): openRun refuses it with BadArtifact
  naming the block, and nothing changes.
- A permissionless step given the model's accounts writable leaves the sealed model as it
  was, through a whole sampled (top-p 0.9) run.
- A sealed model whose section zero is shorter than the 4,096-byte header (createModel takes
  any length from 1 byte): openRun refuses it with BadArtifact before reading the header.
- A step passed fewer weight accounts than its slice needs is refused whole
  (MissingWeightAccount); steps with any labels, by different signers, naming the weight
  accounts in any order, give the run account one cranker in order gives, step for step.
- Seal steps in any order of labels, by different signers, naming one account or two at a
  section's end, seal the same model as one crank in order.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator, Sequence

import pytest
from curta_svm import PROGRAM_ID, Chain
from runtimes import (
    OnChain,
    Outcome,
    Runtime,
    Session,
    SoldersRuntime,
    install,
    model_state,
    publish,
    publish_and_seal,
    seal,
)
from solders.compute_budget import set_compute_unit_limit
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact, ModelConfig, hash_steps, layout
from curta_chain.artifact.convert import convert_llama2c_bytes
from curta_chain.artifact.synthetic import llama2c_checkpoint_bytes, llama2c_tokenizer_bytes
from curta_chain.constants import HASH_CHUNK_SIZE
from curta_chain.errors import InputError
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import (
    PromptKind,
    RunAccount,
    RunState,
    opened_run_data,
    run_account_size,
)
from curta_chain.program import ModelState, WeightHeader, open_run, seal_step, step, write_weights
from curta_chain.program.idl import coder

TARGETS = [("solders", "sbpf-v0"), ("solders", "sbpf-v3"), ("node", "sbpf-v0"), ("node", "sbpf-v3")]
CU_LIMIT = 1_400_000
TINY = ModelConfig(
    dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)
SPLIT = ModelConfig(
    dim=16, hidden_dim=32, n_layers=2, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)
"""Two layers, converted one section per layer: four sections, every slice needs several."""
PROMPT = b"hello"
CAPACITY = 12
TOP_P_09 = 58_982  # 0.9 in Q16
# Section zero's layout (docs/spec/curta-weight-format.md).
BLOCKS, INV_SQRT, MATRIX_TABLE = 40, 68, 512
EXP, SILU, ROTARY = 2, 3, 1


def tiny(config: ModelConfig = TINY, seed: int = 19) -> Artifact:
    return convert_llama2c_bytes(
        llama2c_checkpoint_bytes(config, seed), llama2c_tokenizer_bytes(259, seed), "t", "tok"
    )


@pytest.fixture(scope="module")
def solders() -> Iterator[Runtime]:
    runtime = SoldersRuntime()
    yield runtime
    runtime.close()


@pytest.fixture(scope="module")
def programs() -> dict[tuple[str, str], tuple[Session, Pubkey]]:
    """Each target's session and program id, installed on first use."""
    return {}


@pytest.fixture(params=TARGETS, ids=["-".join(t) for t in TARGETS])
def target(request, programs) -> tuple[Session, Pubkey]:
    if request.param not in programs:
        runtime_name, build = request.param
        fixture = "solders" if runtime_name == "solders" else "node_all"
        session = Session(request.getfixturevalue(fixture))
        programs[request.param] = (session, install(session, build))
    return programs[request.param]


def accounts(runtime: Runtime, keys: Sequence[Pubkey]) -> list[object]:
    return [runtime.account(key) for key in keys]


def refused(session: Session, ixs, name: str, watched: Sequence[Pubkey], signers=()) -> Outcome:
    """``ixs`` fail with the program's error ``name`` and leave ``watched`` as they were."""
    before = accounts(session.runtime, watched)
    outcome = session.send(ixs, signers)
    assert not outcome.ok and outcome.name == name, (outcome.error, outcome.logs[-3:])
    assert accounts(session.runtime, watched) == before
    return outcome


# -- hostile tables -------------------------------------------------------------------------


def patch_u32(section: bytearray, offset: int, value: int) -> None:
    struct.pack_into("<I", section, offset, value & 0xFFFF_FFFF)


def block(section: bytes, index: int) -> int:
    return struct.unpack_from("<I", section, BLOCKS + 4 * index)[0]


def hostile(sections: Sequence[bytes], kind: str) -> list[bytes]:
    """``sections`` with section zero rewritten the way an attacker seals it."""
    zero = bytearray(sections[0])
    if kind == "exp-entry-0-above-2^30":
        patch_u32(zero, block(zero, EXP), 2**32 - 1)  # its weight 2^24: bucket 8,191
    elif kind == "zero-exp-table":
        zero[block(zero, EXP) : block(zero, EXP) + 4 * 4097] = bytes(4 * 4097)
    elif kind == "wrapping-matrix-offset":
        # The embedding's offset near 2^64: offset + rows x row_bytes wraps to 0.
        _, _, rows, row_bytes = struct.unpack_from("<4I", zero, MATRIX_TABLE)
        struct.pack_into("<Q", zero, MATRIX_TABLE + 16, 2**64 - rows * row_bytes)
    elif kind == "silu-above-2^20":
        patch_u32(zero, block(zero, SILU) + 4 * 4096, (1 << 20) + 1)
    elif kind == "rotary-below-minus-2^24-1":
        patch_u32(zero, block(zero, ROTARY) + 4, -(1 << 24) - 2)
    elif kind == "inv-sqrt-above-1":
        patch_u32(zero, INV_SQRT, (1 << 24) + 1)
    return [bytes(zero), *sections[1:]]


HOSTILE = {
    "exp-entry-0-above-2^30": "BadArtifact: the exponential table is out of bounds",
    "zero-exp-table": "BadArtifact: the exponential table is out of bounds",
    "wrapping-matrix-offset": "BadArtifact: a matrix of the matrix table",
    "silu-above-2^20": "BadArtifact: the SiLU table is out of bounds",
    "rotary-below-minus-2^24-1": "BadArtifact: the rotary table is out of bounds",
    "inv-sqrt-above-1": "BadArtifact: 1/sqrt(head size) is above 1",
}


def open_ixs(
    session: Session,
    program_id: Pubkey,
    published: OnChain,
    config: ModelConfig,
    run: Keypair,
    temperature: int = 0,
    top_p: int = 0,
) -> list[Instruction]:
    size = run_account_size(config, CAPACITY, PromptKind.TEXT, len(PROMPT))
    ix = open_run(
        program_id, session.payer.pubkey(), run.pubkey(), published.model,
        published.weights[0], CAPACITY, PROMPT, temperature, top_p, 7,
    )  # fmt: skip
    create = session.new_account(run.pubkey(), size, program_id)
    return [set_compute_unit_limit(CU_LIMIT), create, ix]


def test_open_run_refuses_each_hostile_sealed_model(target):
    session, program_id = target
    good = tiny()
    for kind, line in HOSTILE.items():
        published = publish_and_seal(session, program_id, hostile(good.sections, kind))
        run = Keypair()
        ixs = open_ixs(session, program_id, published, good.config, run, 65_536, TOP_P_09)
        outcome = refused(session, ixs, "BadArtifact", [*published.keys, run.pubkey()], [run])
        assert any(log.startswith(f"Program log: {line}") for log in outcome.logs), outcome.logs
    # The unpatched model opens: the checks refuse only what is out of bounds.
    published = publish_and_seal(session, program_id, good.sections)
    run = Keypair()
    session.must(open_ixs(session, program_id, published, good.config, run), [run])


@pytest.mark.parametrize("length", [1, 4088])
def test_open_run_refuses_a_sealed_section_zero_shorter_than_the_header(target, length):
    """createModel takes a section from 1 byte; openRun checks section zero's length before
    it reads the header's fields (a prefix of a real header: tag and configuration valid)."""
    session, program_id = target
    good = tiny()
    short = [good.sections[0][:length], *good.sections[1:]]
    published = publish_and_seal(session, program_id, short)
    run = Keypair()
    ixs = open_ixs(session, program_id, published, good.config, run)
    outcome = refused(session, ixs, "BadArtifact", [*published.keys, run.pubkey()], [run])
    line = "Program log: BadArtifact: section zero is shorter than the 4096-byte header"
    assert line in outcome.logs, outcome.logs


# -- runs -----------------------------------------------------------------------------------


def crank(
    session: Session,
    program_id: Pubkey,
    published: OnChain,
    run: Pubkey,
    mirror: RunMirror,
    weights_for=None,
    signers: Sequence[Session] = (),
) -> list[bytes]:
    """Step ``run`` to its end, every step checked against the mirror; each step's bytes.

    ``weights_for(plan)`` gives a step's account metas after the run (default: the model,
    section zero's then the plan's sections, read-only); steps are sent by ``signers`` in
    turn (default the session) with labels drawn at random."""
    rng = random.Random(19)
    states = []
    crankers = list(signers) or [session]
    while mirror.header.state != RunState.FINISHED:
        before = mirror.header
        plan = mirror.plan()
        keys = [published.weights[0], *(published.weights[i] for i in plan.sections)]
        ix = step(program_id, run, published.model, keys, rng.randrange(2**64))
        if weights_for is not None:
            ix = Instruction(program_id, ix.data, [ix.accounts[0], *weights_for(plan)])
        crankers[before.steps % len(crankers)].must([set_compute_unit_limit(CU_LIMIT), ix])
        mirror.advance(plan)
        data = session.runtime.account(run).data
        mirror.compare(data, before)
        states.append(data)
    return states


def test_a_step_with_the_models_accounts_writable_leaves_the_model_sealed(target):
    session, program_id = target
    artifact = tiny()
    published = publish_and_seal(session, program_id, artifact.sections)
    model_before = accounts(session.runtime, published.keys)
    run = Keypair()
    ixs = open_ixs(session, program_id, published, artifact.config, run, 65_536, TOP_P_09)
    session.must(ixs, [run])
    mirror = RunMirror(artifact, session.runtime.account(run.pubkey()).data)
    stranger = Session(session.runtime)

    def writable(plan) -> list[AccountMeta]:
        # The model and every one of its weight accounts, writable.
        return [AccountMeta(key, False, True) for key in published.keys]

    crank(session, program_id, published, run.pubkey(), mirror, writable, [stranger])
    assert mirror.header.finish_reason != 0
    assert accounts(session.runtime, published.keys) == model_before
    assert model_state(session.runtime, published.model).state == ModelState.SEALED


@pytest.fixture(scope="module")
def split_artifact() -> Artifact:
    """SPLIT converted one section per layer (as a model past SPLIT_WEIGHT_COUNT is)."""
    saved = layout.SPLIT_WEIGHT_COUNT
    layout.SPLIT_WEIGHT_COUNT = 0
    try:
        artifact = tiny(SPLIT)
    finally:
        layout.SPLIT_WEIGHT_COUNT = saved
    assert len(artifact.sections) == 4
    return artifact


def test_steps_in_any_order_by_anyone_equal_one_cranker_and_short_steps_change_nothing(
    target, split_artifact
):
    session, program_id = target
    artifact = split_artifact
    published = publish_and_seal(session, program_id, artifact.sections)
    runs = [Keypair(), Keypair()]
    for run in runs:
        session.must(open_ixs(session, program_id, published, artifact.config, run), [run])
    first = session.runtime.account(runs[0].pubkey()).data
    assert session.runtime.account(runs[1].pubkey()).data == first

    # One cranker, in order: the plan's sections, labels as the step count.
    in_order = crank(session, program_id, published, runs[0].pubkey(), RunMirror(artifact, first))

    # Strangers, before each step a short one, then every weight account in a random order.
    rng = random.Random(25)
    strangers = [Session(session.runtime) for _ in range(2)]
    short_refusals = 0
    run = runs[1].pubkey()
    watched = [*published.keys, run]

    def shuffled(plan) -> list[AccountMeta]:
        nonlocal short_refusals
        if plan.sections:
            missing = rng.choice(plan.sections)
            short = [published.weights[0], *(published.weights[i] for i in plan.sections)]
            short.remove(published.weights[missing])
            ix = step(program_id, run, published.model, short, rng.randrange(2**64))
            limit = set_compute_unit_limit(CU_LIMIT)
            refused(strangers[0], [limit, ix], "MissingWeightAccount", watched)
            short_refusals += 1
        others = published.weights[1:]
        rng.shuffle(others)
        keys = [published.model, published.weights[0], *others]
        return [AccountMeta(key, False, False) for key in keys]

    any_order = crank(
        session, program_id, published, run, RunMirror(artifact, first), shuffled, strangers
    )
    assert any_order == in_order
    assert short_refusals == len(in_order)  # every slice of this model needs a matrix section


# -- seal -----------------------------------------------------------------------------------


def test_seal_steps_in_any_order_and_with_two_accounts_seal_the_same_model(target):
    session, program_id = target
    rng = random.Random(19)
    sections = [rng.randbytes(HASH_CHUNK_SIZE + 1), rng.randbytes(100), rng.randbytes(70_000)]
    chunks = list(hash_steps(sections))
    published = publish(session, program_id, sections)
    weights = published.weights
    strangers = [Session(session.runtime) for _ in range(2)]
    labels = list(range(len(chunks)))
    rng.shuffle(labels)
    for k, chunk in enumerate(chunks):
        model = model_state(session.runtime, published.model)
        cursor = model.cursor_section
        assert (model.chunks_hashed, cursor, model.cursor_offset) == (
            k,
            chunk.section,
            chunk.offset,
        )
        # Neither account the cursor's: refused, nothing changes.
        wrong = [w for i, w in enumerate(weights) if i != cursor][:2]
        ix = seal_step(program_id, published.model, wrong, labels[k])
        refused(strangers[1], [ix], "WrongWeightAccount", published.keys)
        # One account, or two consecutive ones with the cursor's first or second.
        choices = [[cursor]]
        if cursor + 1 < len(weights):
            choices.append([cursor, cursor + 1])
        if cursor > 0:
            choices.append([cursor - 1, cursor])
        named = rng.choice(choices)
        ix = seal_step(program_id, published.model, [weights[i] for i in named], labels[k])
        strangers[k % 2].must([ix])
        for i, key in enumerate(weights):
            frozen = WeightHeader.from_bytes(session.runtime.account(key).data).frozen
            assert frozen == (i <= chunk.section), (k, i, named)  # the next slot's: not yet
        assert model_state(session.runtime, published.model).running_hash == chunk.running
    model = model_state(session.runtime, published.model)
    assert model.state == ModelState.SEALED
    # One crank in order seals the same bytes to the same hash.
    again = publish(session, program_id, sections)
    assert seal(session, program_id, again).running_hash == model.running_hash


def test_a_run_a_hostile_model_had_before_the_check_cannot_write_outside_it(target):
    # A run of the exp-entry-0 model as the program before the check opened it (openRun took
    # it): cranked with top-p 0.9 and the model's accounts writable after the run, where the
    # unguarded histogram index reached (weight account 0's section zero, in this layout).
    # The clamped index keeps every write inside the run.
    session, program_id = target
    artifact = tiny()
    published = publish_and_seal(
        session, program_id, hostile(artifact.sections, "exp-entry-0-above-2^30")
    )
    before = accounts(session.runtime, published.keys)
    run = Keypair()
    data = opened_run_data(
        artifact.config, published.model, session.payer.pubkey(), CAPACITY, PROMPT,
        65_536, TOP_P_09, 7,
    )  # fmt: skip
    session.runtime.set_account(run.pubkey(), program_id, data)
    metas = [AccountMeta(run.pubkey(), False, True)]
    metas += [AccountMeta(key, False, True) for key in published.keys]
    for label in range(CAPACITY * 4):
        data = coder().encode_instruction("step", {"label": label})
        outcome = session.send(
            [set_compute_unit_limit(CU_LIMIT), Instruction(program_id, data, metas)]
        )
        if not outcome.ok:
            assert outcome.name == "RunFinished", outcome.logs[-3:]
            break
    final = RunAccount.from_bytes(session.runtime.account(run.pubkey()).data)
    assert final.state == RunState.FINISHED
    assert accounts(session.runtime, published.keys) == before


def wrapped(sections: Sequence[bytes], field: str, index: int) -> list[bytes]:
    """Section zero with one offset or length set to a value whose sum with its size wraps."""
    zero = bytearray(sections[0])
    if field == "block":  # u32: 4-aligned, just below 2^32
        patch_u32(zero, BLOCKS + 4 * index, 2**32 - 4)
    elif field == "matrix":  # u64: 8-aligned, offset + rows x row_bytes wraps to 0
        at = MATRIX_TABLE + 24 * index
        _, _, rows, row_bytes = struct.unpack_from("<4I", zero, at)
        struct.pack_into("<Q", zero, at + 16, 2**64 - rows * row_bytes)
    elif field == "token":  # a token entry's u32 offset, its length 8
        at = block(zero, 4) + 16 * index
        struct.pack_into("<II", zero, at + 4, 8, 2**32 - 4)
    else:  # the section table's length of section `index`
        struct.pack_into("<Q", zero, 128 + 16 * index + 8, 2**64 - 1)
    return [bytes(zero), *sections[1:]]


def test_every_bounds_check_refuses_the_wrapping_values():
    chain = Chain()
    artifact = tiny()
    matrices = len(artifact.matrices)
    cases = [
        *(("block", b) for b in range(7)),
        *(("matrix", m) for m in (0, 1, matrices - 1)),
        ("token", 0),
        ("token", 258),
        ("section", 0),
        ("section", 1),
    ]
    for field, index in cases:
        pub = chain.install_sealed(wrapped(artifact.sections, field, index))
        run = Keypair()
        size = run_account_size(artifact.config, CAPACITY, PromptKind.TEXT, len(PROMPT))
        ix = open_run(
            PROGRAM_ID, chain.authority.pubkey(), run.pubkey(), pub.model.pubkey(),
            pub.weight_keys[0], CAPACITY, PROMPT,
        )  # fmt: skip
        keys = [pub.model.pubkey(), *pub.weight_keys, run.pubkey()]
        before = chain.snapshot(keys)
        result = chain.send(
            [set_compute_unit_limit(CU_LIMIT), chain.new_account(run, size), ix], [run]
        )
        assert result.error == "BadArtifact", (field, index, result.logs[-3:])
        assert chain.snapshot(keys) == before
    # writeWeights: the largest u32 offset, one byte.
    pub = chain.publish([bytes(100), bytes(10)], write=False)
    ix = write_weights(PROGRAM_ID, chain.authority.pubkey(), pub.weight_keys[0], 2**32 - 1, b"x")
    result = chain.send([ix])
    assert result.error == "WriteOutOfBounds", result.logs[-3:]


def test_the_seal_step_builder_takes_one_or_two_weight_accounts():
    keys = [Keypair().pubkey() for _ in range(3)]
    for named in ([], keys):
        with pytest.raises(
            InputError, match=f"sealStep takes 1 or 2 weight accounts, not {len(named)}"
        ):
            seal_step(PROGRAM_ID, keys[0], named, 0)

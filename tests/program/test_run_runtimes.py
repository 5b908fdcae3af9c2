"""On-chain inference in Agave 4.3 (npm litesvm 1.5, every feature on), with both builds.

The v3 build's matrix, attention and step code is clang's ``-mcpu=v3`` code (JMP32 and
ALU32, accepted by the linker's sign-extension proof); the v0 build's is ``-mcpu=v2``. Each
publishes and seals stories260K, opens a run and cranks it, every step compared with the
mirror (the off-chain integer core): the tokens equal ``curta-chain run``'s, and the two
builds leave the same bytes in the run account and spend no more units in v3 than in v0.
"""

import math

from run_svm import tokens_of
from runtimes import Runtime, Session
from solders.compute_budget import set_compute_unit_limit
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.constants import HASH_CHUNK_SIZE, WEIGHT_HEADER_SIZE
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, generate, plan_run
from curta_chain.program import (
    MAX_WRITE_PAYLOAD,
    MODEL_ACCOUNT_SIZE,
    RUN_HEADER_SIZE,
    ModelAccount,
    ModelState,
    PromptKind,
    RunState,
    begin_sealing,
    bind_weight_account,
    create_model,
    open_run,
    run_account_size,
    seal_step,
    shipped_program,
    step,
    write_weights,
)
from curta_chain.program.run_mirror import RunMirror

PROMPT = "Once upon a time"
STEPS = 8
CU_LIMIT = 1_400_000


def publish_and_seal(session: Session, program_id: Pubkey, artifact: Artifact) -> list[Pubkey]:
    """Create, bind, write and seal ``artifact``; return the model and its weight accounts."""
    authority = session.payer.pubkey()
    model = Keypair()
    weights = [Keypair() for _ in artifact.sections]
    lengths = [len(section) for section in artifact.sections]
    create = create_model(program_id, authority, model.pubkey(), artifact.weights_hash(), lengths)
    session.must(
        [session.new_account(model.pubkey(), MODEL_ACCOUNT_SIZE, program_id), create], [model]
    )
    for index, (weight, section) in enumerate(zip(weights, artifact.sections, strict=True)):
        account = session.new_account(
            weight.pubkey(), WEIGHT_HEADER_SIZE + len(section), program_id
        )
        bind = bind_weight_account(program_id, authority, model.pubkey(), weight.pubkey(), index)
        session.must([account, bind], [weight])
        for offset in range(0, len(section), MAX_WRITE_PAYLOAD):
            piece = section[offset : offset + MAX_WRITE_PAYLOAD]
            session.must([write_weights(program_id, authority, weight.pubkey(), offset, piece)])
    session.must([begin_sealing(program_id, authority, model.pubkey())])
    for weight, length in zip(weights, lengths, strict=True):
        for _ in range(math.ceil(length / HASH_CHUNK_SIZE)):
            session.must([seal_step(program_id, model.pubkey(), [weight.pubkey()], 0)])
    state = ModelAccount.from_bytes(session.runtime.account(model.pubkey()).data).state
    assert state == ModelState.SEALED
    return [model.pubkey(), *(w.pubkey() for w in weights)]


def run_on_chain(
    runtime: Runtime, build_name: str, artifact: Artifact
) -> tuple[list[int], bytes, list[int]]:
    """Run ``artifact`` on chain; return the tokens, the run account and each step's units."""
    session = Session(runtime)
    deployment = session.deploy(shipped_program(build_name).elf)
    if deployment.outcome.ok:
        program_id = deployment.program_id
        session.next_slot()
    else:  # SIMD-0500 refuses new v0 deployments; a v0 program added before it still runs
        program_id = Pubkey.new_unique()
        runtime.add_program(program_id, shipped_program(build_name).elf)
    model, *weights = publish_and_seal(session, program_id, artifact)
    prompt = PROMPT.encode()
    capacity = len(Tokenizer.from_artifact(artifact).encode(PROMPT)) + STEPS
    run = Keypair()
    size = run_account_size(artifact.config, capacity, PromptKind.TEXT, len(prompt))
    opened = open_run(
        program_id, session.payer.pubkey(), run.pubkey(), model, weights[0], capacity, prompt
    )
    budget = set_compute_unit_limit(CU_LIMIT)
    session.must([budget, session.new_account(run.pubkey(), size, program_id), opened], [run])
    mirror = RunMirror(artifact, runtime.account(run.pubkey()).data)
    units = []
    while mirror.header.state != RunState.FINISHED:
        before = mirror.header
        plan = mirror.plan()
        keys = [weights[0], *(weights[i] for i in plan.sections)]
        outcome = session.must([budget, step(program_id, run.pubkey(), model, keys, before.steps)])
        units.append(outcome.program_units(program_id))
        mirror.advance(plan)
        data = runtime.account(run.pubkey()).data
        mirror.compare(data, before)
    return tokens_of(data), data, units


def test_both_builds_run_the_off_chain_tokens_in_agave_4_3(node_all: Runtime, stories260k):
    model, tokenizer = IntModel.from_artifact(stories260k), Tokenizer.from_artifact(stories260k)
    plan = plan_run(model, tokenizer, PROMPT, STEPS)
    want = [*plan.prompt_ids, *generate(model, plan, SamplingSettings(0, 0, 0))]
    v0_tokens, v0_data, v0_units = run_on_chain(node_all, "sbpf-v0", stories260k)
    v3_tokens, v3_data, v3_units = run_on_chain(node_all, "sbpf-v3", stories260k)
    assert v0_tokens == v3_tokens == want
    # Past the header (which names the model and the opener) the two runs hold the same bytes.
    assert v3_data[RUN_HEADER_SIZE:] == v0_data[RUN_HEADER_SIZE:]
    assert len(v3_units) == len(v0_units)
    assert all(three <= zero for three, zero in zip(v3_units, v0_units, strict=True))

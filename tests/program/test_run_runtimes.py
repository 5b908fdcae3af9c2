"""On-chain inference in Agave 4.3 (npm litesvm 1.5, every feature on), with both builds.

The v3 build's matrix, attention and step code is clang's ``-mcpu=v3`` code (JMP32 and
ALU32, accepted by the linker's sign-extension proof); the v0 build's is ``-mcpu=v2``. Each
publishes and seals stories260K, opens a run and cranks it, every step compared with the
mirror (the off-chain integer core): the tokens equal ``curta-chain run``'s, and the two
builds leave the same bytes in the run account and spend no more units in v3 than in v0.
"""

from run_svm import tokens_of
from runtimes import Runtime, Session, install, publish_and_seal
from solders.compute_budget import set_compute_unit_limit
from solders.keypair import Keypair

from curta_chain.artifact import Artifact
from curta_chain.inference import IntModel, SamplingSettings, Tokenizer, generate, plan_run
from curta_chain.onchain.mirror import RunMirror
from curta_chain.onchain.run_account import RUN_HEADER_SIZE, PromptKind, RunState, run_account_size
from curta_chain.program import open_run, step

PROMPT = "Once upon a time"
STEPS = 8
CU_LIMIT = 1_400_000


def run_on_chain(
    runtime: Runtime, build_name: str, artifact: Artifact
) -> tuple[list[int], bytes, list[int]]:
    """Run ``artifact`` on chain; return the tokens, the run account and each step's units."""
    session = Session(runtime)
    program_id = install(session, build_name)
    model, *weights = publish_and_seal(session, program_id, artifact.sections).keys
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

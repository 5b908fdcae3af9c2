"""Both shipped builds, deployed through the upgradeable loader and sealed, in two runtimes.

solders' LiteSVM runs Agave 2.2; npm ``litesvm`` 1.5 runs Agave 4.3 (in Node, see
``runtimes.py``), once with its mainnet feature set and once with every feature on, so with
SIMD-0500 (no new v0 deployments). In each, each build that the runtime can deploy goes
through the whole lifecycle of ``lifecycle.py``; the v0 build, refused there, still runs
when added directly, as programs deployed before SIMD-0500 keep running. The compute
units and refusals are compared across runtimes and builds.
"""

from collections.abc import Iterator

import pytest
from lifecycle import SEAL_END, SEAL_MID, WRITE, Lifecycle, run_lifecycle
from runtimes import Runtime, Session, SoldersRuntime
from solders.pubkey import Pubkey

from curta_chain.chain.features import DISABLE_SBPF_V0, ENABLE_SBPF_V3
from curta_chain.program import shipped_program

V0, V3 = shipped_program("sbpf-v0"), shipped_program("sbpf-v3")
RUNS: dict[tuple[str, str], Lifecycle] = {}
"""(runtime, build) -> the lifecycle measured there, for the comparisons at the end."""


@pytest.fixture(scope="module")
def solders() -> Iterator[Runtime]:
    # Agave 2.x turns new loader-v3 deployments off (SIMD-0167); Agave 4 has no such feature.
    runtime = SoldersRuntime(without=["disable_new_loader_v3_deployments"])
    yield runtime
    runtime.close()


def deploy_and_seal(runtime: Runtime, label: str, build_name: str) -> Lifecycle:
    session = Session(runtime)
    deployment = session.deploy(shipped_program(build_name).elf)
    assert deployment.outcome.ok, (runtime.name, deployment.outcome.error, deployment.outcome.logs)
    assert f"Deployed program {deployment.program_id}" in deployment.outcome.logs
    RUNS[(label, build_name)] = run_lifecycle(session, deployment.program_id)
    return RUNS[(label, build_name)]


def test_v0_deploys_and_seals_in_agave_2_2(solders: Runtime):
    deploy_and_seal(solders, "solders", "sbpf-v0")


def test_agave_2_2_refuses_the_v3_build(solders: Runtime):
    # Agave 2.2's "v3" is an older definition (solana-sbpf 0.10): it refuses our headers.
    outcome = Session(solders).deploy(V3.elf).outcome
    assert not outcome.ok and "Failed to parse ELF file" in " ".join(outcome.logs), outcome.logs


@pytest.mark.parametrize("build_name", ["sbpf-v0", "sbpf-v3"])
def test_both_builds_deploy_and_seal_with_mainnet_features(node_mainnet: Runtime, build_name):
    deploy_and_seal(node_mainnet, "node-mainnet", build_name)


def test_v3_deploys_and_seals_with_every_feature_on(node_all: Runtime):
    assert node_all.feature(ENABLE_SBPF_V3) is not None
    deploy_and_seal(node_all, "node-all", "sbpf-v3")


def test_v0_is_refused_deployment_with_simd_0500_but_still_runs(node_all: Runtime):
    if node_all.feature(DISABLE_SBPF_V0) is None:
        pytest.skip(f"{node_all.name} has no {DISABLE_SBPF_V0} feature")
    session = Session(node_all)
    outcome = session.deploy(V0.elf).outcome
    assert not outcome.ok and "InvalidAccountData" in str(outcome.error)
    assert "Detected sbpf_version required by the executable which are not enabled" in outcome.logs
    program_id = Pubkey.new_unique()
    node_all.add_program(program_id, V0.elf)  # as a program deployed before SIMD-0500
    RUNS[("node-all", "sbpf-v0")] = run_lifecycle(session, program_id)


def runs_of(build_name: str) -> dict[str, Lifecycle]:
    return {runtime: run for (runtime, build), run in RUNS.items() if build == build_name}


def test_runtimes_agree_and_v3_costs_no_more(record_property):
    if len(RUNS) < 5:
        pytest.skip("needs the five lifecycle runs above (run the whole module)")
    for build_name in ("sbpf-v0", "sbpf-v3"):
        runs = runs_of(build_name)
        first = next(iter(runs.values()))
        for runtime, run in runs.items():
            assert run.units == first.units, (build_name, runtime)
            assert run.refusals == first.refusals, (build_name, runtime)
            assert run.sealed_hash == first.sealed_hash
    v0, v3 = RUNS[("node-all", "sbpf-v0")], RUNS[("node-all", "sbpf-v3")]
    assert v3.refusals == v0.refusals
    assert all(v3.units[label] <= v0.units[label] for label in v0.units), (v0.units, v3.units)
    for label in (WRITE, SEAL_MID, SEAL_END):
        print(f"{label}: v0 {v0.units[label]:,} CU, v3 {v3.units[label]:,} CU")
        record_property(label, f"v0 {v0.units[label]} v3 {v3.units[label]}")

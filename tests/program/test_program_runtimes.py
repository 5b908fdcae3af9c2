"""Both shipped builds, deployed through the upgradeable loader and sealed, in two runtimes.

solders 0.29's LiteSVM runs Agave 4.1 (solana-sbpf 0.21) with every feature on; npm
``litesvm`` 1.5 runs Agave 4.3 (in Node, see ``runtimes.py``), once with its mainnet feature
set and once with every feature on, so with SIMD-0500 (no new v0 deployments). In each,
each build that the runtime can deploy goes through the whole lifecycle of
``lifecycle.py``; the v0 build, refused there, still runs when added directly, as programs
deployed before SIMD-0500 keep running. The compute units and refusals are compared across
runtimes and builds.
"""

from collections.abc import Iterator

import pytest
from lifecycle import SEAL_END, SEAL_MID, WRITE, Lifecycle, run_lifecycle
from runtimes import Runtime, Session, SoldersRuntime
from solders.pubkey import Pubkey

from curta_chain.program import shipped_program
from curta_chain.protocol.features import DISABLE_SBPF_V0, ENABLE_SBPF_V3

V0, V3 = shipped_program("sbpf-v0"), shipped_program("sbpf-v3")


@pytest.fixture(scope="module")
def solders() -> Iterator[Runtime]:
    runtime = SoldersRuntime()
    yield runtime
    runtime.close()


def deploy_and_seal(runtime: Runtime, build_name: str) -> Lifecycle:
    session = Session(runtime)
    deployment = session.deploy(shipped_program(build_name).elf)
    assert deployment.outcome.ok, (runtime.name, deployment.outcome.error, deployment.outcome.logs)
    assert f"Deployed program {deployment.program_id}" in deployment.outcome.logs
    return run_lifecycle(session, deployment.program_id)


def v0_added_directly(runtime: Runtime) -> Lifecycle:
    """The v0 build as a program deployed before SIMD-0500 (which refuses new v0 deploys)."""
    program_id = Pubkey.new_unique()
    runtime.add_program(program_id, V0.elf)
    return run_lifecycle(Session(runtime), program_id)


@pytest.fixture(scope="module")
def lifecycles(
    solders: Runtime, node_mainnet: Runtime, node_all: Runtime
) -> dict[tuple[str, str], Lifecycle]:
    """(runtime, build) -> the lifecycle measured there: every comparison's own runs, so each
    test sets up what it asserts whether it runs alone, with -k or in any order."""
    return {
        ("solders", "sbpf-v3"): deploy_and_seal(solders, "sbpf-v3"),
        ("solders", "sbpf-v0"): v0_added_directly(solders),
        ("node-mainnet", "sbpf-v0"): deploy_and_seal(node_mainnet, "sbpf-v0"),
        ("node-mainnet", "sbpf-v3"): deploy_and_seal(node_mainnet, "sbpf-v3"),
        ("node-all", "sbpf-v3"): deploy_and_seal(node_all, "sbpf-v3"),
        ("node-all", "sbpf-v0"): v0_added_directly(node_all),
    }


@pytest.mark.parametrize("runtime_name", ["solders", "node_all"])
def test_v3_runs_with_every_feature_on(request, runtime_name: str):
    assert request.getfixturevalue(runtime_name).feature(ENABLE_SBPF_V3) is not None


@pytest.mark.parametrize("runtime_name", ["solders", "node_all"])
def test_v0_is_refused_deployment_with_simd_0500(request, runtime_name: str):
    runtime = request.getfixturevalue(runtime_name)
    if runtime.feature(DISABLE_SBPF_V0) is None:
        pytest.skip(f"{runtime.name} has no {DISABLE_SBPF_V0} feature")
    outcome = Session(runtime).deploy(V0.elf).outcome
    assert not outcome.ok and "InvalidAccountData" in str(outcome.error)
    assert "Detected sbpf_version required by the executable which are not enabled" in outcome.logs


@pytest.mark.parametrize("build_name", ["sbpf-v0", "sbpf-v3"])
def test_each_build_seals_alike_in_every_runtime(lifecycles, build_name):
    runs = {runtime: run for (runtime, build), run in lifecycles.items() if build == build_name}
    assert len(runs) >= 2
    first = next(iter(runs.values()))
    assert first.sealed_hash and first.units
    for runtime, run in runs.items():
        assert run.units == first.units, (build_name, runtime)
        assert run.refusals == first.refusals, (build_name, runtime)
        assert run.sealed_hash == first.sealed_hash


def test_v3_costs_no_more_than_v0(lifecycles, record_property):
    v0, v3 = lifecycles[("node-all", "sbpf-v0")], lifecycles[("node-all", "sbpf-v3")]
    assert v3.refusals == v0.refusals
    assert all(v3.units[label] <= v0.units[label] for label in v0.units), (v0.units, v3.units)
    for label in (WRITE, SEAL_MID, SEAL_END):
        print(f"{label}: v0 {v0.units[label]:,} CU, v3 {v3.units[label]:,} CU")
        record_property(label, f"v0 {v0.units[label]} v3 {v3.units[label]}")

"""Which build deploy takes: feature accounts decoded, the choice, and the read over RPC.

The read runs against the embedded localnet over HTTP. Its genesis holds an account for every
active feature, as a validator's does (both gates active since slot 0); the tests deactivate
gates as ``--deactivate-feature`` does (no account), or write the accounts a cluster holds for
an activated or pending feature (owner the Feature program, data ``Option<u64>``), and read.
"""

import asyncio
import struct

import pytest
from solders.account import Account
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM_ID

from curta_chain.chain.features import (
    DISABLE_SBPF_V0,
    ENABLE_SBPF_V3,
    FEATURE_IDS,
    FEATURE_PROGRAM_ID,
    DeployChoice,
    choose_build,
    feature_activation,
    select_build,
)
from curta_chain.chain.rpc import AccountInfo, RpcClient
from curta_chain.chain.transport import HttpTransport
from curta_chain.errors import ChainError
from curta_chain.localnet import LocalnetHandle, start_in_thread

ACTIVE_SINCE = 428_976_000
PENDING = b"\x00"


def activated(slot: int) -> bytes:
    return struct.pack("<BQ", 1, slot)


def feature_account(data: bytes, owner: Pubkey = FEATURE_PROGRAM_ID) -> AccountInfo:
    return AccountInfo(owner, 1_000_000, data)


@pytest.mark.parametrize(
    ("account", "slot"),
    [
        (None, None),
        (feature_account(PENDING), None),
        (feature_account(activated(ACTIVE_SINCE)), ACTIVE_SINCE),
        (feature_account(activated(0)), 0),
        (feature_account(activated(7), owner=SYSTEM_PROGRAM_ID), None),  # lamports sent there
    ],
)
def test_a_feature_account_decodes_to_its_activation_slot(account, slot):
    assert feature_activation(ENABLE_SBPF_V3, account) == slot


@pytest.mark.parametrize("data", [b"", b"\x02" + bytes(8), b"\x01\x00\x00"])
def test_a_malformed_feature_account_names_the_feature(data):
    with pytest.raises(ChainError, match=f"feature {ENABLE_SBPF_V3} .*is not a Feature"):
        feature_activation(ENABLE_SBPF_V3, feature_account(data))


@pytest.mark.parametrize(
    ("activations", "build"),
    [
        ({}, "sbpf-v0"),
        ({ENABLE_SBPF_V3: None, DISABLE_SBPF_V0: None}, "sbpf-v0"),
        ({ENABLE_SBPF_V3: ACTIVE_SINCE}, "sbpf-v3"),
        ({ENABLE_SBPF_V3: ACTIVE_SINCE, DISABLE_SBPF_V0: ACTIVE_SINCE + 1}, "sbpf-v3"),
    ],
)
def test_v3_where_v3_is_deployable_else_v0(activations, build):
    choice = choose_build(activations)
    assert choice.program.name == build
    assert choice.program.path.name in choice.reason
    if build == "sbpf-v3":
        assert choice.reason.startswith("SBPF v3 deployment is enabled on this cluster")
        assert f"since slot {ACTIVE_SINCE}" in choice.reason
    else:
        assert choice.reason.startswith("SBPF v3 deployment is not enabled on this cluster")


def test_a_cluster_that_deploys_neither_build_is_refused():
    with pytest.raises(ChainError, match=f"deploys neither shipped build: {DISABLE_SBPF_V0}"):
        choose_build({DISABLE_SBPF_V0: 5, ENABLE_SBPF_V3: None})


def select_on(url: str) -> DeployChoice:
    async def run() -> DeployChoice:
        client = RpcClient(HttpTransport(url), "confirmed")
        try:
            return await select_build(client)
        finally:
            await client.aclose()

    return asyncio.run(run())


def write_features(localnet: LocalnetHandle, features: dict[str, bytes]) -> None:
    """Write feature accounts as a cluster holds them, over the localnet's genesis ones."""

    def write(chain) -> None:
        for name, data in features.items():
            account = Account(1_000_000, data, FEATURE_PROGRAM_ID, False, 0)
            chain.svm.set_account(FEATURE_IDS[name], account)
        chain._forget_reads()  # the genesis accounts were read (indexed) at start

    localnet.call(write)


@pytest.mark.parametrize(
    ("deactivate", "features", "build", "since"),
    [
        ((), {}, "sbpf-v3", 0),  # the localnet's genesis: every feature active from slot 0
        ((ENABLE_SBPF_V3, DISABLE_SBPF_V0), {}, "sbpf-v0", None),  # a cluster with neither
        ((), {ENABLE_SBPF_V3: PENDING, DISABLE_SBPF_V0: PENDING}, "sbpf-v0", None),
        ((DISABLE_SBPF_V0,), {ENABLE_SBPF_V3: activated(ACTIVE_SINCE)}, "sbpf-v3", ACTIVE_SINCE),
        ((), {ENABLE_SBPF_V3: activated(ACTIVE_SINCE)}, "sbpf-v3", ACTIVE_SINCE),
    ],
)
def test_select_build_reads_the_feature_accounts_over_rpc(deactivate, features, build, since):
    handle = start_in_thread(deactivate_features=tuple(FEATURE_IDS[name] for name in deactivate))
    try:
        write_features(handle, features)
        choice = select_on(handle.url)
    finally:
        handle.stop()
    assert choice.program.name == build
    assert (f"since slot {since}" in choice.reason) == (since is not None)


def test_select_build_refuses_a_cluster_that_deploys_neither():
    # SIMD-0500 active (the localnet's default) and SBPF v3 not enabled.
    handle = start_in_thread(deactivate_features=(FEATURE_IDS[ENABLE_SBPF_V3],))
    try:
        with pytest.raises(ChainError, match="deploys neither shipped build"):
            select_on(handle.url)
    finally:
        handle.stop()

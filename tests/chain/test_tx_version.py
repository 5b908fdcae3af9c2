"""v1 transactions where the cluster has them: sizes at the limit, the choice, and the chain.

The sizes are pure: a v1 write filled to its payload is exactly 4,096 bytes signed, one
byte more is over. The choice reads ``enable_tx_v1``'s feature account. On the localnet
(in this process) a v1 publish and a v1 deploy leave the chain's accounts byte for byte
as the legacy ones do, in about a quarter of the write transactions, and a publish or a
deploy stopped half way in one version is finished by the other.
"""

import json
from dataclasses import replace
from typing import get_args

import pytest
from inprocess import PROGRAM_ID, LocalnetTransport
from solders.compute_budget import ID as COMPUTE_BUDGET_PROGRAM_ID
from solders.hash import Hash
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.transaction import Transaction, VersionedTransaction

from curta_chain.artifact import Artifact
from curta_chain.chain import loader
from curta_chain.chain.deploy import deploy, plan_deploy
from curta_chain.chain.deploy_transactions import BUFFER_WRITE_CU, DeployTransactions
from curta_chain.chain.features import (
    ENABLE_TX_V1,
    FEATURE_IDS,
    TxVersionChoice,
    choose_tx_version,
    select_build,
)
from curta_chain.chain.plan import NewAccount, WritePiece
from curta_chain.chain.publish import plan_publish, publish
from curta_chain.chain.specs import WRITE_CU, Budget, Transactions, sign
from curta_chain.cli import main
from curta_chain.cli.cluster_runner import TX_VERSIONS
from curta_chain.cli.keypairs import write_keypair
from curta_chain.constants import (
    MAX_LOADED_ACCOUNTS_DATA_SIZE,
    MAX_TRANSACTION_SIZE,
    MAX_V1_TRANSACTION_SIZE,
)
from curta_chain.errors import ChainError, InputError, ProgramCheckError
from curta_chain.inference import SamplingSettings
from curta_chain.localnet import start_in_thread
from curta_chain.onchain.run import check_opening_size

AUTHORITY, PAYER = Keypair(), Keypair()
BUDGETS = [
    Budget(),
    Budget(limit_compute=True),
    Budget(compute_unit_price=1_000),
    Budget(limit_compute=True, compute_unit_price=1_000, separate_fee_payer=True),
    Budget(separate_fee_payer=True),
]


def wire(budget: Budget, length: int) -> bytes:
    """A signed v1 write of ``length`` bytes under ``budget`` (its payer, its authority)."""
    payer = PAYER if budget.separate_fee_payer else AUTHORITY
    txs = Transactions(PROGRAM_ID, AUTHORITY.pubkey(), payer.pubkey(), budget)
    spec = txs._write(Keypair().pubkey(), [bytes(length)], WritePiece(0, 0, length), "v1")
    return bytes(sign(spec, payer, Hash.new_unique(), (AUTHORITY,)))


@pytest.mark.parametrize("budget", BUDGETS)
def test_a_full_v1_write_is_exactly_4096_bytes_and_one_byte_more_is_over(budget: Budget):
    payload = budget.write_payload("v1")
    assert len(wire(budget, payload)) == MAX_V1_TRANSACTION_SIZE
    assert len(wire(budget, payload + 1)) == MAX_V1_TRANSACTION_SIZE + 1
    # Over three and a half times a legacy write's room, whatever the budget.
    assert payload > 3.5 * budget.write_payload("legacy")


@pytest.mark.parametrize("priced", [False, True])
def test_a_full_v1_buffer_write_is_exactly_4096_bytes(priced: bool):
    budget = Budget(compute_unit_price=5 if priced else None)
    txs = DeployTransactions(PAYER.pubkey(), budget)
    chunk = txs.chunk("v1")
    buffer, elf = Keypair().pubkey(), bytes(range(256)) * 20

    def size(length: int) -> int:
        spec = txs.write(buffer, elf, WritePiece(0, 0, length), "v1")
        return len(bytes(sign(spec, PAYER, Hash.new_unique())))

    assert size(chunk) == MAX_V1_TRANSACTION_SIZE and size(chunk + 1) > MAX_V1_TRANSACTION_SIZE
    assert chunk > 3.5 * txs.chunk("legacy")


def test_a_v1_write_carries_its_budget_inline_and_no_compute_budget_instruction():
    txs = Transactions(PROGRAM_ID, AUTHORITY.pubkey(), AUTHORITY.pubkey(), Budget())
    piece = WritePiece(0, 0, 100)
    spec = txs._write(Keypair().pubkey(), [bytes(100)], piece, "v1")
    assert spec.version == "v1" and spec.size_limit == MAX_V1_TRANSACTION_SIZE
    assert all(ix.program_id != COMPUTE_BUDGET_PROGRAM_ID for ix in spec.instructions)
    # Unset, a v1 field is the least there is: both are always said.
    assert spec.config.compute_unit_limit == WRITE_CU
    assert spec.config.loaded_accounts_data_size_limit == MAX_LOADED_ACCOUNTS_DATA_SIZE
    assert spec.config.priority_fee is None
    signed = sign(spec, AUTHORITY, Hash.new_unique())
    assert isinstance(signed, VersionedTransaction) and bytes(signed)[0] == 0x81
    legacy = txs._write(Keypair().pubkey(), [bytes(100)], piece, "legacy")
    assert legacy.config is None and legacy.size_limit == MAX_TRANSACTION_SIZE
    assert isinstance(sign(legacy, AUTHORITY, Hash.new_unique()), Transaction)


@pytest.mark.parametrize(
    ("price", "lamports"), [(0, 0), (1, 1), (1_000, 5), (999_999, 5_000), (1_000_001, 5_001)]
)
def test_a_v1_priority_fee_is_the_legacy_one_in_whole_lamports(price: int, lamports: int):
    # 5,000 units (a buffer write's) at ``price`` micro-lamports, rounded up.
    txs = DeployTransactions(PAYER.pubkey(), Budget(compute_unit_price=price))
    spec = txs.write(Keypair().pubkey(), bytes(10), WritePiece(0, 0, 10), "v1")
    assert spec.config.compute_unit_limit == BUFFER_WRITE_CU
    assert spec.config.priority_fee == lamports


@pytest.mark.parametrize(
    ("requested", "slot", "version"),
    [
        ("auto", 12, "v1"),
        ("auto", 0, "v1"),
        ("auto", None, "legacy"),
        ("v1", 12, "v1"),
        ("legacy", 12, "legacy"),
        ("legacy", None, "legacy"),
    ],
)
def test_auto_is_v1_exactly_where_the_cluster_activated_it(requested, slot, version):
    assert choose_tx_version(requested, slot) == version


def test_the_option_offers_every_choice():
    assert set(TX_VERSIONS) == set(get_args(TxVersionChoice))


def test_v1_where_the_cluster_has_not_activated_it_is_refused_naming_the_feature():
    with pytest.raises(ChainError, match=f"not activated {ENABLE_TX_V1} .*--tx-version auto"):
        choose_tx_version("v1", None)


# On the chain.


GENESIS_SEED = bytes(range(32))


def accounts_of(node: LocalnetTransport, keys: list[Pubkey]) -> list[bytes]:
    return [bytes(node.localnet.svm.get_account(key).data) for key in keys]


def funded(authority: Keypair, deactivate: tuple[Pubkey, ...] = ()) -> LocalnetTransport:
    """A localnet (every feature active, as agave 4.3's, but ``deactivate``) where
    ``authority`` holds 100 SOL.

    Each chain has a genesis hash of its own; these share one (``GENESIS_SEED``), so that one
    authority's derived addresses are the same on two of them and their accounts compare
    byte for byte.
    """
    node = LocalnetTransport(deactivate_features=deactivate, genesis_seed=GENESIS_SEED)
    node.localnet.airdrop(authority.pubkey(), 10**11)
    return node


async def publish_with(
    node: LocalnetTransport, authority: Keypair, artifact: Artifact, version: str, writes=None
):
    """Publish ``artifact`` with ``version`` writes (only the first ``writes`` of them)."""
    ctx = node.context(authority, budget=Budget(tx_version=version))
    plan = await plan_publish(ctx, artifact)
    if writes is not None:
        plan = replace(plan, writes=plan.writes[:writes])
    return plan, await publish(ctx, artifact, plan)


@pytest.mark.asyncio
async def test_a_v1_publish_leaves_the_legacy_one_s_bytes_in_a_quarter_of_the_writes(tiny):
    authority = Keypair()
    legacy_node, v1_node = funded(authority), funded(authority)
    try:
        legacy, legacy_result = await publish_with(legacy_node, authority, tiny, "legacy")
        v1, v1_result = await publish_with(v1_node, authority, tiny, "v1")
        keys = [v1.model, *v1.weight_accounts]
        assert [legacy.model, *legacy.weight_accounts] == keys
        assert accounts_of(legacy_node, keys) == accounts_of(v1_node, keys)
    finally:
        legacy_node.localnet.close()
        v1_node.localnet.close()
    assert (legacy.tx_version, v1.tx_version) == ("legacy", "v1")
    assert len(v1.writes) <= len(legacy.writes) / 3
    assert v1_result.signatures.writes == len(v1.writes)
    assert legacy_result.signatures.writes == len(legacy.writes)
    assert v1_result.transactions == v1.transactions
    assert v1.transactions == legacy.transactions - len(legacy.writes) + len(v1.writes)


@pytest.mark.asyncio
@pytest.mark.parametrize(("first", "then"), [("legacy", "v1"), ("v1", "legacy")])
async def test_a_publish_stopped_in_one_version_is_finished_in_the_other(tiny, first, then):
    authority = Keypair()
    whole, resumed = funded(authority), funded(authority)
    try:
        plan, _ = await publish_with(whole, authority, tiny, "legacy")
        await publish_with(resumed, authority, tiny, first, writes=7)
        rest, result = await publish_with(resumed, authority, tiny, then)
        assert rest.tx_version == then and rest.state == "uploading"
        # Only what the chain does not hold yet is sent, cut at the new version's size.
        assert len(rest.writes) > 0 and rest.write_bytes < plan.write_bytes
        assert result.signatures.writes == len(rest.writes)
        again, _ = await publish_with(resumed, authority, tiny, then)
        assert again.writes == ()
        keys = [plan.model, *plan.weight_accounts]
        assert accounts_of(whole, keys) == accounts_of(resumed, keys)
    finally:
        whole.localnet.close()
        resumed.localnet.close()


async def deploy_with(
    node: LocalnetTransport, payer: Keypair, program_kp: Keypair, version: str, writes=None
):
    """Deploy the build the node's features choose with ``version`` buffer writes.

    With ``writes``, only the buffer's creation and its first ``writes`` writes are sent:
    the deploy is left undone (and reading the program then finds none).
    """
    ctx = node.context(payer, budget=Budget(tx_version=version))
    ctx = replace(ctx, program_id=program_kp.pubkey())
    build = (await select_build(ctx.client)).program
    plan = await plan_deploy(ctx, program_kp, build, final=False)
    if writes is None:
        return plan, await deploy(ctx, program_kp, plan)
    partial = replace(plan, writes=plan.writes[:writes], new_program=None)
    with pytest.raises(ProgramCheckError):
        await deploy(ctx, program_kp, partial)
    return plan, None


def program_bytes(node: LocalnetTransport, program_id: Pubkey) -> list[bytes]:
    """The program account and its program data, the last deploy's slot left out."""
    program_account, programdata = accounts_of(
        node, [program_id, loader.programdata_address(program_id)]
    )
    return [program_account, programdata[:4] + programdata[12:]]


@pytest.mark.asyncio
async def test_a_v1_deploy_leaves_the_legacy_one_s_program_in_a_quarter_of_the_writes():
    payer, program_kp = Keypair(), Keypair()
    legacy_node, v1_node = funded(payer), funded(payer)
    try:
        legacy, legacy_result = await deploy_with(legacy_node, payer, program_kp, "legacy")
        v1, v1_result = await deploy_with(v1_node, payer, program_kp, "v1")
        assert program_bytes(legacy_node, program_kp.pubkey()) == program_bytes(
            v1_node, program_kp.pubkey()
        )
    finally:
        legacy_node.localnet.close()
        v1_node.localnet.close()
    assert v1.build == legacy.build and (legacy.tx_version, v1.tx_version) == ("legacy", "v1")
    assert len(v1.writes) <= len(legacy.writes) / 3
    assert (
        v1_result.transactions
        == v1.transactions
        == legacy.transactions - len(legacy.writes) + len(v1.writes)
    )
    assert v1_result.program.sha256 == legacy_result.program.sha256 == v1.build.sha256


@pytest.mark.asyncio
@pytest.mark.parametrize(("first", "then"), [("legacy", "v1"), ("v1", "legacy")])
async def test_a_deploy_stopped_in_one_version_is_finished_in_the_other(first, then):
    payer, program_kp = Keypair(), Keypair()
    node = funded(payer)
    try:
        await deploy_with(node, payer, program_kp, first, writes=5)
        rest, result = await deploy_with(node, payer, program_kp, then)
        assert rest.state == "resuming" and rest.tx_version == then
        assert result.program.sha256 == rest.build.sha256
    finally:
        node.localnet.close()


async def units_used(ctx, signature: str) -> int:
    """The compute units a landed transaction consumed, as getTransaction reports them."""
    config = {"encoding": "json", "maxSupportedTransactionVersion": 1, "commitment": "confirmed"}
    found = await ctx.client.call("getTransaction", [signature, config])
    return int(found["meta"]["computeUnitsConsumed"])


@pytest.mark.asyncio
async def test_full_v1_writes_use_less_than_the_units_they_ask_for(tiny):
    # LiteSVM does not hold a v1 transaction to its inline limit: measure, and compare.
    authority = Keypair()
    node = funded(authority)
    try:
        ctx = node.context(authority, budget=Budget(tx_version="v1"))
        plan, result = await publish_with(node, authority, tiny, "v1", writes=1)
        assert plan.writes[0].length == plan.payload_per_write
        assert await units_used(ctx, result.signatures.last_write) <= WRITE_CU
        program_kp = Keypair()
        deploy_plan, _ = await deploy_with(node, authority, program_kp, "v1", writes=0)
        piece = deploy_plan.writes[0]
        assert piece.length == deploy_plan.chunk
        txs = DeployTransactions(authority.pubkey(), ctx.budget)
        spec = txs.write(deploy_plan.buffer, deploy_plan.build.elf, piece, "v1")
        assert len(spec.instructions) == 4 and spec.config.compute_unit_limit == 4 * BUFFER_WRITE_CU
        sent = await ctx.sender_for("").send([spec])
        assert await units_used(ctx, sent.signatures[0]) <= spec.config.compute_unit_limit
    finally:
        node.localnet.close()


V1_OFF = (FEATURE_IDS[ENABLE_TX_V1],)
"""``--deactivate-feature`` of enable_tx_v1: a cluster that refuses v1 transactions."""


@pytest.mark.asyncio
async def test_where_v1_is_not_active_auto_falls_back_to_legacy_and_v1_is_refused(tiny):
    authority = Keypair()
    node = funded(authority, deactivate=V1_OFF)
    try:
        with pytest.raises(ChainError, match=f"has not activated {ENABLE_TX_V1}"):
            await publish_with(node, authority, tiny, "v1")
        plan, result = await publish_with(node, authority, tiny, "auto")
        assert plan.tx_version == "legacy"
        assert plan.payload_per_write == Budget().write_payload("legacy")
        assert result.signatures.writes == len(plan.writes)
        deploy_plan, deployed = await deploy_with(node, authority, Keypair(), "auto")
        assert deploy_plan.tx_version == "legacy" and deploy_plan.chunk == 1_010
        assert deployed.transactions == deploy_plan.transactions
    finally:
        node.localnet.close()


@pytest.mark.asyncio
async def test_auto_is_v1_on_the_localnet_as_on_agave_4(tiny):
    authority = Keypair()
    node = funded(authority)
    try:
        plan, _ = await publish_with(node, authority, tiny, "auto")
        assert plan.tx_version == "v1"
        assert plan.payload_per_write == Budget().write_payload("v1")
    finally:
        node.localnet.close()


# The command line, over HTTP.


def cli_json(capsys, *args: str) -> tuple[int, dict | None, str]:
    """``curta-chain *args --output json-compact`` in this process: (code, JSON, stderr)."""
    capsys.readouterr()
    code = main([*args, "--output", "json-compact"])
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    return code, json.loads(lines[-1]) if lines else None, err


def test_the_plans_and_the_results_count_the_writes_as_sent(
    capsys, localnet, fund, tmp_path, stories260k
):
    key, art = tmp_path / "id.json", tmp_path / "m.curta"
    write_keypair(fund(localnet.url, 20), key)
    art.write_bytes(stories260k.data)
    via = ("-u", localnet.url, "-k", str(key))
    _, legacy, _ = cli_json(
        capsys, "publish", str(art), "--dry-run", "--tx-version", "legacy", *via
    )
    code, dry, err = cli_json(capsys, "publish", str(art), "--dry-run", *via)
    assert code == 0, err
    plan = dry["plan"]
    assert (plan["transaction_version"], legacy["plan"]["transaction_version"]) == ("v1", "legacy")
    assert plan["payload_per_write"] == 3_864 and legacy["plan"]["payload_per_write"] == 1_010
    assert plan["write_transactions"] < legacy["plan"]["write_transactions"] / 3.5
    # Fewer writes, fewer fees: one signature each.
    saved = legacy["plan"]["write_transactions"] - plan["write_transactions"]
    assert legacy["plan"]["fee_lamports"] - plan["fee_lamports"] == 5_000 * saved
    code, published, err = cli_json(capsys, "publish", str(art), *via)
    assert code == 0, err
    assert published["transaction_version"] == "v1"
    assert published["transactions"] == plan["transactions"]
    assert published["signatures"]["writes"] == plan["write_transactions"]
    code, deploy, err = cli_json(capsys, "deploy", "--dry-run", *via, "-C", str(tmp_path / "c"))
    assert code == 0, err
    assert deploy["plan"]["transaction_version"] == "v1"
    assert deploy["plan"]["write_chunk"] == DeployTransactions(Pubkey.default(), Budget()).chunk(
        "v1"
    )


def test_a_cluster_without_v1_gets_legacy_writes_and_v1_asked_for_is_one_line_refused(
    capsys, fund, tmp_path, stories260k
):
    node = start_in_thread(deactivate_features=V1_OFF)
    try:
        key, art = tmp_path / "id.json", tmp_path / "m.curta"
        write_keypair(fund(node.url, 20), key)
        art.write_bytes(stories260k.data)
        via = ("-u", node.url, "-k", str(key))
        code, dry, err = cli_json(capsys, "publish", str(art), "--dry-run", *via)
        assert code == 0, err
        assert dry["plan"]["transaction_version"] == "legacy"
        code, out, err = cli_json(capsys, "publish", str(art), "--tx-version", "v1", *via)
        assert (code, out) == (1, None)
        assert err == (
            f"error: v1 transactions were asked for, but this cluster has not activated "
            f"{ENABLE_TX_V1} ({V1_OFF[0]}) and refuses them: use --tx-version auto or legacy\n"
        )
        code, deploy, err = cli_json(capsys, "deploy", "--dry-run", *via, "-C", str(tmp_path / "c"))
        assert code == 0, err
        assert deploy["plan"]["transaction_version"] == "legacy"
    finally:
        node.stop()


def test_the_longest_prompt_opens_a_run_in_one_v1_transaction_not_in_a_legacy_one(tiny):
    txs = Transactions(PROGRAM_ID, AUTHORITY.pubkey(), AUTHORITY.pubkey(), Budget())
    run = Keypair()
    funding = NewAccount(run.pubkey(), 100_000, 10**9)
    prompt = b"x" * 2_048  # the most text openRun takes

    def opening(version: str):
        section_zero = Keypair().pubkey()
        settings = SamplingSettings(0, 0, 0)
        return txs.open_run(
            run, funding, PROGRAM_ID, section_zero, 600, prompt, settings, tiny.config, version
        )

    check_opening_size(opening("v1"), AUTHORITY, len(prompt))
    with pytest.raises(InputError, match=r"legacy transaction, which holds at most \d+ prompt"):
        check_opening_size(opening("legacy"), AUTHORITY, len(prompt))

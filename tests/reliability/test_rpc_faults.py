"""RPC faults between the CLI and the localnet: the same final state, or a resumable error.

A clean publish and seal of stories260K (no proxy) with a fixed keypair gives the
reference: model address, every account's lamports, owner and bytes (the model's but its
seal slot), and what the payer spent. Each faulty run uses the same keypair on a fresh
localnet, through a ``FaultProxy`` that injects one kind of fault (or all of them) into
10-20% of the requests, with a seeded RNG, and must end in exactly that state having spent
exactly as much.

With the node down for good partway, `publish` and `seal` give up within
``--rpc-timeout`` with a one-line error that says how to resume; once the node is back,
the rerun completes to the same state.
"""

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from fault_proxy import (
    FaultProxy,
    Faults,
    Provider,
    Request,
    account_states,
    balance,
    fund,
    record,
    run_cli,
    run_plain,
)
from solders.keypair import Keypair

from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.constants import LAMPORTS_PER_SOL
from curta_chain.localnet import BusyOptions, LocalnetHandle, start_in_thread
from curta_chain.program import ModelAccount

PAYER = Keypair.from_seed(bytes(range(32)))
"""One publisher for every run, so every run derives the same model address."""
GENESIS_SEED = bytes(range(32, 64))
"""One genesis for every run's fresh localnet: every chain has its own genesis hash, and the
model's and weight accounts' addresses are derived from it."""


@pytest.fixture
def localnet() -> Iterator[LocalnetHandle]:
    """A fresh localnet with every run's genesis."""
    handle = start_in_thread(genesis_seed=GENESIS_SEED)
    try:
        yield handle
    finally:
        handle.stop()


FUNDS = 20 * LAMPORTS_PER_SOL
SEED = int(os.environ.get("CURTA_RELIABILITY_SEED", "6"))
"""The fault RNG's seed; scripts/reliability_report.py varies it between rounds."""


@dataclass(frozen=True)
class Outcome:
    """What a publish and seal left on chain, and what it cost."""

    model: str
    accounts: dict[str, tuple[int, str, bytes]]
    spent: int


def fund_payer(url: str, folder: Path) -> Path:
    """Give ``PAYER`` its funds on the localnet at ``url``; return its keypair file."""
    return fund(url, PAYER, FUNDS, folder)


def settle(url: str, model: str) -> Outcome:
    """Read the model and its weight accounts, and the payer's spending, from the node.

    The slot at which the seal began depends on the run's timing: the model is compared
    with its ``seal_slot`` (set, never 0) taken out.
    """
    code, shown, err = run_cli("status", model, "-u", url)
    assert code == 0, err
    keys = [model, *(s["weight_account"] for s in shown["sections"])]
    accounts = account_states(url, keys)
    lamports, owner, data = accounts[model]
    decoded = ModelAccount.from_bytes(data)
    assert decoded.seal_slot > 0
    accounts[model] = (lamports, owner, replace(decoded, seal_slot=0).to_bytes())
    return Outcome(model, accounts, FUNDS - balance(url, PAYER.pubkey()))


@pytest.fixture(scope="module")
def clean(tmp_path_factory, stories260k_file: Path) -> Iterator[Outcome]:
    """The reference: a publish and seal with no proxy and no faults."""
    node = start_in_thread(genesis_seed=GENESIS_SEED)
    try:
        via = ("-u", node.url, "-k", str(fund_payer(node.url, tmp_path_factory.mktemp("clean"))))
        code, published, err = run_cli("publish", str(stories260k_file), *via)
        assert code == 0, err
        code, sealed, err = run_cli("seal", published["model"], *via)
        assert code == 0 and sealed["state"] == "sealed", err
        yield settle(node.url, published["model"])
    finally:
        node.stop()


def publish_seal_verify(proxy: FaultProxy, keypair: Path, stories260k_file: Path) -> str:
    via = ("-u", proxy.url, "-k", str(keypair))
    code, published, err = run_cli("publish", str(stories260k_file), *via)
    assert code == 0, err
    code, sealed, err = run_cli("seal", published["model"], str(stories260k_file), *via)
    assert code == 0 and sealed["state"] == "sealed", err
    code, report, err = run_cli(
        "verify", published["model"], str(stories260k_file), "-u", proxy.url
    )
    assert code == 0 and report["ok"], err
    return published["model"]


FAULT_MIXES = {
    "dropped requests": Faults(drop_request=0.2),
    "dropped responses": Faults(drop_response=0.2),
    "delays": Faults(delay=0.2, delay_seconds=0.3),
    "429 with Retry-After": Faults(rate_limit=0.1, retry_after="1"),
    "500s": Faults(server_error=0.2),
    "truncated bodies": Faults(truncate=0.2),
    "all of them": Faults(
        drop_request=0.04,
        drop_response=0.04,
        delay=0.04,
        rate_limit=0.02,
        server_error=0.03,
        truncate=0.03,
    ),
}


@pytest.mark.parametrize("name", list(FAULT_MIXES))
def test_publish_and_seal_through_faults_end_as_a_clean_run(
    localnet, tmp_path, stories260k_file, clean, name
):
    proxy = FaultProxy(localnet.url, FAULT_MIXES[name], seed=SEED).start()
    try:
        model = publish_seal_verify(proxy, fund_payer(localnet.url, tmp_path), stories260k_file)
    finally:
        proxy.stop()
    assert sum(proxy.injected.values()) > 0
    outcome = settle(localnet.url, model)
    assert outcome.model == clean.model
    assert outcome.accounts == clean.accounts
    assert outcome.spent == clean.spent
    record(
        f"RPC faults: {name}",
        requests=proxy.requests,
        faults=dict(proxy.injected),
        lost_lamports=outcome.spent - clean.spent,
        same_state=outcome.accounts == clean.accounts,
    )


@dataclass(frozen=True)
class Outage:
    """When the node goes down for good, and which command meets it."""

    name: str
    command: str
    stage: str
    when: Callable[[FaultProxy, Request], bool]


def _carries(kind: str, request: Request) -> bool:
    return any(tx.kind == kind for tx in request.transactions)


OUTAGES = [
    Outage(
        "publish: node down as it confirms the model it created",
        "publish",
        "before",
        lambda p, r: "getSignatureStatuses" in r.methods and p.count("create_model") >= 1,
    ),
    Outage(
        # stories260K's 93 v1 writes go in one batch: the first is the only one.
        "publish: node down as the write batch arrives",
        "publish",
        "before",
        lambda p, r: _carries("write_weights", r),
    ),
    # The seal sends its steps in rounds, many in one batch (chain/seal.py).
    Outage(
        "seal: node down as the seal steps arrive",
        "seal",
        "before",
        lambda p, r: _carries("seal_step", r),
    ),
    Outage(
        "seal: node down as it reads the model after its steps were sent",
        "seal",
        "before",
        lambda p, r: "getAccountInfo" in r.methods and p.count("seal_step") >= 1,
    ),
]


@pytest.mark.parametrize("outage", OUTAGES, ids=[o.name.split(": ")[1] for o in OUTAGES])
def test_node_down_for_good_gives_up_with_a_resumable_line_and_the_rerun_completes(
    localnet, tmp_path, stories260k_file, clean, outage
):
    proxy = FaultProxy(localnet.url, serialize=True).start()
    try:
        keypair = fund_payer(localnet.url, tmp_path)
        via = ("-u", proxy.url, "-k", str(keypair))
        if outage.command == "seal":
            code, _, err = run_cli("publish", str(stories260k_file), *via)
            assert code == 0, err
        proxy.trigger(outage.when, lambda: setattr(proxy, "down", True), outage.stage)
        target = str(stories260k_file) if outage.command == "publish" else clean.model
        code, _, err = run_cli(outage.command, target, *via, "--rpc-timeout", "1")
        assert proxy.down, "the outage never happened"
        assert code == 1
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
        assert "Traceback" not in err
        if outage.command == "publish":
            rerun = f"curta-chain publish {stories260k_file} -u {proxy.url} -k {keypair}"
        else:
            rerun = f"curta-chain seal {clean.model} -u {proxy.url} -k {keypair}"
        assert f"rerun `{rerun}` to resume" in err  # the command, pasted as is
        counted = re.search(r"gave up with (\d+) of (\d+) transactions", err)
        assert counted is None or int(counted[1]) > 0, err

        proxy.down = False
        model = publish_seal_verify(proxy, keypair, stories260k_file)
    finally:
        proxy.stop()
    outcome = settle(localnet.url, model)
    assert outcome.accounts == clean.accounts
    assert outcome.spent == clean.spent
    record(
        f"RPC down for good, {outage.name}",
        message=err.strip(),
        lost_lamports=outcome.spent - clean.spent,
    )


def test_a_node_that_accepts_and_never_answers_is_given_up_on_after_the_rpc_timeout(
    localnet, tmp_path, stories260k_file
):
    proxy = FaultProxy(localnet.url, down=True).start()
    try:
        keypair = fund_payer(localnet.url, tmp_path)
        code, _, err = run_cli(
            "publish",
            str(stories260k_file),
            "-u",
            proxy.url,
            "-k",
            str(keypair),
            "--rpc-timeout",
            "2",
            timeout=30,
        )
    finally:
        proxy.stop()
    assert code == 1 and err.startswith(f"error: {proxy.url}: no usable answer for")
    assert len(err.strip().splitlines()) == 1
    # Given up within the timeout, by the transport's own count (how long the whole process
    # takes on a busy machine is scripts/bench_cli_startup.py's to measure).
    waited = re.search(r"no usable answer for ([\d.]+) s", err)
    assert waited is not None and float(waited[1]) <= 2
    assert proxy.requests > 1  # it retried before giving up
    assert balance(localnet.url, PAYER.pubkey()) == FUNDS


# A busy cluster and a provider's limits (issue 21): the real `publish`, against the busy
# localnet (its own losses, blocks and limits) or through a proxy that acts as a provider,
# must finish, spend what a clean run spends, and leave the same bytes. A small model keeps
# the rounds of resends few.

TINY = ModelConfig(
    dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("busy") / "tiny.curta"
    path.write_bytes(synthetic_artifact(TINY, seed=1).data)
    return path


def publish_through(url: str, node_url: str, folder: Path, tiny_file: Path, *extra: str) -> Outcome:
    """Publish the small model through ``url``; what the node then holds, and the cost."""
    keypair = fund_payer(node_url, folder)
    via = ("-u", url, "-k", str(keypair), *extra)
    code, shown, err = run_cli("publish", str(tiny_file), *via)
    assert code == 0, err
    keys = [shown["model"], *shown["weight_accounts"]]
    spent = FUNDS - balance(node_url, PAYER.pubkey())
    return Outcome(shown["model"], account_states(node_url, keys), spent)


@pytest.fixture(scope="module")
def tiny_clean(tmp_path_factory, tiny_file: Path) -> Iterator[Outcome]:
    node = start_in_thread(genesis_seed=GENESIS_SEED)
    try:
        yield publish_through(node.url, node.url, tmp_path_factory.mktemp("c"), tiny_file)
    finally:
        node.stop()


def test_publish_on_a_busy_cluster_losing_30_percent_ends_as_a_clean_run(
    tmp_path, tiny_file, tiny_clean
):
    # Blocks, other users' load at prices up to 10**6 micro-lamports, 30% of accepted
    # transactions lost before the leader, and the localnet's own provider limits: batches
    # over 10 refused, 50 calls a second. The price is auto, capped under what the load pays.
    busy = BusyOptions(
        blocks=True,
        drop_rate=0.3,
        seed=SEED,
        rps=50,
        max_batch=10,
        background_load=BusyOptions.busy().background_load,
    )
    price = ("--with-compute-unit-price", "auto", "--max-compute-unit-price", "700")
    node = start_in_thread(busy=busy, genesis_seed=GENESIS_SEED)
    proxy = FaultProxy(node.url).start()  # books what was sent; injects nothing
    try:
        keypair = fund_payer(node.url, tmp_path)
        done = run_plain("publish", str(tiny_file), "-u", proxy.url, "-k", str(keypair), *price)
        assert done.returncode == 0, done.stderr
        accounts = account_states(node.url, list(tiny_clean.accounts))
        spent = FUNDS - balance(node.url, PAYER.pubkey())
    finally:
        proxy.stop()
        node.stop()
    assert accounts == tiny_clean.accounts
    # The plan's cost at the price it showed, to the lamport: a resend is the same
    # transaction, and costs nothing.
    cost = re.search(r"rent ([\d,]+) \+ fees ([\d,]+) lamports", done.stdout)
    paid = re.search(r"compute-unit price ([\d,]+) micro-lamports \(auto: the 75th", done.stdout)
    assert cost is not None and paid is not None, done.stdout
    assert int(paid[1].replace(",", "")) <= 700
    assert spent == sum(int(n.replace(",", "")) for n in cost.groups())
    sends, signed = len(proxy.sent), len({tx.signature for tx in proxy.sent})
    assert sends > signed  # the lost ones were resent, the same bytes
    record("busy: 30% lost, batches over 10 refused, 50 calls/s", sends=sends, signed=signed)


def test_publish_through_a_lagging_limited_provider_ends_as_a_clean_run(
    localnet, tmp_path, tiny_file, tiny_clean
):
    provider = Provider(
        max_batch=10,
        batch_refusal="413",
        lag_seconds=1.0,
        unknown_blockhash=1.0,
        unknown_blockhash_seconds=0.5,
        lose=0.2,
    )
    proxy = FaultProxy(localnet.url, provider=provider, seed=SEED).start()
    try:
        outcome = publish_through(proxy.url, localnet.url, tmp_path, tiny_file)
    finally:
        proxy.stop()
    # (The rate limit is the busy localnet's, in the test above.)
    for fault in ("batch refused", "status behind", "blockhash not found", "lost"):
        assert proxy.injected[fault] > 0, f"the provider never did: {fault}"
    assert outcome.accounts == tiny_clean.accounts
    assert outcome.spent == tiny_clean.spent
    record(
        "provider: batches over 10 refused, 1 s behind, fresh blockhashes unknown, 20% lost",
        requests=proxy.requests,
        faults=dict(proxy.injected),
    )

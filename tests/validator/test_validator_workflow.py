"""The workflow on the real validator, each command as its own process, held to the embedded one.

The same payer publishes, seals, verifies and runs the same model on both nodes under the
same shipped program (``--program-id LOCALNET_PROGRAM_ID``, preloaded on both): every
command finishes, each spends exactly what its plan says, and the chain's bytes (model
fields, weight sections, the run account) and tokens are the embedded localnet's. The
addresses differ (each is derived from the cluster's genesis hash) and so do slots.
``deploy`` takes the build the validator's features ask for (SBPF v3: the test validator
activates every feature it knows, SIMD-0500's refusal of new v0 deployments included), and a
model published under it closes with its rent back.
"""

import base64
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from fault_proxy import FaultProxy, run_plain
from validator_helpers import Node, Payer, cli, rpc

from curta_chain.artifact import Artifact
from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.constants import HASH_CHUNK_SIZE, LOCALNET_PROGRAM_ID, WEIGHT_HEADER_SIZE
from curta_chain.onchain.run_account import RunAccount
from curta_chain.program.accounts import ModelAccount, WeightHeader

PROGRAM = ("--program-id", LOCALNET_PROGRAM_ID)
FEE = 5_000
"""Lamports a signature costs on both (no priority fee on loopback)."""
RUN = ("--on-chain", "-n", "25", "-s", "42", "-t", "0.8", "-i", "Once upon a time")
TINY = ModelConfig(
    dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)
"""A model that publishes in a few dozen writes (as tests/chain's ``tiny``)."""


def account_data(node: Node, address: str) -> bytes:
    config = {"encoding": "base64", "commitment": "confirmed"}
    value = rpc(node.url, "getAccountInfo", address, config)["value"]
    assert value is not None, f"{address} is missing on {node.name}"
    return base64.b64decode(value["data"][0])


@dataclasses.dataclass
class Books:
    """What one node's workflow returned and cost."""

    answers: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    spent: dict[str, int] = dataclasses.field(default_factory=dict)
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    model: bytes = b""
    sections: list[bytes] = dataclasses.field(default_factory=list)
    run: bytes = b""


def step(books: Books, name: str, node: Node, payer: Payer, *args: str) -> dict[str, Any]:
    before = payer.balance(node)
    done = cli(*args, node=node, payer=payer)
    books.spent[name] = before - payer.balance(node)
    books.answers[name] = done.answer
    books.seconds[name] = done.seconds
    return done.answer


def workflow(node: Node, payer: Payer, art: Path) -> Books:
    books = Books()
    plan = step(books, "plan", node, payer, "publish", str(art), "--dry-run", *PROGRAM)["plan"]
    model = step(books, "publish", node, payer, "publish", str(art), *PROGRAM)["model"]
    assert model == plan["model"]
    assert books.spent["publish"] == plan["rent_lamports"] + plan["fee_lamports"]
    sealed = step(books, "seal", node, payer, "seal", model, str(art), *PROGRAM)
    assert sealed["state"] == "sealed"
    assert books.spent["seal"] == FEE * sealed["transactions"]
    verified = step(books, "verify", node, payer, "verify", model, str(art), *PROGRAM)
    assert verified["ok"] and verified["differences"] == []
    ran = step(books, "run", node, payer, "run", model, *RUN, *PROGRAM)
    # The plan: the rent, the opening (signed by the payer and the new run account), each step.
    assert books.spent["run"] == ran["rent_lamports"] + FEE * (2 + ran["step_transactions"])
    books.model = account_data(node, model)
    books.sections = [account_data(node, a) for a in plan["weight_accounts"]]
    books.run = account_data(node, ran["run"])
    step(books, "close-run", node, payer, "close-run", ran["run"], *PROGRAM)
    assert books.spent["close-run"] == FEE - ran["rent_lamports"]
    assert rpc(node.url, "getAccountInfo", ran["run"], {"commitment": "confirmed"})["value"] is None
    return books


def without(record: dict[str, Any], *names: str) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key not in names}


def fields(decoded: object, *names: str) -> dict[str, Any]:
    """A decoded account's fields but ``names``."""
    return {
        field.name: getattr(decoded, field.name)
        for field in dataclasses.fields(decoded)  # type: ignore[arg-type]
        if field.name not in names
    }


def test_publish_seal_verify_run_close_run_match_the_embedded_localnet(
    validator: Node, embedded: Node, payer: Payer, tmp_path: Path, stories260k: Artifact
):
    art = tmp_path / "stories260K.curta"
    art.write_bytes(stories260k.data)
    books = {}
    for node in (validator, embedded):
        payer.fund(node, 20)
        books[node.name] = workflow(node, payer, art)
    ours, theirs = books["embedded"], books["validator"]

    # The plan and every cost are the same: rent, fees, the transactions each step took.
    addresses = ("model", "weight_accounts", "new_accounts")
    assert without(theirs.answers["plan"]["plan"], *addresses) == without(
        ours.answers["plan"]["plan"], *addresses
    )
    assert theirs.spent == ours.spent
    for name in ("publish", "seal", "run"):
        assert theirs.answers[name]["transactions"] == ours.answers[name]["transactions"], name
    chunks = sum(-(-len(s) // HASH_CHUNK_SIZE) for s in stories260k.sections)
    assert theirs.answers["seal"]["chunks"] == chunks

    # The chain's bytes: the model's fields (but for the weight accounts' addresses and the
    # slot sealing began), each weight section, and the run account after its last step.
    model, expected = ModelAccount.from_bytes(theirs.model), ModelAccount.from_bytes(ours.model)
    assert model.running_hash == stories260k.weights_hash()
    assert [s.length for s in model.sections] == [s.length for s in expected.sections]
    ignore = ("sections", "seal_slot")
    assert fields(model, *ignore) == fields(expected, *ignore)
    for index, (data, reference) in enumerate(zip(theirs.sections, ours.sections, strict=True)):
        header = WeightHeader.from_bytes(data)
        assert (header.section_index, header.frozen) == (index, True)
        assert data[WEIGHT_HEADER_SIZE:] == stories260k.sections[index]
        assert data[WEIGHT_HEADER_SIZE:] == reference[WEIGHT_HEADER_SIZE:]
    run, reference_run = RunAccount.from_bytes(theirs.run), RunAccount.from_bytes(ours.run)
    assert fields(run, "model") == fields(reference_run, "model")
    assert theirs.run[512:] == ours.run[512:]

    # The tokens, and what each step cost in compute units: the same program, the same units.
    for field in ("generated_ids", "steps", "compute_units", "max_step_compute_units"):
        assert theirs.answers["run"][field] == ours.answers["run"][field], field
    assert len(theirs.answers["run"]["generated_ids"]) == 8


def test_verify_cross_checks_on_the_validator(
    validator: Node, embedded: Node, payer: Payer, tmp_path: Path
):
    # A second route to the same validator agrees (reads at its slot or later, with
    # minContextSlot); the embedded localnet is another cluster and is refused in one line:
    # no node of ours can hold the same model, as every address is derived from the genesis.
    art = tmp_path / "tiny.curta"
    art.write_bytes(synthetic_artifact(TINY, seed=1).data)
    payer.fund(validator, 2)
    model = cli("publish", str(art), *PROGRAM, node=validator, payer=payer).answer["model"]
    cli("seal", model, *PROGRAM, node=validator, payer=payer)
    second = FaultProxy(validator.url).start()
    try:
        report = cli(
            "verify", model, str(art), *PROGRAM, "--cross-check", second.url, node=validator
        ).answer
    finally:
        second.stop()
    assert report["ok"] and report["cross_checked"] == second.url
    assert second.requests > 0
    done = run_plain(
        "verify", model, str(art), *PROGRAM, "-u", validator.url, "--cross-check", embedded.url
    )
    assert done.returncode == 1 and done.stdout == ""
    genesis = rpc(validator.url, "getGenesisHash")
    assert done.stderr == (
        f"error: --cross-check {embedded.url} serves genesis "
        f"{rpc(embedded.url, 'getGenesisHash')}, {validator.url} serves {genesis}: "
        "not the same cluster\n"
    )


def test_deploy_takes_the_v3_build_and_a_model_under_it_closes_with_its_rent_back(
    validator: Node, payer: Payer, tmp_path: Path
):
    payer.fund(validator, 5)
    books = Books()
    plan = step(books, "plan", validator, payer, "deploy", "--dry-run")["plan"]
    assert plan["build"] == "sbpf-v3" and books.spent["plan"] == 0
    deployed = step(books, "deploy", validator, payer, "deploy")
    assert deployed["program_id"] == plan["program_id"]
    assert (deployed["shipped_build"], deployed["sha256"]) == ("sbpf-v3", plan["sha256"])
    assert books.spent["deploy"] == plan["cost_lamports"]
    again = step(books, "again", validator, payer, "deploy")
    assert again["transactions"] == 0 and books.spent["again"] == 0

    # The deploy recorded the program for this cluster: commands use it without --program-id.
    art = tmp_path / "tiny.curta"
    art.write_bytes(synthetic_artifact(TINY, seed=2).data)
    plan = step(books, "publish plan", validator, payer, "publish", str(art), "--dry-run")["plan"]
    published = step(books, "publish", validator, payer, "publish", str(art))
    assert books.spent["publish"] == plan["rent_lamports"] + plan["fee_lamports"]
    config = {"encoding": "base64", "commitment": "confirmed"}
    owner = rpc(validator.url, "getAccountInfo", published["model"], config)["value"]["owner"]
    assert owner == deployed["program_id"]
    closed = step(books, "close", validator, payer, "close", published["model"])
    assert closed["lamports_closed"] == plan["rent_lamports"]
    assert books.spent["close"] == FEE * closed["transactions"] - plan["rent_lamports"]
    for address in (published["model"], *published["weight_accounts"]):
        value = rpc(validator.url, "getAccountInfo", address, {"commitment": "confirmed"})["value"]
        assert value is None, f"{address} is still open"


@pytest.fixture(scope="session")
def art15m(tmp_path_factory, stories15m: Artifact) -> Path:
    path = tmp_path_factory.mktemp("15m") / "stories15M-shape.curta"
    path.write_bytes(stories15m.data)
    return path


def test_stories15m_shape_publishes_seals_and_verifies(
    validator: Node, payer: Payer, art15m: Path, stories15m: Artifact
):
    payer.fund(validator, 150)
    books = Books()
    plan = step(books, "plan", validator, payer, "publish", str(art15m), "--dry-run", *PROGRAM)
    plan = plan["plan"]
    assert len(plan["section_lengths"]) == 8
    model = step(books, "publish", validator, payer, "publish", str(art15m), *PROGRAM)["model"]
    assert books.spent["publish"] == plan["rent_lamports"] + plan["fee_lamports"]
    sealed = step(books, "seal", validator, payer, "seal", model, *PROGRAM)
    assert sealed["running_hash"] == stories15m.weights_hash().hex()
    assert books.spent["seal"] == FEE * sealed["transactions"]
    report = cli("verify", model, str(art15m), *PROGRAM, node=validator).answer
    assert report["ok"]


def test_a_validator_this_user_started_needs_no_program_id_and_no_yes(
    validator: Node, payer: Payer, tmp_path: Path
):
    # Started by ValidatorProcess.start, as `localnet --validator` starts it: its genesis hash
    # is recorded as this user's local cluster, so publish takes the preloaded program and
    # spends without asking (no terminal here), and verify takes the model's owner.
    if os.environ.get("CURTA_VALIDATOR_URL"):
        pytest.skip("a validator started elsewhere is not recorded as this user's")
    payer.fund(validator, 5)
    art = tmp_path / "tiny.curta"
    art.write_bytes(synthetic_artifact(TINY, seed=9).data)
    via = ("-u", validator.url, "-k", str(payer.path))
    done = run_plain("publish", str(art), *via, "--output", "json-compact")
    assert done.returncode == 0, done.stderr
    model = json.loads(done.stdout.splitlines()[-1])["model"]
    done = run_plain("seal", model, str(art), *via, "--output", "json-compact")
    assert done.returncode == 0, done.stderr
    done = run_plain("verify", model, str(art), "-u", validator.url, "--output", "json-compact")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["ok"] and report["program"]["program_id"] == LOCALNET_PROGRAM_ID

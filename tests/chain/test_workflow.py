"""publish, seal and verify end to end over real HTTP on the embedded localnet."""

import json
from pathlib import Path

import pytest
from chain_helpers import begin_sealing_on_chain, land, write_bytes_on_chain
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain import program
from curta_chain.artifact import Artifact, read_artifact
from curta_chain.chain.plan import differing_pieces
from curta_chain.chain.specs import Budget
from curta_chain.cli import main
from curta_chain.cli.keypairs import write_keypair
from curta_chain.constants import HASH_CHUNK_SIZE, LOCALNET_PROGRAM_ID
from curta_chain.onchain.schedule import STEP_BUDGET, STEP_OVERHEAD
from curta_chain.program import shipped_programs

PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)


class Cli:
    """Runs ``curta-chain`` in this process against one localnet and keypair."""

    def __init__(self, capsys, url: str, keypair_path: Path):
        self.capsys, self.url, self.keypair_path = capsys, url, keypair_path

    def __call__(self, *args: str, keypair: bool = True) -> tuple[int, str, str]:
        extra = ["-u", self.url] + (["-k", str(self.keypair_path)] if keypair else [])
        self.capsys.readouterr()
        code = main([*args, *extra])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args: str, keypair: bool = True) -> dict:
        code, out, err = self(*args, "--output", "json-compact", keypair=keypair)
        assert code == 0, err
        return json.loads(out.strip().splitlines()[-1])

    def json_fail(self, *args: str) -> dict:
        code, out, err = self(*args, "--output", "json-compact", keypair=False)
        assert code == 1, err
        return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def cli(capsys, localnet, fund, tmp_path) -> Cli:
    keypair = fund(localnet.url, 500)
    path = tmp_path / "id.json"
    write_keypair(keypair, path)
    return Cli(capsys, localnet.url, path)


@pytest.fixture
def art260k(tmp_path, stories260k: Artifact) -> Path:
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    return path


def test_stories260k_publish_seal_verify_and_rerun_sends_nothing(cli, art260k, stories260k):
    published = cli.json("publish", str(art260k))
    model = published["model"]
    assert published["hash"] == stories260k.weights_hash().hex()
    assert len(published["weight_accounts"]) == 2
    # 1 model + 2 create-and-bind + one write per 3,864-byte piece with a non-zero byte (v1,
    # which the localnet has active).
    assert published["transaction_version"] == "v1"
    payload = Budget().write_payload("v1")
    writes = [differing_pieces(i, s, None, payload) for i, s in enumerate(stories260k.sections)]
    assert published["transactions"] == 3 + sum(map(len, writes)) < 100

    again = cli.json("publish", str(art260k))
    assert again["model"] == model and again["transactions"] == 0

    sealed = cli.json("seal", model)
    assert sealed["state"] == "sealed"
    chunks = sum(-(-len(s) // HASH_CHUNK_SIZE) for s in stories260k.sections)
    assert sealed["chunks"] == chunks
    assert sealed["transactions"] == chunks + 1  # begin sealing, then one step per chunk

    report = cli.json("verify", model, str(art260k), keypair=False)
    assert report["ok"] and report["differences"] == []
    code, out, _ = cli("verify", model, str(art260k), keypair=False)
    lines = out.splitlines()
    # The verdict and both hashes first.
    assert code == 0 and lines[0] == f"verified {model}: sealed, every byte matches {art260k}"
    assert lines[1] == f"declared hash  {stories260k.weights_hash().hex()}  (the model's, sealed)"
    assert lines[2] == f"artifact hash  {stories260k.weights_hash().hex()}  ({art260k}: the same)"
    # Then the program it trusts: the localnet's preloaded build, which nobody can upgrade.
    assert lines[3] == f"program        {LOCALNET_PROGRAM_ID}"
    assert lines[4].startswith(f"program sha256 {shipped_programs()[0].sha256} ")
    assert lines[5] == "upgrade auth.  none: nobody can change the program"
    assert lines[7].startswith(f"trusted node   {cli.url} ")

    status = cli.json("status", model, keypair=False)
    assert status["state"] == "sealed"

    # A sealed model takes nothing more: publish has nothing to send, close is refused.
    assert cli.json("publish", str(art260k))["transactions"] == 0
    code, _, err = cli("close", model)
    assert code == 1 and "sealed" in err


def test_a_byte_changed_before_sealing_fails_naming_the_chunk_then_reopen_fixes_it(
    cli, art260k, stories260k
):
    model = cli.json("publish", str(art260k))["model"]
    authority = cli_keypair(cli)
    weight = Pubkey.from_string(
        cli.json("status", model, keypair=False)["sections"][1]["weight_account"]
    )
    offset = 200_000
    original = stories260k.sections[1][offset]
    write_bytes_on_chain(cli.url, authority, weight, offset, bytes([original ^ 0x01]))

    # Given the artifact, seal sees the upload is not the artifact's and sends nothing.
    code, out, err = cli("seal", model, str(art260k))
    assert code == 1 and out == ""
    assert err == (
        f"error: model {model} is not fully uploaded: 1 byte differs in sections [1] from "
        f"{art260k}; finish with `curta-chain publish {art260k}` before sealing (sealing now "
        f"would freeze them and end failed); nothing was sent\n"
    )
    assert cli.json("status", model, keypair=False)["state"] == "uploading"

    # Sealing begun anyway: the seal ends failed, and with the artifact names the chunk.
    begin_sealing_on_chain(cli.url, authority, Pubkey.from_string(model))
    code, out, _ = cli("seal", model, str(art260k))
    assert code == 1
    start = offset // HASH_CHUNK_SIZE * HASH_CHUNK_SIZE
    end = min(start + HASH_CHUNK_SIZE, len(stories260k.sections[1]))
    assert f"failed {model}" in out
    assert f"first differing chunk: section 1 bytes {start}..{end}" in out

    code, out, _ = cli("verify", model, str(art260k), keypair=False)
    assert code == 1
    assert f"bytes section 1 offset {offset} length 1" in out
    assert "state" in out and "failed" in out

    # publish reopens the failed model, one weight account a transaction (section 0 was
    # reopened already, as by a publish killed in the middle), and rewrites only the piece
    # that differs.
    section0 = Pubkey.from_string(
        cli.json("status", model, keypair=False)["sections"][0]["weight_account"]
    )
    address = Pubkey.from_string(model)
    land(cli.url, authority, program.reopen(PROGRAM_ID, authority.pubkey(), address, section0, 0))
    code, _, err = cli("seal", model)
    assert (code, err) == (
        1,
        f"error: model {model} failed and 1 of its 2 weight accounts are reopened already: "
        "`curta-chain publish` finishes reopening and rewriting it, then seal again\n",
    )
    plan = cli.json("publish", str(art260k), "--dry-run")["plan"]
    assert (plan["state"], plan["reopen_sections"], plan["write_transactions"]) == (
        "failed",
        [1],
        1,
    )
    republished = cli.json("publish", str(art260k))
    assert republished["model"] == model
    assert republished["transactions"] == 2  # one reopen + one write
    assert cli.json("status", model, keypair=False)["state"] == "uploading"
    assert cli.json("seal", model)["state"] == "sealed"
    assert cli.json("verify", model, str(art260k), keypair=False)["ok"]


def test_verify_against_another_artifact_names_section_and_offset(cli, art260k, tmp_path):
    model = cli.json("publish", str(art260k))["model"]
    assert cli.json("seal", model)["state"] == "sealed"
    other = bytearray(art260k.read_bytes())
    sections = read_artifact(art260k).sections
    offset_in_section = 1_000
    index = len(sections[0]) + offset_in_section  # a weight byte of the first matrix
    other[index] = other[index] + 1 if other[index] < 255 else 254
    changed = tmp_path / "other.curta"
    changed.write_bytes(bytes(other))

    report = cli.json_fail("verify", model, str(changed))
    kinds = {d["kind"] for d in report["differences"]}
    assert {"bytes", "declared-hash"} <= kinds
    (diff,) = [d for d in report["differences"] if d["kind"] == "bytes"]
    assert (diff["section"], diff["offset"], diff["length"]) == (1, offset_in_section, 1)


def cli_keypair(cli: Cli) -> Keypair:
    from curta_chain.cli.keypairs import load_keypair

    return load_keypair(cli.keypair_path)


def test_stories15m_shaped_eight_sections_publish_seal_verify_and_run(cli, tmp_path, stories15m):
    path = tmp_path / "15m.curta"
    path.write_bytes(stories15m.data)
    assert len(stories15m.sections) == 8
    published = cli.json("publish", str(path))
    assert len(published["weight_accounts"]) == 8
    sealed = cli.json("seal", published["model"], str(path))
    assert sealed["state"] == "sealed"
    assert sealed["running_hash"] == stories15m.weights_hash().hex()
    assert cli.json("verify", published["model"], str(path), keypair=False)["ok"]
    # A 13-token prompt (two positions a batch but the last), greedy, one new token.
    args = ("--prompt", "a b c d e f", "--steps", "1", "--temperature", "0")
    from_file = cli.json("run", str(path), *args, keypair=False)
    on_chain = cli.json("run", published["model"], *args, "--on-chain", "--close-run")
    assert len(on_chain["prompt_ids"]) == 13 and on_chain["prompt_ids"] == from_file["prompt_ids"]
    assert on_chain["generated_ids"] == from_file["generated_ids"]
    assert on_chain["step_transactions"] <= 12 * 13
    assert on_chain["max_step_compute_units"] <= STEP_BUDGET + STEP_OVERHEAD


def test_dry_run_prints_the_plan_and_sends_nothing(cli, art260k):
    before = balance(cli)
    result = cli.json("publish", str(art260k), "--dry-run")
    plan = result["plan"]
    assert result["dry_run"] and plan["state"] == "new" and plan["create_model"]
    assert plan["transactions"] == 1 + 2 + plan["write_transactions"]
    assert plan["rent_lamports"] > 0 and plan["fee_lamports"] == 5_000 * (
        2 + 2 * 2 + plan["write_transactions"]
    )
    assert balance(cli) == before
    code, _, err = cli("status", plan["model"], keypair=False)
    assert code == 1 and "no such account" in err


def test_a_payer_too_poor_stops_before_spending_and_names_the_shortfall(
    capsys, localnet, fund, tmp_path, art260k
):
    poor = fund(localnet.url, 0.01)
    path = tmp_path / "poor.json"
    write_keypair(poor, path)
    poor_cli = Cli(capsys, localnet.url, path)
    code, _, err = poor_cli("publish", str(art260k))
    assert code == 1
    assert err.startswith("error: payer ") and "short by" in err and "nothing was sent" in err
    assert len(err.strip().splitlines()) == 1
    assert balance(poor_cli) == 10_000_000


def test_close_returns_the_rent_and_removes_every_account(cli, art260k):
    published = cli.json("publish", str(art260k))
    model = published["model"]
    before = balance(cli)
    closed = cli.json("close", model)
    assert (closed["closed_accounts"], closed["transactions"]) == (3, 3)
    assert closed["lamports_returned"] > 2 * 10**9  # the rent of ~357 KB of accounts
    assert balance(cli) == before + closed["lamports_returned"]
    code, _, err = cli("status", model, keypair=False)
    assert code == 1 and "no such account" in err


def test_a_close_cut_short_is_finished_by_a_rerun_and_publish_refuses_it_meanwhile(cli, art260k):
    published = cli.json("publish", str(art260k))
    model, weights = published["model"], published["weight_accounts"]
    authority, address = cli_keypair(cli), Pubkey.from_string(published["model"])
    rent = sum(account_lamports(cli, key) for key in [model, *weights])
    before = balance(cli)
    weight = Pubkey.from_string(weights[1])
    land(
        cli.url,
        authority,
        program.close_weight_account(PROGRAM_ID, authority.pubkey(), address, weight, 1),
    )
    assert cli.json("status", model, keypair=False)["state"] == "closing"
    code, _, err = cli("publish", str(art260k))
    assert (code, err) == (
        1,
        f"error: model {model} is being closed: finish `curta-chain close {model}`, "
        "then publish again\n",
    )
    code, _, err = cli("seal", model)
    assert (code, err) == (1, f"error: model {model} is being closed: it cannot be sealed\n")
    closed = cli.json("close", model)
    assert (closed["closed_accounts"], closed["transactions"]) == (2, 2)
    # Every lamport of rent came back; the three closing transactions cost a fee each.
    assert balance(cli) == before + rent - 3 * 5_000


def test_status_of_something_that_is_not_a_model_is_one_line(cli):
    wallet = str(cli_keypair(cli).pubkey())
    code, out, err = cli("status", wallet, keypair=False)
    assert code == 1 and out == ""
    system = "11111111111111111111111111111111"
    assert err == (
        f"error: {wallet} is not a curta model: owned by {system}, expected {LOCALNET_PROGRAM_ID}\n"
    )
    code, _, err = cli("verify", "not-an-address", "x.curta", keypair=False)
    assert code == 1 and "x.curta" in err
    code, _, err = cli("status", "not-an-address", keypair=False)
    assert err == "error: model 'not-an-address': not a base58 Solana address\n"


def test_an_unreachable_node_gives_up_with_a_one_line_error(capsys, tmp_path, art260k):
    path = tmp_path / "id.json"
    write_keypair(Keypair(), path)
    down = Cli(capsys, "http://127.0.0.1:9", path)
    code, _, err = down("publish", str(art260k), "--rpc-timeout", "0.5")
    assert code == 1
    assert err == (
        "error: http://127.0.0.1:9: connection refused: no RPC node is listening there "
        "(start one with `curta-chain localnet --port 9`)\n"
    )
    assert len(err.strip().splitlines()) == 1


def balance(cli: Cli) -> int:
    return account_lamports(cli, str(cli_keypair(cli).pubkey()))


def account_lamports(cli: Cli, address: str) -> int:
    from reference_client import Client

    return Client(cli.url, "processed").get_balance(Pubkey.from_string(address)).value


def test_compute_unit_limits_and_price_are_enough_for_every_transaction(cli, art260k):
    # With a price every transaction also carries a tight compute-unit limit: if any limit
    # were too low its transaction would fail with ComputationalBudgetExceeded.
    price = ["--with-compute-unit-price", "1000"]
    plan = cli.json("publish", str(art260k), "--dry-run", *price)["plan"]
    assert plan["payload_per_write"] == Budget(compute_unit_price=0).write_payload("v1")
    assert plan["transaction_version"] == "v1"
    model = cli.json("publish", str(art260k), *price)["model"]
    assert cli.json("seal", model, *price)["state"] == "sealed"
    assert cli.json("verify", model, str(art260k), keypair=False)["ok"]

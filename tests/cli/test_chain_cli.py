"""The chain commands as a user meets them, against the embedded localnet over HTTP.

Signers (``--fee-payer``, ``--recipient``, pubkey recipients), signatures in text and
JSON, status and the list of my models, publish's ending and its answer on a sealing
model, and seal's check before it freezes anything.
"""

import json
import re
from pathlib import Path

import pytest
from chain_helpers import begin_sealing_on_chain, write_bytes_on_chain
from reference_client import Client
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature

from curta_chain.cli import main
from curta_chain.cli.keypairs import write_keypair
from curta_chain.constants import LAMPORTS_PER_SOL


class User:
    """One person at the command line: their keypair file and the localnet's URL."""

    def __init__(self, capsys, url: str, folder: Path, keypair: Keypair):
        self.capsys, self.url, self.keypair = capsys, url, keypair
        self.path = folder / f"{keypair.pubkey()}.json"
        write_keypair(keypair, self.path)

    def __call__(self, *args: str, keypair: bool = True) -> tuple[int, str, str]:
        signs = keypair and args[0] not in ("status", "verify")
        extra = ["-u", self.url] + (["-k", str(self.path)] if signs else [])
        self.capsys.readouterr()
        code = main([*args, *extra])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args: str, keypair: bool = True, code: int = 0) -> dict:
        got, out, err = self(*args, "--output", "json", keypair=keypair)
        assert got == code, err
        return json.loads(out)

    def balance(self, who: Pubkey | None = None) -> int:
        return Client(self.url, "processed").get_balance(who or self.keypair.pubkey()).value


@pytest.fixture
def user(capsys, localnet, fund, tmp_path) -> User:
    return User(capsys, localnet.url, tmp_path, fund(localnet.url, 100))


@pytest.fixture
def art(tmp_path, stories260k) -> Path:
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    return path


def landed(url: str, signature: str) -> bool:
    (status,) = Client(url).get_signature_statuses([Signature.from_string(signature)]).value
    return status is not None and status.err is None


def test_publish_prints_signatures_then_the_model_then_the_next_command(user, art):
    code, out, _ = user("publish", str(art))
    assert code == 0
    lines = out.splitlines()
    model = lines[-2].removeprefix("Model: ")
    assert lines[-1] == f"Next: curta-chain seal {model} {art} -u {user.url} -k {user.path}"
    signatures = re.findall(r"^Signature: (\w+) \((.*)\)$", out, re.MULTILINE)
    assert [what for _, what in signatures] == [
        "create model",
        "last of 2 create and bind",
        "last of 93 writes",  # v1, 3,864 bytes each (the localnet has v1)
    ]
    assert all(landed(user.url, sig) for sig, _ in signatures)

    # The next command works as printed, and ends with its own next command.
    code, out, _ = user("seal", model, str(art))
    assert code == 0 and out.splitlines()[-1] == (
        f"Next: curta-chain verify {model} {art} -u {user.url}"
    )
    begin, step = re.findall(r"^Signature: (\w+)", out, re.MULTILINE)
    assert landed(user.url, begin) and landed(user.url, step)


def test_signatures_in_json(user, art):
    published = user.json("publish", str(art))
    sigs = published["signatures"]
    assert len(sigs["bind"]) == 2 and sigs["writes"] == 93
    for signature in (sigs["create_model"], *sigs["bind"], sigs["last_write"]):
        assert landed(user.url, signature)
    sealed = user.json("seal", published["model"])
    assert landed(user.url, sealed["signatures"]["begin_sealing"])
    assert landed(user.url, sealed["signatures"]["last_step"])
    # A command that works pasted: no ARTIFACT placeholder (verify reads the chain alone).
    assert sealed["next"] == (f"curta-chain verify {published['model']} --chain-only -u {user.url}")


def test_publish_on_a_sealing_model_says_so_and_names_the_next_step(user, art):
    model = user.json("publish", str(art))["model"]
    # Interrupt a seal after its beginning: the model is left sealing.
    begin_sealing_on_chain(user.url, user.keypair, Pubkey.from_string(model))
    code, out, _ = user("publish", str(art))
    assert code == 0
    assert f"nothing to send: model {model} is sealing" in out
    assert out.splitlines()[-1].startswith(f"Next: curta-chain seal {model}")
    assert user.json("publish", str(art))["transactions"] == 0


def test_publish_on_a_sealing_model_with_other_bytes_refuses(user, art, stories260k, tmp_path):
    model = user.json("publish", str(art))["model"]
    weight = Pubkey.from_string(user.json("status", model)["sections"][0]["weight_account"])
    original = stories260k.sections[0][5_000]
    write_bytes_on_chain(user.url, user.keypair, weight, 5_000, bytes([original ^ 0xFF]))
    begin_sealing_on_chain(user.url, user.keypair, Pubkey.from_string(model))
    code, out, err = user("publish", str(art))
    assert code == 1 and out.startswith("Plan for model")
    assert err.startswith(f"error: model {model} is sealing and its frozen bytes differ from")
    assert "the seal will end failed" in err and "nothing was sent" in err


def test_seal_without_the_artifact_says_what_sealing_does_first(user, art):
    model = user.json("publish", str(art))["model"]
    code, _, err = user("seal", model)
    assert code == 0
    assert err.startswith(
        f"sealing {model} freezes each of its 2 weight accounts as the seal reaches it."
    )


def test_a_resumed_upload_says_so(user, art, stories260k):
    model = user.json("publish", str(art))["model"]
    weight = Pubkey.from_string(user.json("status", model)["sections"][1]["weight_account"])
    write_bytes_on_chain(user.url, user.keypair, weight, 0, bytes(1_010))  # in one v1 piece
    code, out, err = user("publish", str(art))
    assert code == 0 and "published 1 transaction in" in out and "(write)" in out
    assert (
        "resuming the upload: 353,376 of 357,240 bytes are on chain already; 1 write to go" in err
    )


def test_fee_payer_pays_fees_and_rent_the_authority_signs(user, art, fund, tmp_path, capsys):
    payer = User(capsys, user.url, tmp_path, fund(user.url, 50))
    authority_before, payer_before = user.balance(), payer.balance()
    plan = user.json("publish", str(art), "--dry-run", "--fee-payer", str(payer.path))["plan"]
    published = user.json("publish", str(art), "--fee-payer", str(payer.path))
    assert user.balance() == authority_before  # the authority spent nothing
    assert payer_before - payer.balance() == plan["rent_lamports"] + plan["fee_lamports"]
    status = user.json("status", published["model"])
    assert status["authority"] == str(user.keypair.pubkey())
    assert status["lamports"] == plan["rent_lamports"]

    sealed = user.json("seal", published["model"], str(art), "--fee-payer", str(payer.path))
    assert sealed["state"] == "sealed" and user.balance() == authority_before


def test_a_separate_fee_payer_leaves_each_write_room_for_its_signature(user, art, fund, tmp_path):
    payer = fund(user.url, 50)
    path = tmp_path / "payer.json"
    write_keypair(payer, path)
    plan = user.json("publish", str(art), "--dry-run", "--fee-payer", str(path))["plan"]
    alone = user.json("publish", str(art), "--dry-run")["plan"]
    # v1 writes (the localnet has v1); legacy ones: 1,010 and 914.
    assert (alone["payload_per_write"], plan["payload_per_write"]) == (3_864, 3_768)
    # Two signatures a transaction: the fees the node quotes double.
    assert plan["fee_lamports"] > 2 * alone["fee_lamports"]


def test_close_sends_the_rent_to_the_recipient(user, art):
    model = user.json("publish", str(art))["model"]
    held = user.json("status", model)["lamports"]
    recipient = Keypair().pubkey()
    before = user.balance()
    closed = user.json("close", model, "--recipient", str(recipient))
    assert closed["lamports_closed"] == held == user.balance(recipient)
    assert closed["recipient"] == str(recipient) and landed(user.url, closed["signature"])
    # One transaction per account; the authority paid their fees and kept no rent.
    assert closed["transactions"] == 3
    assert user.balance() == before - 5_000 * closed["transactions"]


def test_airdrop_to_an_address_needs_no_secret_key(user):
    stranger = Keypair().pubkey()
    code, out, _ = user("airdrop", "2", str(stranger), keypair=False)
    assert code == 0
    signature = re.search(r"^Signature: (\w+)$", out, re.MULTILINE)[1]
    assert landed(user.url, signature)
    assert out.splitlines()[-1] == "2 SOL" and user.balance(stranger) == 2 * LAMPORTS_PER_SOL


def test_status_shows_lamports_bytes_per_section_and_the_next_step(user, art, stories260k):
    model = user.json("publish", str(art))["model"]
    weight = Pubkey.from_string(user.json("status", model)["sections"][1]["weight_account"])
    write_bytes_on_chain(user.url, user.keypair, weight, 100, bytes(50))
    status = user.json("status", model, str(art))
    differing = sum(1 for b in stories260k.sections[1][100:150] if b != 0)
    assert [s["bytes_matching"] for s in status["sections"]] == [68_536, 288_704 - differing]
    assert (
        status["lamports"]
        == sum(s["lamports"] for s in status["sections"]) + status["model_lamports"]
    )
    assert status["next"].startswith(f"curta-chain publish {art}")
    code, out, _ = user("status", model, str(art))
    assert code == 0 and f"{differing} bytes to upload" in out and "Balance:" in out
    assert out.splitlines()[-1].startswith("Next:")
    user.json("publish", str(art))
    assert user.json("status", model, str(art))["next"] == (
        f"curta-chain seal {model} {art} -u {user.url}"
    )


def test_models_lists_mine_and_only_mine(user, art, fund, tmp_path, capsys):
    other = User(capsys, user.url, tmp_path, fund(user.url, 10))
    assert user.json("models")["models"] == []
    mine = user.json("publish", str(art))["model"]
    theirs = other.json("publish", str(art))["model"]
    listed = user.json("models")
    assert [m["model"] for m in listed["models"]] == [mine]
    assert listed["authority"] == str(user.keypair.pubkey())
    by_address = user.json("models", "--authority", str(other.keypair.pubkey()), keypair=False)
    assert [m["model"] for m in by_address["models"]] == [theirs]
    everyone = {m["model"] for m in user.json("models", "--all", keypair=False)["models"]}
    assert everyone == {mine, theirs}
    code, out, _ = user("models")
    assert (
        code == 0 and mine in out and out.splitlines()[-1] == f"1 model of {user.keypair.pubkey()}"
    )


def test_verify_puts_the_verdict_and_both_hashes_first_and_counts_every_range(user, art, tmp_path):
    model = user.json("publish", str(art))["model"]
    assert user.json("seal", model, str(art))["state"] == "sealed"
    wrong = bytearray(art.read_bytes())
    # One weight in each of the token embedding's first 200 rows (72 bytes: scale, 4 zero
    # bytes, 64 weights): 200 differing ranges.
    for row in range(200):
        offset = 68_536 + row * 72 + 8 + 10
        wrong[offset] = 129 if wrong[offset] == 128 else 128  # stored as weight + 128
    other = tmp_path / "other.curta"
    other.write_bytes(bytes(wrong))

    code, out, err = user("verify", model, str(other), keypair=False)
    lines = out.splitlines()
    assert code == 1 and lines, err
    assert lines[0] == f"NOT verified {model}: 1 problem, 200 differing byte ranges (200 bytes)"
    assert lines[1].startswith("declared hash  ") and lines[1].endswith("(the model's, sealed)")
    assert lines[2].startswith("artifact hash  ") and lines[2].endswith(f"({other}: DIFFERENT)")
    assert lines[3].startswith("declared-hash: the model declares ")  # the cause, then bytes
    # Where in each section the bytes differ (the first 14,400 of 288,704: 3 of 48 parts),
    # then the ranges.
    assert lines[4] == f"section 1  [xxx{'.' * 45}] 288,704 bytes"
    assert [line.startswith("bytes section 1 offset ") for line in lines[5:15]] == [True] * 10
    assert lines[15] == "and 190 more differing byte ranges: --all-differences lists them"
    assert len(lines[4]) <= 80

    code, out, _ = user("verify", model, str(other), "--all-differences", keypair=False)
    assert code == 1 and out.count("bytes section 1 offset ") == 200
    assert "more differing byte ranges" not in out
    report = user.json("verify", model, str(other), keypair=False, code=1)
    assert (report["differing_ranges"], report["differing_ranges_listed"]) == (200, 10)
    bins = report["difference_bins"]
    assert bins[0] == [0] * 48 and sum(bins[1]) == 200 and bins[1][3:] == [0] * 45
    assert all(d["offset"] is not None for d in report["differences"] if d["kind"] == "bytes")


def test_verify_checks_the_chain_alone_only_when_asked_and_says_so(user, art, tmp_path):
    model = user.json("publish", str(art))["model"]
    # No artifact and no --chain-only: a usage error naming the flag (a script whose $FILE
    # is empty must not pass).
    with pytest.raises(SystemExit) as refused:
        user("verify", model, keypair=False)
    assert refused.value.code == 2
    assert user.capsys.readouterr().err == (
        "error: curta-chain verify: verify MODEL compares the model with an ARTIFACT: give "
        "it, or pass --chain-only to check the chain alone (no artifact compared) (see --help)\n"
    )
    with pytest.raises(SystemExit) as refused:
        user("verify", model, str(art), "--chain-only", keypair=False)
    assert refused.value.code == 2
    assert f"--chain-only compares no artifact: drop {art} or --chain-only" in (
        user.capsys.readouterr().err
    )
    code, out, err = user("verify", model, "--chain-only", keypair=False)
    lines = out.splitlines()
    # Uploaded, not sealed: the chain alone is no proof yet.
    assert code == 1, err
    assert lines[0].startswith(f"NOT verified {model}: ")
    assert lines[0].endswith(" (no artifact was compared)")
    assert "the model is uploading, not sealed" in out
    assert user.json("seal", model, str(art))["state"] == "sealed"

    code, out, err = user("verify", model, "--chain-only", keypair=False)
    lines = out.splitlines()
    assert code == 0, err
    assert lines[0] == (
        f"verified {model}: sealed, the chain's bytes hash to its declared hash "
        "(no artifact was compared)"
    )
    assert lines[1].startswith("declared hash  ")
    declared = lines[1].split()[2]
    assert lines[2] == f"chain hash     {declared}  (the chain's bytes: the same)"
    assert lines[3] == "artifact       none compared (verify MODEL ARTIFACT checks every byte)"
    report = user.json("verify", model, "--chain-only", keypair=False)
    assert report["ok"] is True and report["artifact_compared"] is False
    assert report["artifact_hash"] is None
    assert report["chain_hash"] == report["declared_hash"]
    compared = user.json("verify", model, str(art), keypair=False)
    assert compared["ok"] is True and compared["artifact_compared"] is True


def test_verify_with_its_arguments_swapped_says_their_order(user, art):
    model = str(Keypair().pubkey())
    with pytest.raises(SystemExit) as refused:
        user("verify", str(art), model, keypair=False)
    assert refused.value.code == 2
    assert user.capsys.readouterr().err == (
        f"error: curta-chain verify: the model comes first, then the artifact: "
        f"`curta-chain verify {model} {art}` (MODEL {str(art)!r} is not an address; "
        f"{model!r} is) (see --help)\n"
    )

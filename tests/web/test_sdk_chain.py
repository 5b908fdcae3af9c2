"""The SDK's verifyModel against the embedded localnet: the verdict `curta-chain verify`
gives, field for field, for a sealed model, a failed seal and an address that is no model."""

import dataclasses
import struct
from pathlib import Path

import pytest
from fault_proxy import FaultProxy
from solders.account import Account
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from web_helpers import cli, cli_json, node_json

from curta_chain.chain.loader import programdata_address
from curta_chain.program import ModelAccount, SectionSlot

SCRIPT = Path(__file__).parent / "sdk_verify.mjs"


def _same_as_cli(report: dict, want: dict) -> None:
    # The slot is wherever the node was when each read; everything else is the same.
    assert {k: v for k, v in report.items() if k != "slot"} == {
        k: v for k, v in want.items() if k != "slot"
    }
    assert report["slot"] >= want["slot"]


@pytest.mark.parametrize("cluster", ["kit", "url"])
def test_verify_model_gives_the_cli_s_verdict(world, sdk, cluster):
    got = node_json(SCRIPT, cluster, world.url, world.sealed, str(world.artifact_path))
    _same_as_cli(got["report"], world.verify_json)
    assert got["progress"][-1] == len(world.artifact.data)


def test_without_the_artifact_the_chain_is_checked_alone(world, sdk):
    alone = cli_json("verify", world.sealed, "--chain-only", "-u", world.url)
    report = node_json(SCRIPT, "kit", world.url, world.sealed)["report"]
    assert report["ok"] and report["artifact_hash"] is None
    assert report["artifact_compared"] is False and world.verify_json["artifact_compared"]
    _same_as_cli(report, alone)
    assert report["chain_hash"] == report["declared_hash"] == world.verify_json["declared_hash"]


def test_a_failed_seal_and_other_bytes_are_the_cli_s_differences(world, sdk):
    want = cli_json("verify", world.failed, str(world.artifact_path), "-u", world.url)
    report = node_json(SCRIPT, "kit", world.url, world.failed, str(world.artifact_path))["report"]
    _same_as_cli(report, want)
    assert not report["ok"] and report["state"] == "failed"
    kinds = {d["kind"] for d in report["differences"]}
    assert {"hash", "declared-hash", "state", "bytes"} <= kinds


def test_an_address_that_is_not_a_model_is_refused_in_one_line(world, sdk):
    wallet = str(world.authority.pubkey())
    got = node_json(SCRIPT, "kit", world.url, wallet)
    assert got == {
        "error": "AccountError",
        "message": f"{wallet} is not a curta model: owned by the System Program (a wallet)",
    }
    program = world.verify_json["program"]["program_id"]
    got = node_json(SCRIPT, "kit", world.url, program)
    assert got["error"] == "AccountError" and got["message"].startswith(
        f"{program} is not a curta model: model account: "
    )


def test_a_foreign_and_a_misbound_weight_account_read_as_the_cli_reads_them(world, sdk):
    # A model (forged in the localnet) whose slot 0 names a model account (too short for a
    # weight header) and whose slot 1 names another model's section 1.
    forged = Keypair().pubkey()

    def forge(localnet) -> None:
        sealed = localnet.get_account(Pubkey.from_string(world.sealed))
        model = ModelAccount.from_bytes(bytes(sealed.data))
        other = ModelAccount.from_bytes(
            bytes(localnet.get_account(Pubkey.from_string(world.failed)).data)
        )
        slots = (
            SectionSlot(Pubkey.from_string(world.sealed), model.sections[0].length),
            SectionSlot(other.sections[1].weight_account, model.sections[1].length),
        )
        data = dataclasses.replace(model, sections=slots).to_bytes()
        localnet.svm.set_account(forged, Account(sealed.lamports, data, sealed.owner, False, 0))
        localnet._forget_reads()  # the localnet caches reads between transactions

    world.localnet.call(forge)
    want = cli_json("verify", str(forged), str(world.artifact_path), "-u", world.url)
    report = node_json(SCRIPT, "url", world.url, str(forged), str(world.artifact_path))["report"]
    _same_as_cli(report, want)
    assert [d["kind"] for d in report["differences"]] == ["account", "account"]


def test_a_section_longer_than_the_spec_is_refused_as_the_cli_refuses_it(world, sdk):
    # A model (forged in the localnet) whose slot 1 claims 2^50 bytes: refused when decoded,
    # before a byte is read, by the SDK and the CLI alike.
    forged = Keypair().pubkey()

    def forge(localnet) -> None:
        sealed = localnet.get_account(Pubkey.from_string(world.sealed))
        model = ModelAccount.from_bytes(bytes(sealed.data))
        data = bytearray(model.to_bytes())
        struct.pack_into("<Q", data, 160 + 40, 2**50)
        localnet.svm.set_account(
            forged, Account(sealed.lamports, bytes(data), sealed.owner, False, 0)
        )
        localnet._forget_reads()  # the localnet caches reads between transactions

    world.localnet.call(forge)
    why = (
        f"{forged} is not a curta model: model account: section 1 length "
        f"{2**50:,} at offset 200 > 10,483,712 (the spec's largest section)"
    )
    for cluster in ("kit", "url"):
        got = node_json(SCRIPT, cluster, world.url, str(forged), str(world.artifact_path))
        assert got == {"error": "AccountError", "message": why}
    code, out = cli("verify", str(forged), str(world.artifact_path), "-u", world.url)
    assert code == 1 and out == f"error: {why}\n"


def test_a_program_naming_program_data_the_loader_does_not_keep_is_refused(world, sdk):
    # A node that says the program's data is elsewhere (the model account, here).
    program = world.verify_json["program"]["program_id"]
    liar = FaultProxy(world.url).start()
    try:
        liar.patch_account(program, 4, bytes(Pubkey.from_string(world.sealed)))
        got = node_json(SCRIPT, "kit", liar.url, world.sealed, str(world.artifact_path))
        assert got == {
            "error": "ProgramCheckError",
            "message": f"program {program} names {world.sealed} as its program data; the "
            f"loader keeps it at {programdata_address(Pubkey.from_string(program))}",
        }
    finally:
        liar.stop()

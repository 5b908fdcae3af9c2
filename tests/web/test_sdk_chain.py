"""The SDK's verifyModel against the embedded localnet: the verdict `curta-chain verify`
gives, field for field, for a sealed model, a failed seal and an address that is no model."""

from pathlib import Path

import pytest
from web_helpers import cli_json, node_json

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
    report = node_json(SCRIPT, "kit", world.url, world.sealed)["report"]
    assert report["ok"] and report["artifact_hash"] is None
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

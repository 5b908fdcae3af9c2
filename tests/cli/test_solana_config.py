"""The Solana CLI's config file, monikers and commitment, and its keypair files."""

import json
from pathlib import Path

import pytest
from solders.keypair import Keypair

from curta_chain.cli import keypairs
from curta_chain.cli import solana_config as sc
from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.errors import ConfigError, KeypairError
from curta_chain.user_data import record_local_cluster


def test_monikers_and_urls_resolve():
    empty = sc.CliConfig()
    assert sc.resolve_url(None, empty) == "http://127.0.0.1:8899"
    assert sc.resolve_url("devnet", empty) == "https://api.devnet.solana.com"
    assert sc.resolve_url("m", empty) == "https://api.mainnet-beta.solana.com"
    assert sc.resolve_url("http://127.0.0.1:9000", empty) == "http://127.0.0.1:9000"
    assert sc.resolve_url(None, sc.CliConfig(json_rpc_url="testnet")).endswith("testnet.solana.com")


@pytest.mark.parametrize("bad", ["ftp://x", "devnett", "http://", "http://h:port"])
def test_a_bad_url_names_itself(bad):
    with pytest.raises(ConfigError, match="--url"):
        sc.resolve_url(bad, sc.CliConfig())


def test_config_file_gives_defaults(tmp_path):
    path = tmp_path / "config.yml"
    path.write_text(
        "---\njson_rpc_url: \"http://127.0.0.1:7777\"\nwebsocket_url: ''\n"
        'keypair_path: /tmp/id.json\naddress_labels:\n  "111": System Program\n'
        "commitment: finalized\n"
    )
    config = sc.read_cli_config(path)
    assert config == sc.CliConfig("http://127.0.0.1:7777", "/tmp/id.json", "finalized", path=path)
    assert sc.resolve_commitment(None, config) == "finalized"
    assert sc.resolve_commitment("processed", config) == "processed"
    assert str(sc.keypair_path(None, config)) == "/tmp/id.json"


def test_missing_default_config_is_empty_a_named_one_and_malformed_config_are_refused(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.config/solana/cli/config.yml there
    default = tmp_path / ".config" / "solana" / "cli" / "config.yml"
    assert sc.read_cli_config() == sc.CliConfig(path=default)
    absent = tmp_path / "absent.yml"
    with pytest.raises(ConfigError, match=r"absent\.yml: no such Solana CLI config file \(-C\)"):
        sc.read_cli_config(absent)
    # deploy names the file it will create.
    assert sc.read_cli_config(absent, may_be_new=True) == sc.CliConfig(path=absent)
    bad = tmp_path / "bad.yml"
    bad.write_text("json_rpc_url http://x\n")
    with pytest.raises(ConfigError, match=r"bad\.yml:1: expected 'key: value'"):
        sc.read_cli_config(bad)
    binary = tmp_path / "binary.yml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="cannot read"):
        sc.read_cli_config(binary)


def test_bad_commitment_is_refused():
    with pytest.raises(ConfigError, match="commitment 'final'"):
        sc.resolve_commitment("final", sc.CliConfig())


def test_keypair_round_trip(tmp_path):
    keypair = Keypair()
    path = tmp_path / "id.json"
    keypairs.write_keypair(keypair, path)
    assert keypairs.load_keypair(path) == keypair
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "expected a JSON array of 64 bytes"),
        ("[1, 2, 3]", "expected a JSON array of 64 bytes"),
        (json.dumps([256] * 64), "expected a JSON array of 64 bytes"),
        (json.dumps({"secret": 1}), "expected a JSON array of 64 bytes"),
    ],
)
def test_not_a_keypair_is_refused(tmp_path, content, message):
    path = tmp_path / "id.json"
    path.write_text(content)
    with pytest.raises(KeypairError, match=message):
        keypairs.load_keypair(path)


def test_mismatched_keypair_halves_are_refused(tmp_path):
    a, b = Keypair(), Keypair()
    path = tmp_path / "id.json"
    path.write_text(json.dumps(list(bytes(a)[:32] + bytes(b)[32:])))
    with pytest.raises(KeypairError, match="does not match"):
        keypairs.load_keypair(path)


def test_missing_keypair_is_named(tmp_path):
    with pytest.raises(KeypairError, match=r"absent\.json: no such keypair file"):
        keypairs.load_keypair(tmp_path / "absent.json")


DEVNET_GENESIS = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"
LOCAL_GENESIS = "LocaLGenesis1111111111111111111111111111111"
"""A genesis hash no real cluster has, which the tests record as a local cluster's."""


def test_deploy_records_the_program_per_cluster_and_keeps_every_other_line(tmp_path):
    path = tmp_path / "config.yml"
    original = (
        "---\njson_rpc_url: https://api.devnet.solana.com\naddress_labels:\n"
        '  "111": System Program\ncommitment: confirmed\n'
    )
    path.write_text(original)
    program = str(Keypair().pubkey())
    sc.record_program_id(path, DEVNET_GENESIS, program)
    sc.record_program_id(path, LOCAL_GENESIS, LOCALNET_PROGRAM_ID)
    again = str(Keypair().pubkey())
    sc.record_program_id(path, DEVNET_GENESIS, again)  # a redeploy replaces the entry
    text = path.read_text()
    assert text.startswith(original)
    assert text.count("curta_program_ids:") == 1
    config = sc.read_cli_config(path)
    assert dict(config.program_ids) == {
        DEVNET_GENESIS: again,
        LOCAL_GENESIS: LOCALNET_PROGRAM_ID,
    }
    assert config.json_rpc_url == "https://api.devnet.solana.com"
    assert config.commitment == "confirmed"


def test_a_missing_config_is_created_by_recording(tmp_path):
    path = tmp_path / "new" / "config.yml"
    sc.record_program_id(path, DEVNET_GENESIS, LOCALNET_PROGRAM_ID)
    assert dict(sc.read_cli_config(path).program_ids) == {DEVNET_GENESIS: LOCALNET_PROGRAM_ID}


def test_the_program_id_comes_from_the_flag_the_config_or_a_local_cluster_only():
    recorded = sc.CliConfig(program_ids=((DEVNET_GENESIS, "P1"),), path=Path("c.yml"))
    url = "https://api.devnet.solana.com"
    assert sc.resolve_program_id("P0", recorded, DEVNET_GENESIS, url) == ("P0", "--program-id")
    assert sc.resolve_program_id(None, recorded, DEVNET_GENESIS, url) == (
        "P1",
        "curta_program_ids in c.yml",
    )
    # A local test cluster: a loopback URL and a genesis hash this user's localnet recorded.
    record_local_cluster(LOCAL_GENESIS, "curta-chain localnet", "http://127.0.0.1:8899")
    for local in ("http://127.0.0.1:8899", "http://localhost:9000"):
        assert sc.resolve_program_id(None, recorded, LOCAL_GENESIS, local) == (
            LOCALNET_PROGRAM_ID,
            "the local cluster's preloaded program",
        )
    # Any other cluster has no built-in id: another URL answering that hash, or a loopback
    # node answering a hash no localnet of this user's recorded (mainnet-beta's here).
    for genesis, where, why in (
        (DEVNET_GENESIS, url, ""),
        (LOCAL_GENESIS, url, ""),
        (
            "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d",
            "http://127.0.0.1:8899",
            "; it runs on this machine, but no `curta-chain localnet` of this user recorded "
            "its genesis hash, so it is treated as a real cluster",
        ),
    ):
        with pytest.raises(ConfigError) as caught:
            sc.resolve_program_id(None, sc.CliConfig(), genesis, where)
        assert str(caught.value) == (
            f"no curta program is known for the cluster at {where} (genesis {genesis}{why}): "
            f"deploy one with `curta-chain deploy -u {where}`, or pass --program-id ADDRESS"
        )

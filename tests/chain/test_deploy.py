"""deploy, then publish, seal and verify under the deployed program: real CLI processes over HTTP.

The embedded localnet takes real upgradeable deploys (the strict deployment loader runs,
as on a cluster). The program's id is recorded in the Solana CLI config the commands are
given (``-C``) under ``curta_program_ids``, keyed by the cluster's genesis hash, and every
later command finds it there.
"""

import json
import subprocess
import sys

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from curta_chain.artifact import Artifact
from curta_chain.chain import loader
from curta_chain.chain.deploy_transactions import DeployTransactions
from curta_chain.chain.keys import default_program_keypair
from curta_chain.chain.plan import differing_pieces
from curta_chain.chain.rent import rent_exempt_minimum
from curta_chain.chain.specs import Budget
from curta_chain.cli import keypairs, solana_config
from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.program import shipped_program

BUILD = shipped_program("sbpf-v3")
"""The build deploy takes on the localnet, which enables SBPF v3 and (SIMD-0500) refuses v0."""
PIECES = len(
    differing_pieces(0, BUILD.elf, None, DeployTransactions(Pubkey.default(), Budget()).chunk("v1"))
)
"""Writes a deploy sends (v1, which the localnet has active): a new buffer holds zeros, so
all-zero pieces need none."""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``curta-chain *args`` as its own process, with no terminal."""
    return subprocess.run(
        [sys.executable, "-m", "curta_chain", *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def run_json(*args: str) -> dict:
    done = run(*args, "--output", "json-compact")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def balance(url: str, keypair: Keypair) -> int:
    from reference_client import Client

    return Client(url, "processed").get_balance(keypair.pubkey()).value


def test_deploy_then_publish_seal_and_verify_under_the_program_it_deployed(
    localnet, fund, tmp_path, stories260k: Artifact
):
    payer = fund(localnet.url, 50)
    key = tmp_path / "id.json"
    keypairs.write_keypair(payer, key)
    config = tmp_path / "config.yml"
    via = ("-u", localnet.url, "-k", str(key), "-C", config)
    art = tmp_path / "stories260K.curta"
    art.write_bytes(stories260k.data)

    dry = run_json("deploy", "--dry-run", *via)["plan"]
    plan = (dry["state"], dry["write_transactions"], dry["transactions"])
    assert plan == ("new", PIECES, PIECES + 2)
    program_rent = rent_exempt_minimum(loader.PROGRAM_ACCOUNT_SIZE)
    data_rent = rent_exempt_minimum(loader.PROGRAMDATA_METADATA_SIZE + len(BUILD.elf))
    assert dry["rent_lamports"] == program_rent + data_rent
    assert not config.exists()  # a dry run records nothing
    before = balance(localnet.url, payer)

    done = run("deploy", *via)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    program_id = lines[-1]
    assert program_id == str(default_program_keypair(payer, localnet.genesis_hash).pubkey())
    build = f"{BUILD.name} ({len(BUILD.elf):,} bytes, sha256 {BUILD.sha256})"
    # The localnet shows every feature account, as a validator's genesis does: v3 is enabled.
    assert lines[0].startswith("SBPF v3 deployment is enabled on this cluster")
    assert lines[1] == f"deploy {build} to program {program_id}"
    assert f"deployed {BUILD.name} to {program_id} (upgradeable by {payer.pubkey()})" in lines
    assert before - balance(localnet.url, payer) == dry["cost_lamports"]
    recorded = solana_config.read_cli_config(config).program_ids
    assert dict(recorded) == {localnet.genesis_hash: program_id}

    published = run_json("publish", str(art), *via)
    assert run_json("seal", published["model"], *via)["state"] == "sealed"
    done = run("verify", published["model"], str(art), "-u", localnet.url, "-C", config)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"verified {published['model']}: sealed")
    lines = lines[lines.index(f"program        {program_id}") :]  # after the hashes
    assert (
        lines[1]
        == f"program sha256 {BUILD.sha256} ({len(BUILD.elf):,} bytes, shipped build {BUILD.name})"
    )
    assert lines[2] == f"upgrade auth.  {payer.pubkey()}"
    assert lines[4].startswith(f"WARNING: the program can still be upgraded by {payer.pubkey()}")
    status = run("status", published["model"], "-u", localnet.url, "-C", config)
    assert f"Program:        {program_id}" in status.stdout.splitlines()
    # Under the localnet's own program the same artifact and keypair give another model.
    other = run_json("publish", str(art), "--dry-run", "-u", localnet.url, "-k", str(key))
    assert other["plan"]["model"] != published["model"]

    # Deploying again sends nothing; --final then removes the upgrade authority, and only that.
    before = balance(localnet.url, payer)
    again = run("deploy", *via)
    assert again.returncode == 0 and "nothing to send" in again.stdout
    assert balance(localnet.url, payer) == before
    final = run_json("deploy", "--final", *via)
    assert final["transactions"] == 1 and final["upgrade_authority"] is None
    done = run(
        "verify",
        published["model"],
        str(art),
        "-u",
        localnet.url,
        "-C",
        str(config),
        "--require-final",
    )
    assert done.returncode == 0, done.stdout
    assert "upgrade auth.  none: nobody can change the program" in done.stdout.splitlines()


def test_deploy_final_never_leaves_an_upgrade_authority(localnet, fund, tmp_path):
    payer = fund(localnet.url, 10)
    key, program_key = tmp_path / "id.json", tmp_path / "program.json"
    keypairs.write_keypair(payer, key)
    program = Keypair()
    keypairs.write_keypair(program, program_key)
    via = ("-u", localnet.url, "-k", str(key), "-C", str(tmp_path / "c.yml"))
    result = run_json("deploy", "--final", "--program-keypair", str(program_key), *via)
    assert result["program_id"] == str(program.pubkey())
    assert result["upgrade_authority"] is None and result["shipped_build"] == BUILD.name
    # The deploy and the removal of the authority were one transaction.
    assert result["transactions"] == 2 + PIECES


def test_a_prefunded_program_address_is_deployed_to_all_the_same(localnet, fund, tmp_path):
    from reference_client import Client

    payer = fund(localnet.url, 10)
    program = default_program_keypair(payer, localnet.genesis_hash)
    Client(localnet.url).request_airdrop(program.pubkey(), 890_880)
    key = tmp_path / "id.json"
    keypairs.write_keypair(payer, key)
    via = ("-u", localnet.url, "-k", str(key), "-C", str(tmp_path / "c.yml"))
    done = run("deploy", *via)
    assert done.returncode == 0, done.stderr
    assert f"{program.pubkey()} already holds 890,880 lamports someone sent" in done.stdout


def test_the_localnet_program_needs_no_deploy(localnet, tmp_path):
    # On the embedded localnet, with nothing recorded, commands use the preloaded program.
    model = str(Keypair().pubkey())
    (tmp_path / "none.yml").write_text("")  # a config with nothing recorded
    done = run("status", model, "-u", localnet.url, "-C", str(tmp_path / "none.yml"))
    assert (done.returncode, done.stderr) == (
        1,
        f"error: {model}: no such account on {localnet.url}\n",
    )
    done = run("status", LOCALNET_PROGRAM_ID, "-u", localnet.url)
    assert done.stderr.startswith(f"error: {LOCALNET_PROGRAM_ID} is not a curta model: owned by ")


def test_a_config_that_cannot_be_written_still_says_where_the_program_is(localnet, fund, tmp_path):
    payer = fund(localnet.url, 10)
    key = tmp_path / "id.json"
    keypairs.write_keypair(payer, key)
    config = "/proc/curta-chain/config.yml"  # reads as absent; never writable, even by root
    done = run("deploy", "-u", localnet.url, "-k", str(key), "-C", config)
    program = default_program_keypair(payer, localnet.genesis_hash).pubkey()
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"error: program {program} is deployed, but recording it failed")
    assert done.stderr.endswith(f"pass --program-id {program} to the other commands\n")
    rerun = run("deploy", "-u", localnet.url, "-k", str(key), "--program-id", str(program))
    assert rerun.returncode == 2  # deploy takes no --program-id; the others do
    status = run("status", str(program), "-u", localnet.url, "--program-id", str(program))
    assert "is not a curta model" in status.stderr  # the program itself passes the check

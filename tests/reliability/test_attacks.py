"""The attacks of issue 9, run as an attacker would run them, now fail safely.

Each runs the real CLI as its own process against the embedded localnet over HTTP (through
a lying ``FaultProxy`` where the attack is a lying node), with the attacker using his own
keys and the same library a user has (``attacker.py``):

1. a stand-in program at the program id: no built-in id off the localnet, and a program
   whose bytes are not a shipped build is refused before anything is sent, by every
   command; a fabricated "sealed" model under it does not verify;
3. pre-funded derived addresses: publish uses them anyway (allocate + assign, topped up),
   before the model exists and in the middle of a publish;
4. a node that inflates getMinimumBalanceForRentExemption: refused, nothing spent;
5. an upgrade that swaps the program, rewrites a sealed byte and swaps back: verify says on
   its first lines that the program can still be upgraded and when it last was, and
   ``--require-final`` fails; under a final program the upgrade itself is refused.

(Attack 2, transactions over the 64 MiB loaded-data limit, is the program's side.)
"""

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from attacker import (
    CURTA,
    STANDIN,
    V0_DEPLOYS,
    deploy_program,
    drain,
    new_owned_account,
    on_chain,
    rewrite,
    upgrade_program,
)
from fault_proxy import FaultProxy, balance, record, rpc, run_cli, run_plain
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from curta_chain.artifact import Artifact, decode_artifact
from curta_chain.chain.keys import ClusterScope, model_keypair, weight_keypair
from curta_chain.chain.rent import rent_exempt_minimum
from curta_chain.chain.sender import Sender
from curta_chain.chain.specs import TxSpec
from curta_chain.chain.verify import verify
from curta_chain.cli import keypairs, solana_config
from curta_chain.constants import (
    LAMPORTS_PER_SOL,
    LOCALNET_PROGRAM_ID,
    WEIGHT_HEADER_SIZE,
)
from curta_chain.errors import ProgramError
from curta_chain.localnet import LocalnetHandle, start_in_thread
from curta_chain.program import (
    MODEL_ACCOUNT_SIZE,
    ModelAccount,
    SectionSlot,
    WeightHeader,
    shipped_programs,
)

DEVNET_GENESIS = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"
PROGRAM_ID = Pubkey.from_string(LOCALNET_PROGRAM_ID)
ROW = "attack {}: {}"

SHIPPED = ", ".join(f"{b.name} {b.sha256}" for b in shipped_programs())


def one_line(err: str) -> str:
    """The single ``error:`` line of a refusal, checked to be single."""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err.strip()


def keyfile(keypair: Keypair, folder: Path, name: str) -> Path:
    path = folder / name
    keypairs.write_keypair(keypair, path)
    return path


def program_owned(url: str, owner: Pubkey) -> list[str]:
    found = rpc(url, "getProgramAccounts", str(owner), {"encoding": "base64"})
    return sorted(item["pubkey"] for item in found)


@pytest.fixture
def localnet() -> Iterator[LocalnetHandle]:
    """The embedded localnet, deploying SBPF v0 still (SIMD-0500 off): the stand-in is v0."""
    handle = start_in_thread(deactivate_features=V0_DEPLOYS)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def art_file(tmp_path: Path, stories260k: Artifact) -> Path:
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    return path


# -- 1: a stand-in program at the program id ----------------------------------------------


def test_1_off_the_localnet_no_command_falls_back_to_a_built_in_id(
    localnet, fund, tmp_path, art_file
):
    # The localnet, but claiming devnet's genesis hash: as devnet would look to the CLI.
    payer = fund(localnet.url, 20)
    proxy = FaultProxy(localnet.url, edits={"getGenesisHash": lambda _: DEVNET_GENESIS}).start()
    try:
        via = ("-u", proxy.url, "-k", str(keyfile(payer, tmp_path, "id.json")))
        model = str(Keypair().pubkey())
        for argv in (
            ("publish", str(art_file), *via),
            ("seal", model, *via),
            ("close", model, *via),
            ("status", model, "-u", proxy.url),
        ):
            done = run_plain(*argv)
            assert done.returncode == 1 and done.stdout == "", argv
            # On this machine, yet no localnet of this user's recorded that genesis hash.
            assert one_line(done.stderr) == (
                f"error: no curta program is known for the cluster at {proxy.url} (genesis "
                f"{DEVNET_GENESIS}; it runs on this machine, but no `curta-chain localnet` of "
                "this user recorded its genesis hash, so it is treated as a real cluster): "
                f"deploy one with `curta-chain deploy -u {proxy.url}`, or pass --program-id "
                "ADDRESS"
            )
        # verify takes the program from the chain: the model's owner, checked (no model).
        done = run_plain("verify", model, str(art_file), "-u", proxy.url)
        assert done.returncode == 1 and done.stdout == ""
        assert one_line(done.stderr) == f"error: {model}: no such account on {proxy.url}"
    finally:
        proxy.stop()
    assert balance(localnet.url, payer.pubkey()) == 20 * LAMPORTS_PER_SOL
    record(ROW.format(1, "no built-in program id off the localnet"), lost_lamports=0)


def test_1_a_stand_in_at_the_program_id_is_refused_before_anything_is_sent(
    localnet, fund, tmp_path, art_file
):
    attacker, victim = fund(localnet.url, 50), fund(localnet.url, 20)
    standin = deploy_program(localnet.url, attacker, STANDIN)
    wallet = keyfile(victim, tmp_path, "victim.json")
    before = balance(localnet.url, victim.pubkey())
    refusal = (
        f"error: program {standin} holds {len(STANDIN.elf):,} bytes with sha256 "
        f"{STANDIN.sha256}, not a build shipped with curta-chain ({SHIPPED}); "
        f"refusing it (--program-hash names a build you trust)"
    )
    # Told to use it with --program-id, or finding it recorded in the config for this cluster.
    config = tmp_path / "config.yml"
    solana_config.record_program_id(config, localnet.genesis_hash, str(standin))
    for how in (("--program-id", str(standin)), ("-C", str(config))):
        for command in ("publish", "close", "seal"):
            target = str(art_file) if command == "publish" else str(Keypair().pubkey())
            done = run_plain(command, target, "-u", localnet.url, "-k", str(wallet), *how)
            assert done.returncode == 1 and done.stdout == ""
            line = one_line(done.stderr)
            assert line.startswith(refusal), line
            if how[0] == "-C":
                assert line.endswith(f"(program id from curta_program_ids in {config})")
    assert balance(localnet.url, victim.pubkey()) == before
    assert program_owned(localnet.url, standin) == []
    record(ROW.format(1, "a stand-in program at the program id"), lost_lamports=0)


def test_1_a_fabricated_sealed_model_under_a_stand_in_does_not_verify(
    localnet, fund, tmp_path, art_file, stories260k
):
    # A real sealed model is the attacker's template: he copies it into accounts his
    # stand-in owns, so the fake is byte for byte what verify would want to see.
    attacker = fund(localnet.url, 100)
    via = ("-u", localnet.url, "-k", str(keyfile(attacker, tmp_path, "attacker.json")))
    code, published, err = run_cli("publish", str(art_file), *via)
    assert code == 0, err
    code, _, err = run_cli("seal", published["model"], *via)
    assert code == 0, err
    fake = fabricate(localnet.url, attacker, published["model"])
    # The old exploit: drain a victim's rent with one instruction per account. The stand-in
    # can do it to any account it owns, which is why its id is never trusted.
    drained = new_owned_account(localnet.url, attacker, fake.standin, 100)
    drain(localnet.url, attacker, fake.standin, drained)
    assert rpc(localnet.url, "getAccountInfo", str(drained))["value"] is None

    under_standin = ("-u", localnet.url, "--program-id", str(fake.standin))
    done = run_plain("verify", str(fake.model), str(art_file), *under_standin)
    assert done.returncode == 1 and done.stdout == ""
    assert f"{STANDIN.sha256}, not a build shipped with curta-chain" in one_line(done.stderr)

    # The fabrication is faithful: trusting the stand-in by its hash, every check of the
    # model itself passes; only the program says what it really is (not a shipped build,
    # upgradeable, and deployed after the copied seal began).
    report = on_chain(
        localnet.url,
        lambda client: verify(client, fake.standin, fake.model, stories260k, (STANDIN.sha256,)),
    )
    assert report.program.build is None and report.program.upgradeable
    (difference,) = report.differences
    assert difference.kind == "program" and "after sealing began at slot" in difference.detail
    trusting = ("--program-hash", STANDIN.sha256)
    done = run_plain("verify", str(fake.model), str(art_file), *under_standin, *trusting)
    lines = done.stdout.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("program  ")) :]
    assert lines[1].endswith("NOT a shipped build)") and lines[4].startswith("WARNING: ")
    record(ROW.format(1, "a fabricated sealed model under a stand-in"), lost_lamports=0)


@dataclasses.dataclass(frozen=True)
class Fake:
    standin: Pubkey
    model: Pubkey


def fabricate(url: str, attacker: Keypair, template: str) -> Fake:
    """Copy the sealed model ``template`` and its weight accounts under a stand-in program."""
    standin = deploy_program(url, attacker, STANDIN)
    real = on_chain(url, lambda c: c.account(Pubkey.from_string(template)))
    model = ModelAccount.from_bytes(real.data)
    fake_model = new_owned_account(url, attacker, standin, MODEL_ACCOUNT_SIZE)
    slots = []
    for index, slot in enumerate(model.sections):
        size = WEIGHT_HEADER_SIZE + slot.length
        data = on_chain(
            url, lambda c, slot=slot, size=size: c.account_data(slot.weight_account, 0, size)
        )
        header = dataclasses.replace(WeightHeader.from_bytes(data), model=fake_model)
        account = new_owned_account(url, attacker, standin, size)
        rewrite(url, attacker, standin, account, 0, header.to_bytes() + data[WEIGHT_HEADER_SIZE:])
        slots.append(SectionSlot(account, slot.length))
        assert header.section_index == index
    forged = dataclasses.replace(model, sections=tuple(slots))
    rewrite(url, attacker, standin, fake_model, 0, forged.to_bytes())
    return Fake(standin, fake_model)


# -- 3: pre-funded derived addresses ------------------------------------------------------


def send_lamports(url: str, payer: Keypair, to: list[tuple[Pubkey, int]]) -> None:
    ixs = [
        transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=k, lamports=n)) for k, n in to
    ]
    on_chain(url, lambda client: Sender(client, payer).send([TxSpec(tuple(ixs))]))


def test_3_prefunded_addresses_are_allocated_and_assigned_and_publish_goes_on(
    localnet, fund, tmp_path, art_file, stories260k
):
    victim, attacker = fund(localnet.url, 20), fund(localnet.url, 5)
    scope = ClusterScope(localnet.genesis_hash, PROGRAM_ID)
    h = stories260k.weights_hash()
    model = model_keypair(victim, h, scope).pubkey()
    weights = [weight_keypair(victim, h, scope, i).pubkey() for i in range(2)]
    # The worst case: the attacker knows every address. 890,880 lamports (a 0-byte
    # account's rent, the amount) on two of them, more than the rent on the third.
    big = rent_exempt_minimum(WEIGHT_HEADER_SIZE + len(stories260k.sections[1])) + 12_345
    gifts = {model: 890_880, weights[0]: 890_880, weights[1]: big}
    send_lamports(localnet.url, attacker, list(gifts.items()))

    via = ("-u", localnet.url, "-k", str(keyfile(victim, tmp_path, "id.json")))
    code, dry, err = run_cli("publish", str(art_file), "--dry-run", *via)
    assert code == 0, err
    planned = {a["address"]: a for a in dry["plan"]["new_accounts"]}
    assert {k: planned[str(k)]["existing_lamports"] for k in gifts} == gifts
    rent = sum(max(0, a["rent"] - a["existing_lamports"]) for a in planned.values())
    assert dry["plan"]["rent_lamports"] == rent
    before = balance(localnet.url, victim.pubkey())

    done = run_plain("publish", str(art_file), *via)
    assert done.returncode == 0, done.stderr
    for address, lamports in gifts.items():
        assert (
            f"{address} already holds {lamports:,} lamports someone sent: it will be allocated "
            f"and assigned with its own signature, topped up by "
            f"{max(0, planned[str(address)]['rent'] - lamports):,}"
        ) in done.stdout
    assert f"Model: {model}" in done.stdout.splitlines()
    assert (
        before - balance(localnet.url, victim.pubkey())
        == dry["plan"]["rent_lamports"] + dry["plan"]["fee_lamports"]
    )
    code, sealed, err = run_cli("seal", str(model), *via)
    assert code == 0 and sealed["state"] == "sealed", err
    code, report, err = run_cli("verify", str(model), str(art_file), "-u", localnet.url)
    assert code == 0 and report["ok"], err
    assert balance(localnet.url, weights[1]) == big  # the surplus stays, and comes back on close
    record(ROW.format(3, "pre-funded model and weight addresses"), lost_lamports=0)


def test_3_an_address_funded_in_the_middle_of_a_publish_does_not_block_the_rerun(
    localnet, fund, tmp_path, art_file, stories260k
):
    victim, attacker = fund(localnet.url, 20), fund(localnet.url, 5)
    via = ("-k", str(keyfile(victim, tmp_path, "id.json")))
    proxy = FaultProxy(localnet.url, serialize=True).start()
    try:
        # The node goes away right after the model is created: a half-made model.
        proxy.trigger(
            lambda p, _r: p.count("create_model") >= 1, lambda: setattr(proxy, "down", True)
        )
        code, _, err = run_cli(
            "publish", str(art_file), "-u", proxy.url, *via, "--rpc-timeout", "1"
        )
        assert code == 1 and f"rerun `curta-chain publish {art_file}" in err
    finally:
        proxy.stop()
    scope = ClusterScope(localnet.genesis_hash, PROGRAM_ID)
    h = stories260k.weights_hash()
    weights = [weight_keypair(victim, h, scope, i).pubkey() for i in range(2)]
    send_lamports(localnet.url, attacker, [(w, 890_880) for w in weights])
    code, published, err = run_cli("publish", str(art_file), "-u", localnet.url, *via)
    assert code == 0, err
    assert published["weight_accounts"] == [str(w) for w in weights]
    code, sealed, err = run_cli("seal", published["model"], "-u", localnet.url, *via)
    assert code == 0 and sealed["state"] == "sealed", err
    record(ROW.format(3, "an address funded between two runs of publish"), lost_lamports=0)


# -- 4: a node that inflates rent ---------------------------------------------------------


def test_4_a_node_that_inflates_rent_is_refused_and_nothing_is_spent(
    localnet, fund, tmp_path, art_file
):
    payer = fund(localnet.url, 20)
    inflate = {"getMinimumBalanceForRentExemption": lambda lamports: lamports * 300}
    proxy = FaultProxy(localnet.url, edits=inflate).start()
    try:
        via = ("-u", proxy.url, "-k", str(keyfile(payer, tmp_path, "id.json")))
        for argv in (
            ("publish", str(art_file), *via),
            ("deploy", *via, "-C", str(tmp_path / "c.yml")),
        ):
            done = run_plain(*argv)
            assert done.returncode == 1 and done.stdout == "", argv
            line = one_line(done.stderr)
            assert line.startswith(f"error: {proxy.url} asks ")
            assert "bytes rent-exempt; the runtime's formula gives " in line
            assert line.endswith(": refusing a node that asks for more; nothing was sent")
    finally:
        proxy.stop()
    assert proxy.injected["edited getMinimumBalanceForRentExemption"] >= 2
    assert balance(localnet.url, payer.pubkey()) == 20 * LAMPORTS_PER_SOL
    assert not (tmp_path / "c.yml").exists()
    record(ROW.format(4, "a node inflating rent 300x"), lost_lamports=0)


def test_4_rent_is_the_runtimes_formula_whatever_size():
    # agave's Rent::default(): (128 + size) * 3,480 * 2.0; what LiteSVM (the runtime) says.
    from curta_chain.localnet.current_bank import new_svm

    svm = new_svm()
    for size in (0, 36, 848, 2_048 + 1, 10_485_760, 15_152 + 45):
        assert rent_exempt_minimum(size) == svm.minimum_balance_for_rent_exemption(size)
    assert rent_exempt_minimum(0) == 890_880


# -- 5: an upgrade swaps the program -------------------------------------------------------


def verify_lines(
    url: str, model: str, art: Path, config: Path, *extra: str
) -> tuple[int, list[str], list[str]]:
    """verify's exit code, its lines from the program's on, and the causes before them.

    verify prints its verdict and hashes, the causes of a failure, the differing ranges,
    then the program it trusts.
    """
    done = run_plain("verify", model, str(art), "-u", url, "-C", str(config), *extra)
    lines = (done.stdout + done.stderr).splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("program  ")), 0)
    return done.returncode, lines[start:], lines[:start]


def test_5_an_upgrade_that_swaps_the_program_is_reported_and_require_final_refuses_it(
    localnet, fund, tmp_path, art_file, stories260k
):
    owner = fund(localnet.url, 100)
    config = tmp_path / "config.yml"
    via = ("-u", localnet.url, "-k", str(keyfile(owner, tmp_path, "id.json")), "-C", str(config))
    code, deployed, err = run_cli("deploy", *via)
    assert code == 0 and deployed["upgradeable"], err
    program = Pubkey.from_string(deployed["program_id"])
    code, published, err = run_cli("publish", str(art_file), *via)
    assert code == 0, err
    model = published["model"]
    code, _, err = run_cli("seal", model, *via)
    assert code == 0, err

    code, lines, _ = verify_lines(localnet.url, model, art_file, config)
    assert code == 0
    assert lines[0] == f"program        {program}" and lines[3].startswith("last deployed  slot ")
    assert lines[4].startswith(f"WARNING: the program can still be upgraded by {owner.pubkey()}")
    deployed_at = lines[3]
    code, lines, _ = verify_lines(localnet.url, model, art_file, config, "--require-final")
    assert code == 1 and f"the program can still be upgraded by {owner.pubkey()}" in "\n".join(
        lines
    )

    # The swap: a stand-in, a sealed byte rewritten (and the model's hashes to match a
    # doctored artifact), then curta's build again.
    upgrade_program(localnet.url, owner, program, STANDIN.elf)
    code, lines, _ = verify_lines(localnet.url, model, art_file, config)
    assert code == 1 and len(lines) == 1 and "not a build shipped with curta-chain" in lines[0]
    doctored = doctor(stories260k)
    state = ModelAccount.from_bytes(
        on_chain(localnet.url, lambda c: c.account(Pubkey.from_string(model))).data
    )
    section = state.sections[1].weight_account
    rewrite(localnet.url, owner, program, section, WEIGHT_HEADER_SIZE, doctored.sections[1])
    h = doctored.weights_hash()
    forged = dataclasses.replace(state, declared_hash=h, running_hash=h)
    rewrite(localnet.url, owner, program, Pubkey.from_string(model), 0, forged.to_bytes())
    upgrade_program(localnet.url, owner, program, CURTA.elf)
    fake_art = tmp_path / "doctored.curta"
    fake_art.write_bytes(doctored.data)

    code, lines, causes = verify_lines(localnet.url, model, fake_art, config)
    assert lines[1].endswith("shipped build sbpf-v3)")  # the program is curta's again...
    assert lines[3] != deployed_at  # ...but it was deployed again after the seal
    assert lines[4].startswith(f"WARNING: the program can still be upgraded by {owner.pubkey()}")
    assert code == 1 and "after sealing began at slot" in "\n".join(causes)  # so no evidence
    code, lines, _ = verify_lines(localnet.url, model, fake_art, config, "--require-final")
    assert code == 1
    code, _, _ = verify_lines(localnet.url, model, art_file, config)
    assert code == 1  # and the real artifact's bytes are no longer there
    record(ROW.format(5, "an upgrade swaps the program and back"), lost_lamports=0)


def test_5_under_a_final_program_the_swap_cannot_happen(localnet, fund, tmp_path, art_file):
    owner = fund(localnet.url, 100)
    config = tmp_path / "config.yml"
    via = ("-u", localnet.url, "-k", str(keyfile(owner, tmp_path, "id.json")), "-C", str(config))
    code, deployed, err = run_cli("deploy", "--final", *via)
    assert code == 0 and not deployed["upgradeable"], err
    program = Pubkey.from_string(deployed["program_id"])
    code, published, err = run_cli("publish", str(art_file), *via)
    assert code == 0, err
    code, _, err = run_cli("seal", published["model"], *via)
    assert code == 0, err
    with pytest.raises(ProgramError, match=r"^instruction 0 failed: Immutable$"):
        upgrade_program(localnet.url, owner, program, STANDIN.elf)
    code, lines, _ = verify_lines(
        localnet.url, published["model"], art_file, config, "--require-final"
    )
    assert code == 0, lines
    assert lines[2] == "upgrade auth.  none: nobody can change the program"
    record(ROW.format(5, "an upgrade of a final program"), lost_lamports=0)


def doctor(artifact: Artifact) -> Artifact:
    """The artifact with one weight byte of section 1 changed (still a valid artifact)."""
    data = bytearray(artifact.data)
    at = len(artifact.data) - len(artifact.sections[1]) + 80  # matrix 0, row 1, weight 0
    data[at] ^= 0x01 if data[at] ^ 0x01 != 0x80 else 0x02
    return decode_artifact(bytes(data))


def test_the_stand_in_is_what_it_says(localnet, fund):
    # Rewrite and drain work on accounts it owns; anything else it accepts, as curta would.
    attacker = fund(localnet.url, 10)
    standin = deploy_program(localnet.url, attacker, STANDIN)
    account = new_owned_account(localnet.url, attacker, standin, 64)
    rewrite(localnet.url, attacker, standin, account, 8, b"hello")
    data = on_chain(localnet.url, lambda c: c.account(account)).data
    assert data[8:13] == b"hello" and data.count(0) == 64 - 5


@pytest.mark.skipif(
    shutil.which("clang-14") is None,
    reason="clang-14 is not installed (CI installs it with apt-get install clang-14)",
)
def test_the_committed_stand_in_is_built_from_its_source():
    from build_standin import build_standin

    assert build_standin() == STANDIN.elf

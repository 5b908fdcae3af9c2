"""A node that lies about prices, fees, its genesis hash or account lengths gains nothing.

Each case runs the real CLI as its own process against the embedded localnet through a
``FaultProxy`` on loopback that tells one lie:

- prices: getRecentPrioritizationFees says every slot paid 10^12 micro-lamports a unit.
  ``--with-compute-unit-price auto`` stops before anything is signed (the default cap), and
  with ``--max-compute-unit-price`` pays at most that: a clean publish and a unit at the cap;
  seal, close and ``run --on-chain`` read the price the same way;
- fees: getFeeForMessage says 10^12 lamports. The plan, the funds check and what is spent are
  the fees computed from the messages; the node's figure is only shown, as a disagreement;
- genesis: a loopback node answering a genesis hash no localnet of this user recorded is a
  real cluster (no built-in program id, no spending without ``--yes``), while the honest
  proxy in front of the same localnet is a local cluster (neither flag needed);
- account lengths: a model (and its weight account) claiming a section of 2^50 bytes is
  refused when decoded, before any byte of it is asked for, in a process that stays small;
  a weight account that disagrees with its model's slot is never read;
- program data: a program account naming another program's program data (a shipped build)
  is refused, where the runtime would run its own.
"""

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from attacker import CURTA, STANDIN, V0_DEPLOYS, deploy_program
from fault_proxy import FaultProxy, balance, run_cli, run_plain
from solders.hash import Hash
from solders.keypair import Keypair

from curta_chain.artifact.layout import ModelConfig
from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.chain.fees import DEFAULT_MAX_COMPUTE_UNIT_PRICE
from curta_chain.chain.loader import programdata_address
from curta_chain.cli import cluster_runner, keypairs
from curta_chain.constants import LAMPORTS_PER_SOL, LOCALNET_PROGRAM_ID, WEIGHT_HEADER_SIZE
from curta_chain.localnet import start_in_thread

TINY = ModelConfig(
    dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=259, seq_len=16
)
"""A model that publishes in a few dozen transactions."""
LIE = 10**12
HUGE = 2**50
MEMORY_BOUND_KB = 400 * 1024
"""What a refused claim may cost the process at most (its peak resident set)."""
MEASURED = (
    "import sys\n"
    "from curta_chain.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "peak = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]\n"
    "print(f'maxrss {peak}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)
"""The CLI, printing its own peak resident set (kB) last on stderr.

Its memory's own high-water mark (``VmHWM``): ``getrusage``'s ``ru_maxrss`` keeps, across
the exec, the resident set of the process that started it (a test worker holding models).
"""


def one_line(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err.strip()


@pytest.fixture
def tiny_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.curta"
    path.write_bytes(synthetic_artifact(TINY, seed=5).data)
    return path


def keyfile(keypair: Keypair, folder: Path) -> Path:
    path = folder / f"{keypair.pubkey()}.json"
    keypairs.write_keypair(keypair, path)
    return path


def spent_on(url: str, payer: Keypair, *argv: str) -> int:
    before = balance(url, payer.pubkey())
    code, _, err = run_cli(*argv)
    assert code == 0, err
    return before - balance(url, payer.pubkey())


def test_the_cli_states_the_fees_default_cap():
    assert cluster_runner.DEFAULT_MAX_COMPUTE_UNIT_PRICE == DEFAULT_MAX_COMPUTE_UNIT_PRICE


def test_a_node_inflating_prices_costs_nothing_beyond_a_clean_publish(
    localnet, fund, tmp_path, tiny_file
):
    liar = FaultProxy(localnet.url).start()
    liar.lie_about_prices(LIE)
    try:
        payer = fund(localnet.url, 10)
        via = ("-u", liar.url, "-k", str(keyfile(payer, tmp_path)))
        auto = ("--with-compute-unit-price", "auto")
        done = run_plain("publish", str(tiny_file), *via, *auto, "--yes")
        assert done.returncode == 1 and done.stdout == ""
        assert one_line(done.stderr) == (
            f"error: {liar.url} reports recent prices of {LIE:,} micro-lamports a compute unit "
            f"(the 75th percentile), above the default cap of {DEFAULT_MAX_COMPUTE_UNIT_PRICE:,} "
            "for --with-compute-unit-price auto (a node may lie about prices): pass "
            "--max-compute-unit-price N to pay at most N, or --with-compute-unit-price N; "
            "nothing was sent"
        )
        assert liar.sent == [] and balance(localnet.url, payer.pubkey()) == 10 * LAMPORTS_PER_SOL

        # With a cap of its own, auto pays that and no more: a clean publish (the same
        # transactions at price 0, by another payer) and one lamport a transaction, each
        # asking for at most 5,000 units at 10 micro-lamports a unit.
        clean = fund(localnet.url, 10)
        plain = ("-u", localnet.url, "-k", str(keyfile(clean, tmp_path)))
        zero = ("--with-compute-unit-price", "0")
        clean_cost = spent_on(localnet.url, clean, "publish", str(tiny_file), *plain, *zero)
        capped = ("--max-compute-unit-price", "10")
        code, plan, err = run_cli("publish", str(tiny_file), *via, *auto, *capped, "--dry-run")
        assert code == 0, err
        cost = spent_on(localnet.url, payer, "publish", str(tiny_file), *via, *auto, *capped)
        transactions = plan["plan"]["transactions"]
        assert cost == clean_cost + transactions
        assert cost == plan["plan"]["rent_lamports"] + plan["plan"]["fee_lamports"]
    finally:
        liar.stop()


def test_seal_close_and_run_read_an_auto_price_under_the_cap_too(
    localnet, fund, tmp_path, tiny_file
):
    payer = fund(localnet.url, 10)
    key = str(keyfile(payer, tmp_path))
    code, published, err = run_cli("publish", str(tiny_file), "-u", localnet.url, "-k", key)
    assert code == 0, err
    model = published["model"]
    held = balance(localnet.url, payer.pubkey())
    liar = FaultProxy(localnet.url).start()
    liar.lie_about_prices(LIE)
    try:
        via = ("-u", liar.url, "-k", key, "--with-compute-unit-price", "auto", "--yes")
        for command in (("seal", model), ("close", model)):
            done = run_plain(*command, *via)
            assert done.returncode == 1, (command, done.stderr)
            assert one_line(done.stderr).startswith(
                f"error: {liar.url} reports recent prices of {LIE:,} micro-lamports a compute "
                "unit (the 75th percentile), above the default cap"
            ), (command, done.stderr)
        assert liar.sent == [] and balance(localnet.url, payer.pubkey()) == held
        # With a cap, the seal pays it: its fees, shown before sending, at that price.
        done = run_plain("seal", model, *via, "--max-compute-unit-price", "10")
        assert done.returncode == 0, done.stderr
        assert (
            "  compute-unit price 10 micro-lamports (auto: the 75th percentile of recent "
            "blocks', at most 10), in the fees above" in done.stdout.splitlines()
        )
        shown = next(line for line in done.stdout.splitlines() if line.startswith("sealing "))
        fee = shown.split("fees ")[1].split(" SOL")[0]
        assert held - balance(localnet.url, payer.pubkey()) == int(fee.replace(".", ""))
        # And a run on chain of the sealed model stops before opening anything.
        sent = len(liar.sent)
        done = run_plain("run", model, "--on-chain", *via)
        assert done.returncode == 1 and one_line(done.stderr).startswith(
            f"error: {liar.url} reports recent prices of {LIE:,} micro-lamports"
        ), done.stderr
        assert len(liar.sent) == sent > 0
        # Under a cap, the run pays it, and closing the run says its price.
        capped = (*via, "--max-compute-unit-price", "10")
        code, ran, err = run_cli("run", model, "--on-chain", "-n", "3", *capped)
        assert code == 0, err
        done = run_plain("close-run", ran["run"], *capped)
        assert done.returncode == 0, done.stderr
        assert (
            "  compute-unit price 10 micro-lamports (auto: the 75th percentile of recent "
            "blocks', at most 10), in the fees above" in done.stdout.splitlines()
        )
    finally:
        liar.stop()


def test_a_node_inflating_fees_is_shown_and_never_paid(localnet, fund, tmp_path, tiny_file):
    liar = FaultProxy(localnet.url).start()
    liar.lie_about_fees(LIE)
    try:
        payer = fund(localnet.url, 10)
        key = str(keyfile(payer, tmp_path))
        code, honest, err = run_cli("publish", str(tiny_file), "-u", localnet.url, "-k", key,
                                    "--dry-run")  # fmt: skip
        assert code == 0, err
        code, told, err = run_cli("publish", str(tiny_file), "-u", liar.url, "-k", key,
                                  "--dry-run")  # fmt: skip
        assert code == 0, err
        assert told["plan"]["fee_lamports"] == honest["plan"]["fee_lamports"]
        fees = honest["plan"]["fee_lamports"]
        # Shown, where a person reads the plan: what the node says, and what is counted.
        shown = run_plain("publish", str(tiny_file), "-u", liar.url, "-k", key, "--dry-run")
        assert shown.returncode == 0, shown.stderr
        assert (
            f"{liar.url} says these transactions cost {LIE * honest['plan']['transactions']:,} "
            f"lamports in fees (getFeeForMessage); computed from their messages, as validators "
            f"charge: {fees:,}, which is what the plan counts"
        ) in shown.stderr
        assert f"fees {fees:,} lamports" in shown.stdout
        cost = spent_on(localnet.url, payer, "publish", str(tiny_file), "-u", liar.url, "-k", key)
        assert cost == honest["plan"]["rent_lamports"] + fees
    finally:
        liar.stop()


def test_a_loopback_node_with_a_genesis_hash_no_localnet_recorded_is_a_real_cluster(
    localnet, fund, tmp_path, tiny_file
):
    stranger = FaultProxy(localnet.url).start()
    stranger.lie_about_genesis(str(Hash.new_unique()))
    honest = FaultProxy(localnet.url).start()
    try:
        payer = fund(localnet.url, 10)
        key = str(keyfile(payer, tmp_path))
        # No built-in program id there...
        done = run_plain("publish", str(tiny_file), "-u", stranger.url, "-k", key)
        assert done.returncode == 1
        assert "so it is treated as a real cluster" in one_line(done.stderr)
        # ... and no spending without --yes (there is no terminal to ask on).
        named = ("--program-id", LOCALNET_PROGRAM_ID)
        done = run_plain("publish", str(tiny_file), "-u", stranger.url, "-k", key, *named)
        assert done.returncode == 1
        assert one_line(done.stderr).startswith(
            f"error: {stranger.url} is not a localnet and there is no terminal to confirm spending "
        )
        assert stranger.sent == [] and balance(localnet.url, payer.pubkey()) == 10 * 10**9
        # The same localnet through a proxy that tells the truth: this user's local cluster,
        # so neither --program-id nor --yes is needed.
        code, published, err = run_cli("publish", str(tiny_file), "-u", honest.url, "-k", key)
        assert code == 0, err
        code, sealed, err = run_cli("seal", published["model"], "-u", honest.url, "-k", key)
        assert code == 0 and sealed["state"] == "sealed", err
        # verify takes the program from the chain: the model's owner, checked.
        code, report, err = run_cli("verify", published["model"], str(tiny_file), "-u", honest.url)
        assert code == 0 and report["ok"] and report["artifact_compared"], err
        assert report["program"]["program_id"] == LOCALNET_PROGRAM_ID
    finally:
        stranger.stop()
        honest.stop()


@pytest.fixture
def sealed(localnet, fund, tmp_path, tiny_file) -> tuple[str, list[str], str]:
    """A sealed tiny model on the localnet: its address, weight accounts, authority's file."""
    key = str(keyfile(fund(localnet.url, 10), tmp_path))
    code, published, err = run_cli("publish", str(tiny_file), "-u", localnet.url, "-k", key)
    assert code == 0, err
    code, done, err = run_cli("seal", published["model"], "-u", localnet.url, "-k", key)
    assert code == 0 and done["state"] == "sealed", err
    return published["model"], published["weight_accounts"], key


def measured(*argv: str) -> tuple[int, str, int]:
    """Run the CLI; its exit code, its stderr (the measure taken off) and its peak RSS (kB)."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *argv],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    *said, last = done.stderr.splitlines(keepends=True)
    assert last.startswith("maxrss "), done.stderr
    return done.returncode, "".join(said), int(last.split()[1])


def section_reads(proxy: FaultProxy, accounts: list[str]) -> list[tuple[str, int]]:
    """The reads that asked for a weight account's section bytes (past its header)."""
    return [(a, at) for a, at in proxy.account_reads if a in accounts and at >= WEIGHT_HEADER_SIZE]


def test_a_2_50_byte_section_claim_is_refused_before_any_byte_is_read(localnet, sealed, tiny_file):
    model, weights, key = sealed
    liar = FaultProxy(localnet.url).start()
    # Slot 0's length (offset 160 of the model) and its weight header's (offset 80) agree on
    # 2^50 bytes: no binding check stands in the way, only the bound.
    liar.patch_account(model, 160, struct.pack("<Q", HUGE))
    liar.patch_account(weights[0], 80, struct.pack("<Q", HUGE))
    claim = f"section 0 length {HUGE:,} at offset 160 > 10,483,712 (the spec's largest section)"
    try:
        for argv in (
            ("verify", model, str(tiny_file)),
            ("verify", model, "--chain-only"),
            ("status", model),
            ("seal", model, "-k", key),
            ("publish", str(tiny_file), "-k", key),  # its derived model is this one
        ):
            code, err, peak = measured(*argv, "-u", liar.url)
            assert code == 1, (argv, err)
            assert one_line(err) == f"error: {model} is not a curta model: model account: {claim}"
            assert peak < MEMORY_BOUND_KB, (argv, peak)
        assert section_reads(liar, weights) == []
    finally:
        liar.stop()


def test_a_weight_account_claiming_2_50_bytes_or_another_length_is_never_read(
    localnet, sealed, tiny_file
):
    model, weights, _ = sealed
    liar = FaultProxy(localnet.url).start()
    liar.patch_account(weights[0], 80, struct.pack("<Q", HUGE))
    # The second's header and its slot disagree (the slot one byte longer), both in bounds.
    liar.patch_account(weights[1], 80, struct.pack("<Q", 100))
    try:
        code, err, peak = measured("verify", model, str(tiny_file), "-u", liar.url)
        assert code == 1 and peak < MEMORY_BOUND_KB, err
        code, report, err = run_cli("verify", model, str(tiny_file), "-u", liar.url)
        assert code == 1 and not report["ok"], err
        accounts = [d for d in report["differences"] if d["kind"] == "account"]
        assert [d["section"] for d in accounts] == [0, 1]
        assert accounts[0]["detail"] == (
            f"{weights[0]} is not a weight account: weight account: section length "
            f"{HUGE:,} at offset 80 > 10,483,712 (the spec's largest section)"
        )
        assert accounts[1]["detail"].startswith(f"{weights[1]} is bound to section 1 of {model}")
        code, status, err = run_cli("status", model, str(tiny_file), "-u", liar.url)
        assert code == 0, err
        assert [s["bytes_matching"] for s in status["sections"]] == [None, None]
        assert section_reads(liar, weights) == []
    finally:
        liar.stop()


def test_a_program_naming_another_programs_data_is_refused(fund, tmp_path, tiny_file):
    # The attacker's program, and a copy of the shipped build: the attacker's program account
    # (as a node reports it) names the copy's program data, whose bytes are a shipped build.
    node = start_in_thread(deactivate_features=V0_DEPLOYS)
    liar = FaultProxy(node.url).start()
    try:
        payer = fund(node.url, 20)
        standin = deploy_program(node.url, payer, STANDIN)
        copy = deploy_program(node.url, payer, CURTA)
        liar.patch_account(standin, 4, bytes(programdata_address(copy)))
        key = str(keyfile(payer, tmp_path))
        for url, why in (
            (node.url, "not a build shipped with curta-chain"),
            (
                liar.url,
                f"names {programdata_address(copy)} as its program data; the loader keeps it "
                f"at {programdata_address(standin)}",
            ),
        ):
            done = run_plain(
                "publish", str(tiny_file), "-u", url, "-k", key, "--program-id", str(standin)
            )
            assert done.returncode == 1 and why in one_line(done.stderr), done.stderr
        assert liar.sent == []
    finally:
        liar.stop()
        node.stop()

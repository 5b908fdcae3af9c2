"""Signers as the Solana CLI takes them, and ``keygen``."""

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from mnemonic import Mnemonic
from pty_helper import Terminal, curta
from solders.keypair import Keypair

from curta_chain.cli.keypairs import load_keypair, write_keypair
from curta_chain.cli.signers import (
    Signers,
    derivation_path,
    keypair_from_seed_phrase,
    ledger_unreachable,
)
from curta_chain.cli.solana_config import CliConfig
from curta_chain.errors import KeypairError

PHRASE = " ".join(["abandon"] * 11 + ["about"])


def run(*args: str, input: str | None = None, home: Path | None = None):
    env = None if home is None else {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run(curta(*args), capture_output=True, text=True, input=input, env=env)


def answers(*replies: str):
    """A terminal that types ``replies`` in turn, recording the prompts."""
    prompts: list[str] = []
    queue = list(replies)

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return queue.pop(0)

    return ask, prompts


def test_bip39_seed_is_the_standard_one():
    # BIP39's first test vector (passphrase TREZOR).
    assert Mnemonic.to_seed(PHRASE, "TREZOR").hex().startswith("c55257c360c07c72029aebc1b53c05ed")


def test_prompt_without_a_path_is_solana_keygen_new_s_keypair():
    ask, prompts = answers(PHRASE, "pass")
    keypair = Signers(ask=ask).keypair("prompt://", "--keypair")
    # solders' from_seed_phrase_and_passphrase is the Solana SDK's own derivation.
    assert keypair == Keypair.from_seed_phrase_and_passphrase(PHRASE, "pass")
    assert prompts[0] == "[keypair] seed phrase: "
    assert prompts[1].startswith("[keypair] If this seed phrase has an associated passphrase")


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ("prompt://?key=0/0", "m/44'/501'/0'/0'"),
        ("prompt://?key=3", "m/44'/501'/3'"),
        ("prompt:?full-path=m/44/501/1/2", "m/44'/501'/1'/2'"),
        ("prompt://", None),
        ("ASK", None),
    ],
)
def test_prompt_derivation_paths_are_hardened_as_ed25519_needs(spec, path):
    assert derivation_path(spec) == path


def test_a_derivation_path_gives_the_slip10_key():
    # SLIP-0010 ed25519 test vector 2 (its seed is 64 bytes, as BIP39's are), chain m/0'.
    seed = bytes.fromhex(
        "fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a2"
        "9f9c999693908d8a8784817e7b7875726f6c696663605d5a5754514e4b484542"
    )
    derived = Keypair.from_seed_and_derivation_path(seed, "m/0'")
    assert bytes(derived)[:32].hex() == (
        "1559eb2bbec5790b0c65d8693e4d0875b1747f4970ae8b650486ed7470845635"
    )
    ask, _ = answers(PHRASE, "")
    via_prompt = Signers(ask=ask).keypair("prompt://?key=0/0")
    expected = Keypair.from_seed_and_derivation_path(
        Mnemonic.to_seed(PHRASE, ""), "m/44'/501'/0'/0'"
    )
    assert via_prompt == expected != keypair_from_seed_phrase(PHRASE)


@pytest.mark.parametrize("spec", ["prompt://?key=a/0", "prompt://?kee=0", "prompt:?full-path=44/0"])
def test_a_bad_derivation_is_refused(spec):
    with pytest.raises(KeypairError, match="--keypair prompt"):
        derivation_path(spec)


def test_a_seed_phrase_with_a_bad_checksum_is_refused_unless_told_to_skip():
    bad = PHRASE.replace("about", "abandon")
    ask, _ = answers(bad, "")
    with pytest.raises(KeypairError, match="not a valid BIP39 seed phrase"):
        Signers(ask=ask).keypair("prompt://")
    ask, _ = answers(bad, "")
    skipped = Signers(skip_seed_phrase_validation=True, ask=ask).keypair("prompt://")
    assert skipped == Keypair.from_seed_phrase_and_passphrase(bad, "")


def test_a_signer_is_asked_for_once():
    ask, prompts = answers(PHRASE, "")
    signers = Signers(ask=ask)
    assert signers.keypair("prompt://") == signers.keypair("prompt://", "--fee-payer")
    assert len(prompts) == 2


def test_stdin_and_file_signers(tmp_path):
    keypair = Keypair()
    assert Signers(stdin=lambda: json.dumps(list(bytes(keypair)))).keypair("stdin") == keypair
    with pytest.raises(KeypairError, match="--keypair stdin: not a keypair"):
        Signers(stdin=lambda: "[1, 2]").keypair("stdin")
    write_keypair(keypair, tmp_path / "id.json")
    assert Signers().keypair(f"file://{tmp_path / 'id.json'}") == keypair
    assert Signers().keypair(str(tmp_path / "id.json")) == keypair
    with pytest.raises(KeypairError, match=r"unknown signer scheme s3://"):
        Signers().keypair("s3://bucket/id.json")


def test_the_default_signer_is_the_config_s_keypair(tmp_path):
    keypair = Keypair()
    write_keypair(keypair, tmp_path / "mine.json")
    signers = Signers(CliConfig(keypair_path=str(tmp_path / "mine.json")))
    assert signers.keypair(None) == keypair


def test_a_recipient_is_an_address_or_a_signer(tmp_path):
    keypair = Keypair()
    write_keypair(keypair, tmp_path / "id.json")
    address = Keypair().pubkey()
    assert Signers().pubkey(str(address), "recipient") == address
    assert Signers().pubkey(str(tmp_path / "id.json"), "recipient") == keypair.pubkey()


def test_usb_ledger_says_plainly_it_cannot_be_reached(tmp_path):
    with pytest.raises(KeypairError) as refused:
        Signers().keypair("usb://ledger", "--keypair")
    assert str(refused.value).startswith("--keypair usb://ledger: ")
    assert "hardware wallet" in str(refused.value)
    # Where a Ledger is plugged in (vendor 2c97), it says that, and that it cannot sign.
    device = tmp_path / "1-1"
    device.mkdir()
    (device / "idVendor").write_text("2c97\n")
    assert ledger_unreachable(tmp_path).startswith("a Ledger is plugged in, but")
    assert ledger_unreachable(tmp_path / "none").startswith("no Ledger can be reached")


def test_usb_ledger_through_the_cli_is_one_line(tmp_path):
    out = run("airdrop", "1", "-k", "usb://ledger", "-u", "http://127.0.0.1:9")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("error: --keypair usb://ledger: ") and out.stderr.count("\n") == 1


def test_keygen_new_writes_an_owner_only_keypair_its_phrase_recovers(tmp_path):
    path = tmp_path / "id.json"
    out = run("keygen", "new", "-o", str(path), "--no-bip39-passphrase", "--output", "json")
    made = json.loads(out.stdout)
    keypair = load_keypair(path)
    assert made["pubkey"] == str(keypair.pubkey()) and made["outfile"] == str(path)
    assert keypair == keypair_from_seed_phrase(made["seed_phrase"])
    assert len(made["seed_phrase"].split()) == 12
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # It refuses to overwrite without --force, naming the file.
    again = run("keygen", "new", "-o", str(path), "--no-bip39-passphrase")
    assert again.returncode == 1
    assert again.stderr == f"error: {path}: refusing to overwrite it without --force\n"
    forced = run("keygen", "new", "-o", str(path), "--force", "--word-count", "24", "-s")
    assert forced.returncode == 0 and forced.stdout == ""
    assert load_keypair(path) != keypair
    # keygen pubkey reads a file, or stdin.
    assert run("keygen", "pubkey", str(path)).stdout.strip() == str(load_keypair(path).pubkey())
    piped = run("keygen", "pubkey", "stdin", input=path.read_text())
    assert piped.stdout.strip() == str(load_keypair(path).pubkey())


def test_keygen_new_defaults_to_the_solana_cli_keypair_path(tmp_path):
    out = run("keygen", "new", "--no-bip39-passphrase", home=tmp_path)
    default = tmp_path / ".config" / "solana" / "id.json"
    assert out.returncode == 0, out.stderr
    assert f"Wrote new keypair to {default}" in out.stdout
    assert f"pubkey: {load_keypair(default).pubkey()}" in out.stdout
    printed = run("keygen", "new", "--no-outfile", home=tmp_path).stdout
    assert len(json.loads(printed)) == 64


def test_a_missing_default_keypair_says_how_to_make_one(tmp_path):
    out = run("airdrop", "1", "-u", "http://127.0.0.1:9", home=tmp_path)
    default = tmp_path / ".config" / "solana" / "id.json"
    assert out.stderr == (
        f"error: {default}: no such keypair file; make one with "
        f"`curta-chain keygen new -o {default}`\n"
    )


def test_prompt_signer_at_a_real_terminal(tmp_path):
    terminal = Terminal(curta("keygen", "pubkey", "prompt://?key=0/0"))
    terminal.expect("[signer] seed phrase: ")
    terminal.send(PHRASE + "\n")
    terminal.expect("press ENTER to continue: ")
    terminal.send("\n")
    out = terminal.finish(60)
    expected = Keypair.from_seed_and_derivation_path(
        Mnemonic.to_seed(PHRASE, ""), "m/44'/501'/0'/0'"
    ).pubkey()
    assert terminal.process.returncode == 0, out
    assert str(expected) in out
    assert "abandon" not in out  # typed without echo


def test_keygen_recover_writes_the_phrase_s_keypair(tmp_path):
    path = tmp_path / "recovered.json"
    terminal = Terminal(curta("keygen", "recover", "-o", str(path)))
    terminal.expect("seed phrase: ")
    terminal.send(PHRASE + "\n")
    terminal.expect("press ENTER to continue: ")
    terminal.send("TREZOR\n")
    out = terminal.finish(60)
    assert terminal.process.returncode == 0, out
    assert load_keypair(path) == Keypair.from_seed_phrase_and_passphrase(PHRASE, "TREZOR")


def test_keygen_new_asks_for_a_passphrase_at_a_terminal(tmp_path):
    path = tmp_path / "id.json"
    terminal = Terminal([sys.executable, "-m", "curta_chain", "keygen", "new", "-o", str(path)])
    terminal.expect("BIP39 Passphrase (empty for none): ")
    terminal.send("secret words\n")
    out = terminal.finish(60)
    phrase = out.split("recover your new keypair:")[1].split()[0:12]
    assert load_keypair(path) == keypair_from_seed_phrase(" ".join(phrase), "secret words")

"""A new user's first hour (issue 24), against the embedded localnet over HTTP.

Money is said before it is spent: a payer who cannot pay is refused in one line with the
shortfall by every command that spends (dry runs too), and nothing is spent; seal says
it is final and what rent it locks; models and status show a model's whole balance and
status draws its sections to scale. Program resolution survives a fresh localnet and
follows a model's owner. The run on chain says its rent and ends saying the mirror
checked it.
"""

import json
import re
from pathlib import Path

import pytest
from chain_helpers import land
from pty_helper import Terminal, curta
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from test_chain_cli import User

from curta_chain.cli import main
from curta_chain.cli.solana_config import record_program_id
from curta_chain.constants import LOCALNET_PROGRAM_ID
from curta_chain.reporting import sol


@pytest.fixture
def art(tmp_path, stories260k) -> Path:
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    return path


def shortfall(payer: Pubkey, doing: str) -> str:
    """The one line of a refusal for funds."""
    return (
        rf"^error: payer {payer} has 0\.000000000 SOL; {doing} \d+\.\d{{9}} SOL \(short by "
        r"\d+\.\d{9} SOL\); nothing was sent\n$"
    )


def test_money_is_said_before_it_is_spent(capsys, localnet, fund, tmp_path, art):
    user = User(capsys, localnet.url, tmp_path, fund(localnet.url, 100))
    poor = User(capsys, localnet.url, tmp_path, Keypair())
    poor_key = poor.keypair.pubkey()

    # A dry run the payer cannot pay: the plan, then the shortfall, and exit 1.
    code, out, err = poor("publish", str(art), "--dry-run")
    assert code == 1 and out.startswith("Plan for model"), err
    assert "the rent (2." in out and "comes back on `curta-chain close`" in out
    assert re.match(shortfall(poor_key, "publishing costs"), err), err

    # A deploy says which rent stays with the program and which comes back.
    code, out, err = user("deploy", "--dry-run", "-C", str(tmp_path / "dry.yml"))
    assert code == 0 and re.search(
        r"^cost: \d+\.\d{9} SOL \(rent [\d,]+ that stays with the program \+ fees [\d,]+ "
        r"lamports; the buffer's rent comes back at the deploy\)$",
        out,
        re.MULTILINE,
    ), out + err

    model = user.json("publish", str(art))["model"]
    before = user.balance()
    for argv, doing in (
        (("seal", model, str(art)), "sealing needs"),
        (("close", model), "closing needs"),
    ):
        code, out, err = user(*argv, "--fee-payer", str(poor.path))
        assert code == 1 and re.match(shortfall(poor_key, doing), err), (argv, err)
    assert user.balance() == before and poor.balance() == 0
    held = sol(user.json("status", model)["lamports"])
    assert f"weight accounts: their {held} of rent comes back to {user.keypair.pubkey()}" in out

    # What is uploaded, to scale (every byte, open), and the whole balance.
    status = user.json("status", model, str(art))
    assert status["state"] == "uploading"
    code, out, _ = user("status", model, str(art))
    bar = next(line for line in out.splitlines() if line.startswith("Sections:"))
    assert re.fullmatch(r"Sections: +\[\++\|\++\]", bar) and len(bar) <= 80, bar
    balance = sol(status["lamports"]).removesuffix(" SOL")
    code, out, _ = user("models")
    assert code == 0 and re.search(rf"^{model} +uploading +2 +{balance}$", out, re.MULTILINE)

    # Seal says it is final, and how much rent that locks, before it sends.
    code, out, err = user("seal", model, str(art))
    assert code == 0, err
    assert (
        f"sealing is final: a sealed model can never be closed, so its {sol(status['lamports'])} "
        "of rent (the model and 2 weight accounts) is locked for good"
    ) in out
    sealed = user.json("status", model)
    assert [s["bytes_sealed"] for s in sealed["sections"]] == [68_536, 288_704]
    code, out, _ = user("status", model)
    assert re.search(r"^Sections: +\[#+\|#+\]$", out, re.MULTILINE), out

    # A run on chain the payer cannot open: one line, nothing spent.
    code, out, err = poor("run", model, "--on-chain", "--prompt", "hi", "--steps", "1")
    need = r"opening the run \(its rent\) and its \d+ steps \(their fees\) need"
    assert code == 1 and out == "" and re.match(shortfall(poor_key, need), err), err

    # A run on chain says the rent it locks, and ends on the mirror's check; greedy: no seed.
    code, out, err = user(
        "run", model, "--on-chain", "--prompt", "hi", "--steps", "2", "--temperature", "0"
    )
    assert code == 0, err
    assert re.search(
        rf"^opening a run account of [\d,]+ bytes on {model} \(its rent comes back when the run "
        r"is closed\), plus a fee for each step: rent \d+\.\d{9} SOL$",
        err,
        re.MULTILINE,
    ), err
    assert "seed" not in err and "; greedy" in err
    assert err.splitlines()[-1] == (
        "the chain's 2 tokens equal the off-chain integer core's: the mirror checked every step"
    )

    # The run account is kept: anyone lists an opener's runs and their rent; its opener
    # closes it, and the rent comes back.
    opener = user.keypair.pubkey()
    (kept,) = poor.json("runs", "--opener", str(opener))["runs"]
    assert kept["model"] == model and kept["state"] == "finished", kept
    code, out, _ = user("runs")
    assert code == 0 and out.splitlines()[-1] == (
        f"1 run of {opener}, holding {sol(kept['rent_lamports'])} of rent: "
        "`curta-chain close-run RUN` gives a run's back"
    )
    # An opener left without the closing fee is told so before anything is sent. (It sends
    # away all it has but the fee: the runtime lets an account go to zero, never below its
    # rent-exempt minimum.)
    away = Keypair()
    land(user.url, user.keypair, pay(opener, away.pubkey(), user.balance() - 5_000))
    code, out, err = user("close-run", kept["run"])
    assert (code, out, err) == (
        1,
        "",
        f"error: payer {opener} has 0.000000000 SOL; closing the run needs 0.000005000 SOL "
        "(short by 0.000005000 SOL); nothing was sent\n",
    )
    assert user.balance() == 0
    land(user.url, away, pay(away.pubkey(), opener, user.balance(away.pubkey()) - 5_000))
    before = user.balance()
    code, out, err = user("close-run", kept["run"])
    assert code == 0 and out.startswith(
        f"closed run {kept['run']} (finished: {kept['finish']}, "
        f"{kept['generated_tokens']} tokens generated): "
        f"{sol(kept['rent_lamports'])} of rent back to {opener}\n"
    ), out + err
    assert user.balance() == before + kept["rent_lamports"] - 5_000
    assert poor.json("runs", "--opener", str(opener))["runs"] == []


def pay(source: Pubkey, to: Pubkey, lamports: int) -> Instruction:
    return transfer(TransferParams(from_pubkey=source, to_pubkey=to, lamports=lamports))


def test_a_deploy_on_one_localnet_is_recorded_for_that_chain_alone(
    capsys, localnet, fund, tmp_path, art
):
    user = User(capsys, localnet.url, tmp_path, fund(localnet.url, 100))
    model = user.json("publish", str(art))["model"]
    # Another localnet's deploy is recorded under that chain's own genesis hash: it does not
    # apply here, where the program this localnet preloads is used, with nothing to say.
    config = tmp_path / "config.yml"
    record_program_id(config, str(Hash.new_unique()), str(Keypair().pubkey()))
    code, out, err = user("status", model, "-C", str(config))
    assert code == 0 and f"Program:        {LOCALNET_PROGRAM_ID}" in out and err == "", err

    # A deploy on this ledger: reads of a model under the preloaded program follow its owner.
    deployed = tmp_path / "deployed.yml"
    program = user.json("deploy", "-C", str(deployed))["program_id"]
    assert program != LOCALNET_PROGRAM_ID
    code, out, err = user("status", model, "-C", str(deployed))
    assert code == 0 and f"Program:        {LOCALNET_PROGRAM_ID}" in out, err
    assert err == (
        f"{model} belongs to program {LOCALNET_PROGRAM_ID} (a shipped build), not {program}: "
        "using that program\n"
    )
    code, out, err = user("verify", model, str(art), "-C", str(deployed), keypair=False)
    assert code == 1 and out.startswith(f"NOT verified {model}: 1 problem"), err  # unsealed
    # Lists show what was published before the deploy, under the program the ledger preloads.
    (listed,) = user.json("models", "-C", str(deployed))["models"]
    assert (listed["model"], listed["program"]) == (model, LOCALNET_PROGRAM_ID)
    # So do the commands that act on it: seal, a run on chain, close.
    follows = (
        f"{model} belongs to program {LOCALNET_PROGRAM_ID} (a shipped build), not {program}: "
        "using that program"
    )
    code, out, err = user("seal", model, str(art), "-C", str(deployed))
    assert code == 0 and err.splitlines()[0] == follows and f"sealed {model}" in out, err
    code, out, err = user(
        "run", model, "--on-chain", "--prompt", "hi", "--steps", "1", "-t", "0", "-C", str(deployed)
    )
    assert code == 0 and err.splitlines()[0] == follows, err
    assert re.search(r"^run \w+: 1 token, finished by", err, re.MULTILINE), err
    (kept,) = user.json("runs", "-C", str(deployed))["runs"]
    assert (kept["model"], kept["program"]) == (model, LOCALNET_PROGRAM_ID)
    assert err.splitlines()[-1] == (
        "the chain's 1 token equals the off-chain integer core's: the mirror checked every step"
    )
    other = User(capsys, localnet.url, tmp_path, fund(localnet.url, 10))
    unsealed = other.json("publish", str(art))["model"]
    code, out, err = other("close", unsealed, "-C", str(deployed))
    assert code == 0 and err.splitlines()[0] == follows.replace(model, unsealed), err
    assert other.json("models")["models"] == []
    # Named on the command line, the program is used as named.
    code, _, err = user("status", model, "--program-id", program)
    assert code == 1 and err.startswith(f"error: {model} is not a curta model: owned by "), err


def test_inspect_draws_the_sections_to_scale(capsys, art):
    assert main(["inspect", str(art)]) == 0
    (bar,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("to scale")]
    # 68,536 and 288,704 bytes: about a fifth and four fifths of 61 columns.
    assert bar == f"to scale       [{'0' * 12}|{'1' * 49}]" and len(bar) <= 80


def test_control_bytes_the_model_says_are_left_out_of_the_text(capsys, art):
    # Seed 8 at temperature 1.5 makes stories260K say an escape, as a person may meet one.
    argv = ["run", str(art), "-i", "hi", "-n", "8", "-t", "1.5", "-p", "0", "-s", "8"]
    assert main([*argv, "--output", "json"]) == 0
    said = json.loads(capsys.readouterr().out)["text"]
    assert "\x1b" in said
    assert main(argv) == 0
    shown = capsys.readouterr().out
    assert shown == "".join(c for c in said if c.isprintable() or c in "\t\n") + "\n"


def test_run_on_a_terminal_streams_the_text_then_ends_its_line(tmp_path, art):
    # As a person at an 80-column terminal: the text, then the summary on a line of its own.
    argv = curta("run", str(art), "--prompt", "Once upon a time", "--steps", "12")
    terminal = Terminal([*argv, "--temperature", "0"], columns=80, cwd=tmp_path)
    shown = terminal.finish()
    assert terminal.process.returncode == 0, shown
    text, summary = shown.rstrip("\r\n").rsplit("\r\n", 1)
    assert text.lstrip().startswith("Once upon a time") and "\x1b" not in text
    assert re.fullmatch(r"12 tokens \(.*\), greedy, stopped by the step count", summary), summary

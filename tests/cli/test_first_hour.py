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
import shlex
import shutil
import socket
import stat
import subprocess
import sys
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
from curta_chain.cli.keypairs import load_keypair, write_keypair
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


# Hints work when followed: each one below is run as it is printed.


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``curta-chain ARGS`` as a process, as a person types it (HOME is the test's own)."""
    return subprocess.run(
        [sys.executable, "-m", "curta_chain", *args],
        capture_output=True, text=True, timeout=300, cwd=cwd,
    )  # fmt: skip


def quoted_command(stderr: str) -> list[str]:
    """The words of the first `curta-chain ...` command a message quotes, without the name."""
    found = re.search(r"`curta-chain ([^`]+)`", stderr)
    assert found, stderr
    return shlex.split(found[1])


def test_keygen_makes_the_folders_it_writes_into(tmp_path):
    path = tmp_path / "new" / "sub" / "id.json"
    done = cli("keygen", "new", "-o", str(path), "--no-bip39-passphrase")
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f"pubkey: {load_keypair(path).pubkey()}" in done.stdout
    # A file where a folder would go: one line naming it.
    (tmp_path / "a-file").write_text("")
    done = cli("keygen", "new", "-o", str(tmp_path / "a-file" / "id.json"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"error: {tmp_path / 'a-file'}: not a folder (a file has that name)\n"


def test_the_no_keypair_hint_works_on_a_machine_without_the_solana_cli(
    localnet, own_home, tmp_path, art
):
    here = tmp_path / "work"
    here.mkdir()
    assert not (own_home / ".config").exists()  # as where the Solana CLI never ran
    done = cli("publish", str(art), "-u", localnet.url, "--dry-run", cwd=here)
    default = own_home / ".config" / "solana" / "id.json"
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"error: {default}: no such keypair file; make one with "
        f"`curta-chain keygen new -o {default}`\n"
    )
    made = cli(*quoted_command(done.stderr), "--no-bip39-passphrase", cwd=here)
    assert made.returncode == 0, made.stderr
    assert cli("airdrop", "10", "-u", localnet.url, cwd=here).returncode == 0
    done = cli("publish", str(art), "-u", localnet.url, "--dry-run", cwd=here)
    assert done.returncode == 0 and done.stdout.startswith("Plan for model"), done.stderr


def test_a_keypair_in_this_folder_is_offered_with_k(localnet, fund, own_home, tmp_path, art):
    mine = fund(localnet.url, 10)
    write_keypair(mine, tmp_path / "my key.json")
    (tmp_path / "other.json").write_text('{"not": "a keypair"}')
    done = cli("publish", str(art), "-u", localnet.url, "--dry-run", cwd=tmp_path)
    default = own_home / ".config" / "solana" / "id.json"
    assert done.stderr == (
        f"error: {default}: no such keypair file; make one with "
        f"`curta-chain keygen new -o {default}`, or pass the one in this folder: "
        "-k 'my key.json'\n"
    )
    offered = shlex.split(done.stderr.rsplit(": ", 1)[1])
    done = cli("publish", str(art), "-u", localnet.url, "--dry-run", *offered, cwd=tmp_path)
    assert done.returncode == 0 and f"paid by {mine.pubkey()}" in done.stdout, done.stderr


def test_models_without_a_keypair_names_authority_and_all(localnet, fund, own_home, tmp_path, art):
    publisher = fund(localnet.url, 100)
    write_keypair(publisher, tmp_path / "publisher.json")
    published = cli("publish", str(art), "-u", localnet.url, "-k", str(tmp_path / "publisher.json"))
    assert published.returncode == 0, published.stderr
    model = re.search(r"^Model: (\w+)$", published.stdout, re.MULTILINE)[1]
    here = tmp_path / "empty"
    here.mkdir()
    done = cli("models", "-u", localnet.url, cwd=here)
    default = own_home / ".config" / "solana" / "id.json"
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"error: {default}: no such keypair file; make one with "
        f"`curta-chain keygen new -o {default}`; or list another address's models with "
        "--authority ADDRESS, or every model with --all\n"
    )
    for choice in (["--authority", str(publisher.pubkey())], ["--all"]):
        done = cli("models", "-u", localnet.url, *choice, cwd=here)
        assert done.returncode == 0 and re.search(rf"^{model} +uploading", done.stdout, re.M)
    # With a keypair of no models: the same two ways to the others'.
    default.parent.mkdir(parents=True)
    write_keypair(Keypair(), default)
    done = cli("models", "-u", localnet.url, cwd=here)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "--authority ADDRESS lists another address's, --all every model"
    )


def test_the_hint_of_a_refused_localhost_url_starts_a_node_there(localnet_process, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    write_keypair(Keypair(), tmp_path / "id.json")
    done = cli("models", "-u", url, "-k", str(tmp_path / "id.json"))
    assert done.returncode == 1 and "connection refused" in done.stderr
    hint = quoted_command(done.stderr)
    assert hint == ["localnet", "--port", str(port)]
    localnet_process(port=port)  # `curta-chain localnet --port PORT`, as the hint says
    done = cli("models", "-u", url, "-k", str(tmp_path / "id.json"))
    assert done.returncode == 0 and done.stdout.startswith("no models of "), done.stderr


def test_the_convert_hint_of_a_checkpoint_makes_the_artifact(data_dir, tok512_bytes, tmp_path):
    checkpoint = tmp_path / "ckpt.bin"
    checkpoint.write_bytes((data_dir / "stories260K.bin").read_bytes())
    done = cli("inspect", str(checkpoint), cwd=tmp_path)
    assert done.returncode == 1
    words = quoted_command(done.stderr)
    assert words == ["convert", str(checkpoint), "TOKENIZER", "-o", "OUT.curta"]
    tokenizer = tmp_path / "tok512.bin"
    tokenizer.write_bytes(tok512_bytes)
    made = cli(*[str(tokenizer) if w == "TOKENIZER" else w for w in words], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert cli("inspect", "OUT.curta", cwd=tmp_path).returncode == 0


def test_a_run_s_story_ends_its_line_when_stdout_and_stderr_share_a_file(
    localnet, fund, tmp_path, art
):
    write_keypair(fund(localnet.url, 100), tmp_path / "id.json")
    via = ["-u", localnet.url, "-k", str(tmp_path / "id.json")]
    published = cli("publish", str(art), *via)
    model = re.search(r"^Model: (\w+)$", published.stdout, re.MULTILINE)[1]
    assert cli("seal", model, str(art), *via).returncode == 0
    log = tmp_path / "run.log"
    with log.open("w") as both:  # `> run.log 2>&1`
        done = subprocess.run(
            [sys.executable, "-m", "curta_chain", "run", model, "--on-chain", "-i", "hi",
             "--steps", "3", "-t", "0", "--close-run", *via],
            stdout=both, stderr=both, timeout=300,
        )  # fmt: skip
    lines = log.read_text().splitlines()
    assert done.returncode == 0, lines
    closed = next(i for i, line in enumerate(lines) if "closed run" in line)
    assert lines[closed].startswith("closed run "), lines  # not after the story's last word
    assert lines[closed - 1].lstrip().startswith("hi") and lines[closed + 1].startswith("Run: "), (
        lines
    )
    # To a file of its own, the story is one line that ends with a newline.
    done = subprocess.run(
        [sys.executable, "-m", "curta_chain", "run", model, "--on-chain", "-i", "hi",
         "--steps", "3", "-t", "0", "--close-run", *via],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    story = done.stdout.split("Run: ")[0]
    assert story.lstrip().startswith("hi") and story.count("\n") == 1 and story.endswith("\n")


REPO = Path(__file__).resolve().parents[2]


def readme_workflow() -> list[str]:
    """The lines of the README's localnet workflow (its second block: the first starts a node)."""
    text = (REPO / "README.md").read_text()
    section = text.split("## The workflow on the localnet", 1)[1].split("\n## ", 1)[0]
    _, workflow = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    return [line for line in workflow.splitlines() if line.strip()]


def test_the_readme_workflow_leaves_nothing_for_git_add(localnet, tmp_path):
    # A checkout of the files the workflow touches: the README, .gitignore, the demo model.
    checkout = tmp_path / "checkout"
    for name in ("README.md", ".gitignore", "curta_chain/demo/model.bin",
                 "curta_chain/demo/tokenizer.bin"):  # fmt: skip
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, checkout / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(checkout)]
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "checkout"], check=True)
    # Each line as a person runs it from the checkout (`-u l` is this test's localnet).
    here, model, said = checkout, None, ""
    for line in readme_workflow():
        for words in split_commands(shlex.split(line, comments=True)):
            if words[0] == "cd":
                here = here / words[1]
                continue
            if words[0] == "curta-chain":
                words = [sys.executable, "-m", "curta_chain", *words[1:]]
                words = [localnet.url if w == "l" and p == "-u" else w
                         for p, w in zip(["", *words[:-1]], words, strict=True)]  # fmt: skip
                words = [model if w == "ADDRESS" else w for w in words]
            done = subprocess.run(words, cwd=here, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, (line, done.stderr)
            said = done.stdout + done.stderr
            found = re.search(r"^Model: (\w+)$", done.stdout, re.MULTILINE)
            model = found[1] if found else model
    # The last line is the promised 12-token run on chain.
    assert re.search(r"^run \w+: 12 tokens, finished by capacity", said, re.MULTILINE), said
    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True,
                            text=True, check=True)  # fmt: skip
    assert status.stdout == ""
    assert (here / "id.json").is_file() and (here / "demo.curta").is_file()
    # Where `localnet --validator` puts its ledger (test-ledger in the folder it runs in).
    for folder in (checkout, here):
        ledger = folder / "test-ledger" / "validator.log"
        ledger.parent.mkdir()
        ledger.write_text("")
    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""


def split_commands(words: list[str]) -> list[list[str]]:
    """``a b && c d`` as ``[[a, b], [c, d]]``."""
    commands: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            commands.append([])
        else:
            commands[-1].append(word)
    return [c for c in commands if c]

"""The command line itself: usage errors, abbreviations, suggestions, help, --output."""

import argparse
import json
import subprocess
import sys

import pytest

from curta_chain.cli import build_parser, main


def run(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "curta_chain", *args], capture_output=True, text=True, **kwargs
    )


def subcommands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> dict[str, argparse.ArgumentParser]:
    """Every leaf command's parser by its full name ("keygen new", "publish", ...)."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                inner = subcommands(sub, f"{prefix}{name} ")
                found.update(inner or {f"{prefix}{name}": sub})
    return found


COMMANDS = subcommands(build_parser())


def test_help_lists_the_program_name_and_every_command():
    out = run("--help", check=True).stdout
    assert "curta-chain" in out
    for name in ("keygen", "convert", "publish", "seal", "verify", "status", "models", "close"):
        assert f"    {name} " in out


def test_a_usage_error_is_one_line_and_exit_2():
    out = run("seal", "X", "--commitment", "bogus")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        "error: curta-chain seal: no choice for --commitment 'bogus'; expected one of "
        "processed, confirmed, finalized (see --help)\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pubish", "x.curta"], "error: curta-chain: no command 'pubish'; did you mean 'publish'?"),
        (["veriffy"], "error: curta-chain: no command 'veriffy'; did you mean 'verify'?"),
        (["keygen", "nwe"], "error: curta-chain keygen: no command 'nwe'; did you mean 'new'?"),
        (
            ["publish", "x.curta", "--dryrun"],
            "error: curta-chain publish: unrecognized option '--dryrun'; did you mean '--dry-run'?",
        ),
        (
            ["seal", "M", "--fee-payr", "x.json"],
            "seal: unrecognized option '--fee-payr'; did you mean '--fee-payer'?",
        ),
        (["status", "M", "--output", "jsn"], "'jsn'; did you mean 'json'?"),
    ],
)
def test_a_typo_is_answered_with_the_nearest_command_or_option(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # An unknown option comes before the required one it was meant to be.
        (["run", "m.curta", "--promt", "hi"], "'--promt'; did you mean '--prompt'?"),
        (["run", "--promt", "hi"], "'--promt'; did you mean '--prompt'?"),
        # A prefix of one option is that option, not the nearest spelling (--steps).
        (["run", "m.curta", "--prompt", "x", "--temp", "0"], "did you mean '--temperature'?"),
        # llama2.c's habits: run takes -i -n -t -p -s (tests/test_demo_model.py), not -z.
        (["run", "m.curta", "-z", "t.bin"], "-z is the tokenizer: the artifact holds its"),
        (["publish", "m.curta", "-z", "t.bin"], "-z is the tokenizer: the artifact holds its"),
        # --output (the format) inside -o/--output-file: its choices, and the other option.
        (
            ["convert", "a.bin", "b.bin", "--output", "x.curta"],
            "no choice for --output 'x.curta'; expected one of display, json, json-compact "
            "(or did you mean -o/--output-file?)",
        ),
    ],
)
def test_a_habit_or_typo_is_named_before_what_is_missing(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and err.count("\n") == 1, err
    assert "required" not in err


def test_minus_p_is_the_top_p_and_says_where_the_prompt_goes(capsys):
    # As llama2.c's run.c: -p is the top-p; a person who meant the prompt is told so.
    assert main(["run", "m.curta", "-p", "hi"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (
        "error: --top-p 'hi': expected a decimal number; -p is llama2.c's top-p: the prompt "
        "is -i or --prompt\n"
    )


def test_options_are_never_abbreviated(capsys, tmp_path):
    # --output is not an abbreviation of --output-file, nor --dry of --dry-run.
    with pytest.raises(SystemExit):
        main(["publish", "x.curta", "--dry"])
    assert "unrecognized option '--dry'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["convert", "a.bin", "b.bin", "-o", str(tmp_path / "y"), "--output-f", "x"])
    assert "unrecognized option '--output-f'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_takes_the_three_output_formats(name):
    actions = {a.dest: a for a in COMMANDS[name]._actions}
    assert list(actions["output"].choices) == ["display", "json", "json-compact"], name
    assert actions["output"].default == "display"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_argument_of_every_command_has_help(name):
    parser = COMMANDS[name]
    assert parser.description, f"{name} has no description"
    for action in parser._actions:
        assert action.help, f"{name}: {action.dest} has no help"


def test_the_url_help_names_the_monikers_and_their_letters():
    (url,) = [a for a in COMMANDS["publish"]._actions if a.dest == "url"]
    assert "[mainnet-beta, testnet, devnet, localhost]" in url.help
    assert "[m, t, d, l]" in url.help


def test_a_named_config_file_that_does_not_exist_is_an_error(tmp_path):
    out = run("status", "11111111111111111111111111111111", "-C", str(tmp_path / "nosuch.yml"))
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == f"error: {tmp_path / 'nosuch.yml'}: no such Solana CLI config file (-C)\n"


def test_hash_and_convert_take_output_json(tmp_path, stories260k_bytes, tok512_bytes):
    checkpoint, tokenizer = tmp_path / "m.bin", tmp_path / "t.bin"
    checkpoint.write_bytes(stories260k_bytes)
    tokenizer.write_bytes(tok512_bytes)
    art = tmp_path / "m.curta"
    out = run("convert", str(checkpoint), str(tokenizer), "-o", str(art), "--output", "json")
    converted = json.loads(out.stdout)
    assert converted["output_file"] == str(art) and art.is_file()
    assert not (tmp_path / "json").exists()
    pretty = run("hash", str(art), "--output", "json").stdout
    compact = run("hash", str(art), "--output", "json-compact").stdout
    assert pretty.count("\n") > 1 and compact.count("\n") == 1
    assert (
        json.loads(pretty)
        == json.loads(compact)
        == {
            "artifact": str(art),
            "weights_hash": converted["weights_hash"],
        }
    )

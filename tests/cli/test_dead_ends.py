"""No dead ends, no words to decode (issue 30, items 5 to 12), each as the user meets it.

Every command runs as a process against the embedded localnet over HTTP: global options
before the command, run.c's ``-n``, hints that work pasted as is, what status and seal say
next, the signatures of a run on chain and of a publish, messages in plain words (no
Python reprs, errno strings, library tracebacks; thousands separated, plurals right),
signers that are neither address nor file, and convert's ``--cut-tokenizer``.
"""

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import processes
import pytest
from solders.keypair import Keypair

from curta_chain.artifact import convert_llama2c, write_artifact
from curta_chain.cli.keypairs import write_keypair
from curta_chain.demo import DEMO_MODEL, DEMO_TOKENIZER
from curta_chain.inference.tokenizer import STOP_TOKENS


def curta(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess[str]:
    """Run ``curta-chain ARGS`` as a process, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "curta_chain", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def landed(url: str, signature: str) -> bool:
    # solana-py 0.41 has no synchronous client: the JSON-RPC call itself.
    request = {"jsonrpc": "2.0", "id": 1, "method": "getSignatureStatuses", "params": [[signature]]}
    (status,) = httpx.post(url, json=request).json()["result"]["value"]
    return status is not None and status["err"] is None


class Person:
    """A user with a keypair file (in a folder whose name needs quoting) and a URL."""

    def __init__(self, url: str, folder: Path, keypair: Keypair):
        self.url, self.keypair = url, keypair
        folder = folder / "my keys"
        folder.mkdir(exist_ok=True)
        self.path = folder / "id.json"
        write_keypair(keypair, self.path)

    @property
    def options(self) -> list[str]:
        return ["-u", self.url, "-k", str(self.path)]

    def json(self, *args: str) -> dict:
        options = self.options if args[0] not in ("status", "verify") else ["-u", self.url]
        done = curta(*args, *options, "--output", "json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture
def person(localnet, fund, tmp_path) -> Person:
    return Person(localnet.url, tmp_path, fund(localnet.url, 100))


@pytest.fixture
def art(tmp_path, stories260k) -> Path:
    path = tmp_path / "stories260K.curta"
    path.write_bytes(stories260k.data)
    return path


@pytest.fixture
def sealed(person, art) -> str:
    model = person.json("publish", str(art))["model"]
    assert person.json("seal", model, str(art))["state"] == "sealed"
    return model


# 5. Global options before the command.


def test_the_shared_options_may_come_before_the_command(person, art, tmp_path):
    model = person.json("publish", str(art))["model"]
    config = tmp_path / "a config.yml"
    config.write_text(f"json_rpc_url: {person.url}\n")
    for argv in (
        ["-u", person.url, "--output", "json", "-k", str(person.path), "models"],
        [f"--url={person.url}", "--output=json", f"-k{person.path}", "models"],
        ["-C", str(config), "--output", "json", "models", "-k", str(person.path)],
    ):
        done = curta(*argv)
        assert done.returncode == 0, (argv, done.stderr)
        assert [m["model"] for m in json.loads(done.stdout)["models"]] == [model]
    # keygen's subcommand comes after its own options as well.
    out = curta("-C", str(config), "keygen", "pubkey", str(person.path))
    assert out.returncode == 0 and out.stdout.strip() == str(person.keypair.pubkey())
    # A command that does not take the option refuses it, naming it.
    refused = curta("-u", person.url, "inspect", str(art))
    assert refused.returncode == 2 and refused.stderr.startswith(
        "error: curta-chain inspect: unrecognized arguments: -u"
    )


def test_global_options_last_keeps_the_command_words_in_order():
    from curta_chain.cli import global_options_last

    assert global_options_last(["-u", "l", "-y", "run", "M", "-n", "3", "--", "-x"]) == [
        "run", "M", "-n", "3", "-u", "l", "-y", "--", "-x",
    ]  # fmt: skip
    assert global_options_last(["--version"]) == ["--version"]
    assert global_options_last(["-u", "l"]) == ["-u", "l"]


# 6. -n as llama2.c's run.c.


def run_json(*args: str) -> dict:
    done = curta("run", *args, "--output", "json", "--temperature", "0")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_n_counts_steps_with_the_prompt_and_is_clamped_to_the_context(art, stories260k):
    context = stories260k.config.seq_len
    # run.c: -n steps, the prompt's included: steps - prompt tokens + 1 new ones.
    few = run_json(str(art), "-i", "Once upon a time", "-n", "24")
    prompt = len(few["prompt_ids"])
    stopped = few["generated_ids"] and few["generated_ids"][-1] in STOP_TOKENS
    assert prompt < 24 and (len(few["generated_ids"]) == 24 - prompt + 1 or stopped)
    # The context's length, more, and 0 all run to the context's end: never refused.
    for steps in (str(context), str(context * 4), "0"):
        whole = run_json(str(art), "-n", steps)
        total = len(whole["prompt_ids"]) + len(whole["generated_ids"])
        assert total == context or whole["stop"] == "token", (steps, total)
    # --steps stays the count of new tokens.
    assert len(run_json(str(art), "-i", "Once upon a time", "--steps", "3")["generated_ids"]) == 3
    # A prompt longer than the steps: one line saying so.
    done = curta("run", str(art), "-i", "Once upon a time", "-n", "5")
    assert done.returncode == 1 and re.fullmatch(
        r"error: -n 5: the prompt's \d+ tokens \(the opening one included\) take every step; "
        r"nothing is left to generate \(-n 0 runs to the context's end\)\n",
        done.stderr,
    )
    assert curta("run", str(art), "-n", "3", "--steps", "3").returncode == 2
    shown = " ".join(curta("run", "--help").stdout.split())
    assert "llama2.c's run.c -n: steps including the prompt's tokens" in shown
    assert "--steps N new tokens to generate" in shown


# 7. Hints and Next lines work pasted as is.


def test_next_lines_carry_the_options_given_quoted_for_the_shell(person, art, tmp_path):
    config = tmp_path / "odd folder" / "config.yml"
    config.parent.mkdir()
    config.write_text("commitment: confirmed\n")
    done = curta("publish", str(art), *person.options, "-C", str(config))
    assert done.returncode == 0, done.stderr
    model = re.search(r"^Model: (\w+)$", done.stdout, re.MULTILINE)[1]
    after = done.stdout.splitlines()[-1].removeprefix("Next: ")
    assert shlex.split(after) == [
        "curta-chain", "seal", model, str(art), "-u", person.url, "-k", str(person.path),
        "-C", str(config),
    ]  # fmt: skip
    # Pasted as is (the shell splits it), it works and ends with its own next command.
    sealed = curta(*shlex.split(after)[1:])
    assert sealed.returncode == 0, sealed.stderr
    verify = shlex.split(sealed.stdout.splitlines()[-1].removeprefix("Next: "))
    assert verify == [
        "curta-chain", "verify", model, str(art), "-u", person.url, "-C", str(config),
    ]  # fmt: skip
    assert curta(*verify[1:]).returncode == 0


def test_an_interrupted_publish_names_the_command_that_resumes_it(
    localnet_process, fund, tmp_path, art
):
    node = localnet_process()
    person = Person(node.url, tmp_path, fund(node.url, 100))
    publishing = processes.start(
        [sys.executable, "-m", "curta_chain", "publish", str(art), *person.options,
         "--rpc-rps", "20", "--rpc-timeout", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert publishing.stdout is not None
    for line in publishing.stdout:  # the writes begin once the accounts are bound
        if line.startswith("created and bound"):
            break
    node.kill()
    _, err = processes.finish(publishing, 120)
    assert publishing.returncode == 1, err
    hint = re.search(r"rerun `([^`]+)` to resume$", err.strip())
    assert hint, err
    assert shlex.split(hint[1]) == [
        "curta-chain", "publish", str(art), "-u", node.url, "-k", str(person.path),
    ]  # fmt: skip


# 8. status and seal say what is true.


def test_status_and_seal_name_the_right_next_step(person, art, tmp_path):
    model = person.json("publish", str(art))["model"]
    # Every byte is on chain: the next step is the seal, with or without the artifact.
    assert person.json("status", model)["next"] == shlex.join(
        ["curta-chain", "seal", model, "-u", person.url]
    )
    status = curta("status", model, "-u", person.url)
    assert status.returncode == 0 and "to finish the upload" not in status.stdout
    # Another model's artifact: said, and never offered for publishing.
    other = tmp_path / "other.curta"
    wrong = bytearray(art.read_bytes())
    wrong[-100] ^= 1
    other.write_bytes(bytes(wrong))
    status = curta("status", model, str(other), "-u", person.url)
    assert "NOT the declared hash" in status.stdout
    after = status.stdout.splitlines()[-1]
    assert "publish" not in after and f"curta-chain status {model} -u {person.url}" in after

    assert person.json("seal", model)["state"] == "sealed"
    again = curta("seal", model, *person.options)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"model {model} is already sealed (weights hash ")
    assert "transactions" not in again.stdout and "locked for good" not in again.stdout
    assert person.json("seal", model)["transactions"] == 0


# 9. Signatures of a run on chain and of a publish.


def test_a_run_on_chain_prints_its_address_and_signatures(person, sealed):
    done = curta("run", sealed, "--on-chain", "-i", "hi", "--steps", "2", "-t", "0",
                 *person.options)  # fmt: skip
    assert done.returncode == 0, done.stderr
    run = re.search(r"^Run: (\w+)$", done.stdout, re.MULTILINE)[1]
    opened = re.search(r"^Signature: (\w+) \(open run\)$", done.stdout, re.MULTILINE)[1]
    last = re.search(r"^Signature: (\w+) \(last of \d+ steps\)$", done.stdout, re.MULTILINE)[1]
    assert landed(person.url, opened) and landed(person.url, last)
    runs = person.json("runs")["runs"]
    assert [r["run"] for r in runs] == [run]

    result = person.json("run", sealed, "--on-chain", "-i", "ho", "--steps", "2", "-t", "0",
                         "--close-run")  # fmt: skip
    signatures = result["signatures"]
    assert len(signatures["steps"]) == result["step_transactions"] > 0
    for signature in (signatures["open_run"], *signatures["steps"], signatures["close_run"]):
        assert landed(person.url, signature)


def test_publish_json_lists_every_write_signature(person, art):
    planned = person.json("publish", str(art), "--dry-run")["plan"]["write_transactions"]
    signatures = person.json("publish", str(art))["signatures"]
    writes = signatures["write_signatures"]
    assert planned > 1
    assert len(writes) == signatures["writes"] == planned and len(set(writes)) == planned
    assert signatures["last_write"] in writes
    assert all(landed(person.url, s) for s in writes[:5])


# 10. Plain words.


def test_messages_say_what_is_wrong_in_plain_words(person, sealed, localnet, tmp_path, art):
    # Another artifact against the model: its config and sections, numbers separated.
    demo = tmp_path / "demo.curta"
    write_artifact(convert_llama2c(DEMO_MODEL, DEMO_TOKENIZER), demo)
    done = curta("verify", sealed, str(demo), "-u", person.url)
    assert done.returncode == 1
    assert "ModelConfig(" not in done.stdout and re.search(
        r"^config section 0: \w+ chain [\d,]+, artifact [\d,]+", done.stdout, re.MULTILINE
    ), done.stdout
    assert re.search(r"section-length.*chain 68,536, artifact [\d,]{5,}", done.stdout)
    # A file that is not an artifact: its tag as text.
    bad = tmp_path / "bad.curta"
    bad.write_bytes(b"XXXXAW01" + art.read_bytes()[8:])
    done = curta("inspect", str(bad))
    assert done.stderr == f"error: {bad}: byte 0 (tag): XXXXAW01, expected CURTAW01\n"
    # No node there; the websocket port for the RPC one.
    done = curta("models", "-u", "http://127.0.0.1:1", "-k", str(person.path))
    assert done.returncode == 1 and "Errno" not in done.stderr
    assert done.stderr.startswith("error: http://127.0.0.1:1: connection refused")
    done = curta("models", "-u", localnet.ws_url.replace("ws://", "http://"),
                 "-k", str(person.path))  # fmt: skip
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "405: 405" not in done.stderr and "likely a PubSub websocket port" in done.stderr
    ws_port = int(localnet.ws_url.rsplit(":", 1)[1])
    assert f"(try http://127.0.0.1:{ws_port - 1})" in done.stderr
    # Plurals: a prompt of the opening token alone is "1 token".
    done = curta("run", str(art), "--steps", "1", "-t", "0")
    assert done.returncode == 0 and "prompt of 1 token and" in done.stderr


def test_a_taken_port_is_said_before_anything_else(localnet):
    port = int(localnet.url.rsplit(":", 1)[1])
    done = curta("localnet", "--port", str(port), timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"error: port {port} on 127.0.0.1 is in use (another localnet or validator?): pick "
        "another with --port, or --port 0 for a free one\n"
    )


def test_a_client_that_leaves_mid_request_leaves_no_traceback(localnet_process):
    node = localnet_process()
    host, port = "127.0.0.1", node.port
    body = json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "getSlot"}] * 500).encode()
    with socket.create_connection((host, port)) as sock:
        head = f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body) * 2}\r\n\r\n"
        sock.sendall(head.encode() + body)  # half the body promised, then gone
    # The node still answers, and says nothing of the one that left.
    assert httpx.post(node.url, json={"jsonrpc": "2.0", "id": 1, "method": "getSlot"}).is_success
    assert node.stop() == 0
    log = "".join(node.output)
    assert "Traceback" not in log and "Error handling request" not in log, log


# 11. Signers and the page's arguments.


def test_signers_and_web_arguments_are_refused_in_one_line(person, localnet):
    done = curta("airdrop", "1", "NotAnAddr", "-u", person.url)
    assert done.stderr == (
        "error: recipient NotAnAddr: neither a base58 address nor a keypair file (no such file)\n"
    )
    no_terminal = "no terminal to read the seed phrase from; "
    for argv in (
        ["keygen", "recover", "-o", "recovered.json"],
        ["models", "-u", person.url, "-k", "prompt://"],
    ):
        done = curta(*argv, stdin=subprocess.DEVNULL, start_new_session=True)
        assert done.returncode == 1 and done.stderr.startswith(f"error: {no_terminal}"), argv
        assert "Warning" not in done.stderr and done.stderr.count("\n") == 1
    done = curta("web", "--model", "notanaddress", "-u", person.url, "--port", "0", timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "error: --model 'notanaddress': not a base58 Solana address\n"
    # A URL where no node answers is no refusal: the page serves anyway
    # (tests/web/test_web_command.py).


# 12. convert cuts a larger tokenizer; close and runs say what they do.


def test_convert_cuts_a_larger_tokenizer_when_asked(data_dir, tmp_path, stories260k):
    out = tmp_path / "cut.curta"
    checkpoint, tokenizer = data_dir / "stories260K.bin", data_dir / "tokenizer.bin"
    refused = curta("convert", str(checkpoint), str(tokenizer), "-o", str(out), cwd=tmp_path)
    assert refused.returncode == 1 and refused.stderr.endswith(
        "if its first 512 are the model's, add --cut-tokenizer to the convert command to keep "
        "those\n"
    )
    done = curta("convert", str(checkpoint), str(tokenizer), "-o", str(out), "--cut-tokenizer",
                 "--output", "json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["weights_hash"] == stories260k.weights_hash().hex()


def test_close_help_says_it_sends_a_transaction_per_account():
    shown = " ".join(curta("close", "--help").stdout.split())
    assert "in one transaction" not in shown
    assert "one transaction per weight account" in shown and "takes three" in shown


def test_runs_names_each_count_and_puts_units_in_the_header(person, sealed):
    done = curta("run", sealed, "--on-chain", "-i", "hi", "--steps", "3", "-t", "0",
                 *person.options)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = person.json("runs")["runs"]
    lines = curta("runs", *person.options).stdout.splitlines()
    assert lines[0].split() == [
        "Run", "Model", "State", "Prompt", "Generated", "Capacity", "Rent", "(SOL)",
    ]  # fmt: skip
    row = lines[1].split()
    assert row[4:7] == [str(run["prompt_tokens"]), str(run["generated_tokens"]),
                        str(run["capacity"])]  # fmt: skip
    assert re.fullmatch(r"\d+\.\d{9}", row[7]) and "SOL" not in lines[1]


def test_the_page_relay_says_why_it_cannot_reach_the_node():
    from curta_chain.web import WebServer

    server = WebServer("http://127.0.0.1:1", None).start()
    try:
        answer = httpx.post(server.url + "rpc", json={"jsonrpc": "2.0", "id": 1,
                                                      "method": "getSlot"})  # fmt: skip
    finally:
        server.stop()
    assert answer.status_code == 502
    assert answer.text == (
        "cannot connect to http://127.0.0.1:1: connection refused (is the node running?)"
    )

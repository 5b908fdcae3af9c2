"""`curta-chain web`: the committed page is what a rebuild gives, and the command serves it."""

import filecmp
import json
import signal
import socket
import subprocess
import sys
import urllib.request

from web_helpers import SDK

from curta_chain.web import STATIC


def test_the_committed_page_is_what_a_rebuild_gives(sdk, tmp_path):
    subprocess.run(["node", "scripts/build-web.mjs", str(tmp_path)], cwd=SDK, check=True,
                   timeout=120)  # fmt: skip
    names = sorted(p.name for p in STATIC.iterdir())
    assert names == ["app.js", "index.html", "style.css"]
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, STATIC, names, shallow=False)
    assert (mismatch, errors) == ([], []), "run `npm run build-web` in sdk/js and commit"


def test_the_command_serves_the_page_and_its_config(world):
    process = subprocess.Popen(
        [sys.executable, "-m", "curta_chain", "web", "--port", "0", "-u", world.url,
         "--model", world.sealed],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = process.stdout.readline()
        assert line.startswith("Serving the page at http://127.0.0.1:"), process.stderr.read()
        page = line.split()[4].split("?")[0]
        assert f"?url={world.url.replace(':', '%3A').replace('/', '%2F')}&model=" in line
        with urllib.request.urlopen(page) as answer:
            assert b'id="verdict"' in answer.read()
        with urllib.request.urlopen(page + "config.json") as answer:
            assert json.loads(answer.read()) == {
                "url": world.url,
                "model": world.sealed,
                "relay": "rpc",
                "artifact": None,
                "demo": False,
            }
        request = urllib.request.Request(
            page + "rpc", b'{"jsonrpc":"2.0","id":1,"method":"getHealth"}', method="POST"
        )
        with urllib.request.urlopen(request) as answer:
            assert b'"ok"' in answer.read()
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0


def test_a_port_in_use_is_one_line(world):
    from web_helpers import cli

    from curta_chain.web import start_web_server

    server = start_web_server(world.url)
    try:
        port = server.url.rsplit(":", 1)[1].strip("/")
        code, out = cli("web", "--port", port, "-u", world.url)
    finally:
        server.stop()
    assert code != 0
    assert out.strip().splitlines() == [
        f"error: --port {port}: cannot listen on it: Address already in use"
    ]


def test_a_corrupt_artifact_is_refused_before_serving(world, tmp_path):
    from web_helpers import cli

    broken = tmp_path / "broken.curta"
    broken.write_bytes(world.artifact_path.read_bytes()[:100])
    code, out = cli("web", "--port", "0", "-u", world.url, "--artifact", str(broken))
    assert code != 0
    assert out.strip().splitlines() == [
        f"error: {broken}: 100 bytes, shorter than the 4,096-byte header"
    ]


def test_with_nothing_named_the_page_opens_the_demo_model(world):
    from curta_chain.artifact import convert_llama2c
    from curta_chain.demo import DEMO_MODEL, DEMO_TOKENIZER

    process = subprocess.Popen(
        [sys.executable, "-m", "curta_chain", "web", "--port", "0", "-u", world.url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = process.stdout.readline()
        assert line.startswith("Serving the page at http://127.0.0.1:"), process.stderr.read()
        page = line.split()[4].split("?")[0]
        with urllib.request.urlopen(page + "config.json") as answer:
            config = json.loads(answer.read())
            # The page's own demo: a model named in the page's address is never checked
            # against it (tests/web/test_page.py opens the page so).
            assert (config["artifact"], config["demo"]) == ("demo.curta", True)
        with urllib.request.urlopen(page + "artifact") as answer:
            assert answer.read() == convert_llama2c(DEMO_MODEL, DEMO_TOKENIZER).data
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0


def test_with_no_node_the_page_serves_the_demo_and_says_so(page):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    process = subprocess.Popen(
        [sys.executable, "-m", "curta_chain", "web", "--port", "0", "-u", dead],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = process.stdout.readline()
        assert line.startswith("Serving the page at http://127.0.0.1:"), process.stderr.read()
        note = process.stderr.readline()
        assert note.startswith(f"{dead}: connection refused: no RPC node is listening there")
        assert note.endswith("the page serves anyway (a file runs without a node) and reads "
                             "the chain once one answers\n")  # fmt: skip
        url = line.split()[4]
        with urllib.request.urlopen(url) as answer:
            assert answer.status == 200 and b'id="node"' in answer.read()
        page.goto(url)
        page.wait_for_selector("#node[data-checked='true']", timeout=60_000)
        said = page.text_content("#node")
        assert said.startswith(f"no node answers at {dead} (cannot connect to {dead}: "
                               "connection refused"), said  # fmt: skip
        # The demo opens from its file all the same, hashed and ready to run.
        page.wait_for_function(
            "() => document.getElementById('computed-hash').textContent !== ''", timeout=60_000
        )
        assert page.text_content("#verdict").startswith("demo.curta is a valid artifact")
        assert page.is_enabled("#generate")
        assert "Error" not in page.inner_text("body") + line + note
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert "Error" not in process.stderr.read()


def test_a_node_that_answers_leaves_no_note_on_the_page(page, world):
    from curta_chain.web import start_web_server

    server = start_web_server(world.url)
    try:
        page.goto(f"{server.url}?url={world.url}")
        page.wait_for_selector("#node[data-checked='true']", state="attached", timeout=60_000)
        assert page.is_hidden("#node") and page.text_content("#node") == ""
    finally:
        server.stop()

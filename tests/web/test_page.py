"""The page in headless Chromium against the embedded localnet, with models the session
published and sealed: the verdict and hashes of `curta-chain verify --output json`, a
one-line reason for each failure, the ids of `curta-chain run`, and an on-chain run
replayed as matching, then, altered in the localnet, as differing at the right token.
"""

import base64
import contextlib
import json
import signal
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode

import processes
import pytest
from solders.account import Account
from solders.pubkey import Pubkey
from web_helpers import cli_json

from curta_chain.onchain.run_account import Region, RunAccount
from curta_chain.web import start_web_server

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
VERDICT = "() => /^(verified|NOT verified)/.test(document.getElementById('verdict').textContent)"
HASHED = "() => document.getElementById('computed-hash').textContent !== ''"
"""A file the page opened on its own is hashed (then its line is shown)."""
WAIT_MS = 60_000
"""How long a page may take to reach a state (it normally takes well under a second)."""


def open_page(page, web, **query: str) -> str:
    page.goto(f"{web.url}?{urlencode(query)}" if query else web.url)
    page.wait_for_selector("body[data-ready='true']", timeout=WAIT_MS)
    if query.get("model"):
        page.wait_for_function(VERDICT, timeout=WAIT_MS)
    verdict = page.text_content("#verdict")
    assert "\n" not in verdict
    return verdict


def test_the_verdict_and_hashes_are_verify_s(page, web, world, tmp_path):
    verdict = open_page(page, web, url=world.url, model=world.sealed)
    want = world.verify_json
    assert verdict.startswith(f"verified {world.sealed}: sealed")
    assert page.text_content("#declared-hash") == want["declared_hash"]
    assert page.text_content("#computed-hash") == want["chain_hash"]
    assert page.text_content("#program") == want["program"]["program_id"]
    assert page.text_content("#program-hash").startswith(want["program"]["sha256"])
    assert page.text_content("#authority").startswith("none")
    bars = page.query_selector_all("#sections .bar")
    assert [int(b.get_attribute("data-length")) for b in bars] == [
        len(s) for s in world.artifact.sections
    ]
    assert {b.get_attribute("data-state") for b in bars} == {"sealed"}
    page.screenshot(path=str(tmp_path / "page.png"), full_page=True)


def test_a_failed_seal_shows_its_reason_in_one_line(page, web, world):
    verdict = open_page(page, web, url=world.url, model=world.failed)
    assert verdict.startswith(f"NOT verified {world.failed}: ")
    assert "the model is failed, not sealed" in page.text_content("#differences")
    # The seal went through every chunk, freezing each section on the way, and failed.
    bars = page.query_selector_all("#sections .bar")
    assert [b.get_attribute("data-state") for b in bars] == ["frozen", "frozen"]
    assert page.text_content("#declared-hash") != page.text_content("#computed-hash")


def test_an_address_that_is_not_a_model_shows_why(page, web, world):
    wallet = str(world.authority.pubkey())
    verdict = open_page(page, web, url=world.url, model=wallet)
    assert verdict == (
        f"NOT verified {wallet}: {wallet} is not a curta model: owned by the System Program "
        "(a wallet)"
    )


def test_a_dead_url_shows_why(page, web, world):
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens there
    verdict = open_page(page, web, url=dead, model=world.sealed)
    assert verdict.startswith(f"NOT verified {world.sealed}: cannot reach {dead}: no answer")
    # Through the relay of a server started on a dead cluster: the relay says why.
    server = start_web_server(dead)
    try:
        verdict = open_page(page, server, model=world.sealed)
        assert verdict.startswith(f"NOT verified {world.sealed}: cannot reach {dead}: ")
    finally:
        server.stop()


def drop_file(page, name: str, data: bytes) -> None:
    """Drop ``data`` on the drop zone as the file ``name``, as a user's drag does."""
    page.evaluate(
        """([name, b64]) => {
            const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], name));
            document.getElementById("drop").dispatchEvent(
                new DragEvent("drop", { dataTransfer: transfer, bubbles: true }));
        }""",
        [name, base64.b64encode(data).decode()],
    )


def test_a_corrupt_dropped_file_shows_the_decoder_s_reason(page, web):
    manifest = json.loads((CORPUS / "cases.json").read_text())
    case = next(c for c in manifest["cases"] if c["name"] == "row scale")
    data = bytearray((CORPUS / "tied.curta").read_bytes())
    for edit in case["edits"]:
        patch = bytes.fromhex(edit["hex"])
        data[edit["at"] : edit["at"] + len(patch)] = patch
    open_page(page, web)
    drop_file(page, "a.curta", bytes(data))
    page.wait_for_function(VERDICT, timeout=WAIT_MS)
    assert page.text_content("#verdict") == f"NOT verified: {case['error']}"


def test_a_dropped_file_is_verified_against_the_model(page, web, world):
    open_page(page, web, url=world.url, model=world.sealed)
    page.evaluate("document.getElementById('verdict').textContent = ''")
    drop_file(page, "tiny.curta", world.artifact_path.read_bytes())
    page.wait_for_function(VERDICT, timeout=WAIT_MS)
    assert page.text_content("#verdict") == (
        f"verified {world.sealed}: sealed, every byte matches tiny.curta"
    )


def generate(page, prompt: str, steps: int, temperature: str, top_p: str, seed: int) -> list[int]:
    page.fill("#prompt", prompt)
    page.fill("#steps", str(steps))
    page.fill("#temperature", temperature)
    page.fill("#top-p", top_p)
    page.fill("#seed", str(seed))
    page.click("#generate")
    page.wait_for_selector("#generated[data-done='true']", timeout=WAIT_MS)
    return json.loads(page.get_attribute("#generated", "data-token-ids"))


def test_generated_ids_are_curta_chain_run_s(page, web, world):
    open_page(page, web, url=world.url, model=world.sealed)
    for temperature, top_p, seed in (("0", "0.9", 0), ("1.0", "0.9", 7), ("0.7", "0", 99)):
        want = cli_json(
            "run", str(world.artifact_path), "--prompt", "hi", "--steps", "10",
            "--temperature", temperature, "--top-p", top_p, "--seed", str(seed),
        )["generated_ids"]  # fmt: skip
        assert generate(page, "hi", 10, temperature, top_p, seed) == want
    assert "tokens/s" in page.text_content("#rate")


def replay(page, run: str) -> str:
    page.fill("#run-address", run)
    page.evaluate("document.getElementById('run-check').textContent = ''")
    page.click("#run-load")
    page.wait_for_function(
        "() => document.getElementById('run-check').textContent !== ''", timeout=WAIT_MS
    )
    return page.text_content("#run-check")


def test_an_on_chain_run_replays_as_matching_and_an_altered_one_differs(page, web, world, tmp_path):
    _, out = world.chain(
        "run", world.sealed, "--on-chain", "--prompt", "hi", "--steps", "8",
        "--temperature", "1.0", "--seed", "5", "--output", "json",
    )  # fmt: skip
    result = json.loads(out[out.index("{") :])
    run = result["run"]
    assert len(result["generated_ids"]) == 8
    open_page(page, web, url=world.url, model=world.sealed)
    assert replay(page, run).startswith("matches: the chain's 8 generated tokens")
    # The page as docs/browser.png shows it: verified, a generation, a replayed run.
    assert generate(page, "hi", 8, "1.0", "0.9", 5) == result["generated_ids"]
    page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
    # Change the chain's fourth generated token behind the program's back.
    key = Pubkey.from_string(run)

    def alter(localnet) -> int:
        account = localnet.get_account(key)
        header = RunAccount.from_bytes(bytes(account.data))
        data = bytearray(account.data)
        at = header.regions[Region.TOKENS] + 4 * (header.prompt_tokens + 3)
        (token,) = struct.unpack_from("<I", data, at)
        struct.pack_into("<I", data, at, (token + 1) % 259)
        localnet.svm.set_account(
            key, Account(account.lamports, bytes(data), account.owner, False, 0)
        )
        localnet._forget_reads()  # the localnet caches reads between transactions
        return token

    token = world.localnet.call(alter)
    check = replay(page, run)
    assert check == (
        f"differs at generated token 4 of 8: the chain has {(token + 1) % 259}, "
        f"this page computes {token}"
    )
    assert page.get_attribute("#run-check", "data-differs-at") == "4"


def test_the_server_s_artifact_opens_with_the_page(page, world):
    server = start_web_server(world.url, world.sealed, artifact=world.artifact_path)
    try:
        open_page(page, server)
        page.wait_for_function(VERDICT, timeout=WAIT_MS)
        verdict = page.text_content("#verdict")
        assert verdict == f"verified {world.sealed}: sealed, every byte matches tiny.curta"
    finally:
        server.stop()
    server = start_web_server(None, artifact=world.artifact_path)
    try:
        open_page(page, server)
        page.wait_for_function(HASHED, timeout=WAIT_MS)
        # Checked against nothing: no verdict either way, and no red.
        assert page.text_content("#verdict").startswith("tiny.curta is a valid artifact (hash ")
        assert page.get_attribute("#verdict", "class") == "verdict info"
        assert page.text_content("#computed-hash") == world.verify_json["artifact_hash"]
    finally:
        server.stop()


@pytest.fixture(scope="module")
def stories(world, stories260k, tmp_path_factory) -> str:
    """The real stories260K (not the demo model), published and sealed on the localnet."""
    path = tmp_path_factory.mktemp("stories") / "stories260K.curta"
    path.write_bytes(stories260k.data)
    via = ["-u", world.url, "-k", str(world.keypair_path)]
    model = cli_json("publish", str(path), *via)["model"]
    assert cli_json("seal", model, *via)["state"] == "sealed"
    return model


@contextlib.contextmanager
def web_command(*args: str) -> Iterator[SimpleNamespace]:
    """`curta-chain web --port 0 ARGS` as a process; yields its page's address as ``.url``."""
    process = processes.start(
        [sys.executable, "-m", "curta_chain", "web", "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = process.stdout.readline()
        assert line.startswith("Serving the page at http://127.0.0.1:"), process.stderr.read()
        yield SimpleNamespace(url=line.split()[4].split("?")[0])
    finally:
        process.send_signal(signal.SIGINT)
        assert processes.wait(process, 30) == 0


def test_a_model_named_with_no_file_is_verified_from_the_chain_alone(page, world, stories):
    """`curta-chain web -u URL` serves its demo model; a page opened at ?url=&model= for
    another model checks that model from the chain alone, never against the demo."""
    with web_command("-u", world.url) as web:
        verdict = open_page(page, web, url=world.url, model=stories)
        assert verdict == (
            f"verified {stories}: sealed, the chain's bytes hash to its declared hash "
            "(no artifact was compared)"
        )
        assert page.get_attribute("#verdict", "class") == "verdict ok"
        # Opened with nothing named: the demo model, shown as a file, and no red verdict.
        open_page(page, web)
        page.wait_for_function(HASHED, timeout=WAIT_MS)
        assert page.text_content("#verdict").startswith("demo.curta is a valid artifact (hash ")
        assert page.get_attribute("#verdict", "class") == "verdict info"

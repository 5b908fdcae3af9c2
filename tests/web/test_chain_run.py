"""The page runs a model on chain with a visitor's wallet, in headless Chromium.

A Wallet Standard wallet of the tests' own (tests/web/test_wallet.js: Ed25519 through
WebCrypto, legacy and v0) is injected before the page loads, as an extension injects one.
Against the embedded localnet, with stories260K published and sealed by the CLI: the
tokens the chain computes equal `curta-chain run ARTIFACT`'s, the run is closed and the
wallet's net cost is exactly the fees of the run's transactions (at most 0.01 SOL), in two
wallet requests; a wallet that declines leaves nothing open and nothing spent; a model that
is not sealed is refused before any request; a run left by a closed tab is finished and
closed by the page's replay, or closed by `curta-chain close-run`.
"""

import base64
import json
import re
import struct
import subprocess
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from reference_client import Client
from solders.account import Account
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from web_helpers import cli, cli_json, funded

from curta_chain.cli.keypairs import write_keypair
from curta_chain.onchain.run_account import Region, RunAccount, RunState
from curta_chain.web import start_web_server

WALLET_JS = Path(__file__).parent / "test_wallet.js"
SDK_RUN = Path(__file__).parent / "sdk_chain_run.mjs"
WAIT_MS = 120_000
"""How long a page may take to reach a state (a run of 12 tokens lands in seconds)."""
PROMPT, STEPS = "Once upon a time", 12
LANDED = 15
"""Steps a tab left mid-run landed: past the prompt's (stories260K's 18 take 10, two
positions a step), short of all (22)."""
MAX_NET = 10_000_000
"""0.01 SOL: what a 12-token run may cost the wallet at most, net."""


@pytest.fixture(scope="module")
def stories(world, stories260k, tmp_path_factory):
    """stories260K published and sealed on the world's localnet, and its artifact file."""
    path = tmp_path_factory.mktemp("stories") / "stories260K.curta"
    path.write_bytes(stories260k.data)
    base = ["-u", world.url, "-k", str(world.keypair_path)]
    model = cli_json("publish", str(path), *base)["model"]
    assert cli_json("seal", model, str(path), *base)["state"] == "sealed"
    return model, path


def cli_run(path: Path) -> dict:
    """`curta-chain run ARTIFACT --prompt ... --steps 12 --temperature 0 --output json`."""
    return cli_json(
        "run", str(path), "--prompt", PROMPT, "--steps", str(STEPS), "--temperature", "0"
    )  # fmt: skip


def cli_tokens(path: Path) -> list[int]:
    """The generated ids of `curta-chain run ARTIFACT --prompt ... --steps 12 --temperature 0`."""
    return cli_run(path)["generated_ids"]


def with_wallet(page, keypair: Keypair, **config) -> None:
    """Inject the test wallet holding ``keypair`` before the page loads."""
    settings = {
        "seed": base64.b64encode(bytes(keypair)[:32]).decode(),
        "address": str(keypair.pubkey()),
        **config,
    }
    page.add_init_script(script=f"window.__testWalletConfig = {json.dumps(settings)};")
    page.add_init_script(path=str(WALLET_JS))


def open_verified(page, server, url: str, model: str) -> None:
    page.goto(f"{server.url}?{urlencode({'url': url, 'model': model})}")
    page.wait_for_function(
        "() => /^(verified|NOT verified)/.test(document.getElementById('verdict').textContent)",
        timeout=WAIT_MS,
    )


def connect(page, keypair: Keypair) -> None:
    page.click("#wallet-connect")
    page.wait_for_function(
        "a => document.getElementById('wallet-address').textContent === a",
        arg=str(keypair.pubkey()),
        timeout=WAIT_MS,
    )


def run_on_chain(page, prompt: str = PROMPT, steps: int = STEPS) -> dict:
    page.fill("#prompt", prompt)
    page.fill("#steps", str(steps))
    page.fill("#temperature", "0")
    page.click("#run-on-chain")
    page.wait_for_selector("#chain-tokens[data-done='true']", timeout=WAIT_MS)
    return state(page)


def state(page) -> dict:
    return page.evaluate(
        """() => ({
        tokens: JSON.parse(document.getElementById('chain-tokens').dataset.tokenIds),
        outcome: document.getElementById('chain-tokens').dataset.outcome,
        run: document.getElementById('chain-run').textContent,
        status: document.getElementById('chain-status').textContent,
        cost: {...document.getElementById('chain-cost').dataset},
        cost_text: document.getElementById('chain-cost').textContent,
        requests: window.__walletRequests.filter(r => r.method !== 'connect'),
        signatures: [...document.querySelectorAll('#chain-signature-list li')].map(
            li => [li.dataset.kind, li.querySelector('a, code').textContent]),
        })"""
    )


def balance(client: Client, key: Pubkey) -> int:
    return client.get_balance(key, "confirmed").value


def transaction(url: str, signature: str) -> dict:
    """getTransaction, any version, as the node answers it."""
    body = {
        "jsonrpc": "2.0", "id": 1, "method": "getTransaction",
        "params": [signature, {"commitment": "confirmed", "maxSupportedTransactionVersion": 1}],
    }  # fmt: skip
    return httpx.post(url, json=body, timeout=60).json()["result"]


def fees(url: str, signatures: list[str]) -> int:
    """The fees the node charged for these transactions."""
    return sum(transaction(url, s)["meta"]["fee"] for s in signatures)


def gone(client: Client, address: str) -> bool:
    return client.get_account_info(Pubkey.from_string(address), "confirmed").value is None


WALLETS = {
    "signs-only": {},
    "signs-and-sends": {"signAndSend": True},
    "sends-only": {"signTransaction": False, "signAndSend": True},
    "v0-only": {"versions": [0]},
    "declares-v1": {"versions": ["legacy", 0, 1]},
}
"""Wallets that offer only signTransaction, signAndSendTransaction too, only
signAndSendTransaction (the wallet sends, to the localnet), sign v0 only, and declare v1
besides."""


def methods(kind: str) -> list[str]:
    """The wallet's two requests (open, close): signTransaction where the wallet offers it."""
    return ["signAndSendTransaction" if kind == "sends-only" else "signTransaction"] * 2


@pytest.mark.parametrize("kind", WALLETS)
def test_the_chain_s_tokens_are_the_cli_s_and_the_run_is_closed(page, web, world, stories, kind,
                                                                  tmp_path):  # fmt: skip
    model, path = stories
    wallet = funded(world.url, 2)
    client = Client(world.url)
    before = balance(client, wallet.pubkey())
    with_wallet(page, wallet, rpc=world.url, **WALLETS[kind])
    open_verified(page, web, world.url, model)
    assert page.text_content("#verdict").startswith(f"verified {model}")
    connect(page, wallet)
    assert page.get_attribute("#wallet-address", "data-chain") == "solana:localnet"
    got = run_on_chain(page)
    page.screenshot(path=str(tmp_path / "chain-run.png"), full_page=True)
    assert got["outcome"] == "closed", got["status"]
    want = cli_run(path)
    assert got["tokens"] == want["generated_ids"]
    assert page.text_content("#chain-tokens") == want["text"]  # as the CLI prints it
    assert gone(client, got["run"])
    # Two requests (open, close), both signTransaction unless the wallet only signs and sends.
    assert [r["method"] for r in got["requests"]] == methods(kind)
    kinds = [kind for kind, _ in got["signatures"]]
    assert kinds[0] == "open" and kinds[-1] == "close" and set(kinds[1:-1]) == {"step"}
    assert len(kinds) - 2 == int(got["cost"]["steps"])  # the count was the chain's
    net = before - balance(client, wallet.pubkey())
    assert net == fees(world.url, [sig for _, sig in got["signatures"]])
    assert net == int(got["cost"]["fees"])  # what the page said before signing
    assert 0 < net <= MAX_NET
    # The wallet's transactions in the newest version it declares (the localnet takes v1).
    version = {"declares-v1": 1, "v0-only": 0}.get(kind, "legacy")
    assert transaction(world.url, got["signatures"][0][1])["version"] == version


def lying(page, method: str, result) -> None:
    """The page's relay answers ``method`` with ``result`` (a node that lies), all else true."""

    def relay(route, request):
        body = json.loads(request.post_data or "{}")
        if body.get("method") != method:
            route.continue_()
            return
        answer = {"jsonrpc": "2.0", "id": body.get("id"), "result": result}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(answer))

    page.route("**/rpc", relay)


def test_a_node_s_fee_quotes_are_a_cross_check_only(page, web, world, stories):
    """A node that says every message costs 1 SOL changes neither the cost nor what is paid:
    the page computes the fees from the messages and names the node's figure beside them."""
    model, path = stories
    wallet = funded(world.url, 1)
    client = Client(world.url)
    before = balance(client, wallet.pubkey())
    lying(page, "getFeeForMessage", {"context": {"slot": 1}, "value": 10**9})
    with_wallet(page, wallet)
    open_verified(page, web, world.url, model)
    connect(page, wallet)
    got = run_on_chain(page)
    assert got["outcome"] == "closed", got["status"]
    assert got["tokens"] == cli_tokens(path)
    net = before - balance(client, wallet.pubkey())
    assert net == int(got["cost"]["fees"]) == fees(world.url, [sig for _, sig in got["signatures"]])
    steps = int(got["cost"]["steps"])
    node = (steps + 2) * 10**9 / 10**9
    assert f"The node says these transactions cost {node:g} SOL in fees" in got["cost_text"]


def test_a_node_that_asks_more_rent_than_the_runtime_is_refused(page, web, world, stories):
    model, _ = stories
    wallet = funded(world.url, 1)
    lying(page, "getMinimumBalanceForRentExemption", 10**12)
    with_wallet(page, wallet)
    open_verified(page, web, world.url, model)
    connect(page, wallet)
    got = run_on_chain(page)
    assert got["outcome"] == "refused"
    assert re.fullmatch(
        r"\S+/rpc asks 1,000,000,000,000 lamports to make [\d,]+ bytes rent-exempt; the "
        r"runtime's formula gives [\d,]+: refusing a node that asks for more; nothing was signed",
        got["status"],
    ), got["status"]
    assert got["requests"] == [] and got["run"] == ""


def test_a_count_that_falls_short_is_finished_one_step_at_a_time_and_topped_up(sdk, world,
                                                                              stories):  # fmt: skip
    """The SDK under Node, as the page runs it: a count of steps short of the chain's (a
    program that cuts its steps otherwise) and a session key funded for that count alone.
    Past the count the steps go one at a time until the chain says the run is finished; the
    session key, empty, is topped up by one more request: three in all."""
    model, path = stories
    wallet = funded(world.url, 2)
    client = Client(world.url)
    before = balance(client, wallet.pubkey())
    done = subprocess.run(
        ["node", str(SDK_RUN), world.url, model, str(path), bytes(wallet)[:32].hex(),
         str(wallet.pubkey()), bytes(wallet.pubkey()).hex(), "6"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in got, got
    assert got["tokens"] == cli_tokens(path)
    assert got["requests"] == [1, 1, 1]  # open, top-up, close
    assert got["landed"].count("step") == got["counted"]
    assert got["landed"][0] == "open" and "top-up" in got["landed"] and got["landed"][-1] == "close"
    assert got["kept"] == 0 and gone(client, got["run"])
    net = before - balance(client, wallet.pubkey())
    assert 0 < net <= MAX_NET


def test_the_page_sends_straight_to_a_node_that_is_not_its_server_s(page, world, stories):
    """No relay: the localnet answers any origin (CORS), as agave's RPC does."""
    model, path = stories
    server = start_web_server(None)
    try:
        wallet = funded(world.url, 1)
        with_wallet(page, wallet)
        open_verified(page, server, world.url, model)
        connect(page, wallet)
        got = run_on_chain(page)
        assert got["outcome"] == "closed", got["status"]
        assert got["tokens"] == cli_tokens(path)
        assert gone(Client(world.url), got["run"])
    finally:
        server.stop()


@pytest.mark.parametrize("kind", ["signs-only", "sends-only"])
def test_a_wallet_that_declines_the_opening_leaves_nothing(page, web, world, stories, kind):
    model, _ = stories
    wallet = funded(world.url, 1)
    client = Client(world.url)
    before = balance(client, wallet.pubkey())
    with_wallet(page, wallet, rpc=world.url, reject=[1], **WALLETS[kind])
    open_verified(page, web, world.url, model)
    connect(page, wallet)
    got = run_on_chain(page)
    assert got["outcome"] == "refused", got
    assert got["status"].startswith("Test Wallet declined to sign: User rejected the request.")
    assert got["run"] == "" and got["signatures"] == []
    assert balance(client, wallet.pubkey()) == before
    # Nothing of the wallet's is open: it owns no run.
    runs = cli_json("runs", "-u", world.url, "--opener", str(wallet.pubkey()))
    assert runs["runs"] == []


@pytest.mark.parametrize("kind", ["signs-only", "sends-only"])
def test_a_declined_close_leaves_the_run_finished_and_the_close_button_closes_it(
    page, web, world, stories, kind
):
    model, path = stories
    wallet = funded(world.url, 1)
    client = Client(world.url)
    before = balance(client, wallet.pubkey())
    with_wallet(page, wallet, rpc=world.url, reject=[2], **WALLETS[kind])
    open_verified(page, web, world.url, model)
    connect(page, wallet)
    got = run_on_chain(page)
    assert got["outcome"] == "stopped"
    assert got["tokens"] == cli_tokens(path)
    assert "declined" in got["status"] and got["run"] in got["status"]
    assert not gone(client, got["run"])
    # The session key's lamports came back without the wallet: only the run's rent is out.
    page.click("#chain-close")
    page.wait_for_function(
        "() => document.getElementById('chain-tokens').dataset.outcome === 'closed'",
        timeout=WAIT_MS,
    )
    assert gone(client, got["run"])
    after = state(page)
    signatures = [sig for _, sig in got["signatures"] + after["signatures"]]
    assert before - balance(client, wallet.pubkey()) == fees(world.url, signatures)
    assert [r["method"] for r in after["requests"]] == [*methods(kind), methods(kind)[0]]


def test_a_wallet_that_changes_the_transaction_is_refused(page, web, world, stories):
    model, _ = stories
    wallet = funded(world.url, 1)
    client = Client(world.url)
    before = balance(client, wallet.pubkey())
    with_wallet(page, wallet, tamper=True)
    open_verified(page, web, world.url, model)
    connect(page, wallet)
    got = run_on_chain(page)
    assert got["outcome"] == "refused"
    assert got["status"] == (
        "Test Wallet changed the transaction it was asked to sign; nothing was sent"
    )
    assert balance(client, wallet.pubkey()) == before


def test_a_wallet_that_cannot_pay_is_refused_before_any_signature(page, web, world, stories):
    model, _ = stories
    wallet = Keypair()
    client = Client(world.url)
    client.confirm_transaction(
        client.request_airdrop(wallet.pubkey(), 10_000_000).value, "confirmed", sleep_seconds=0.05
    )
    with_wallet(page, wallet)
    open_verified(page, web, world.url, model)
    connect(page, wallet)
    got = run_on_chain(page)
    assert got["outcome"] == "refused"
    assert got["status"].startswith(
        f"the wallet {wallet.pubkey()} holds 0.01 SOL; opening this run needs "
    )
    assert got["requests"] == []


def test_a_model_that_is_not_sealed_is_refused_before_any_signature(page, web, world):
    wallet = funded(world.url, 1)
    with_wallet(page, wallet)
    open_verified(page, web, world.url, world.failed)
    connect(page, wallet)
    got = run_on_chain(page, steps=2)
    assert got["outcome"] == "refused"
    assert got["status"] == (
        f"model {world.failed} is failed, not sealed: a run on chain needs a sealed model; "
        "nothing was signed"
    )
    assert got["requests"] == [] and got["run"] == ""


def test_no_wallet_says_how_to_get_one(page, web, world, stories):
    model, _ = stories
    open_verified(page, web, world.url, model)
    assert page.text_content("#wallet-status").startswith("No Solana wallet found in this browser")
    page.click("#wallet-connect")
    assert "Wallet Standard" in page.text_content("#wallet-status")


def _start_and_hold(page, web, world, model, wallet):
    """Start a run and hold it once its first generated token has landed.

    The page's relay lets the opening and the first ``LANDED`` steps through and holds every
    later send unanswered, so the run is part way. Returns the run, a function that lets
    the held sends (and all later ones) go, and one that drops them (as a closed tab does).
    """
    sends, held, dropped = [], [], []

    def relay(route, request):
        if json.loads(request.post_data or "{}").get("method") == "sendTransaction":
            sends.append(1)
            if dropped:
                route.abort()
                return
            if len(sends) > 1 + LANDED and held is not None:
                held.append(route)
                return
        route.continue_()

    def release() -> None:
        nonlocal held
        waiting, held = held, None
        for route in waiting:
            route.continue_()

    def drop() -> None:
        dropped.append(True)
        for route in held or []:
            route.abort()

    page.route("**/rpc", relay)
    with_wallet(page, wallet)
    open_verified(page, web, world.url, model)
    connect(page, wallet)
    page.fill("#prompt", PROMPT)
    page.fill("#steps", str(STEPS))
    page.fill("#temperature", "0")
    page.click("#run-on-chain")
    page.wait_for_function(
        "() => document.getElementById('chain-run').textContent", timeout=WAIT_MS
    )
    run = page.text_content("#chain-run")
    client = Client(world.url)
    header = wait_for(page, lambda: _generated(client, run), WAIT_MS / 1000)
    assert header.state != RunState.FINISHED
    return run, release, drop


def _open_and_leave(page, web, world, model, wallet) -> str:
    """Start a run and close the tab mid-run, its first generated token landed; what the
    tab had not sent yet never reaches the node, and the session key stays kept."""
    run, _, drop = _start_and_hold(page, web, world, model, wallet)
    drop()
    # The page stops when its sends fail (its sweep of the session key fails too); closed
    # only then, so that no request the tab began is let through as the tab goes.
    page.wait_for_selector("#chain-tokens[data-done='true']", timeout=WAIT_MS)
    page.close()
    assert RunAccount.from_bytes(_account(Client(world.url), run)).state != RunState.FINISHED
    return run


def _account(client: Client, run: str) -> bytes | None:
    info = client.get_account_info(Pubkey.from_string(run), "confirmed").value
    return bytes(info.data) if info else None


def _generated(client: Client, run: str) -> RunAccount | None:
    """The run's header once a generated token has landed."""
    data = _account(client, run)
    header = RunAccount.from_bytes(data) if data else None
    return header if header and header.generated > 0 else None


def wait_for(page, probe, seconds: float):
    """Poll ``probe`` until it gives a value (a state, not a time: the bound only ends a hang).

    Between polls the page's events run (Playwright's sync API runs the route handler only
    while the test is inside one of its calls).
    """
    deadline = time.monotonic() + seconds
    while (value := probe()) is None:
        assert time.monotonic() < deadline, "the state was not reached"
        page.wait_for_timeout(50)
    return value


def test_a_run_left_by_a_closed_tab_is_finished_and_closed_by_the_replay(
    browser_context, web, world, stories
):
    model, path = stories
    wallet = funded(world.url, 1)
    client = Client(world.url)
    before = balance(client, wallet.pubkey())
    run = _open_and_leave(browser_context.new_page(), web, world, model, wallet)
    assert not gone(client, run)
    tab = browser_context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        with_wallet(tab, wallet)
        open_verified(tab, web, world.url, model)
        # This browser kept the run's session key: the page names the run and fills it in.
        assert run in tab.text_content("#chain-status")
        assert tab.input_value("#run-address") == run
        connect(tab, wallet)
        tab.click("#run-finish")
        tab.wait_for_selector("#chain-tokens[data-done='true']", timeout=WAIT_MS)
        got = state(tab)
        assert got["outcome"] == "closed", got["status"]
        assert got["tokens"] == cli_tokens(path)
        assert gone(client, run)
        # One request: the close (the kept session key paid the rest of the steps).
        assert len(got["requests"]) == 1, (got["signatures"], got["status"])
        assert 0 < before - balance(client, wallet.pubkey()) <= MAX_NET
    finally:
        tab.close()
    assert not errors, errors


def test_a_run_left_by_a_closed_tab_is_closed_by_the_cli(browser_context, web, world, stories,
                                                         tmp_path):  # fmt: skip
    model, _ = stories
    wallet = funded(world.url, 1)
    run = _open_and_leave(browser_context.new_page(), web, world, model, wallet)
    keypair = tmp_path / "wallet.json"
    write_keypair(wallet, keypair)
    code, text = cli(
        "close-run", run, "-u", world.url, "-k", str(keypair), "-y", "--output", "json"
    )
    assert code == 0, text
    out = json.JSONDecoder().raw_decode(text)[0]
    assert out["closed"] is True and out["lamports_returned"] > 0
    client = Client(world.url)
    assert gone(client, run)
    # The session key this browser kept still holds the steps' margin and its floor: the
    # page, reopened, sends it back to the wallet (the key pays; no request) and forgets it.
    before = balance(client, wallet.pubkey())
    tab = browser_context.new_page()
    try:
        with_wallet(tab, wallet)
        open_verified(tab, web, world.url, model)
        assert run in tab.text_content("#chain-status")
        tab.fill("#run-address", run)
        tab.click("#run-finish")
        tab.wait_for_selector("#chain-tokens[data-done='true']", timeout=WAIT_MS)
        got = state(tab)
        assert got["status"] == (
            f"run {run} does not exist (closed already?); the session key this page kept for "
            f"it sent what it held back to {wallet.pubkey()}"
        )
        assert [kind for kind, _ in got["signatures"]] == ["return"] and got["requests"] == []
        assert balance(client, wallet.pubkey()) - before > 890_880  # more than its floor
        tab.reload()
        tab.wait_for_function("() => document.getElementById('verdict').textContent")
        assert run not in tab.text_content("#chain-status")
    finally:
        tab.close()


def test_a_step_that_disagrees_stops_the_run_naming_it(page, web, world, stories):
    model, _ = stories
    wallet = funded(world.url, 1)
    client = Client(world.url)
    before = balance(client, wallet.pubkey())
    run, release, _ = _start_and_hold(page, web, world, model, wallet)
    key = Pubkey.from_string(run)

    def alter(localnet) -> int:
        """Change the first generated token behind the program's back."""
        account = localnet.get_account(key)
        header = RunAccount.from_bytes(bytes(account.data))
        data = bytearray(account.data)
        at = header.regions[Region.TOKENS] + 4 * header.prompt_tokens
        (token,) = struct.unpack_from("<I", data, at)
        struct.pack_into("<I", data, at, (token + 1) % 512)
        localnet.svm.set_account(
            key, Account(account.lamports, bytes(data), account.owner, False, 0)
        )
        localnet._forget_reads()  # the localnet caches reads between transactions
        return token

    token = world.localnet.call(alter)
    release()
    page.wait_for_selector("#chain-tokens[data-done='true']", timeout=WAIT_MS)
    got = state(page)
    assert got["outcome"] == "stopped"
    assert re.match(
        rf"run {run} differs after step \d+: generated token 1 is {(token + 1) % 512} on chain, "
        rf"this page computes {token} \(run {run} is left open",
        got["status"],
    ), got["status"]
    # Left open (the record of what differed), the session key's lamports back: the wallet
    # is out the rent and the fees.
    assert not gone(client, run)
    rent = client.get_balance(key, "confirmed").value
    signatures = [sig for _, sig in got["signatures"]]
    assert before - balance(client, wallet.pubkey()) == rent + fees(world.url, signatures)
    assert [kind for kind, _ in got["signatures"]][-1] == "return"


def test_the_localnet_answers_any_origin(world):
    """As agave's RPC service: a browser's preflight is answered and every answer says `*`."""
    origin = {"Origin": "http://page.example", "Access-Control-Request-Method": "POST"}
    preflight = httpx.options(world.url, headers=origin, timeout=60)
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "content-type" in preflight.headers["access-control-allow-headers"]
    answer = httpx.post(
        world.url, json={"jsonrpc": "2.0", "id": 1, "method": "getHealth"}, timeout=60
    )
    assert answer.json()["result"] == "ok"
    assert answer.headers["access-control-allow-origin"] == "*"
    refused = httpx.post(world.url, content=b"{not json", timeout=60)
    assert refused.headers["access-control-allow-origin"] == "*"

"""One embedded localnet (over HTTP) for the SDK's chain tests and the page's browser tests.

``world`` (session): the localnet, a funded authority, and models it published with the
CLI: ``sealed`` (the tiny artifact, sealed), ``failed`` (its upload altered by one byte,
then sealed anyway: it ends failed), with ``verify --output json`` of the sealed one.
``sdk`` is sdk/js built, its packages installed (skips without node; fails in CI, and
without its npm packages: tests/node_packages.py).
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from chain_helpers import write_bytes_on_chain
from solders.pubkey import Pubkey
from web_helpers import TINY, World, cli_json, funded

from curta_chain.artifact.synthetic import synthetic_artifact
from curta_chain.cli.keypairs import write_keypair
from curta_chain.localnet import start_in_thread
from curta_chain.web import start_web_server


@pytest.fixture(scope="session")
def world(tmp_path_factory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("web-world")
    home = folder / "home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))  # never the real Solana CLI config
        localnet = start_in_thread()
        try:
            authority = funded(localnet.url, 100)
            keypair_path = folder / "authority.json"
            write_keypair(authority, keypair_path)
            artifact = synthetic_artifact(TINY, seed=22)
            path = folder / "tiny.curta"
            path.write_bytes(artifact.data)
            base = ["-u", localnet.url, "-k", str(keypair_path)]
            sealed = cli_json("publish", str(path), *base)["model"]
            assert cli_json("seal", sealed, str(path), *base)["state"] == "sealed"
            # A second copy of the model, one byte altered on chain, sealed anyway: failed.
            other = synthetic_artifact(TINY, seed=23)
            other_path = folder / "other.curta"
            other_path.write_bytes(other.data)
            published = cli_json("publish", str(other_path), *base)
            failed = published["model"]
            account = Pubkey.from_string(published["weight_accounts"][1])
            flipped = bytes([other.sections[1][8] ^ 1])
            write_bytes_on_chain(localnet.url, authority, account, 8, flipped)
            assert cli_json("seal", failed, *base)["state"] == "failed"
            verify_json = cli_json("verify", sealed, str(path), "-u", localnet.url)
            assert verify_json["ok"] is True
            yield World(
                localnet, authority, keypair_path, artifact, path, sealed, failed, verify_json,
                folder,
            )  # fmt: skip
        finally:
            localnet.stop()


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
"""Headless Debian Chromium with nothing of its own reaching out (Playwright adds --headless)."""


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory, sdk, world):
    """One headless Chromium for a module's page tests, on a fresh profile (after the world:
    the world's setup runs event loops, which Playwright's sync API would refuse).

    Module-scoped: Playwright's sync API keeps an event loop running in this thread until it
    closes, so a session-wide browser made every later module's ``asyncio.run`` fail with
    "cannot be called from a running event loop" (tests/web before tests/chain or tests/cli)."""
    if not CHROMIUM.exists():
        reason = "Debian's chromium is not installed (.ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="session")
def web(world):
    """The page's server (`curta-chain web -u` the world's localnet), for the session."""
    server = start_web_server(world.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(browser_context):
    """A fresh tab; whatever the page throws fails the test."""
    tab = browser_context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield tab
    finally:
        tab.close()
    assert not errors, errors

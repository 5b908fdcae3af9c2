"""The validator tier: the whole workflow, as processes, against the real solana-test-validator.

Skipped whole where the validator is not installed (``bash scripts/install-test-validator.sh``
builds it into the per-user folder ``curta_chain.validator`` looks in, or have it on PATH);
``CURTA_VALIDATOR_URL`` points the tier at a validator already running instead (started
with the curta program at ``LOCALNET_PROGRAM_ID``, as ``curta-chain localnet --validator``
starts it).

- ``validator`` (a module's): one validator in a temporary ledger on free ports, the shipped
  program preloaded with ``--bpf-program``, its faucet; stopped after the module's last test
  (its proof of history keeps a core busy: the rest of the suite must not pay for it; it
  starts in a few seconds).
- ``embedded`` (a module's): the embedded localnet in this process, to hold to the same work.
- ``payer``: a new keypair funded on both (``Payer.fund``), and its file.
- ``cli``: runs ``curta-chain`` as its own process, JSON out, with ``--yes`` where it
  spends: a validator at ``CURTA_VALIDATOR_URL`` was started elsewhere, so no record of this
  user's names it a local cluster and every spending command there asks first (one the
  tier starts is recorded: ``test_validator_workflow`` runs commands there without it).
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from solders.keypair import Keypair
from validator_helpers import Node, Payer

from curta_chain.cli.keypairs import write_keypair
from curta_chain.localnet import LocalnetHandle, start_in_thread
from curta_chain.validator import NOT_INSTALLED, ValidatorProcess, find_validator

RUNNING = os.environ.get("CURTA_VALIDATOR_URL")
INSTALLED = find_validator()
"""Looked up once, at collection, with the real HOME (each test gets an empty one)."""
SKIP = pytest.mark.skipif(RUNNING is None and INSTALLED is None, reason=NOT_INSTALLED)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip every test of this folder where there is no validator, with the install line."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(SKIP)


@pytest.fixture(scope="module")
def validator(tmp_path_factory) -> Iterator[Node]:
    if RUNNING is not None:
        yield Node("validator", RUNNING)
        return
    ledger = tmp_path_factory.mktemp("validator") / "ledger"
    node = ValidatorProcess.start(ledger, executable=INSTALLED)
    try:
        yield Node("validator", node.url)
    finally:
        node.stop()


@pytest.fixture(scope="module")
def embedded() -> Iterator[Node]:
    handle: LocalnetHandle = start_in_thread()
    try:
        yield Node("embedded", handle.url)
    finally:
        handle.stop()


@pytest.fixture
def payer(tmp_path) -> Payer:
    keypair = Keypair()
    path = tmp_path / "payer.json"
    write_keypair(keypair, path)
    return Payer(keypair, path)

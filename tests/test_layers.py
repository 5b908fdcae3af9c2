"""Layers run one way: the client and the localnet never load each other.

What both need of Solana (limits, fees and the compute-budget rules, transaction sizes, the
loaders' layouts, feature ids) lives below both, in ``curta_chain.protocol``; curta's own
numbers in ``curta_chain.constants``. Checked two ways:

- by what a fresh interpreter loads: the CLI's entry point, every command module but the
  localnet's own and every module of the chain package load none of the localnet's modules
  (nor aiohttp, its HTTP server); every module of the localnet loads none of the chain
  package's; the protocol layer loads neither, nor the curta program's client;
- by what the source says: no module of one package imports the other, not even inside a
  function (the loads above would miss an import a function makes when it runs).

(``solders.litesvm`` is not checked: solders' own ``__init__`` imports it with every other
solders module.)
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "curta_chain"
LOCALNET_ENTRY = "curta_chain.cli.localnet_command"
"""The one client module allowed to name the localnet, and only inside its functions."""


def modules_of(package: str) -> list[str]:
    folder = PACKAGE / package.removeprefix("curta_chain.").replace(".", "/")
    return sorted(
        f"{package}.{path.stem}" for path in folder.glob("*.py") if path.stem != "__init__"
    )


def loaded_after_importing(modules: list[str]) -> list[str]:
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout)


def within(loaded: list[str], *packages: str) -> list[str]:
    return [
        name
        for name in loaded
        if any(name == package or name.startswith(f"{package}.") for package in packages)
    ]


def imported_names(path: Path) -> set[str]:
    """Every module ``path`` names in an import statement, wherever the statement is."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_client_loads_nothing_of_the_localnet():
    # curta_chain.cli holds main (``python -m curta_chain`` and the console script call it).
    commands = [name for name in modules_of("curta_chain.cli") if name != LOCALNET_ENTRY]
    client = ["curta_chain.cli", *commands, *modules_of("curta_chain.chain")]
    assert "curta_chain.chain.sender" in client
    loaded = loaded_after_importing(client)
    assert set(client) <= set(loaded)
    leaks = within(loaded, "curta_chain.localnet", "aiohttp")
    assert leaks == [], f"the client imports the localnet's side: {leaks[:10]}"


def test_the_localnet_loads_nothing_of_the_client():
    localnet = ["curta_chain.localnet", *modules_of("curta_chain.localnet")]
    assert "curta_chain.localnet.node" in localnet
    loaded = loaded_after_importing(localnet)
    assert set(localnet) <= set(loaded)
    leaks = within(loaded, "curta_chain.chain")
    assert leaks == [], f"the localnet imports the client: {leaks[:10]}"


def test_the_protocol_layer_stands_on_solana_alone():
    protocol = ["curta_chain.protocol", *modules_of("curta_chain.protocol")]
    loaded = loaded_after_importing(protocol)
    assert set(protocol) <= set(loaded)
    above = within(
        loaded,
        "curta_chain.chain",
        "curta_chain.localnet",
        "curta_chain.program",
        "curta_chain.cli",
    )
    assert above == [], f"the protocol layer imports a layer above it: {above[:10]}"


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("chain", "curta_chain.localnet"), ("localnet", "curta_chain.chain")],
)
def test_no_module_of_one_names_the_other(package: str, forbidden: str):
    offenders = {
        path.name: sorted(
            name
            for name in imported_names(path)
            if name == forbidden or name.startswith(f"{forbidden}.")
        )
        for path in sorted((PACKAGE / package).glob("*.py"))
    }
    offenders = {name: found for name, found in offenders.items() if found}
    assert offenders == {}, f"curta_chain.{package} imports {forbidden}: {offenders}"


def test_the_source_check_sees_an_import_inside_a_function(tmp_path: Path):
    # The check above would pass vacuously if it missed imports made when a function runs.
    module = tmp_path / "late.py"
    module.write_text("def f():\n    from curta_chain.chain import rpc\n    return rpc\n")
    assert "curta_chain.chain" in imported_names(module)


def test_the_localnet_command_still_reaches_the_localnet_when_run():
    # The first check would pass vacuously if nothing could load the localnet: its own
    # command does, once its function asks for it.
    loaded = loaded_after_importing([LOCALNET_ENTRY, "curta_chain.localnet"])
    assert "curta_chain.localnet.node" in loaded
    assert "aiohttp" in loaded

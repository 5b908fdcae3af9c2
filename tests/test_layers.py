"""Layers run one way: the client never loads the localnet, which is a test cluster.

What both need (fees, limits, compute-budget parsing) lives below both
(``curta_chain.compute_budget``, ``curta_chain.constants``). A fresh interpreter imports the
CLI's entry point, every command module but the localnet's own, and every module of the
chain package, then lists what got loaded: none of the localnet's modules, nor aiohttp, its
HTTP server. (``solders.litesvm`` is not checked: solders 0.26's own ``__init__`` imports it
with every other solders module.)
"""

import json
import subprocess
import sys
from pathlib import Path

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


def test_the_client_loads_nothing_of_the_localnet():
    # curta_chain.cli holds main (``python -m curta_chain`` and the console script call it).
    commands = [name for name in modules_of("curta_chain.cli") if name != LOCALNET_ENTRY]
    client = ["curta_chain.cli", *commands, *modules_of("curta_chain.chain")]
    assert "curta_chain.chain.sender" in client
    loaded = loaded_after_importing(client)
    assert set(client) <= set(loaded)
    leaks = [
        name
        for name in loaded
        if name in ("curta_chain.localnet", "aiohttp")
        or name.startswith(("curta_chain.localnet.", "aiohttp."))
    ]
    assert leaks == [], f"the client imports the localnet's side: {leaks[:10]}"


def test_the_localnet_command_still_reaches_the_localnet_when_run():
    # The check above would pass vacuously if nothing could load the localnet: its own
    # command does, once its function asks for it.
    loaded = loaded_after_importing([LOCALNET_ENTRY, "curta_chain.localnet"])
    assert "curta_chain.localnet.node" in loaded
    assert "aiohttp" in loaded

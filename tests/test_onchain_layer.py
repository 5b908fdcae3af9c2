"""The on-chain run sits above the program's client and the cluster client.

``curta_chain.onchain`` imports ``curta_chain.program`` and ``curta_chain.chain``; neither of
them imports it back. A fresh interpreter imports every module of both and lists what got
loaded: nothing of the on-chain run.
"""

from test_layers import PACKAGE, loaded_after_importing


def test_program_and_chain_load_nothing_of_the_onchain_run():
    below = [
        f"curta_chain.{folder}.{path.stem}"
        for folder in ("program", "chain")
        for path in sorted((PACKAGE / folder).glob("*.py"))
        if path.stem != "__init__"
    ]
    loaded = loaded_after_importing(below)
    assert "curta_chain.chain.sender" in loaded and "curta_chain.program.idl" in loaded
    leaks = [name for name in loaded if name.split(".")[:2] == ["curta_chain", "onchain"]]
    assert leaks == [], f"program/ or chain/ imports the on-chain run: {leaks}"


def test_the_onchain_run_reaches_both():
    # The check above would pass vacuously if the modules were elsewhere.
    loaded = loaded_after_importing(["curta_chain.onchain.run"])
    assert {"curta_chain.onchain.mirror", "curta_chain.chain.sender"} <= set(loaded)

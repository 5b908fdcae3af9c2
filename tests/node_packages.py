"""The Node suites' one rule: skip only when Node itself is absent, never for a missing npm ci.

``bash scripts/setup.sh`` runs ``npm ci`` in every folder below wherever npm is present, so
a folder without its packages on a machine with Node is a broken set-up: the test fails and
says how to fix it. Under ``CI`` (``.ci/run`` installs Node) a missing Node fails too.
"""

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NODE_SUITES = ("tests/litesvm_node", "tests/localnet/js", "sdk/js")
"""The folders whose npm packages scripts/setup.sh installs (``npm ci``)."""


def require_node_packages(folder: Path, package: str) -> None:
    """Skip without ``node``; fail when ``folder`` lacks ``node_modules/<package>``.

    Args:
        folder: a Node suite of ``NODE_SUITES``.
        package: a package its ``package-lock.json`` installs, checked as a folder.
    """
    if shutil.which("node") is None:
        reason = "node is not installed (.ci/run installs it: apt-get install nodejs npm)"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    if not (folder / "node_modules" / package).is_dir():
        where = folder.relative_to(REPO)
        pytest.fail(
            f"{where}/node_modules/{package} is missing: run `bash scripts/setup.sh`, which runs "
            f"`npm ci` in {where} (npm must be installed)",
            pytrace=False,
        )

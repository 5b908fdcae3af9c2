"""The TypeScript SDK's own suite (sdk/js/test, node's built-in runner), run from pytest.

It builds the SDK with esbuild, type-checks it with tsc, runs every test file (the decoder
against the shared corpus, the weights hash, the generated Codama clients), and checks that
the generated clients are what Codama makes of the IDL today.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SDK = Path(__file__).resolve().parents[2] / "sdk" / "js"
TIMEOUT = 300.0


@pytest.fixture(scope="module")
def sdk() -> Path:
    reason = None
    if shutil.which("node") is None:
        reason = "node is not installed (.ci/run installs it)"
    elif not (SDK / "node_modules" / "esbuild").is_dir():
        reason = f"the SDK's packages are not installed: run `npm ci` in {SDK}"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)  # .ci/run installs them: missing there is a broken CI
        pytest.skip(reason)
    return SDK


def _run(sdk: Path, *args: str) -> str:
    done = subprocess.run(args, cwd=sdk, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


def test_the_sdk_type_checks(sdk):
    _run(sdk, "node", "node_modules/typescript/bin/tsc", "--noEmit", "-p", ".")


def test_the_sdk_suite_passes(sdk):
    _run(sdk, "node", "scripts/build.mjs")
    out = _run(sdk, "node", "--test", "dist/test/")
    assert "# fail 0" in out and "# pass " in out


def test_the_generated_clients_match_the_idl(sdk):
    """sdk/js/src/generated is what Codama makes of programs_idl/curta.json today."""
    out = _run(sdk, "node", "scripts/generate.mjs", "--check")
    assert "matches programs_idl/curta.json" in out

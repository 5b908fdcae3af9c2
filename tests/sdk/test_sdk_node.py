"""The TypeScript SDK's own suite (sdk/js/test, node's built-in runner), run from pytest.

It builds the SDK with esbuild, type-checks it with tsc, runs every test file (the decoder
against the shared corpus, the weights hash, the generated Codama clients), and checks that
the generated clients are what Codama makes of the IDL today.
"""

import subprocess
from pathlib import Path

TIMEOUT = 300.0


def _run(sdk: Path, *args: str) -> str:
    done = subprocess.run(args, cwd=sdk, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


def test_the_sdk_type_checks(sdk):
    _run(sdk, "node", "node_modules/typescript/bin/tsc", "--noEmit", "-p", ".")


def test_the_sdk_suite_passes(sdk):
    out = _run(sdk, "node", "--test", "dist/test/")
    assert "# fail 0" in out and "# pass " in out


def test_the_generated_clients_match_the_idl(sdk):
    """sdk/js/src/generated is what Codama makes of programs_idl/curta.json today."""
    out = _run(sdk, "node", "scripts/generate.mjs", "--check")
    assert "matches programs_idl/curta.json" in out

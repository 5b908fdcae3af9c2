#!/usr/bin/env bash
# Create .venv and install curta-chain with its test tools, at the exact versions in
# constraints.txt. Safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -c constraints.txt -e ".[test]"

#!/usr/bin/env bash
# Start the real solana-test-validator with the curta program preloaded, its faucet, free
# ports and a ledger folder, and wait until it answers: `curta-chain localnet --validator`
# from this checkout (curta_chain/validator.py finds the binary, in the per-user folder
# scripts/install-test-validator.sh builds it into, then on PATH). LEDGER and PORT override
# the ledger folder (default ./test-ledger) and RPC port (default 8899; 0 picks one);
# other arguments go to the command (e.g. --reset). Its genesis hash is its own: pass
# --program-id CurtaLoca1netProgram111111111111111111111111 to chain commands there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
python="$repo/.venv/bin/python"
if [[ ! -x "$python" ]]; then
    python=python3
    export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
fi
exec "$python" -m curta_chain localnet --validator \
    --ledger "${LEDGER:-test-ledger}" --port "${PORT:-8899}" "$@"

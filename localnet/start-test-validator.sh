#!/usr/bin/env bash
# Start solana-test-validator with the curta program preloaded at its fixed id, where the
# validator is installed. Extra arguments go to solana-test-validator (e.g. --reset).
# Without the validator, use the embedded localnet: curta-chain localnet
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
python="${PYTHON:-$repo/.venv/bin/python}"
if ! command -v solana-test-validator >/dev/null; then
    echo "solana-test-validator is not installed; run 'curta-chain localnet' for the embedded localnet" >&2
    exit 1
fi
"$python" "$here/write_program_keypair.py" "$here/program-keypair.json" >/dev/null
exec solana-test-validator \
    --ledger "${LEDGER:-$here/test-ledger}" \
    --rpc-port "${PORT:-8899}" \
    --bpf-program "$here/program-keypair.json" "$repo/curta_chain/program/curta.so" \
    "$@"

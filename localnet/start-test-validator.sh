#!/usr/bin/env bash
# Start solana-test-validator with the curta program preloaded at the localnet's program id,
# where the validator is installed. Extra arguments go to solana-test-validator (e.g. --reset).
# The id (curta_chain.constants.LOCALNET_PROGRAM_ID) is an address off the ed25519 curve:
# no keypair exists for it, so --bpf-program takes the address itself. The validator's
# genesis hash is its own: pass --program-id CurtaLoca1netProgram111111111111111111111111
# to chain commands. Without the validator, use the embedded localnet: curta-chain localnet
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
if ! command -v solana-test-validator >/dev/null; then
    echo "solana-test-validator is not installed; run 'curta-chain localnet' for the embedded localnet" >&2
    exit 1
fi
exec solana-test-validator \
    --ledger "${LEDGER:-$here/test-ledger}" \
    --rpc-port "${PORT:-8899}" \
    --bpf-program CurtaLoca1netProgram111111111111111111111111 "$repo/curta_chain/program/curta.so" \
    "$@"

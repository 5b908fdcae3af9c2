#!/usr/bin/env bash
# The main job, end to end on the embedded localnet: set up, convert stories260K, deploy our
# own program, publish, seal and verify. Everything it writes goes to ./out/demo (a Solana CLI
# config of its own included: deploy records the program id there); the localnet stops at
# the end.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${CURTA_DATA:-../shared/data/llama2c}
OUT=out/demo
PORT=${CURTA_DEMO_PORT:-8899}
URL=http://127.0.0.1:$PORT

[ -x .venv/bin/curta-chain ] || bash scripts/setup.sh
CLI=.venv/bin/curta-chain
rm -rf "$OUT" && mkdir -p "$OUT"

# stories260K was trained with a 512-token vocabulary: its first 512 entries of tokenizer.bin.
.venv/bin/python scripts/cut_tokenizer.py "$DATA/tokenizer.bin" 512 "$OUT/tok512.bin"

echo "== convert"
$CLI convert "$DATA/stories260K.bin" "$OUT/tok512.bin" -o "$OUT/stories260K.curta"
$CLI inspect "$OUT/stories260K.curta"

echo "== localnet on $URL"
$CLI localnet --port "$PORT" --ledger "$OUT/ledger" --reset > "$OUT/localnet.log" 2>&1 &
LOCALNET=$!
trap 'kill $LOCALNET 2>/dev/null; wait $LOCALNET 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "ready" "$OUT/localnet.log" 2>/dev/null && break; sleep 0.1; done
grep -q "ready" "$OUT/localnet.log" || { cat "$OUT/localnet.log"; exit 1; }

# A fresh keypair for this run only, funded by the localnet's faucet.
.venv/bin/python -c "from solders.keypair import Keypair; from pathlib import Path; \
from curta_chain.chain.cluster import write_keypair; write_keypair(Keypair(), Path('$OUT/id.json'))"
$CLI airdrop 100 -u "$URL" -k "$OUT/id.json"
CHAIN=(-u "$URL" -C "$OUT/config.yml")

echo "== deploy (final: nobody can ever change the program)"
$CLI deploy --final "${CHAIN[@]}" -k "$OUT/id.json"
echo "== publish"
$CLI publish "$OUT/stories260K.curta" "${CHAIN[@]}" -k "$OUT/id.json" | tee "$OUT/publish.log"
MODEL=$(tail -n 1 "$OUT/publish.log")  # publish prints the model address last
echo "== seal $MODEL"
$CLI seal "$MODEL" "$OUT/stories260K.curta" "${CHAIN[@]}" -k "$OUT/id.json"
echo "== verify"
$CLI verify "$MODEL" "$OUT/stories260K.curta" "${CHAIN[@]}" --require-final
$CLI status "$MODEL" "${CHAIN[@]}"

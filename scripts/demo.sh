#!/usr/bin/env bash
# The main job, end to end on the embedded localnet: set up, convert stories260K, deploy our
# own program, publish, seal and verify. Everything it writes goes to ./out/demo (a Solana CLI
# config of its own included: deploy records the program id there); the localnet stops at
# the end.
#
#   CURTA_DEMO_PORT  the localnet's port (default: a free one the localnet picks)
#   CURTA_DEMO_OUT   where it writes (default: out/demo)
#   CURTA_DATA       the llama2.c files (default: ../shared/data/llama2c)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${CURTA_DATA:-../shared/data/llama2c}
OUT=${CURTA_DEMO_OUT:-out/demo}
PORT=${CURTA_DEMO_PORT:-0}

[ -x .venv/bin/curta-chain ] || bash scripts/setup.sh
CLI=.venv/bin/curta-chain
rm -rf "$OUT" && mkdir -p "$OUT"

# stories260K was trained with a 512-token vocabulary: its first 512 entries of tokenizer.bin.
.venv/bin/python scripts/cut_tokenizer.py "$DATA/tokenizer.bin" 512 "$OUT/tok512.bin"

echo "== convert"
$CLI convert "$DATA/stories260K.bin" "$OUT/tok512.bin" -o "$OUT/stories260K.curta"
$CLI inspect "$OUT/stories260K.curta"

echo "== localnet"
: > "$OUT/localnet.log"
$CLI localnet --port "$PORT" --ledger "$OUT/ledger" --reset > "$OUT/localnet.log" 2>&1 &
LOCALNET=$!
trap 'kill $LOCALNET 2>/dev/null; wait $LOCALNET 2>/dev/null || true' EXIT
# Ready when it says so; stop at once if it exits instead (a busy --port, say).
URL=
for _ in $(seq 600); do
    URL=$(sed -n 's/^Localnet ready at //p' "$OUT/localnet.log")
    [ -n "$URL" ] && break
    kill -0 $LOCALNET 2>/dev/null || break
    sleep 0.1
done
if [ -z "$URL" ]; then
    echo "the localnet did not start:" >&2
    cat "$OUT/localnet.log" >&2
    exit 1
fi
echo "localnet at $URL"

# A fresh keypair for this run only, funded by the localnet's faucet.
$CLI keygen new -o "$OUT/id.json" --no-bip39-passphrase --silent
$CLI airdrop 100 -u "$URL" -k "$OUT/id.json"
CHAIN=(-u "$URL" -C "$OUT/config.yml")

echo "== deploy (final: nobody can ever change the program)"
$CLI deploy --final "${CHAIN[@]}" -k "$OUT/id.json"
echo "== publish"
$CLI publish "$OUT/stories260K.curta" "${CHAIN[@]}" -k "$OUT/id.json" | tee "$OUT/publish.log"
MODEL=$(sed -n 's/^Model: //p' "$OUT/publish.log")
echo "== seal $MODEL"
$CLI seal "$MODEL" "$OUT/stories260K.curta" "${CHAIN[@]}" -k "$OUT/id.json"
echo "== verify"
$CLI verify "$MODEL" "$OUT/stories260K.curta" "${CHAIN[@]}" --require-final
$CLI status "$MODEL" "${CHAIN[@]}"
echo "== run: the sealed model speaks, read from the chain (integers; the stand-in tokenizer's text is noise)"
$CLI run "$MODEL" "${CHAIN[@]}" --prompt "Once upon a time" --steps 24 --temperature 0
echo "== run --on-chain: the program computes the same tokens, a step per transaction"
$CLI run "$MODEL" "${CHAIN[@]}" -k "$OUT/id.json" --on-chain --prompt "Once upon a time" --steps 8 --temperature 0

#!/usr/bin/env bash
# The main job, end to end on the embedded localnet: set up, convert the demo model (a
# llama2.c model and tokenizer trained here: docs/demo-model.md), deploy our own program,
# publish, seal, verify, and let it tell a story: from the file, from the chain, and on
# chain with the mirror checking every step. Everything it writes goes to ./out/demo (a
# Solana CLI config of its own included: deploy records the program id there; git ignores
# out/); the localnet stops at the end, and the last lines say what to try next.
#
#   CURTA_DEMO_PORT  the localnet's port (default: a free one the localnet picks)
#   CURTA_DEMO_OUT   where it writes (default: out/demo)
set -euo pipefail
cd "$(dirname "$0")/.."
DEMO=curta_chain/demo
OUT=${CURTA_DEMO_OUT:-out/demo}
PORT=${CURTA_DEMO_PORT:-0}

# The Python environment only: the demo needs none of the Node suites' packages.
[ -x .venv/bin/curta-chain ] || bash scripts/setup.sh --no-node
CLI=.venv/bin/curta-chain
rm -rf "$OUT" && mkdir -p "$OUT"

echo "== convert"
$CLI convert "$DEMO/model.bin" "$DEMO/tokenizer.bin" -o "$OUT/demo.curta"
$CLI inspect "$OUT/demo.curta"
echo "== run from the file: greedy, then sampled (llama2.c's -t, -p, -s, -n, -i)"
$CLI run "$OUT/demo.curta" -i "Once upon a time" -n 120 -t 0
$CLI run "$OUT/demo.curta" -i "Once upon a time" -n 120 -t 1.0 -p 0.9 -s 42

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
$CLI publish "$OUT/demo.curta" "${CHAIN[@]}" -k "$OUT/id.json" | tee "$OUT/publish.log"
MODEL=$(sed -n 's/^Model: //p' "$OUT/publish.log")
echo "== seal $MODEL"
$CLI seal "$MODEL" "$OUT/demo.curta" "${CHAIN[@]}" -k "$OUT/id.json"
echo "== status: what the chain holds, and the next step"
$CLI status "$MODEL" "${CHAIN[@]}"
echo "== verify"
$CLI verify "$MODEL" "$OUT/demo.curta" "${CHAIN[@]}" --require-final
echo "== run: the sealed model read from the chain, the same story as from the file"
$CLI run "$MODEL" "${CHAIN[@]}" -i "Once upon a time" -n 120 -t 0
echo "== run --on-chain: the program computes the same tokens, the mirror checks every step"
$CLI run "$MODEL" "${CHAIN[@]}" -k "$OUT/id.json" --on-chain -i "Once upon a time" --steps 12 -t 0
echo "== run --on-chain with no prompt: the opening token alone, as llama2.c's run.c with no -i"
$CLI run "$MODEL" "${CHAIN[@]}" -k "$OUT/id.json" --on-chain -n 6 -t 0

echo "== done: everything it wrote is in $OUT"
echo "demo.curta (the artifact), id.json (the keypair the faucet funded), config.yml (the"
echo "program id deploy recorded), ledger/ (the localnet's chain) and localnet.log."
echo "Next, from $PWD:"
echo "  $CLI web    # the page: the demo model in the browser, no node needed"
echo "  $CLI localnet --ledger $OUT/ledger    # this chain again; then, in another terminal,"
echo "  $CLI web --model $MODEL    # the page verifies the sealed model"
echo "and the README's \"The workflow on the localnet\": these steps by hand."

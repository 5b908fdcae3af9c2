// node sdk_verify.mjs kit|url URL MODEL [ARTIFACT]: print verifyModel's report as one JSON line,
// or {"error": name, "message": ...} for a refusal (driven by tests/web/test_sdk_chain.py).
// kit: the cluster as a @solana/kit RPC; url: as its URL (slices read with fetch).
import { readFileSync } from "node:fs";
import { createSolanaRpc, verifyModel } from "../../sdk/js/dist/index.js";

const [mode, url, model, artifactPath] = process.argv.slice(2);
const rpc = mode === "kit" ? createSolanaRpc(url) : url;
const slices = [];
try {
  const report = await verifyModel(rpc, model, {
    artifact: artifactPath ? new Uint8Array(readFileSync(artifactPath)) : undefined,
    onProgress: (p) => p.phase === "reading" && slices.push(p.done),
  });
  console.log(JSON.stringify({ report, progress: slices }));
} catch (e) {
  console.log(JSON.stringify({ error: e.name, message: e.message }));
}

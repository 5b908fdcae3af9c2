// node sdk_verify.mjs URL MODEL [ARTIFACT]: print verifyModel's report as one JSON line, or
// {"error": name, "message": ...} for a refusal (driven by tests/web/test_sdk_chain.py).
import { readFileSync } from "node:fs";
import { createSolanaRpc, verifyModel } from "../../sdk/js/dist/index.js";

const [url, model, artifactPath] = process.argv.slice(2);
const rpc = createSolanaRpc(url);
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

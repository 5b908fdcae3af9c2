// node sdk_chain_run.mjs URL MODEL ARTIFACT SEED_HEX ADDRESS KEY_HEX SHORT: run MODEL on chain with
// the SDK under Node, as the page does, with a Wallet Standard wallet of the test's own (the
// secret SEED_HEX, its public key KEY_HEX; Ed25519 through WebCrypto), the count of steps made SHORT steps short
// of the chain's and the session key funded for that count only; one JSON line: the outcome,
// the generated ids, the wallet's requests and the kinds of transactions that landed
// (driven by tests/web/test_chain_run.py).
import { readFileSync } from "node:fs";
import {
  ConnectedWallet, decodeArtifact, fetchModel, IntModel, JsonRpc, planChainRun, planRun, runOnChain, Tokenizer,
} from "../../sdk/js/dist/index.js";

const [url, modelAddress, artifactPath, seedHex, walletAddress, keyHex, short] = process.argv.slice(2);
const seed = Buffer.from(seedHex, "hex");
const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
const key = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
const requests = [];

/** Sign a legacy or v0 wire transaction whose fee payer (first signer) is this wallet. */
async function sign(wire) {
  const bytes = new Uint8Array(wire);
  const count = bytes[0];
  const message = bytes.subarray(1 + 64 * count);
  const signature = new Uint8Array(await crypto.subtle.sign("Ed25519", key, message));
  bytes.set(signature, 1);
  return bytes;
}

const publicKey = new Uint8Array(Buffer.from(keyHex, "hex"));
const account = { address: walletAddress, publicKey, chains: ["solana:localnet"], features: ["solana:signTransaction"] };
const wallet = {
  version: "1.0.0", name: "Node Test Wallet", icon: "data:image/svg+xml;base64,", chains: ["solana:localnet"], accounts: [account],
  features: {
    "standard:connect": { version: "1.0.0", connect: async () => ({ accounts: [account] }) },
    "solana:signTransaction": {
      version: "1.0.0", supportedTransactionVersions: ["legacy", 0],
      signTransaction: async (...inputs) => {
        requests.push(inputs.length);
        return Promise.all(inputs.map(async (i) => ({ signedTransaction: await sign(i.transaction) })));
      },
    },
  },
};

const artifact = decodeArtifact(new Uint8Array(readFileSync(artifactPath)), artifactPath);
const fetched = await fetchModel(url, modelAddress);
const slots = fetched.model.sections.slice(0, fetched.model.sectionCount);
const connected = await ConnectedWallet.connect(wallet, "solana:localnet");
const plan0 = planRun(new IntModel(artifact), new Tokenizer(artifact), "Once upon a time", 12);
const plan = await planChainRun({
  rpc: new JsonRpc(url), chain: "solana:localnet", programId: fetched.programId, model: modelAddress,
  weightAccounts: slots.map((s) => s.weightAccount), sectionLengths: slots.map((s) => Number(s.length)), artifact,
  prompt: "Once upon a time", promptIds: plan0.promptIds, newTokens: plan0.steps, settings: { temperature: 0, topP: 0, seed: 0n },
}, connected);
// A count short of the chain's, and a session key funded for that count alone.
const counted = plan.count.steps;
plan.count = { ...plan.count, steps: counted - Number(short) };
plan.funding = plan.sessionRent + BigInt(plan.count.steps) * plan.fees.step;
const kept = new Map();
const store = { save: (r, s, o) => kept.set(r, { seed: s, owner: o }), load: (r) => kept.get(r) ?? null, drop: (r) => kept.delete(r) };
const landed = [], tokens = [];
try {
  const outcome = await runOnChain(plan, connected, store, {
    status: () => undefined, opened: () => undefined,
    progress: (_view, fresh) => tokens.push(...fresh), landed: (kind) => landed.push(kind),
  });
  console.log(JSON.stringify({ run: outcome.run, closed: outcome.closed, tokens, requests, landed, counted, kept: kept.size }));
} catch (e) {
  console.log(JSON.stringify({ error: e.name, message: e.message, tokens, requests, landed }));
}

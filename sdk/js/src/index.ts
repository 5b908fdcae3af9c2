/** @curta/sdk: read, verify and run curta-chain models from TypeScript. */

export * from "./chain.js";
export * from "./decode.js";
export * from "./format.js";
export * from "./hash.js";
export * from "./layout.js";
// Codama's clients, generated from the IDL; its own account fetchers `fetchModel` and
// `fetchRun` (one account, no checks) are `fetchModelAccount` and `fetchRunAccount` here,
// `fetchModel` and `fetchRun` being the checked reads.
export * from "./generated/index.js";
export { fetchModel, fetchRun } from "./chain.js";
export { fetchModel as fetchModelAccount, fetchRun as fetchRunAccount } from "./generated/index.js";
// The RPC client the chain functions take and a signer for building, so a user needs no
// second import for either.
export { createNoopSigner, createSolanaRpc } from "@solana/kit";
export * from "./inference.js";
export * from "./runlayout.js";
export * from "./steps.js";
export * from "./batch.js";
export * from "./fees.js";
export * from "./rpc.js";
export * from "./transactions.js";
export * from "./wallet.js";
export * from "./runcheck.js";
export * from "./crank.js";
export * from "./onchain.js";
export * as schedule from "./schedule.js";

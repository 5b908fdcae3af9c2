/** @curta/sdk: read, verify and run curta-chain models from TypeScript. */

export * from "./chain.js";
export * from "./decode.js";
export * from "./format.js";
export * from "./hash.js";
export * from "./layout.js";
// Codama's clients, generated from the IDL; its own account fetcher `fetchModel` (one
// account, no checks) is `fetchModelAccount` here, `fetchModel` being the checked read.
export * from "./generated/index.js";
export { fetchModel } from "./chain.js";
export { fetchModel as fetchModelAccount } from "./generated/index.js";
// The RPC client the chain functions take, so a user needs no second import.
export { createSolanaRpc } from "@solana/kit";
export * from "./inference.js";

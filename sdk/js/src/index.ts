/** @curta/sdk: read, verify and run curta-chain models from TypeScript. */

export * from "./decode.js";
export * from "./format.js";
export * from "./hash.js";
export * from "./layout.js";
export * from "./generated/index.js";

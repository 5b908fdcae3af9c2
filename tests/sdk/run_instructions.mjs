// node run_instructions.mjs JSON: the instructions of the page's run transactions (the
// opening, a step naming several weight accounts, the closing with the session's
// lamports) for the keys and values in JSON, one line of {name: [{program, data (hex),
// accounts: [[address, signer, writable]]}]} (tests/sdk/test_sdk_instructions.py).
import { closeInstructions, createNoopSigner, openInstructions, stepInstruction, toHex } from "../../sdk/js/dist/index.js";

const address = (text) => text; // kit's addresses are base58 strings

const k = JSON.parse(process.argv[2]);
const shown = (ixs) => ixs.map((ix) => ({
  program: ix.programAddress, data: toHex(ix.data), accounts: ix.accounts.map((a) => [a.address, a.role >= 2, a.role % 2 === 1]),
}));
const out = {
  open: shown(openInstructions({
    programId: address(k.program), opener: address(k.opener), run: createNoopSigner(address(k.run)), model: address(k.model),
    sectionZero: address(k.weights[0]), runSize: k.size, rent: BigInt(k.rent), capacity: k.capacity,
    prompt: new TextEncoder().encode(k.prompt), temperature: k.temperature, topP: k.topP, seed: BigInt(k.seed),
    session: address(k.session), funding: BigInt(k.funding),
  })),
  step: shown([stepInstruction(address(k.program), address(k.run), address(k.model), k.weights.map(address), BigInt(k.label))]),
  close: shown(closeInstructions(address(k.program), address(k.opener), address(k.run), { address: address(k.session), lamports: BigInt(k.back) })),
};
console.log(JSON.stringify(out));

// node instructions.mjs JSON: the Codama builders' instructions for the keys and values in
// JSON (u64s as decimal strings), one line of {name: {data (hex), accounts: [[address,
// signer, writable]]}} (tests/sdk).
import {
  createNoopSigner, getBeginSealingInstruction, getBindWeightAccountInstruction, getCloseModelInstruction,
  getCloseRunInstruction, getCloseWeightAccountInstruction, getCreateModelInstruction, getOpenRunInstruction,
  getReopenInstruction, getSealStepInstruction, getStepInstruction, getWriteWeightsInstruction, toHex,
} from "../../sdk/js/dist/index.js";

const k = JSON.parse(process.argv[2]);
const config = { programAddress: k.program };
const signer = (address) => createNoopSigner(address);
const hash = Uint8Array.from(Buffer.from(k.hash, "hex"));
const lengths = k.lengths.map(BigInt);
const authority = signer(k.authority);
const oneWeight = { authority, model: k.model, weightAccount: k.weight, sectionIndex: k.index };
const built = {
  create_model: getCreateModelInstruction(
    { authority, model: signer(k.model), declaredHash: hash, sectionLengths: lengths }, config,
  ),
  bind_weight_account: getBindWeightAccountInstruction({ ...oneWeight, weightAccount: signer(k.weight) }, config),
  reopen: getReopenInstruction(oneWeight, config),
  close_weight_account: getCloseWeightAccountInstruction(oneWeight, config),
  close_model: getCloseModelInstruction({ authority, model: k.model }, config),
  close_run: getCloseRunInstruction({ opener: authority, run: k.run }, config),
  begin_sealing: getBeginSealingInstruction({ authority: signer(k.authority), model: k.model }, config),
  seal_step: getSealStepInstruction({ model: k.model, weightAccount: k.weight, label: BigInt(k.label) }, config),
  step: getStepInstruction({ run: k.run, model: k.model, sectionZero: k.weight, label: BigInt(k.label) }, config),
  write_weights: getWriteWeightsInstruction(
    { authority: signer(k.authority), weightAccount: k.weight, offset: BigInt(k.offset), data: Uint8Array.from(Buffer.from(k.bytes, "hex")) },
    config,
  ),
  open_run: getOpenRunInstruction(
    {
      opener: signer(k.authority), run: signer(k.run), model: k.model, sectionZero: k.weight, capacity: 12,
      temperature: 65536, topP: 58982, seed: BigInt(k.seed), prompt: { __kind: "Text", text: new TextEncoder().encode(k.prompt) },
    },
    config,
  ),
};
const out = {};
for (const [name, ix] of Object.entries(built))
  out[name] = { data: toHex(ix.data), accounts: ix.accounts.map((a) => [a.address, a.role >= 2, a.role % 2 === 1]) };
console.log(JSON.stringify(out));

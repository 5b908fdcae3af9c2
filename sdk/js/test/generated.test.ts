// The Codama clients generated from programs_idl/curta.json: their instruction data starts
// with Anchor's discriminator (sha256("global:<snake name>")[:8]) and their account
// decoders read the IDL's layout.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { address } from "@solana/kit";
import { CURTA_PROGRAM_ADDRESS, getBeginSealingInstruction, getModelDecoder, getModelEncoder, ModelState } from "../src/index.js";

test("instruction builders carry Anchor's discriminator and the program id", () => {
  const key = address("11111111111111111111111111111111");
  const ix = getBeginSealingInstruction({ model: key, authority: { address: key } as never });
  const want = createHash("sha256").update("global:begin_sealing").digest().subarray(0, 8);
  assert.deepEqual(Buffer.from(ix.data!.subarray(0, 8)), want);
  assert.equal(ix.programAddress, CURTA_PROGRAM_ADDRESS);
});

test("the model account decoder reads back what its encoder wrote", () => {
  const key = address("CurtaLoca1netProgram111111111111111111111111");
  const sections = Array.from({ length: 18 }, (_, i) => ({ weightAccount: key, length: BigInt(i) }));
  const bytes = getModelEncoder().encode({
    authority: key, declaredHash: new Uint8Array(32).fill(7), runningHash: new Uint8Array(32), state: ModelState.Sealed,
    sectionCount: 2, boundCount: 2, frozenCount: 2, reserved0: new Uint8Array(4), cursorSection: 0, chunksHashed: 3,
    cursorOffset: 0n, sections, sealSlot: 9n,
  });
  const want = createHash("sha256").update("account:Model").digest().subarray(0, 8);
  assert.deepEqual(Buffer.from(bytes.subarray(0, 8)), want);
  const model = getModelDecoder().decode(bytes);
  assert.equal(model.state, ModelState.Sealed);
  assert.equal(model.sections[5].length, 5n);
});

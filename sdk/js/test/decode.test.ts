// The one corpus (tests/corpus, written by scripts/make_corpus.py) against this decoder:
// every case the Python decoder refuses is refused with the same one-line message, every
// case it accepts decodes to the same configuration, sections and weights hash.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { createHash } from "node:crypto";
import { ArtifactError, CONFIG_FIELDS, decodeArtifact, fromHex, toHex, weightsCommitment } from "../src/index.js";

const corpus = new URL("../../../../tests/corpus/", import.meta.url) // from dist/test/;
interface Edit { at?: number; hex?: string; truncate?: number; append?: string; insert?: number }
interface Case { name: string; base: string; edits: Edit[]; error?: string; config?: Record<string, number>; sections?: number[]; tied?: boolean; weights_hash?: string }
const manifest: { source: string; cases: Case[] } = JSON.parse(readFileSync(new URL("cases.json", corpus), "utf8"));

function apply(data: Uint8Array, edits: Edit[]): Uint8Array {
  let out: Uint8Array = Uint8Array.from(data);
  for (const edit of edits) {
    if (edit.truncate !== undefined) out = out.slice(0, edit.truncate);
    else if (edit.append !== undefined) out = concat(out, fromHex(edit.append));
    else if (edit.insert !== undefined) out = concat(concat(out.slice(0, edit.insert), fromHex(edit.hex!)), out.slice(edit.insert));
    else out.set(fromHex(edit.hex!), edit.at!);
  }
  return out;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

for (const c of manifest.cases) {
  test(`corpus: ${c.name}`, async () => {
    const data = apply(new Uint8Array(readFileSync(new URL(`${c.base}.curta`, corpus))), c.edits);
    if (c.error !== undefined) {
      assert.throws(() => decodeArtifact(data, manifest.source), (e: unknown) => e instanceof ArtifactError && e.message === c.error);
      return;
    }
    const a = decodeArtifact(data, manifest.source);
    // The corpus gives Python's names; the SDK the spec's (CONFIG_FIELDS maps one to the other).
    const python = Object.fromEntries(CONFIG_FIELDS.map(([name, py]) => [py, a.config[name]]));
    assert.deepEqual(python, c.config);
    assert.deepEqual(a.sections.map((s) => s.length), c.sections);
    assert.equal(a.tied, c.tied);
    assert.equal(toHex(await weightsCommitment(a.sections)), c.weights_hash);
  });
}

test("the corpus refuses in most cases and accepts in some", () => {
  const refused = manifest.cases.filter((c) => c.error).length;
  assert.ok(refused >= 50 && refused < manifest.cases.length);
});

test("weightsCommitment chains over 64 KiB chunks, restarting at each section", async () => {
  const a = new Uint8Array(65_536 + 10).fill(1);
  const b = new Uint8Array(3).fill(2);
  let running = Buffer.alloc(32);
  for (const chunk of [a.subarray(0, 65_536), a.subarray(65_536), b])
    running = createHash("sha256").update(running).update(chunk).digest();
  const seen: number[] = [];
  assert.equal(toHex(await weightsCommitment([a, b], (n) => seen.push(n))), running.toString("hex"));
  assert.deepEqual(seen, [65_536, 65_546, 65_549]);
  assert.equal(toHex(await weightsCommitment([])), "00".repeat(32));
});

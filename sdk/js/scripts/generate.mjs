// Regenerate src/generated/ (instruction builders, account decoders, errors) from the
// program's Anchor IDL with Codama. `node scripts/generate.mjs --check` writes to a
// temporary folder instead and fails when src/generated differs (tests/sdk runs it).
import { rootNodeFromAnchor } from "@codama/nodes-from-anchor";
import { renderVisitor } from "@codama/renderers-js";
import { visit } from "@codama/visitors-core";
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const here = new URL("..", import.meta.url).pathname;
const idl = JSON.parse(readFileSync(join(here, "../../programs_idl/curta.json"), "utf8"));
const check = process.argv.includes("--check");
const out = check ? mkdtempSync(join(tmpdir(), "curta-codama-")) : here;
// The renderer's options that keep the output a function of the IDL alone: no package.json
// edits, imports from @solana/kit only.
// The IDL is Anchor's legacy (0.29) format, from which nodes-from-anchor makes a program
// node without the PDA list the renderer expects; the program has no PDAs.
const root = rootNodeFromAnchor(idl);
const program = { ...root.program, pdas: root.program.pdas ?? [] };
await visit(
  { ...root, program },
  renderVisitor(out, { syncPackageJson: false, kitImportStrategy: "rootOnly", deleteFolderBeforeRendering: true }),
);
// Codama's client-plugin type (programs/curta.ts) is refused by tsc 5.9 against kit 8's
// extendClient, whatever the IDL; the builders and decoders type-check and are what we use.
const plugin = join(out, "src/generated/programs/curta.ts");
writeFileSync(plugin, "// @ts-nocheck -- added by scripts/generate.mjs (see there)\n" + readFileSync(plugin, "utf8"));

function files(dir, prefix = "") {
  return readdirSync(dir).sort().flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path, `${prefix}${name}/`) : [`${prefix}${name}`];
  });
}

if (check) {
  const want = join(out, "src/generated");
  const have = join(here, "src/generated");
  const a = files(want), b = files(have);
  const stale = [...new Set([...a, ...b])].filter((f) => !a.includes(f) || !b.includes(f) || !readFileSync(join(want, f)).equals(readFileSync(join(have, f))));
  rmSync(out, { recursive: true, force: true });
  if (stale.length) {
    console.error(`sdk/js/src/generated is stale against programs_idl/curta.json (${stale.join(", ")}): run \`npm run generate\` in sdk/js`);
    process.exit(1);
  }
  console.log("src/generated matches programs_idl/curta.json");
}

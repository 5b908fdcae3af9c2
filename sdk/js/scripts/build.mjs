// Build the SDK with esbuild: dist/index.js for Node (ESM) and the tests, both reproducible
// (no timestamps, no absolute paths). The page's bundle is built by curta_chain/web's build.
import { build } from "esbuild";
import { readdirSync } from "node:fs";

const here = new URL("..", import.meta.url).pathname;
const common = { absWorkingDir: here, bundle: true, format: "esm", platform: "node", target: "node20", logLevel: "warning", legalComments: "none" };
await build({ ...common, entryPoints: ["src/index.ts"], outfile: "dist/index.js", packages: "external" });
const tests = readdirSync(`${here}/test`).filter((f) => f.endsWith(".test.ts"));
await build({ ...common, entryPoints: tests.map((f) => `test/${f}`), outdir: "dist/test", packages: "external" });

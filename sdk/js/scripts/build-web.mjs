// Build the page into curta_chain/web/static/ (or the folder given): app.js bundled by
// esbuild for browsers, index.html and style.css copied. The output is committed and
// shipped in the Python package; tests/web checks that a rebuild gives the same bytes.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";

const here = new URL("..", import.meta.url).pathname;
const out = resolve(process.argv[2] ?? join(here, "../../curta_chain/web/static"));
mkdirSync(out, { recursive: true });
await build({
  absWorkingDir: here,
  entryPoints: ["web/app.ts"],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "none",
  // node:crypto is imported only under Node (hash.ts); browsers hash with WebCrypto.
  external: ["node:crypto"],
  logLevel: "warning",
});
for (const file of ["index.html", "style.css"]) copyFileSync(join(here, "web", file), join(out, file));

// node run_model.mjs ARTIFACT PROMPT STEPS TEMPERATURE TOP_P SEED: the SDK's generator, one
// JSON line with the prompt's and the generated ids, or {"error": message} (tests/sdk).
import { readFileSync } from "node:fs";
import { decodeArtifact, generate, IntModel, planRun, q16, Tokenizer } from "../../sdk/js/dist/index.js";

const [path, prompt, steps, temperature, topP, seed] = process.argv.slice(2);
try {
  const artifact = decodeArtifact(new Uint8Array(readFileSync(path)), path);
  const model = new IntModel(artifact);
  const plan = planRun(model, new Tokenizer(artifact), prompt, Number(steps));
  const settings = {
    temperature: q16(temperature, "--temperature", 100 * 65_536),
    topP: q16(topP, "--top-p", 65_536),
    seed: BigInt(seed),
  };
  const started = performance.now();
  const ids = [...generate(model, plan, settings)];
  const seconds = (performance.now() - started) / 1000;
  console.log(JSON.stringify({ prompt_ids: plan.promptIds, generated_ids: ids, seconds }));
} catch (e) {
  console.log(JSON.stringify({ error: e.message }));
}

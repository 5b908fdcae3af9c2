// node count_steps.mjs ARTIFACT PROMPT NEW_TOKENS TEMPERATURE TOP_P SEED: the SDK's count of
// an on-chain run's steps (its integer core's tokens, the schedule run dry, each batch's plan
// from the core's activations), every plan it made and the run account's layout, one JSON
// line (tests/sdk/test_sdk_steps.py).
import { readFileSync } from "node:fs";
import { countSteps, decodeArtifact, generate, IntModel, planRun, q16, runLayout, Tokenizer } from "../../sdk/js/dist/index.js";

const [path, prompt, newTokens, temperature, topP, seed] = process.argv.slice(2);
const artifact = decodeArtifact(new Uint8Array(readFileSync(path)), path);
const model = new IntModel(artifact), tokenizer = new Tokenizer(artifact);
const plan = planRun(model, tokenizer, prompt, Number(newTokens));
const t = q16(temperature, "t", 100 * 65_536);
// Greedy runs open with top-p and seed 0, as `curta-chain run --on-chain` opens them.
const settings = t === 0 ? { temperature: 0, topP: 0, seed: 0n } : { temperature: t, topP: q16(topP, "p", 65_536), seed: BigInt(seed) };
const tokens = [...plan.promptIds, ...generate(model, plan, settings)];
const text = new TextEncoder().encode(prompt);
const capacity = plan.promptIds.length + plan.steps;
const plans = [];
const shape = { capacity, prompt: text, temperature: settings.temperature, topP: settings.topP };
const count = countSteps(artifact, tokenizer, shape, tokens, (p) => plans.push([p.segments, p.kernel, p.call, p.remainder]));
const opened = { temperature: settings.temperature, top_p: settings.topP, seed: settings.seed.toString() };
console.log(JSON.stringify({ tokens, capacity, settings: opened, ...count, plans, layout: runLayout(artifact.config, capacity, true, text.length) }));

// node plan_batch.mjs < CASES: the SDK's plan of each batch (`segments`, `planBatch`) from its
// two lanes' sums of |x| per group of 8 columns; CASES is a JSON list of [l0, l1, padded], the
// answer a JSON list of [segments, [segments, kernel, call, remainder]] (tests/sdk/test_sdk_steps.py).
import { readFileSync } from "node:fs";
import { planBatch, segments } from "../../sdk/js/dist/index.js";

const cases = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(cases.map(([l0, l1, padded]) => {
  const [a, b] = [Float64Array.from(l0), Float64Array.from(l1)];
  const p = planBatch(a, b, padded);
  return [segments(a, b, padded), [p.segments, p.kernel, p.call, p.remainder]];
})));

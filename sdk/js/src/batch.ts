/**
 * A batch's plan (programs/curta/src/rows.c's `plan_batch`, curta_chain/onchain/mirror/batch.py):
 * what a slice of rows costs while two prompt positions run at once.
 *
 * The kernel runs on packed words (lane 0 + 2^32 x lane 1) over segments of columns where
 * each lane's sum of |x| is at most `LANE_SPAN` (its sum then lies in a window of 2^32); a
 * group of 8 columns where either lane's sum passes it runs each lane on its own (plain).
 * The columns are cut greedily, a group at a time. The rows' values are the single
 * positions'; only their cost follows the plan, so the plan needs the lanes' sums of |x| per
 * group of 8 columns, nothing else (`groupSums`). tests/sdk/test_sdk_steps.py holds this
 * port to the Python's, segment for segment.
 */

import type { Artifact } from "./decode.js";
import { IntModel, type RowsInput } from "./inference.js";
import { KERNEL_CALL, KERNEL_REMAINDER, KERNEL_ROW, KERNEL_STEP, ROWS_PER_CALL } from "./schedule.js";

/** A lane's largest sum of |x| over a packed segment: (2^32 - 1) / 256. */
export const LANE_SPAN = Math.floor((2 ** 32 - 1) / 256);

/** The cost parameters of a batch's rows (`Plan` in rows.c). */
export interface BatchPlan {
  /** Packed and plain segments. */
  segments: number;
  /** A row's kernel units: a packed segment's call once, a plain one's twice. */
  kernel: number;
  /** The calls of a chunk of rows, beyond their rows. */
  call: number;
  /** Their last rows, in C. */
  remainder: number;
}

/** Each group of `KERNEL_STEP` columns' sum of |x| over the vector's first `length` values. */
export function groupSums(x: ArrayLike<number>, length: number): Float64Array {
  const out = new Float64Array(Math.ceil(length / KERNEL_STEP));
  for (let j = 0; j < length; j++) out[Math.floor(j / KERNEL_STEP)] += Math.abs(x[j]); // < 2^34: exact
  return out;
}

/** Prompt positions' rows' inputs as group sums (`groupSums`), by position, layer and kind. */
export type Activations = Record<RowsInput, Float64Array>[][];

/**
 * Positions 0..count-1 of `ids` run by the integer core, each layer's rows' inputs taken as
 * group sums: all a batch's plans read (the batch's values are the single positions').
 */
export function promptActivations(artifact: Artifact, ids: number[], count: number): Activations {
  const model = new IntModel(artifact), out: Activations = [];
  for (let pos = 0; pos < count; pos++) {
    const layers = Array.from({ length: artifact.config.layers }, () => ({}) as Record<RowsInput, Float64Array>);
    model.forward(ids[pos], pos, (layer, rows, x, length) => (layers[layer][rows] = groupSums(x, length)));
    out.push(layers);
  }
  return out;
}

/**
 * The plan's segments of two lanes over `padded` columns (a multiple of 8): each packed or
 * not, and its columns. `l0`, `l1`: the lanes' group sums (groups past them are zeros).
 */
export function segments(l0: Float64Array, l1: Float64Array, padded: number): [boolean, number][] {
  const cut: [boolean, number][] = [];
  let span0 = 0, span1 = 0;
  for (let g = 0; g < padded / KERNEL_STEP; g++) {
    const a = l0[g] ?? 0, b = l1[g] ?? 0;
    const fits = a <= LANE_SPAN && b <= LANE_SPAN;
    const last = cut[cut.length - 1];
    if (last) {
      if (fits && last[0] && span0 + a <= LANE_SPAN && span1 + b <= LANE_SPAN) {
        last[1] += KERNEL_STEP;
        span0 += a;
        span1 += b;
        continue;
      }
      if (!fits && !last[0]) {
        last[1] += KERNEL_STEP;
        continue;
      }
    }
    cut.push([fits, KERNEL_STEP]);
    span0 = a;
    span1 = b;
  }
  return cut;
}

/** The plan of two lanes' group sums over `padded` columns. */
export function planBatch(l0: Float64Array, l1: Float64Array, padded: number): BatchPlan {
  const cut = segments(l0, l1, padded);
  let kernel = 0, call = 0, remainder = 0;
  for (const [packed, columns] of cut) {
    const calls = packed ? 1 : 2;
    kernel += calls * (KERNEL_ROW(columns) + Math.ceil(KERNEL_CALL(columns) / ROWS_PER_CALL));
    call += calls * KERNEL_CALL(columns);
    remainder += calls * KERNEL_REMAINDER(columns);
  }
  return { segments: cut.length, kernel, call, remainder };
}

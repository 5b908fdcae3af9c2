/**
 * The run account's layout: its 512-byte header, then its regions
 * (curta_chain/onchain/run_account.py's `run_layout`, programs/curta/src/run_layout.c).
 * A client creates the account with `runAccountSize` bytes before openRun; the program
 * refuses any other size. tests/sdk/test_sdk_steps.py holds this to the Python layout.
 */

import type { ModelConfig } from "./layout.js";
import { kvDim } from "./layout.js";

export const RUN_HEADER_BYTES = 512;
/** The most prompt bytes openRun takes. */
export const MAX_PROMPT_LENGTH = 2048;
/** Solana's largest account. */
export const MAX_ACCOUNT_SIZE = 10_485_760;
/** The nucleus histograms: weight sums by `weight >> 11`, then by `weight & 2,047`. */
export const HIST_SHIFT = 11;
export const HIST_HIGH = (1 << (22 - HIST_SHIFT)) + 1;
export const HIST_LOW = 1 << HIST_SHIFT;

/** The run account's regions, in order (`enum Region` in inference.h). */
export const Region = { PROMPT: 0, WORK: 1, TOKENS: 2, X: 3, XB: 4, Q: 5, HB: 6, HB2: 7, LOGITS: 8, HIST: 9, KEYS: 10, VALUES: 11, END: 12 } as const;

/** A batch computes up to two prompt positions at once; vector regions hold a vector each. */
export const MAX_LANES = 2;

const round8 = (value: number): number => Math.ceil(value / 8) * 8;

/**
 * The positions a run's batch computes at `position` (`batch_lanes` in inference.h): two
 * while the position after it is still the prompt's; every other position is a batch of one.
 */
export function batchLanes(position: number, promptTokens: number): number {
  return position + 1 < promptTokens ? 2 : 1;
}

/** Entries of each tokenizer work array: the opening token, the space, one per byte. */
export function workEntries(promptLength: number): number {
  return promptLength + 2;
}

/**
 * The offset of every region and, last, the account's size (`Region` order). Vectors are
 * i64, zero past their length up to a multiple of 8, one a lane of a batch (`MAX_LANES`);
 * keys and values have a row per position run (`capacity - 1`).
 *
 * @param text the prompt is UTF-8 text (else token ids)
 * @param promptLength its bytes, or its count of ids
 */
export function runLayout(c: ModelConfig, capacity: number, text: boolean, promptLength: number): number[] {
  const vector = 8 * MAX_LANES * round8(c.dim);
  const hidden = 8 * MAX_LANES * round8(c.hiddenDim);
  const cache = 8 * c.layers * (capacity - 1) * kvDim(c);
  const sizes = [
    round8(text ? promptLength : 4 * promptLength),
    text ? round8(12 * workEntries(promptLength)) : 0,
    round8(4 * capacity),
    vector,
    vector,
    vector,
    hidden,
    hidden,
    8 * round8(c.vocabSize),
    8 * (HIST_HIGH + HIST_LOW),
    cache,
    cache,
  ];
  const offsets = [RUN_HEADER_BYTES];
  for (const size of sizes) offsets.push(offsets[offsets.length - 1] + size);
  return offsets;
}

/** The run account's size for this model, capacity and text prompt of `promptBytes` bytes. */
export function runAccountSize(c: ModelConfig, capacity: number, promptBytes: number): number {
  return runLayout(c, capacity, true, promptBytes)[Region.END];
}

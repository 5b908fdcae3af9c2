/**
 * How many step transactions an on-chain run takes, counted before it opens: the program's
 * step schedule (`schedule.ts`, generated from the table programs/curta/schedule.h is) run
 * dry, as the CLI's mirror counts (curta_chain/onchain/mirror: `steps_to_finish`,
 * `token_steps`). A step's slices depend on the run's arithmetic only through the tokens it
 * chooses and, while a prompt is read two positions at a time (a batch), through the plan
 * of the batch's activations (`batch.ts`): given the tokens (the page's integer core
 * computes them) and the prompt positions' activations (the same core, each layer's rows'
 * input tapped), dry steps cut the same slices without the arithmetic; the tokenizer's
 * phases run in full (they are cheap).
 *
 * The count prices a run (a fee a step) and sizes what the page sends; it is never what the
 * page checks a step by: the chain's own run account says which step it is at
 * (docs/browser.md). tests/sdk/test_sdk_steps.py holds the count to the mirror's.
 */

import type { Artifact } from "./decode.js";
import { planBatch, promptActivations, type Activations, type BatchPlan } from "./batch.js";
import { headSize, kvDim, MAT_CLASSIFIER, MAT_EMBEDDING, MATRICES_PER_LAYER, ROW_PREFIX } from "./layout.js";
import { BOS, EOS, type RowsInput, type Tokenizer } from "./inference.js";
import { batchLanes, workEntries } from "./runlayout.js";
import {
  BATCH_FIXED_COST, BATCH_ROW_COST, BATCH_SLICE_COST, CHAR_COST, COST_ATTENTION, COST_BUCKETS, COST_CHOOSE, COST_ID,
  COST_PASS, COST_WEIGHT, EMBED_COST, FINISH_COST, HEAD_COST, LAYER_PHASES, LayerPhase, LOOKUP_COST,
  MERGE_SCAN_COST, MERGE_SHIFT_COST, NORM_COST, PAIR_COST, PHASES_PER_LAYER,
  ROPE_COST, ROW_COST, ROWS_FIXED_COST, STEP_BUDGET, SWIGLU_COST, TokenizePhase, TokenPhase,
} from "./schedule.js";

const ONE_Q16 = 65_536;
const NO_TOKEN = -1;
const TOKENIZING = 0, RUNNING = 1, FINISHED = 2;
const WEIGHTS = 0, CUT = 1, DRAW = 2;

/** What an on-chain run is opened with (openRun's arguments that shape its steps). */
export interface RunShape {
  /** Positions: the prompt's tokens and the new ones. */
  capacity: number;
  /** The prompt's UTF-8 bytes (tokenized on chain). */
  prompt: Uint8Array;
  /** Q16; 0 is greedy. */
  temperature: number;
  /** Q16; 0 (or one) is off. */
  topP: number;
}

/** A run's steps as counted: how many, and the step count right after each token is chosen. */
export interface StepCount {
  steps: number;
  /** Per generated token, in order, the run's step count once it is chosen. */
  tokenSteps: number[];
  /** Per step, the weight sections (other than section zero) its slices read. */
  sections: number[][];
}

/** The next slice does not fit what is left of the step's budget. */
class Stop extends Error {}

class DryStep {
  budget = STEP_BUDGET;
  /** Weight sections the step reads (section zero, always passed, is not listed). */
  readonly sections: number[] = [];
  spend(cost: number): void {
    if (cost > this.budget) throw new Stop();
    this.budget -= cost;
  }
}

/** The run's header fields the schedule reads and writes, and the tokenizer's work. */
class DryMachine {
  state = TOKENIZING; phase = 0; cursor = 0; position = 0; promptTokens = 0; tokenCount = 0;
  workCount = 0; samplePass = WEIGHTS; steps = 0;
  readonly work: { tokens: number[]; ids: number[]; keys: number[] };
  readonly layers: number;
  readonly probes: number;
  /** The prompt's activations (group sums), computed when the first batch's rows need them. */
  private activations: Activations | null = null;
  private readonly plans = new Map<string, BatchPlan>();

  constructor(readonly artifact: Artifact, readonly tokenizer: Tokenizer, readonly shape: RunShape, readonly tokens: number[],
    private readonly onPlan?: (plan: BatchPlan) => void) {
    const n = workEntries(shape.prompt.length);
    this.work = { tokens: new Array(n).fill(0), ids: new Array(n).fill(0), keys: new Array(n).fill(0) };
    this.layers = artifact.config.layers;
    this.probes = 32 - Math.clz32(artifact.config.vocabSize) + 1; // its bit length, and one
  }

  get generated(): number {
    return this.state === TOKENIZING ? 0 : Math.max(0, this.tokenCount - this.promptTokens);
  }

  /** One step: phases until the budget ends (the program's `process_step`); its sections. */
  step(): number[] {
    const s = new DryStep();
    let progress = false;
    while (this.state !== FINISHED) {
      let done: boolean;
      try {
        done = this.state === TOKENIZING ? this.tokenize(s) : this.forward(s);
      } catch (e) {
        if (!(e instanceof Stop)) throw e;
        done = false;
      }
      if (!done) break;
      progress = true;
    }
    if (!progress) throw new Error(`step ${this.steps} cannot advance the run: nothing fits its budget (the program refuses it: NothingFits)`);
    this.steps += 1;
    return s.sections;
  }

  /** The phase fits the budget and reads `matrix`'s section: the step reads it. */
  private need(s: DryStep, matrix: number): void {
    const section = this.artifact.matrices[matrix].section;
    if (section !== 0 && !s.sections.includes(section)) s.sections.push(section);
  }

  // ---- the tokenizer's phases (programs/curta/src/tokenize.c) ----

  private lookupCost(length: number): number {
    return LOOKUP_COST(this.probes, length);
  }

  private pairCost(a: number, b: number): number {
    const length = this.tokenizer.tokens[a].length + this.tokenizer.tokens[b].length;
    return PAIR_COST(length, this.lookupCost(length));
  }

  private appendChar(char: Uint8Array): void {
    const found = this.tokenizer.lookup(char);
    for (const token of found === null ? Array.from(char, (b) => b + 3) : [found]) this.work.tokens[this.workCount++] = token;
  }

  private lookUpPair(i: number): void {
    const { tokens, ids, keys } = this.work;
    const a = this.tokenizer.tokens[tokens[i]], b = this.tokenizer.tokens[tokens[i + 1]];
    const joined = new Uint8Array(a.length + b.length);
    joined.set(a);
    joined.set(b, a.length);
    const found = this.tokenizer.lookup(joined);
    ids[i] = found ?? NO_TOKEN;
    keys[i] = found === null ? 0 : this.tokenizer.key(found);
  }

  private tokenize(s: DryStep): boolean {
    if (this.phase === TokenizePhase.CHARS) return this.chars(s);
    if (this.phase === TokenizePhase.PAIRS) return this.pairs(s);
    return this.merges(s);
  }

  private chars(s: DryStep): boolean {
    const text = this.shape.prompt;
    let progress = false;
    if (this.workCount === 0) {
      s.spend(CHAR_COST(1, this.lookupCost(1)));
      this.work.tokens[0] = BOS;
      this.workCount = 1;
      this.appendChar(Uint8Array.of(0x20));
      progress = true;
    }
    while (this.cursor < text.length) {
      const length = charLength(text, this.cursor);
      if (CHAR_COST(length, this.lookupCost(length)) > s.budget) return progress;
      s.spend(CHAR_COST(length, this.lookupCost(length)));
      this.appendChar(text.subarray(this.cursor, this.cursor + length));
      this.cursor += length;
      progress = true;
    }
    this.phase = TokenizePhase.PAIRS;
    this.cursor = 0;
    return true;
  }

  private pairs(s: DryStep): boolean {
    const tokens = this.work.tokens;
    let progress = false;
    while (this.cursor + 1 < this.workCount) {
      const cost = this.pairCost(tokens[this.cursor], tokens[this.cursor + 1]);
      if (cost > s.budget) return progress;
      s.spend(cost);
      this.lookUpPair(this.cursor);
      this.cursor += 1;
      progress = true;
    }
    this.phase = TokenizePhase.MERGE;
    this.cursor = 0;
    return true;
  }

  private merges(s: DryStep): boolean {
    const { tokens, ids, keys } = this.work;
    let progress = false;
    for (;;) {
      const n = this.workCount;
      let best = -1, bestKey = -1;
      for (let i = 0; i < n - 1; i++) if (ids[i] !== NO_TOKEN && keys[i] > bestKey) [best, bestKey] = [i, keys[i]];
      if (best < 0) {
        try {
          return this.finishPrompt(s) || progress;
        } catch (e) {
          if (e instanceof Stop) return progress;
          throw e;
        }
      }
      const merged = ids[best];
      let cost = MERGE_SCAN_COST(n) + MERGE_SHIFT_COST(n - best);
      if (best > 0) cost += this.pairCost(tokens[best - 1], merged);
      if (best + 2 < n) cost += this.pairCost(merged, tokens[best + 2]);
      if (cost > s.budget) return progress;
      s.spend(cost);
      tokens[best] = merged;
      for (let i = best + 1; i < n - 1; i++) [tokens[i], ids[i], keys[i]] = [tokens[i + 1], ids[i + 1], keys[i + 1]];
      ids[n - 2] = keys[n - 2] = tokens[n - 1] = 0;
      this.workCount = n - 1;
      if (best > 0) this.lookUpPair(best - 1);
      if (best + 2 < n) this.lookUpPair(best);
      progress = true;
    }
  }

  private finishPrompt(s: DryStep): boolean {
    const n = this.workCount;
    s.spend(FINISH_COST(n));
    this.promptTokens = n;
    this.phase = this.cursor = 0;
    if (n >= this.shape.capacity) {
      this.state = FINISHED;
      return true;
    }
    this.tokenCount = n;
    this.state = RUNNING;
    return true;
  }

  // ---- a token's phases (programs/curta/src/forward.c, sample.c) ----

  private forward(s: DryStep): boolean {
    const c = this.artifact.config, layers = this.layers;
    if (this.phase === 0) {
      s.spend(this.lanes * EMBED_COST(c.dim));
      this.need(s, MAT_EMBEDDING);
      return this.next();
    }
    const after = this.phase - PHASES_PER_LAYER * layers;
    if (after >= TokenPhase.FINAL_NORM) {
      if (after === TokenPhase.FINAL_NORM) return this.whole(s, NORM_COST(c.dim));
      if (after === TokenPhase.CLASSIFIER) return this.rows(s, MAT_CLASSIFIER, c.vocabSize, 1, null);
      return this.sample(s);
    }
    const layer = Math.floor((this.phase - 1) / PHASES_PER_LAYER), kind = (this.phase - 1) % PHASES_PER_LAYER;
    const first = (k: number) => 2 + MATRICES_PER_LAYER * layer + k;
    const matrix = LAYER_PHASES[kind].matrix;
    switch (kind) {
      case LayerPhase.ATT_NORM:
      case LayerPhase.FFN_NORM:
        return this.whole(s, NORM_COST(c.dim));
      case LayerPhase.QKV:
        return this.rows(s, first(matrix!), c.dim + 2 * kvDim(c), 3, [layer, "qkv"]);
      case LayerPhase.ROPE:
        return this.whole(s, ROPE_COST(c.dim, kvDim(c)));
      case LayerPhase.ATTENTION:
        return this.attention(s);
      case LayerPhase.OUTPUT:
        return this.rows(s, first(matrix!), c.dim, 1, [layer, "output"]);
      case LayerPhase.GATE_UP:
        return this.rows(s, first(matrix!), 2 * c.hiddenDim, 2, [layer, "gateUp"]);
      case LayerPhase.SWIGLU:
        return this.whole(s, SWIGLU_COST(c.hiddenDim));
      default:
        return this.rows(s, first(matrix!), c.dim, 1, [layer, "down"]);
    }
  }

  /** The positions the run's batch computes (two while a prompt is read, else one). */
  private get lanes(): number {
    return batchLanes(this.position, this.promptTokens);
  }

  /** The position lane `lane` computes: lane 0 the batch's last. */
  private lanePosition(lane: number): number {
    return this.position + this.lanes - 1 - lane;
  }

  /**
   * The phase is done: on to the next. After a batch's last layer, on to the position after
   * it while that is still the prompt's (the batch samples nothing); else to the final norm
   * of its last position.
   */
  private next(): boolean {
    this.cursor = 0;
    if (this.phase + 1 === PHASES_PER_LAYER * this.layers + TokenPhase.FINAL_NORM) {
      const last = this.lanePosition(0);
      if (last + 1 < this.promptTokens) {
        this.position = last + 1;
        this.phase = 0;
        return true;
      }
      this.position = last;
    }
    this.phase += 1;
    return true;
  }

  /** A phase done whole, once a position of the batch. */
  private whole(s: DryStep, cost: number): boolean {
    s.spend(this.lanes * cost);
    return this.next();
  }

  /**
   * Rows from the cursor of the phase's `matrices` stacked matrices (`total` rows), as many
   * as the budget allows. The cost counts the first matrix's row length, padding included.
   * A batch of two pays for its plan first (`BATCH_FIXED_COST`, then the phase reads the
   * section), then per row by the plan of its lanes' inputs, `input` (a layer's rows').
   */
  private rows(s: DryStep, matrix: number, total: number, matrices: number, input: [number, RowsInput] | null): boolean {
    const padded = this.artifact.matrices[matrix].rowBytes - ROW_PREFIX;
    let perRow: number;
    if (this.lanes === 1) {
      perRow = ROW_COST(padded);
      const fixed = ROWS_FIXED_COST(padded, matrices);
      if (s.budget < fixed + perRow) throw new Stop();
      this.need(s, matrix);
      s.budget -= fixed;
    } else {
      s.spend(BATCH_FIXED_COST(padded));
      this.need(s, matrix);
      const plan = this.plan(input!, padded);
      perRow = BATCH_ROW_COST(plan.kernel, plan.segments);
      const slice = BATCH_SLICE_COST(plan.call, plan.remainder, matrices);
      if (s.budget < slice + perRow) throw new Stop(); // the plan's cost stays spent: the step ends
      s.budget -= slice;
    }
    const n = Math.min(Math.floor(s.budget / perRow), total - this.cursor);
    s.budget -= n * perRow;
    this.cursor += n;
    return this.cursor === total ? this.next() : true;
  }

  /** The batch's plan of a layer's rows: from its two lanes' inputs to them. */
  private plan([layer, kind]: [number, RowsInput], padded: number): BatchPlan {
    const key = `${this.position}:${layer}:${kind}:${padded}`;
    let plan = this.plans.get(key);
    if (!plan) {
      // Every batch is two prompt positions: the integer core runs the prompt up to its last.
      this.activations ??= promptActivations(this.artifact, this.tokens, this.promptTokens);
      const lane = (l: number) => this.activations![this.lanePosition(l)][layer][kind];
      plan = planBatch(lane(0), lane(1), padded);
      this.plans.set(key, plan);
    }
    this.onPlan?.(plan);
    return plan;
  }

  /** Heads from the cursor, each lane's in turn (lane x heads + head), as the budget allows. */
  private attention(s: DryStep): boolean {
    const c = this.artifact.config, items = this.lanes * c.heads;
    let budget = s.budget - COST_ATTENTION, cursor = this.cursor;
    while (cursor < items) {
      // A head costs as many positions as its lane attends.
      const cost = HEAD_COST(headSize(c), this.lanePosition(Math.floor(cursor / c.heads)) + 1);
      if (budget < cost) break;
      budget -= cost;
      cursor += 1;
    }
    if (cursor === this.cursor) throw new Stop();
    s.budget = budget;
    this.cursor = cursor;
    return cursor === items ? this.next() : true;
  }

  private idsThatFit(s: DryStep, perId: number, fixed: number): number {
    if (s.budget < fixed + perId) throw new Stop();
    const n = Math.min(Math.floor((s.budget - fixed) / perId), this.artifact.config.vocabSize - this.cursor);
    s.budget -= fixed + n * perId;
    return n;
  }

  private sample(s: DryStep): boolean {
    const vocab = this.artifact.config.vocabSize;
    const token = this.tokens[this.position + 1];
    if (this.shape.temperature === 0) {
      s.spend(COST_PASS);
      return this.choose(token);
    }
    if (this.samplePass === WEIGHTS || this.samplePass === CUT) {
      const weights = this.samplePass === WEIGHTS;
      this.cursor += weights ? this.idsThatFit(s, COST_WEIGHT, COST_PASS) : this.idsThatFit(s, COST_ID, COST_PASS + COST_BUCKETS);
      if (this.cursor === vocab) {
        this.cursor = 0;
        this.samplePass = weights && 0 < this.shape.topP && this.shape.topP < ONE_Q16 ? CUT : DRAW;
      }
      return true;
    }
    // The walk stops at the chosen id: the budget of the ids after it comes back.
    const n = this.idsThatFit(s, COST_ID, COST_PASS + COST_CHOOSE);
    if (this.cursor <= token && token < this.cursor + n) {
      s.budget += (this.cursor + n - 1 - token) * COST_ID;
      return this.choose(token);
    }
    this.cursor += n;
    return true;
  }

  private choose(token: number): boolean {
    this.tokenCount = this.position + 2;
    this.position += 1;
    this.phase = this.cursor = 0;
    this.samplePass = WEIGHTS;
    if (token === BOS || token === EOS || this.tokenCount === this.shape.capacity) this.state = FINISHED;
    return true;
  }
}

/** The length of the UTF-8 character at `text[i]`: its lead and continuation bytes. */
function charLength(text: Uint8Array, i: number): number {
  let length = 1;
  while (i + length < text.length && (text[i + length] & 0xc0) === 0x80 && length < 4) length++;
  return length;
}

/**
 * Count the steps of a run opened with `shape` whose tokens (the prompt's, opening token
 * first, then the generated ones) are `tokens`, as the page's integer core chooses them.
 * `onPlan` is shown the plan of every slice of a batch's rows, in order (as the program
 * makes one a slice).
 */
export function countSteps(artifact: Artifact, tokenizer: Tokenizer, shape: RunShape, tokens: number[],
  onPlan?: (plan: BatchPlan) => void): StepCount {
  const m = new DryMachine(artifact, tokenizer, shape, tokens, onPlan);
  const tokenSteps: number[] = [], sections: number[][] = [];
  let chosen = 0;
  while (m.state !== FINISHED) {
    sections.push(m.step());
    for (; chosen < m.generated; chosen++) tokenSteps.push(m.steps);
  }
  return { steps: m.steps, tokenSteps, sections };
}

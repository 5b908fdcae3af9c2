/**
 * The integer forward pass, tokenizer and sampler of docs/inference.md, bit for bit: the
 * ids `curta-chain run` gives, for greedy and seeded sampling.
 *
 * Arithmetic: JavaScript numbers are float64, exact for every integer below 2^53 in
 * magnitude. The bulk of the work (row products, |Σ b x| < 2^50; attention dots and value
 * sums, split into limbs) stays below that bound and runs as plain float64 arithmetic;
 * each step whose docs/inference.md bound is above 2^53 is either split into limbs whose
 * partial results are below it (the row scaling, q·k, Σ w × value, SiLU × up, the scores)
 * or done in BigInt where it is rare (the normalization, the rotary products, the rounded
 * divisions, the generator). `checkExact` asserts the bound wherever a float64 sum could
 * reach it.
 */

import type { Artifact } from "./decode.js";
import { tokenBytes } from "./decode.js";
import {
  BLOCK_EXP,
  BLOCK_NORM,
  BLOCK_ROTARY,
  BLOCK_SILU,
  headSize,
  kvDim,
  MATRICES_PER_LAYER,
  ROW_PREFIX,
  SILU_RANGE,
  TABLE_ENTRIES,
  WEIGHT_BIAS,
  type MatrixDescriptor,
} from "./layout.js";

const TWO24 = 2 ** 24;
const TWO16 = 2 ** 16;
const I32_MIN = -(2 ** 31);
const I32_MAX = 2 ** 31 - 1;
const QK_LIMIT = 2 ** 27;
const EXP_LIMIT = TABLE_ENTRIES - 1;
const SILU_EDGE = SILU_RANGE * TWO16;
/** float64 holds every integer of magnitude below this exactly. */
export const EXACT_LIMIT = 2 ** 53;

/** The prompt, the steps or the sampling settings cannot run. */
export class PromptError extends Error {
  override name = "PromptError";
}

function sat32(a: number): number {
  return a < I32_MIN ? I32_MIN : a > I32_MAX ? I32_MAX : a;
}

/** Refuse a float64 value that may have lost bits: the check the bounds promise never fails. */
export function checkExact(value: number, what: string): number {
  if (!(Math.abs(value) < EXACT_LIMIT)) throw new Error(`inexact ${what}: ${value} is not below 2^53`);
  return value;
}

interface Matrix {
  rows: number;
  columns: number;
  rowBytes: number;
  base: number;
  bytes: Uint8Array;
  /** Each row's scale split at bit 16: scale = high × 2^16 + low. */
  scaleHigh: Float64Array;
  scaleLow: Float64Array;
  scale: Float64Array;
}

function matrix(a: Artifact, desc: MatrixDescriptor): Matrix {
  const bytes = a.sections[desc.section];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const scale = new Float64Array(desc.rows);
  const scaleHigh = new Float64Array(desc.rows);
  const scaleLow = new Float64Array(desc.rows);
  for (let r = 0; r < desc.rows; r++) {
    const c = view.getUint32(desc.offset + r * desc.rowBytes, true);
    scale[r] = c;
    scaleHigh[r] = Math.floor(c / TWO16);
    scaleLow[r] = c % TWO16;
  }
  return { rows: desc.rows, columns: desc.columns, rowBytes: desc.rowBytes, base: desc.offset, bytes, scale, scaleHigh, scaleLow };
}

/**
 * `sat32(rnd(acc × c, 24))` for |acc| < 2^49 and a u32 scale `c = ch × 2^16 + cl`, without
 * forming `acc × c` (up to 2^81): `hi × c + ((lo × c + 2^23) >> 24)` with `hi = acc >> 24`,
 * `lo` the low 24 bits; `lo × c` (< 2^56) is taken as `lo × ch` (< 2^40) and `lo × cl`
 * (< 2^40). `hi × c` is exact when below 2^53 and saturates either way above it.
 */
function scaleRow(acc: number, c: number, ch: number, cl: number): number {
  const hi = Math.floor(acc / TWO24);
  const lo = acc - hi * TWO24;
  const a = lo * ch;
  const qa = Math.floor(a / 256);
  const low = qa + Math.floor(((a - qa * 256) * TWO16 + lo * cl + 2 ** 23) / TWO24);
  return sat32(hi * c + low);
}

/** out[r] = row r of `m` times `x` (Q16 in, Q16 out), every row. */
function matvec(m: Matrix, x: Float64Array, out: Float64Array, outOffset = 0): void {
  const { bytes, rowBytes, columns } = m;
  let sumX = 0;
  for (let j = 0; j < columns; j++) sumX += x[j];
  const bias = WEIGHT_BIAS * sumX;
  const n4 = columns - (columns % 4);
  for (let r = 0; r < m.rows; r++) {
    const p = m.base + r * rowBytes + ROW_PREFIX;
    let a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    let j = 0;
    for (; j < n4; j += 4) {
      a0 += bytes[p + j] * x[j];
      a1 += bytes[p + j + 1] * x[j + 1];
      a2 += bytes[p + j + 2] * x[j + 2];
      a3 += bytes[p + j + 3] * x[j + 3];
    }
    for (; j < columns; j++) a0 += bytes[p + j] * x[j];
    // |Σ b x| <= 255 × 2^31 × 2,048 < 2^50 and |128 Σ x| < 2^49: every partial sum is exact.
    const acc = checkExact(a0 + a1 + a2 + a3 - bias, "row product");
    out[outOffset + r] = scaleRow(acc, m.scale[r], m.scaleHigh[r], m.scaleLow[r]);
  }
}

function bitLength(v: bigint): number {
  return v === 0n ? 0 : v.toString(2).length;
}

function isqrt(u: bigint): bigint {
  if (u < 2n) return u;
  let x = BigInt(Math.floor(Math.sqrt(Number(u))));
  while (x * x > u) x--;
  while ((x + 1n) * (x + 1n) <= u) x++;
  return x;
}

/** RMS normalization (docs/inference.md), in BigInt: S reaches 2^61 and x × inv 2^62. */
function rmsnorm(x: Float64Array, g: Int32Array, n: number, out: Float64Array): void {
  let m = 0;
  for (let j = 0; j < n; j++) m = Math.max(m, Math.abs(x[j]));
  const s = Math.max(0, bitLength(BigInt(m)) - 26);
  const sb = BigInt(s);
  let total = 0n;
  for (let j = 0; j < n; j++) {
    const v = BigInt(x[j]) >> sb;
    total += v * v;
  }
  const v = total / BigInt(n) + (42_950n >> (2n * sb));
  const e = (62 - bitLength(v)) & ~1;
  const inv = (1n << 61n) / isqrt(v << BigInt(e));
  const shift = BigInt(45 - e / 2 + s);
  const half = 1n << (shift - 1n);
  for (let j = 0; j < n; j++) {
    const xn = Number((BigInt(x[j]) * inv + half) >> shift); // |xn| < 2^21
    out[j] = Math.floor((xn * g[j] + 2 ** 23) / TWO24); // |xn × g| < 2^52
  }
}

/** The weight of a softmax distance (Q16, >= 0) from the exponential table: Q22. */
function expWeight(distance: number, table: Uint32Array): number {
  const i = Math.floor(distance / 256);
  if (i >= EXP_LIMIT) return 0;
  const f = distance - 256 * i;
  return Math.floor((table[i] * (256 - f) + table[i + 1] * f + 2 ** 15) / TWO16);
}

function silu(a: number, table: Int32Array): number {
  if (a >= SILU_EDGE) return a;
  if (a < -SILU_EDGE) return 0;
  const u = a + SILU_EDGE;
  const i = Math.floor(u / 512);
  const f = u - 512 * i;
  return Math.floor((table[i] * (512 - f) + table[i + 1] * f + 256) / 512);
}

/** `divr(a, b)`: a / b rounded half away from zero, b >= 1, in BigInt. */
function divr(a: bigint, b: bigint): number {
  const magnitude = ((a < 0n ? -a : a) + b / 2n) / b;
  return Number(a < 0n ? -magnitude : magnitude);
}

function roundShiftBig(a: bigint, bits: bigint): bigint {
  return (a + (1n << (bits - 1n))) >> bits;
}

/** The input of a layer's rows: to the query, key and value rows, output, gate and up, down. */
export type RowsInput = "qkv" | "output" | "gateUp" | "down";

/**
 * Shown each layer's rows' input vector as a position runs (its first `length` values are
 * the vector; it is the model's own buffer, read it before returning).
 */
export type ActivationTap = (layer: number, rows: RowsInput, x: Float64Array, length: number) => void;

/** A model ready to run: its matrices, tables and a key/value cache for one run. */
export class IntModel {
  readonly config: Artifact["config"];
  private readonly embedding: Matrix;
  private readonly classifier: Matrix;
  private readonly layers: Matrix[][];
  private readonly norms: Int32Array[];
  private readonly rotary: Int32Array;
  readonly exp: Uint32Array;
  private readonly siluTable: Int32Array;
  private readonly invSqrtHigh: number;
  private readonly invSqrtLow: number;
  private readonly keys: Float64Array;
  private readonly valuesHigh: Float64Array;
  private readonly valuesLow: Float64Array;
  private readonly x: Float64Array;
  private readonly xn: Float64Array;
  private readonly q: Float64Array;
  private readonly kv: Float64Array;
  private readonly o: Float64Array;
  private readonly t: Float64Array;
  private readonly gate: Float64Array;
  private readonly up: Float64Array;
  private readonly scores: Float64Array;
  private readonly logits: Float64Array;

  constructor(a: Artifact) {
    const c = a.config;
    this.config = c;
    const s0 = a.sections[0];
    const int32 = (block: number, count: number) => {
      const out = new Int32Array(count);
      const v = new DataView(s0.buffer, s0.byteOffset + a.blocks[block], count * 4);
      for (let i = 0; i < count; i++) out[i] = v.getInt32(4 * i, true);
      return out;
    };
    this.embedding = matrix(a, a.matrices[0]);
    this.classifier = matrix(a, a.matrices[1]);
    this.layers = Array.from({ length: c.layers }, (_, l) =>
      Array.from({ length: MATRICES_PER_LAYER }, (_, k) => matrix(a, a.matrices[2 + MATRICES_PER_LAYER * l + k])));
    const norm = int32(BLOCK_NORM, (2 * c.layers + 1) * c.dim);
    this.norms = Array.from({ length: 2 * c.layers + 1 }, (_, i) => norm.subarray(i * c.dim, (i + 1) * c.dim));
    this.rotary = int32(BLOCK_ROTARY, c.contextLength * headSize(c));
    this.exp = new Uint32Array(int32(BLOCK_EXP, TABLE_ENTRIES).buffer);
    this.siluTable = int32(BLOCK_SILU, TABLE_ENTRIES);
    this.invSqrtHigh = Math.floor(a.invSqrtHeadSize / 4096);
    this.invSqrtLow = a.invSqrtHeadSize % 4096;
    const kv = kvDim(c);
    const cache = c.layers * c.contextLength * kv;
    this.keys = new Float64Array(cache);
    this.valuesHigh = new Float64Array(cache);
    this.valuesLow = new Float64Array(cache);
    this.x = new Float64Array(c.dim);
    this.xn = new Float64Array(Math.max(c.dim, c.hiddenDim));
    this.q = new Float64Array(c.dim);
    this.kv = new Float64Array(2 * kv);
    this.o = new Float64Array(c.dim);
    this.t = new Float64Array(c.dim);
    this.gate = new Float64Array(c.hiddenDim);
    this.up = new Float64Array(c.hiddenDim);
    this.scores = new Float64Array(c.contextLength);
    this.logits = new Float64Array(c.vocabSize);
  }

  /**
   * Run `token` at position `pos` (positions 0..pos-1 already run); return its Q16 logits.
   * `tap` is shown every layer's rows' input (what an on-chain batch's plan reads).
   */
  forward(token: number, pos: number, tap?: ActivationTap): Float64Array {
    const c = this.config;
    const n = c.dim, d = headSize(c), kv = kvDim(c), F = c.hiddenDim;
    if (!(token >= 0 && token < c.vocabSize)) throw new PromptError(`token ${token} is outside the vocabulary 0 to ${c.vocabSize - 1}`);
    if (!(pos >= 0 && pos < c.contextLength)) throw new PromptError(`position ${pos} is past the model's context of ${c.contextLength}`);
    const { x, xn, q, o, t } = this;
    const e = this.embedding;
    const row = e.base + token * e.rowBytes + ROW_PREFIX;
    for (let j = 0; j < n; j++) x[j] = Math.floor(((e.bytes[row + j] - WEIGHT_BIAS) * e.scale[token] + 128) / 256);
    const group = c.heads / c.kvHeads;
    for (let l = 0; l < c.layers; l++) {
      const [wq, wk, wv, wo, wg, wd, wu] = this.layers[l];
      rmsnorm(x, this.norms[2 * l], n, xn);
      tap?.(l, "qkv", xn, n);
      matvec(wq, xn, q);
      matvec(wk, xn, this.kv);
      matvec(wv, xn, this.kv, kv);
      this.rotate(q, n, d, pos);
      this.rotate(this.kv, kv, d, pos);
      const at = (l * c.contextLength + pos) * kv;
      for (let i = 0; i < kv; i++) {
        this.keys[at + i] = this.kv[i];
        const v = this.kv[kv + i];
        const high = Math.floor(v / TWO16);
        this.valuesHigh[at + i] = high;
        this.valuesLow[at + i] = v - high * TWO16;
      }
      for (let h = 0; h < c.heads; h++) this.attend(l, h, Math.floor(h / group), pos, d, kv);
      tap?.(l, "output", o, n);
      matvec(wo, o, t);
      for (let j = 0; j < n; j++) x[j] = sat32(x[j] + t[j]);
      rmsnorm(x, this.norms[2 * l + 1], n, xn);
      tap?.(l, "gateUp", xn, n);
      matvec(wg, xn, this.gate);
      matvec(wu, xn, this.up);
      const hidden = this.xn;
      for (let i = 0; i < F; i++) {
        // silu × up (<= 2^62) as silu × up_high × 2^16 + silu × up_low, each below 2^47.
        const s = silu(this.gate[i], this.siluTable);
        const u = this.up[i];
        const high = Math.floor(u / TWO16);
        hidden[i] = sat32(s * high + Math.floor((s * (u - high * TWO16) + 2 ** 15) / TWO16));
      }
      tap?.(l, "down", hidden, F);
      matvec(wd, hidden, t);
      for (let j = 0; j < n; j++) x[j] = sat32(x[j] + t[j]);
    }
    rmsnorm(x, this.norms[2 * c.layers], n, xn);
    matvec(this.classifier, xn, this.logits);
    return this.logits;
  }

  /** Rotary on each pair of each head of `v`, then saturated to ±2^27 (products < 2^57: BigInt). */
  private rotate(v: Float64Array, length: number, d: number, pos: number): void {
    const angles = this.rotary.subarray(pos * d, (pos + 1) * d);
    for (let i = 0; i < length; i += 2) {
      const p = (i % d) >> 1;
      const a = BigInt(v[i]), b = BigInt(v[i + 1]);
      const cs = BigInt(angles[2 * p]), sn = BigInt(angles[2 * p + 1]);
      const a2 = Number(roundShiftBig(a * cs - b * sn, 24n));
      const b2 = Number(roundShiftBig(a * sn + b * cs, 24n));
      v[i] = Math.min(Math.max(a2, -QK_LIMIT), QK_LIMIT);
      v[i + 1] = Math.min(Math.max(b2, -QK_LIMIT), QK_LIMIT);
    }
  }

  private attend(layer: number, head: number, kvHead: number, pos: number, d: number, kv: number): void {
    const { q, keys, scores } = this;
    const qo = head * d;
    const base = layer * this.config.contextLength * kv + kvHead * d;
    // q split at bit 14 (|q| <= 2^27): Σ q_high × k < 2^46, Σ q_low × k < 2^47, exact.
    const qh = new Float64Array(d), ql = new Float64Array(d);
    for (let i = 0; i < d; i++) {
      qh[i] = Math.floor(q[qo + i] / 16384);
      ql[i] = q[qo + i] - qh[i] * 16384;
    }
    let m = -Infinity;
    for (let t = 0; t <= pos; t++) {
      const k = base + t * kv;
      let sh = 0, sl = 0;
      for (let i = 0; i < d; i++) {
        sh += qh[i] * keys[k + i];
        sl += ql[i] * keys[k + i];
      }
      // rnd(dot, 16) of dot = sh × 2^14 + sl (up to 2^60): sh = 4a + b.
      const a = Math.floor(sh / 4);
      const dot16 = sat32(a + Math.floor(((sh - 4 * a) * 16384 + sl + 2 ** 15) / TWO16));
      // rnd(dot16 × h_inv, 24) with h_inv = high × 2^12 + low: dot16 × high = c × 2^12 + r.
      const ph = dot16 * this.invSqrtHigh;
      const c1 = Math.floor(ph / 4096);
      const score = c1 + Math.floor(((ph - c1 * 4096) * 4096 + dot16 * this.invSqrtLow + 2 ** 23) / TWO24);
      scores[t] = score;
      if (score > m) m = score;
    }
    let z = 0;
    for (let t = 0; t <= pos; t++) {
      scores[t] = expWeight(m - scores[t], this.exp);
      z += scores[t];
    }
    const zb = BigInt(z);
    for (let i = 0; i < d; i++) {
      // Σ w × value (up to 2^62) as Σ w × value_high (< 2^46) and Σ w × value_low (< 2^47).
      let sh = 0, sl = 0;
      for (let t = 0; t <= pos; t++) {
        const w = scores[t];
        const at = base + t * kv + i;
        sh += w * this.valuesHigh[at];
        sl += w * this.valuesLow[at];
      }
      this.o[qo + i] = divr((BigInt(checkExact(sh, "Σ w × value high")) << 16n) + BigInt(checkExact(sl, "Σ w × value low")), zb);
    }
  }
}

// ---- Sampling. ----

const MASK64 = (1n << 64n) - 1n;
const GOLDEN = 0x9e37_79b9_7f4a_7c15n;
const MULTIPLIER = 0x2545_f491_4f6c_dd1dn;
export const ONE = 65_536;

/** llama2.c's xorshift64* generator, all 64 bits of each output. */
export class Xorshift64Star {
  state: bigint;
  constructor(seed: bigint) {
    if (seed < 0n || seed > MASK64) throw new PromptError(`seed ${seed}: expected 0 to ${MASK64}`);
    this.state = seed ^ GOLDEN || GOLDEN;
  }
  next(): bigint {
    let s = this.state;
    s ^= s >> 12n;
    s ^= (s << 25n) & MASK64;
    s ^= s >> 27n;
    this.state = s;
    return (s * MULTIPLIER) & MASK64;
  }
}

/** Q16 temperature (0: greedy), Q16 top-p (0 or >= 1.0: off), u64 seed. */
export interface SamplingSettings {
  temperature: number;
  topP: number;
  seed: bigint;
}

/**
 * Decimal `text` as round(value × 65,536), ties to even, exactly (never through a float),
 * from 0 to `high` (a Q16 integer): the CLI's --temperature and --top-p.
 */
export function q16(text: string, what: string, high: number): number {
  const match = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
  if (!match || (match[2] === "" && (match[3] ?? "") === "")) throw new PromptError(`${what} '${text}': expected a decimal number`);
  const [, sign, whole, fraction = "", exponent = "0"] = match;
  const mantissa = BigInt((sign === "-" ? "-" : "") + (whole + fraction || "0"));
  const power = Number(exponent) - fraction.length;
  let fixed: bigint;
  if (power >= 0) fixed = mantissa * 65_536n * 10n ** BigInt(power);
  else {
    const num = mantissa * 65_536n, den = 10n ** BigInt(-power);
    const neg = num < 0n;
    const abs = neg ? -num : num;
    let qv = abs / den;
    const r = abs % den;
    if (2n * r > den || (2n * r === den && qv % 2n === 1n)) qv += 1n;
    fixed = neg ? -qv : qv;
  }
  if (fixed < 0n || fixed > BigInt(high)) throw new PromptError(`${what} ${text}: expected 0 to ${high / ONE}`);
  if (fixed === 0n && mantissa > 0n) throw new PromptError(`${what} ${text}: expected 0, or at least 1/65,536 (its step)`);
  return Number(fixed);
}

/** The next token of `logits` (Q16), drawing once from `rng` unless greedy. */
export function sample(logits: Float64Array, s: SamplingSettings, exp: Uint32Array, rng: Xorshift64Star): number {
  const V = logits.length;
  let best = 0;
  for (let i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
  if (s.temperature === 0) return best;
  const m = logits[best];
  const w = new Float64Array(V);
  let z = 0;
  for (let i = 0; i < V; i++) {
    const scaled = (m - logits[i]) * ONE; // < 2^48
    let dist = Math.floor(scaled / s.temperature);
    if (dist * s.temperature > scaled) dist--; // float division: make the floor exact
    else if ((dist + 1) * s.temperature <= scaled) dist++;
    w[i] = expWeight(dist, exp);
    z += w[i];
  }
  if (s.topP > 0 && s.topP < ONE) {
    // C × 65,536 > P × Z (both up to 2^54) is C > floor(P × Z / 65,536) for an integer C.
    const threshold = Number((BigInt(s.topP) * BigInt(z)) / 65_536n);
    // The prefix closes before any zero weight (the whole sum Z passes the test).
    const order: number[] = [];
    for (let i = 0; i < V; i++) if (w[i] > 0) order.push(i);
    order.sort((a, b) => w[b] - w[a] || a - b);
    const kept = new Uint8Array(V);
    let running = 0;
    for (const id of order) {
      kept[id] = 1;
      running += w[id];
      if (running > threshold) break;
    }
    for (let i = 0; i < V; i++) if (!kept[i]) w[i] = 0;
  }
  let total = 0;
  for (let i = 0; i < V; i++) total += w[i];
  const r = Number(rng.next() % BigInt(total));
  let running = 0;
  for (let i = 0; i < V; i++) {
    running += w[i];
    if (running > r) return i;
  }
  throw new Error("unreachable: the weights sum past every draw");
}

// ---- Tokenizer. ----

export const BOS = 1;
export const EOS = 2;

const latin1 = (bytes: Uint8Array): string => {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  return s;
};

/** The artifact's own tokenizer: encode a prompt, decode ids (curta_chain/inference/tokenizer.py). */
export class Tokenizer {
  readonly tokens: Uint8Array[];
  private readonly keys: Uint32Array;
  private readonly lowest = new Map<string, number>();

  constructor(a: Artifact) {
    this.tokens = tokenBytes(a);
    const s0 = a.sections[0];
    const v = new DataView(s0.buffer, s0.byteOffset, s0.byteLength);
    this.keys = new Uint32Array(a.config.vocabSize);
    for (let t = 0; t < a.config.vocabSize; t++) {
      this.keys[t] = v.getUint32(a.blocks[4] + 16 * t, true);
      const key = latin1(this.tokens[t]);
      if (!this.lowest.has(key)) this.lowest.set(key, t); // the lowest id of equal strings
    }
  }

  /** The lowest id whose bytes are `piece`, or null. */
  lookup(piece: Uint8Array): number | null {
    return this.lowest.get(latin1(piece)) ?? null;
  }

  /** A token's merge score key (its score as an order-preserving u32). */
  key(id: number): number {
    return this.keys[id];
  }

  /** The token ids of `text`, the opening token first. */
  encode(text: string): number[] {
    if (!text.isWellFormed()) throw new PromptError("the prompt is not valid UTF-8 (it holds a lone surrogate)");
    const ids = [BOS];
    if (text) {
      const encoder = new TextEncoder();
      for (const char of " " + text) {
        const piece = encoder.encode(char);
        const found = this.lowest.get(latin1(piece));
        if (found === undefined) for (const b of piece) ids.push(b + 3);
        else ids.push(found);
      }
    }
    // llama2.c's loop: merge the pair with the highest score key, the leftmost among equal keys.
    for (;;) {
      let bestKey = -1, bestAt = -1, bestId = -1;
      for (let i = 0; i + 1 < ids.length; i++) {
        const merged = this.lowest.get(latin1(this.tokens[ids[i]]) + latin1(this.tokens[ids[i + 1]]));
        if (merged !== undefined && this.keys[merged] > bestKey) {
          bestKey = this.keys[merged];
          bestAt = i;
          bestId = merged;
        }
      }
      if (bestAt < 0) return ids;
      ids.splice(bestAt, 2, bestId);
    }
  }

  /** The bytes `token` adds after `previous` (none for 1 and 2). */
  piece(previous: number, token: number): Uint8Array {
    if (token === BOS || token === EOS) return new Uint8Array(0);
    let data = this.tokens[token];
    if (previous === BOS && data[0] === 0x20) data = data.subarray(1);
    const text = latin1(data);
    const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(text);
    return byte ? Uint8Array.of(parseInt(byte[1], 16)) : data;
  }

  decode(ids: number[], previous = BOS): Uint8Array {
    const parts: number[] = [];
    for (const t of ids) {
      parts.push(...this.piece(previous, t));
      previous = t;
    }
    return Uint8Array.from(parts);
  }
}

/** A run's plan: the prompt's ids and the count of new tokens (curta_chain/inference/run.py). */
export function planRun(model: IntModel, tokenizer: Tokenizer, prompt: string, steps?: number): { promptIds: number[]; steps: number } {
  if (!prompt) throw new PromptError("the prompt is empty");
  const ids = tokenizer.encode(prompt);
  const context = model.config.contextLength;
  const room = context - ids.length;
  if (room < 0) throw new PromptError(`the prompt is ${ids.length} tokens, longer than the model's context of ${context}`);
  if (steps === undefined) {
    steps = Math.min(256, room);
    if (steps === 0) throw new PromptError(`the prompt's ${ids.length} tokens fill the model's context of ${context}: no room to generate`);
  }
  if (!Number.isInteger(steps) || steps < 1) throw new PromptError(`--steps ${steps}: expected at least 1`);
  if (steps > room)
    throw new PromptError(`--steps ${steps}: the prompt's ${ids.length} tokens and ${steps} new ones are past the model's context of ${context} (at most ${room} new tokens)`);
  return { promptIds: ids, steps };
}

/**
 * Yield the generated ids one at a time, as `curta-chain run` does: the prompt runs
 * position by position, each new token is sampled from the last logits and run next;
 * a token 1 or 2 ends the run, or the step count.
 */
export function* generate(model: IntModel, plan: { promptIds: number[]; steps: number }, settings: SamplingSettings): Generator<number> {
  const rng = new Xorshift64Star(settings.seed);
  let logits: Float64Array = new Float64Array(0);
  plan.promptIds.forEach((token, pos) => (logits = model.forward(token, pos)));
  let pos = plan.promptIds.length;
  for (let step = 0; step < plan.steps; step++) {
    const token = sample(logits, settings, model.exp, rng);
    yield token;
    if (token === BOS || token === EOS || step === plan.steps - 1) return;
    logits = model.forward(token, pos++);
  }
}

/**
 * Decode a CURTAW01 file and check every rule of the spec, in the order the bytes are read:
 * the rules and one-line messages of curta_chain/artifact/decode.py, byte for byte
 * (tests/corpus holds the cases both decoders are held to).
 */

import { commas, hex, shownBytes } from "./format.js";
import {
  BLOCK_NAMES, BLOCK_OFFSETS_OFFSET, CONFIG_FIELDS, CONFIG_OFFSET, DESCRIPTOR_SIZE,
  EXP_FRACTION_BITS, EXP_STEPS_PER_UNIT, FRACTION_BITS, HEADER_FIELDS_END, HEADER_SIZE,
  INV_SQRT_OFFSET, MATRIX_TABLE_OFFSET, MAX_SECTIONS, MAX_SECTION_SIZE, MAX_TOKEN_LENGTH,
  ROTARY_BASE, ROW_PREFIX, SECTION_COUNT_OFFSET, SECTION_ENTRY_SIZE, SECTION_TABLE_OFFSET,
  SILU_FRACTION_BITS, SILU_RANGE, SILU_STEPS_PER_UNIT, SPLIT_WEIGHT_COUNT, TABLE_ENTRIES, TAG,
  TOKEN_ENTRY_SIZE, WEIGHT_BIAS, configProblem, pythonName, headSize, matrixCount, matrixName,
  matrixSectionLengths, matrixWeightCount, planBlocks, planMatrices, roundUp, sectionCount,
  type MatrixDescriptor, type ModelConfig,
} from "./layout.js";

/** The bytes break a rule of the format; the message names the field or byte at fault. */
export class ArtifactError extends Error {
  override name = "ArtifactError";
}

/** A CURTAW01 artifact that passed every rule of the spec. */
export interface Artifact {
  config: ModelConfig;
  /** The whole file. */
  data: Uint8Array;
  /** Each section's bytes (views of `data`), section zero (with the header) first. */
  sections: Uint8Array[];
  /** Where each section starts in the file. */
  sectionOffsets: number[];
  /** The matrix table, in table order. */
  matrices: MatrixDescriptor[];
  /** The offsets of section zero's seven blocks (BLOCK_NAMES order). */
  blocks: number[];
  /** 1/sqrt(head size) with 24 fractional bits. */
  invSqrtHeadSize: number;
  /** The classifier shares the embedding's bytes. */
  tied: boolean;
  source: string;
}

type Fail = (message: string) => never;

/** `value × 2^bits` rounded to nearest, ties to even (numpy's rint). */
export function toFixed(value: number, bits: number = FRACTION_BITS): number {
  const x = value * 2 ** bits;
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 ? 2 * Math.round(x / 2) : r;
}

export function rotaryTable(c: ModelConfig): Int32Array {
  const head = headSize(c);
  const out = new Int32Array(c.contextLength * head);
  for (let p = 0; p < c.contextLength; p++)
    for (let pair = 0; pair < head / 2; pair++) {
      const angle = p / ROTARY_BASE ** ((2 * pair) / head);
      out[p * head + 2 * pair] = toFixed(Math.cos(angle));
      out[p * head + 2 * pair + 1] = toFixed(Math.sin(angle));
    }
  return out;
}

export function expTable(): Uint32Array {
  const out = new Uint32Array(TABLE_ENTRIES);
  for (let i = 0; i < TABLE_ENTRIES; i++) out[i] = toFixed(Math.exp(-(i / EXP_STEPS_PER_UNIT)), EXP_FRACTION_BITS);
  return out;
}

export function siluTable(): Int32Array {
  const out = new Int32Array(TABLE_ENTRIES);
  for (let i = 0; i < TABLE_ENTRIES; i++) {
    const x = i / SILU_STEPS_PER_UNIT - SILU_RANGE;
    out[i] = toFixed(x / (1 + Math.exp(-x)), SILU_FRACTION_BITS);
  }
  return out;
}

export function invSqrtHeadSize(c: ModelConfig): number {
  return toFixed(1 / Math.sqrt(headSize(c)));
}

/** The float32 score a u32 score key was made from (keys order as the floats do). */
export function scoreFromKey(key: number): number {
  const bits = key & 0x8000_0000 ? (key ^ 0x8000_0000) >>> 0 : ~key >>> 0;
  const view = new DataView(new ArrayBuffer(4));
  view.setUint32(0, bits, true);
  return view.getFloat32(0, true);
}

export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** Every id sorted by its token's bytes; identical strings keep id order (sort is stable). */
export function sortedTokenIds(tokens: Uint8Array[]): number[] {
  return tokens.map((_, i) => i).sort((a, b) => compareBytes(tokens[a], tokens[b]));
}

/**
 * Decode and fully validate the bytes of an artifact.
 *
 * @param bytes the whole file.
 * @param source names the bytes in error messages (a file name, usually).
 * @throws ArtifactError naming the first rule of the spec the bytes break.
 */
export function decodeArtifact(bytes: Uint8Array | ArrayBuffer, source = "<bytes>"): Artifact {
  const data = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const fail: Fail = (message) => {
    throw new ArtifactError(`${source}: ${message}`);
  };
  const { config, count, blocks, invSqrt } = header(data, view, fail);
  const sections = sectionTable(data, view, count, fail);
  checkBlocks(config, blocks, sections[0], fail);
  tables(view, config, blocks, fail);
  const matrices = matrixTable(data, view, config, sections, fail);
  const starts: number[] = [];
  sections.reduce((at, n) => (starts.push(at), at + n), 0);
  matrices.forEach((desc, index) => {
    if (index !== 1 || !sameDescriptor(desc, matrices[0])) rows(data, view, index, desc, starts[desc.section], fail);
  });
  tokenizer(data, view, config, blocks, sections[0], fail);
  return {
    config,
    data,
    sections: sections.map((n, i) => data.subarray(starts[i], starts[i] + n)),
    sectionOffsets: starts,
    matrices,
    blocks,
    invSqrtHeadSize: invSqrt,
    tied: sameDescriptor(matrices[0], matrices[1]),
    source,
  };
}

function sameDescriptor(a: MatrixDescriptor, b: MatrixDescriptor): boolean {
  return a.section === b.section && a.columns === b.columns && a.rows === b.rows && a.rowBytes === b.rowBytes && a.offset === b.offset;
}

function expectZero(data: Uint8Array, start: number, end: number, what: string, fail: Fail): void {
  for (let at = start; at < end; at++)
    if (data[at]) fail(`byte ${commas(at)} (${what}): ${hex(data[at], 2)}, expected zero`);
}

function header(data: Uint8Array, view: DataView, fail: Fail) {
  if (data.length < HEADER_SIZE) fail(`${commas(data.length)} bytes, shorter than the ${commas(HEADER_SIZE)}-byte header`);
  const tag = data.subarray(0, TAG.length);
  if (compareBytes(tag, TAG) !== 0) fail(`byte 0 (tag): ${shownBytes(tag)}, expected ${shownBytes(TAG)}`);
  const config = {} as ModelConfig;
  CONFIG_FIELDS.forEach(([name], i) => (config[name] = view.getUint32(CONFIG_OFFSET + 4 * i, true)));
  const problem = configProblem(config);
  if (problem) {
    const [field, what] = problem;
    const at = CONFIG_FIELDS.find(([name]) => name === field)![2];
    fail(`header byte ${at} (${pythonName(field)}): ${what}`);
  }
  const count = view.getUint32(SECTION_COUNT_OFFSET, true);
  if (!(count >= 2 && count <= MAX_SECTIONS))
    fail(`header byte ${SECTION_COUNT_OFFSET} (section count): ${count}, expected 2 to ${MAX_SECTIONS}`);
  if (count !== sectionCount(config)) {
    const weights = matrixWeightCount(config);
    const side = weights < SPLIT_WEIGHT_COUNT ? "under" : "at least";
    fail(
      `header byte ${SECTION_COUNT_OFFSET} (section count): ${count}, expected ${sectionCount(config)} ` +
        `(${commas(weights)} matrix weights is ${side} ${commas(SPLIT_WEIGHT_COUNT)}, with ${config.layers} layers)`,
    );
  }
  const blocks = Array.from({ length: 7 }, (_, i) => view.getUint32(BLOCK_OFFSETS_OFFSET + 4 * i, true));
  const invSqrt = view.getUint32(INV_SQRT_OFFSET, true);
  const want = invSqrtHeadSize(config);
  // Within one unit: a conforming converter may round the last bit differently.
  if (Math.abs(invSqrt - want) > 1)
    fail(
      `header byte ${INV_SQRT_OFFSET} (inverse square root of the head size): ${commas(invSqrt)}, ` +
        `expected ${commas(want)} (1/sqrt(${headSize(config)}) with 24 fractional bits)`,
    );
  expectZero(data, HEADER_FIELDS_END, SECTION_TABLE_OFFSET, "unused header", fail);
  return { config, count, blocks, invSqrt };
}

function sectionTable(data: Uint8Array, view: DataView, count: number, fail: Fail): number[] {
  const lengths: number[] = [];
  let end = 0;
  for (let index = 0; index < count; index++) {
    const at = SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * index;
    const offset = view.getBigUint64(at, true);
    const length = view.getBigUint64(at + 8, true);
    if (offset !== BigInt(end))
      fail(`header byte ${at} (section ${index} offset): ${commas(offset)}, expected ${commas(end)} (sections follow one another from byte 0)`);
    const low = index === 0 ? HEADER_SIZE : 1;
    if (!(length >= BigInt(low) && length <= BigInt(MAX_SECTION_SIZE)))
      fail(`header byte ${at + 8} (section ${index} length): ${commas(length)}, expected ${commas(low)} to ${commas(MAX_SECTION_SIZE)}`);
    lengths.push(Number(length));
    end += Number(length);
  }
  expectZero(data, SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * count, MATRIX_TABLE_OFFSET, "unused section table", fail);
  if (end !== data.length) {
    const state = end > data.length ? "truncated" : `${commas(data.length - end)} trailing bytes`;
    fail(`the sections end at byte ${commas(end)} but the file is ${commas(data.length)} bytes (${state})`);
  }
  return lengths;
}

function checkBlocks(config: ModelConfig, blocks: number[], length0: number, fail: Fail): void {
  const want = planBlocks(config);
  BLOCK_NAMES.forEach((name, index) => {
    const field = `header byte ${BLOCK_OFFSETS_OFFSET + 4 * index} (${name} offset)`;
    const got = blocks[index];
    if (got < HEADER_SIZE) fail(`${field}: ${commas(got)} points into the header, expected ${commas(want[index])}`);
    if (got > length0) fail(`${field}: ${commas(got)} points past section zero's ${commas(length0)} bytes`);
    if (got !== want[index]) fail(`${field}: ${commas(got)}, expected ${commas(want[index])} (the blocks sit back to back)`);
  });
}

/**
 * The rotary, exponential and SiLU tables, which the configuration fixes, within one unit:
 * a conforming converter may round a transcendental's last bit differently.
 */
function tables(view: DataView, config: ModelConfig, blocks: number[], fail: Fail): void {
  const head = headSize(config);
  const rotary = (i: number): [string, string] => {
    const position = Math.floor(i / head);
    const within = i % head;
    const pair = within >> 1;
    const kind = within & 1;
    const angle = `${position}/10000^(${2 * pair}/${head})`;
    return [`rotary position ${position} pair ${pair} ${["cosine", "sine"][kind]}`, `${["cos", "sin"][kind]}(${angle}) with 24 fractional bits`];
  };
  const exp = (i: number): [string, string] => [`exponential table entry ${i}`, `e^(-${i}/256) with 30 fractional bits`];
  const silu = (i: number): [string, string] => [`SiLU table entry ${i}`, `SiLU(${i}/128 - 16) with 16 fractional bits`];
  const checks: [number, boolean, Int32Array | Uint32Array, (i: number) => [string, string]][] = [
    [1, true, rotaryTable(config), rotary],
    [2, false, expTable(), exp],
    [3, true, siluTable(), silu],
  ];
  for (const [block, signed, want, entry] of checks) {
    for (let i = 0; i < want.length; i++) {
      const at = blocks[block] + 4 * i;
      const got = signed ? view.getInt32(at, true) : view.getUint32(at, true);
      if (Math.abs(got - want[i]) > 1) {
        const [what, formula] = entry(i);
        fail(`byte ${commas(at)} (${what}): ${commas(got)}, expected ${commas(want[i])} ± 1 (${formula})`);
      }
    }
  }
}

function matrixTable(data: Uint8Array, view: DataView, config: ModelConfig, sections: number[], fail: Fail): MatrixDescriptor[] {
  const count = matrixCount(config);
  const raw = Array.from({ length: count }, (_, i) => {
    const at = MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE * i;
    return {
      section: view.getUint32(at, true),
      columns: view.getUint32(at + 4, true),
      rows: view.getUint32(at + 8, true),
      rowBytes: view.getUint32(at + 12, true),
      offset: view.getBigUint64(at + 16, true),
    };
  });
  expectZero(data, MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE * count, HEADER_SIZE, "unused matrix table", fail);
  const [e, c] = raw;
  const tied = e.section === c.section && e.columns === c.columns && e.rows === c.rows && e.rowBytes === c.rowBytes && e.offset === c.offset;
  if (!tied && e.section === c.section && e.offset === c.offset)
    fail(`header byte ${MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE} (classifier descriptor): shares the embedding's bytes but is not a copy of its descriptor`);
  const plan = planMatrices(config, tied);
  raw.forEach((desc, index) => {
    const want = plan[index];
    const at = MATRIX_TABLE_OFFSET + DESCRIPTOR_SIZE * index;
    const name = `matrix ${index} (${matrixName(index)})`;
    for (const [field, shift] of [["section", 0], ["columns", 4], ["rows", 8]] as const)
      if (desc[field] !== want[field]) fail(`header byte ${at + shift} (${name} ${field}): ${desc[field]}, expected ${want[field]}`);
    if (desc.rowBytes !== want.rowBytes)
      fail(`header byte ${at + 12} (${name} row length): ${desc.rowBytes}, expected ${want.rowBytes} (columns plus 8, rounded up to a multiple of 8)`);
    if (desc.offset % 8n) fail(`header byte ${at + 16} (${name} offset): ${commas(desc.offset)}, not a multiple of 8`);
    const end = desc.offset + BigInt(desc.rows * desc.rowBytes);
    if (end > BigInt(sections[desc.section]))
      fail(
        `header byte ${at + 16} (${name} offset): bytes ${commas(desc.offset)} to ${commas(end)} ` +
          `cross the end of section ${desc.section} (${commas(sections[desc.section])} bytes)`,
      );
    if (desc.offset !== BigInt(want.offset))
      fail(`header byte ${at + 16} (${name} offset): ${commas(desc.offset)}, expected ${commas(want.offset)} (matrices are packed in table order)`);
  });
  matrixSectionLengths(config, tied).forEach((wantLength, i) => {
    const index = i + 1;
    if (sections[index] !== wantLength)
      fail(
        `header byte ${SECTION_TABLE_OFFSET + SECTION_ENTRY_SIZE * index + 8} (section ${index} length): ` +
          `${commas(sections[index])}, expected ${commas(wantLength)} (a section ends with its last matrix)`,
      );
  });
  return plan;
}

function rows(data: Uint8Array, view: DataView, index: number, desc: MatrixDescriptor, start: number, fail: Fail): void {
  const base = start + desc.offset;
  const name = `matrix ${index} (${matrixName(index)})`;
  const end = ROW_PREFIX + desc.columns;
  // One pass finds whether any rule is broken (the common case: none is); only then are
  // the rules walked in order, each over every row, as the Python decoder's masks find them.
  let broken = false;
  for (let row = 0; row < desc.rows && !broken; row++) {
    const first = base + row * desc.rowBytes;
    broken = (data[first] | data[first + 1] | data[first + 2] | data[first + 3]) === 0 ||
      (data[first + 4] | data[first + 5] | data[first + 6] | data[first + 7]) !== 0;
    let zero = 0;
    for (let at = first + ROW_PREFIX; at < first + end; at++) zero |= data[at] === 0 ? 1 : 0;
    for (let at = first + end; at < first + desc.rowBytes; at++) zero |= data[at] !== WEIGHT_BIAS ? 1 : 0;
    broken ||= zero !== 0;
  }
  if (!broken) return;
  for (let row = 0; row < desc.rows; row++) {
    const at = base + row * desc.rowBytes;
    if (view.getUint32(at, true) === 0) fail(`byte ${commas(at)} (${name} row ${row} scale): 0, expected at least 1`);
  }
  for (let row = 0; row < desc.rows; row++)
    for (let col = 4; col < ROW_PREFIX; col++) {
      const at = base + row * desc.rowBytes + col;
      if (data[at]) fail(`byte ${commas(at)} (${name} row ${row} bytes 4 to 7): ${hex(data[at], 2)}, expected zero`);
    }
  for (let row = 0; row < desc.rows; row++) {
    const first = base + row * desc.rowBytes;
    for (let at = first + ROW_PREFIX; at < first + end; at++)
      if (data[at] === 0)
        fail(
          `byte ${commas(at)} (${name} row ${row} weight ${at - first - 8}): ` +
            "0, a weight of -128, expected 1 to 255 (weights are -127 to 127 plus 128)",
        );
  }
  for (let row = 0; row < desc.rows; row++) {
    const first = base + row * desc.rowBytes;
    for (let at = first + end; at < first + desc.rowBytes; at++)
      if (data[at] !== WEIGHT_BIAS) fail(`byte ${commas(at)} (${name} row ${row} padding): ${data[at]}, expected 128`);
  }
}

function tokenizer(data: Uint8Array, view: DataView, config: ModelConfig, blocks: number[], length0: number, fail: Fail): void {
  const vocab = config.vocabSize;
  const entry = (token: number, field: number) => view.getUint32(blocks[4] + TOKEN_ENTRY_SIZE * token + 4 * field, true);
  const where = (token: number, shift: number) => `byte ${commas(blocks[4] + TOKEN_ENTRY_SIZE * token + shift)} (token ${token}`;
  for (let t = 0; t < vocab; t++) if (entry(t, 3)) fail(`${where(t, 12)} bytes 12 to 15): ${entry(t, 3)}, expected zero`);
  for (let t = 0; t < vocab; t++)
    if (entry(t, 1) > MAX_TOKEN_LENGTH) fail(`${where(t, 4)} length): ${entry(t, 1)}, expected at most ${MAX_TOKEN_LENGTH}`);
  for (let t = 0; t < vocab; t++) {
    const offset = entry(t, 2), length = entry(t, 1);
    if (offset < blocks[6] || offset + length > length0)
      fail(
        `${where(t, 8)} string offset): bytes ${commas(offset)} to ${commas(offset + length)} lie outside the token strings ` +
          `(${commas(blocks[6])} to ${commas(length0)})`,
      );
  }
  let expected = blocks[6];
  for (let t = 0; t < vocab; t++) {
    if (entry(t, 2) !== expected)
      fail(`${where(t, 8)} string offset): ${commas(entry(t, 2))}, expected ${commas(expected)} (token strings follow one another in id order)`);
    expected += entry(t, 1);
  }
  for (let t = 0; t < vocab; t++)
    if (!Number.isFinite(scoreFromKey(entry(t, 0)))) fail(`${where(t, 0)} score key): ${hex(entry(t, 0), 8)}, not the key of a finite score`);
  const stringsEnd = expected;
  if (length0 !== roundUp(stringsEnd, 8))
    fail(
      `header byte ${SECTION_TABLE_OFFSET + 8} (section 0 length): ${commas(length0)}, expected ` +
        `${commas(roundUp(stringsEnd, 8))} (token strings end at ${commas(stringsEnd)}, padded to 8)`,
    );
  expectZero(data, stringsEnd, length0, "section zero padding", fail);
  const tokens = Array.from({ length: vocab }, (_, t) => data.subarray(entry(t, 2), entry(t, 2) + entry(t, 1)));
  const want = sortedTokenIds(tokens);
  for (let slot = 0; slot < vocab; slot++) {
    const got = view.getUint32(blocks[5] + 4 * slot, true);
    if (got !== want[slot])
      fail(
        `byte ${commas(blocks[5] + 4 * slot)} (sorted token id ${slot}): ${got}, expected ${want[slot]} ` +
          "(ids sorted by token bytes, equal strings by id)",
      );
  }
}

/** The bytes of every token, by id. */
export function tokenBytes(a: Artifact): Uint8Array[] {
  const view = new DataView(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  return Array.from({ length: a.config.vocabSize }, (_, t) => {
    const at = a.blocks[4] + TOKEN_ENTRY_SIZE * t;
    const offset = view.getUint32(at + 8, true);
    return a.data.subarray(offset, offset + view.getUint32(at + 4, true));
  });
}

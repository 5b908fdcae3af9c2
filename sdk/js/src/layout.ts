/**
 * Where everything sits in a CURTAW01 artifact: the canonical layout of
 * curta_chain/artifact/layout.py, which the decoder compares a header with. Its constants
 * are generated from layout.py into layout.generated.ts (scripts/gen_layout.py), re-exported
 * here; the functions are a port of layout.py's.
 */

import {
  CONFIG_FIELDS,
  HEADER_SIZE,
  LAYER_MATRIX_NAMES,
  MATRICES_PER_LAYER,
  MAX_HEAD_SIZE,
  MODEL_MATRIX_NAMES,
  ROW_PREFIX,
  SPLIT_WEIGHT_COUNT,
  TABLE_ENTRIES,
  TOKEN_ENTRY_SIZE,
  type ConfigField,
} from "./layout.generated.js";

export * from "./layout.generated.js";

/** A field's name in curta_chain's Python ModelConfig (and in its messages). */
export function pythonName(field: ConfigField): string {
  return CONFIG_FIELDS.find(([name]) => name === field)![1];
}

/** The seven numbers that shape a model (header bytes 8 to 35). */
export type ModelConfig = Record<ConfigField, number>;

/** One 24-byte entry of the matrix table. */
export interface MatrixDescriptor {
  section: number;
  columns: number;
  rows: number;
  rowBytes: number;
  offset: number;
}

export function roundUp(value: number, multiple: number): number {
  return Math.ceil(value / multiple) * multiple;
}

export function rowBytes(columns: number): number {
  return roundUp(columns + ROW_PREFIX, 8);
}

export function headSize(c: ModelConfig): number {
  return Math.floor(c.dim / c.heads);
}

export function kvDim(c: ModelConfig): number {
  return Math.floor((c.dim * c.kvHeads) / c.heads);
}

/** The count the section split is decided by (the embedding counted once). */
export function matrixWeightCount(c: ModelConfig): number {
  const d = c.dim, h = c.hiddenDim, k = kvDim(c);
  return d * c.vocabSize + c.layers * (2 * d * d + 2 * d * k + 3 * d * h);
}

export function sectionCount(c: ModelConfig): number {
  return matrixWeightCount(c) < SPLIT_WEIGHT_COUNT ? 2 : c.layers + 2;
}

export function matrixCount(c: ModelConfig): number {
  return 2 + MATRICES_PER_LAYER * c.layers;
}

/** `[field, what is wrong]` for the first rule the config breaks, or null. */
export function configProblem(c: ModelConfig): [ConfigField, string] | null {
  for (const [name, , , low, high] of CONFIG_FIELDS) {
    const value = c[name];
    if (!(low <= value && value <= high)) return [name, `${value}, expected ${low} to ${high}`];
  }
  if (c.dim % c.heads) return ["heads", `${c.heads} does not divide dimension ${c.dim}`];
  if (c.kvHeads > c.heads || c.heads % c.kvHeads)
    return ["kvHeads", `${c.kvHeads} is not a divisor of heads ${c.heads}`];
  const head = headSize(c);
  if (head % 2 || head > MAX_HEAD_SIZE)
    return ["heads", `head size ${head} is not even and at most ${MAX_HEAD_SIZE}`];
  return null;
}

export function matrixName(index: number): string {
  if (index < MODEL_MATRIX_NAMES.length) return MODEL_MATRIX_NAMES[index];
  const layer = Math.floor((index - MODEL_MATRIX_NAMES.length) / MATRICES_PER_LAYER);
  return `layer ${layer} ${LAYER_MATRIX_NAMES[(index - MODEL_MATRIX_NAMES.length) % MATRICES_PER_LAYER]}`;
}

/** `[rows, columns]` of every matrix in table order. */
export function matrixShapes(c: ModelConfig): [number, number][] {
  const d = c.dim, h = c.hiddenDim, k = kvDim(c), v = c.vocabSize;
  const layer: [number, number][] = [[d, d], [k, d], [k, d], [d, d], [h, d], [d, h], [h, d]];
  const out: [number, number][] = [[v, d], [v, d]];
  for (let l = 0; l < c.layers; l++) out.push(...layer);
  return out;
}

/** The canonical descriptors: matrices packed in table order within their section. */
export function planMatrices(c: ModelConfig, tied: boolean): MatrixDescriptor[] {
  const split = sectionCount(c) > 2;
  const ends = new Map<number, number>();
  const out: MatrixDescriptor[] = [];
  matrixShapes(c).forEach(([rows, columns], index) => {
    if (index === 1 && tied) {
      out.push({ ...out[0] });
      return;
    }
    const section = split && index >= 2 ? 2 + Math.floor((index - 2) / MATRICES_PER_LAYER) : 1;
    const desc = { section, columns, rows, rowBytes: rowBytes(columns), offset: ends.get(section) ?? 0 };
    ends.set(section, desc.offset + desc.rows * desc.rowBytes);
    out.push(desc);
  });
  return out;
}

/** The lengths of sections 1 and up: each ends with its last matrix. */
export function matrixSectionLengths(c: ModelConfig, tied: boolean): number[] {
  const lengths = new Array<number>(sectionCount(c) - 1).fill(0);
  for (const d of planMatrices(c, tied))
    lengths[d.section - 1] = Math.max(lengths[d.section - 1], d.offset + d.rows * d.rowBytes);
  return lengths;
}

/** The offsets of section zero's seven blocks: back to back after the header. */
export function planBlocks(c: ModelConfig): number[] {
  const v = c.vocabSize;
  const sizes = [
    (2 * c.layers + 1) * c.dim * 4,
    c.contextLength * headSize(c) * 4,
    TABLE_ENTRIES * 4,
    TABLE_ENTRIES * 4,
    TOKEN_ENTRY_SIZE * v,
    4 * v,
  ];
  const offsets = [HEADER_SIZE];
  for (const size of sizes) offsets.push(offsets[offsets.length - 1] + size);
  return offsets;
}

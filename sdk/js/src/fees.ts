/**
 * What a transaction costs and what an account locks, computed here from the message and the
 * account's size, as validators charge them and as the CLI computes them: a port of
 * curta_chain/protocol/compute_budget.py (`transaction_fee`) and curta_chain/chain/rent.py
 * (`rent_exempt_minimum`), held to the Python by tests/sdk/test_sdk_fees.py. A node's
 * getFeeForMessage and getMinimumBalanceForRentExemption are a cross-check only: a node
 * cannot set what the page shows or pays.
 *
 * The fee is 5,000 lamports a signature (the transaction's own, and those its precompile
 * instructions verify: the first byte of each one's data) plus the priority fee. A legacy
 * or v0 message's priority fee is its compute-unit price times its limit, rounded up to
 * whole lamports, the limit being SetComputeUnitLimit's or, without it, 3,000 units per
 * builtin instruction and 200,000 per other (at most 1,400,000); compute-budget
 * instructions that do not decode, a kind given twice, or a heap frame outside 32-256 KiB or
 * not a multiple of 1 KiB fail the transaction before anything is charged (no priority fee).
 * A v1 message's priority fee is its config's, a total in lamports.
 */

import { getCompiledTransactionMessageDecoder, type ReadonlyUint8Array } from "@solana/kit";

export const LAMPORTS_PER_SIGNATURE = 5_000n;
const MAX_COMPUTE_UNITS = 1_400_000n;
const DEFAULT_INSTRUCTION_UNITS = 200_000n;
const BUILTIN_INSTRUCTION_UNITS = 3_000n;
const MICRO_LAMPORTS_PER_LAMPORT = 1_000_000n;
const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111";
/** agave 4.2's builtins-default-costs: these programs' instructions default to 3,000 units. */
const BUILTINS = new Set([
  "11111111111111111111111111111111", COMPUTE_BUDGET, "BPFLoaderUpgradeab1e11111111111111111111111",
  "BPFLoader1111111111111111111111111111111111", "BPFLoader2111111111111111111111111111111111",
  "LoaderV411111111111111111111111111111111111", "KeccakSecp256k11111111111111111111111111111",
  "Ed25519SigVerify111111111111111111111111111",
]);
/** Each signature one of their instructions verifies is charged as one of the transaction's own. */
const PRECOMPILES = new Set([
  "Ed25519SigVerify111111111111111111111111111", "KeccakSecp256k11111111111111111111111111111",
  "Secp256r1SigVerify1111111111111111111111111",
]);
/** Compute-budget instructions by tag, and the length of their value (tag 0 is retired). */
const HEAP_FRAME = 1, UNIT_LIMIT = 2, UNIT_PRICE = 3;
const VALUE_LENGTH: Record<number, number> = { 1: 4, 2: 4, 3: 8, 4: 4 };
const MIN_HEAP = 32 * 1024, MAX_HEAP = 256 * 1024;
/** A v1 config's priority fee: both bits of its mask (kit's TRANSACTION_CONFIG_PRIORITY_FEE_LAMPORTS_BIT_MASK). */
const V1_PRIORITY_FEE_BITS = 3;

/** Rent, as the runtime computes it (agave's defaults, the same on every cluster). */
const ACCOUNT_STORAGE_OVERHEAD = 128n;
const RENT_LAMPORTS_PER_BYTE_YEAR = 3_480n;
const RENT_EXEMPTION_YEARS = 2n;

/** A message's instructions: each one's program and data. */
interface Parsed {
  version: "legacy" | 0 | 1;
  signers: number;
  keys: readonly string[];
  instructions: { program: string | undefined; data: ReadonlyUint8Array }[];
  /** A v1 message's priority fee, in lamports. */
  v1PriorityFee: bigint;
}

function parse(message: ReadonlyUint8Array): Parsed {
  const m = getCompiledTransactionMessageDecoder().decode(message) as unknown as {
    version: "legacy" | 0 | 1;
    header: { numSignerAccounts: number };
    staticAccounts: string[];
    instructions?: { programAddressIndex: number; data?: ReadonlyUint8Array }[];
    instructionHeaders?: { programAccountIndex: number }[];
    instructionPayloads?: { instructionData: ReadonlyUint8Array }[];
    configMask?: number;
    configValues?: { value: number | bigint }[];
  };
  const keys = m.staticAccounts;
  const instructions = m.version === 1
    ? (m.instructionHeaders ?? []).map((h, i) => ({ program: keys[h.programAccountIndex], data: m.instructionPayloads![i].instructionData }))
    : (m.instructions ?? []).map((ix) => ({ program: keys[ix.programAddressIndex], data: ix.data ?? new Uint8Array() }));
  const fee = m.version === 1 && ((m.configMask ?? 0) & V1_PRIORITY_FEE_BITS) === V1_PRIORITY_FEE_BITS ? BigInt(m.configValues![0].value) : 0n;
  return { version: m.version, signers: m.header.numSignerAccounts, keys, instructions, v1PriorityFee: fee };
}

function littleEndian(data: ReadonlyUint8Array, from: number, length: number): bigint {
  let value = 0n;
  for (let i = length - 1; i >= 0; i--) value = (value << 8n) | BigInt(data[from + i]);
  return value;
}

/**
 * A legacy or v0 message's compute-unit limit and price as agave reads them; null when its
 * compute-budget instructions fail it (nothing is charged then beyond the signatures).
 */
function budget(m: Parsed): { units: bigint; price: bigint } | null {
  const requested = new Map<number, bigint>();
  let defaultUnits = 0n;
  for (const { program, data } of m.instructions) {
    defaultUnits += program !== undefined && BUILTINS.has(program) ? BUILTIN_INSTRUCTION_UNITS : DEFAULT_INSTRUCTION_UNITS;
    if (program !== COMPUTE_BUDGET) continue;
    const tag = data.length ? data[0] : 0;
    const length = VALUE_LENGTH[tag];
    if (length === undefined || data.length < 1 + length) return null; // InvalidInstructionData
    if (requested.has(tag)) return null; // DuplicateInstruction
    requested.set(tag, littleEndian(data, 1, length));
  }
  const heap = Number(requested.get(HEAP_FRAME) ?? BigInt(MIN_HEAP));
  if (heap % 1024 || heap < MIN_HEAP || heap > MAX_HEAP) return null;
  const units = requested.get(UNIT_LIMIT) ?? defaultUnits;
  return { units: units < MAX_COMPUTE_UNITS ? units : MAX_COMPUTE_UNITS, price: requested.get(UNIT_PRICE) ?? 0n };
}

function signatures(m: Parsed): number {
  let count = m.signers;
  for (const { program, data } of m.instructions) if (program !== undefined && PRECOMPILES.has(program)) count += data.length ? data[0] : 0;
  return count;
}

function priority(m: Parsed): bigint {
  if (m.version === 1) return m.v1PriorityFee;
  const b = budget(m);
  return b ? (b.price * b.units + MICRO_LAMPORTS_PER_LAMPORT - 1n) / MICRO_LAMPORTS_PER_LAMPORT : 0n;
}

/** The signatures a message (its bytes) pays for: its signers', then its precompiles'. */
export function signatureCount(message: ReadonlyUint8Array): number {
  return signatures(parse(message));
}

/** The priority fee of a message, in lamports (0 without a price, or when its budget fails it). */
export function priorityFee(message: ReadonlyUint8Array): bigint {
  return priority(parse(message));
}

/** What validators charge for a message (legacy, v0 or v1), whatever a node says. */
export function transactionFee(message: ReadonlyUint8Array): bigint {
  const m = parse(message);
  return LAMPORTS_PER_SIGNATURE * BigInt(signatures(m)) + priority(m);
}

/** The lamports that make an account of `size` data bytes rent-exempt. */
export function rentExemptMinimum(size: number): bigint {
  return (ACCOUNT_STORAGE_OVERHEAD + BigInt(size)) * RENT_LAMPORTS_PER_BYTE_YEAR * RENT_EXEMPTION_YEARS;
}

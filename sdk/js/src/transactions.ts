/**
 * The transactions of an on-chain run, built with @solana/kit: open (create the run account,
 * openRun, fund the session key), a step, and close (closeRun, the session key's lamports
 * back). The compute units each asks for are the CLI's (curta_chain/chain/specs.py).
 */

import {
  AccountRole, address, appendTransactionMessageInstructions, blockhash, compileTransaction, createNoopSigner,
  createTransactionMessage, getAddressEncoder, getBase64Decoder, getBase64EncodedWireTransaction,
  getTransactionEncoder, getTransactionSize, partiallySignTransaction, pipe,
  setTransactionMessageComputeUnitLimit, setTransactionMessageFeePayer, setTransactionMessageLoadedAccountsDataSizeLimit,
  setTransactionMessageLifetimeUsingBlockhash, type Address, type Instruction, type KeyPairSigner,
  type Transaction,
} from "@solana/kit";
import { getCloseRunInstruction, getOpenRunInstruction, getStepInstruction } from "./generated/index.js";

export type TxVersion = "legacy" | 0 | 1;
/** The largest legacy or v0 transaction, and the largest v1 transaction (SIMD-0296). */
export const MAX_TRANSACTION_SIZE = 1232;
export const MAX_V1_TRANSACTION_SIZE = 4096;
/** A step spends up to its budget and asks for the most a transaction may have. */
export const STEP_UNITS = 1_400_000;
/** closeRun and a transfer, with margin (specs.py's CLOSE_RUN_CU and a transfer's 150). */
export const CLOSE_UNITS = 6_000;
/** What a transaction may load at most (SIMD-0186): 64 MiB. */
export const MAX_LOADED_DATA = 64 * 1024 * 1024;
const SYSTEM_PROGRAM = address("11111111111111111111111111111111");

/**
 * The opening asks for the most a transaction may have: openRun checks section zero's tables
 * and tokenizer, a cost that grows with the model (and with the program), and with no
 * priority fee the limit costs nothing; the simulation before signing shows what it spends.
 */
export const OPEN_UNITS = 1_400_000;

export interface Lifetime {
  blockhash: string;
  lastValidBlockHeight: bigint;
}

function u64(value: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, value, true);
  return out;
}

function systemData(index: number, ...parts: Uint8Array[]): Uint8Array {
  const head = new Uint8Array(4);
  new DataView(head.buffer).setUint32(0, index, true);
  const all = [head, ...parts];
  const out = new Uint8Array(all.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of all) out.set(p, (at += p.length) - p.length);
  return out;
}

/** SystemProgram.createAccount: `lamports` and `space` bytes for `owner`; both sign. */
export function createAccountInstruction(from: Address, account: Address, lamports: bigint, space: number, owner: Address): Instruction {
  return {
    programAddress: SYSTEM_PROGRAM,
    accounts: [{ address: from, role: AccountRole.WRITABLE_SIGNER }, { address: account, role: AccountRole.WRITABLE_SIGNER }],
    data: systemData(0, u64(lamports), u64(BigInt(space)), new Uint8Array(getAddressEncoder().encode(owner))),
  };
}

/** SystemProgram.transfer of `lamports`; `from` signs. */
export function transferInstruction(from: Address, to: Address, lamports: bigint): Instruction {
  return {
    programAddress: SYSTEM_PROGRAM,
    accounts: [{ address: from, role: AccountRole.WRITABLE_SIGNER }, { address: to, role: AccountRole.WRITABLE }],
    data: systemData(2, u64(lamports)),
  };
}

/** A transaction of `instructions` paid by `payer`, asking for `units`, not yet signed. */
export function buildTransaction(version: TxVersion, payer: Address, lifetime: Lifetime, units: number, instructions: Instruction[]): Transaction {
  const message = pipe(
    createTransactionMessage({ version }),
    (m) => setTransactionMessageFeePayer(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: blockhash(lifetime.blockhash), lastValidBlockHeight: lifetime.lastValidBlockHeight }, m),
    (m) => setTransactionMessageComputeUnitLimit(units, m),
    // A v1 transaction that names no loaded-data limit may load nothing: it says the 64 MiB a
    // legacy one gets by default (as the CLI's v1 transactions do).
    (m) => (version === 1 ? setTransactionMessageLoadedAccountsDataSizeLimit(MAX_LOADED_DATA, m) : m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  return compileTransaction(message as Parameters<typeof compileTransaction>[0]);
}

/** The transaction's message as getFeeForMessage takes it. */
export function messageBase64(tx: Transaction): string {
  return getBase64Decoder().decode(tx.messageBytes);
}

export function wireBase64(tx: Transaction): string {
  return getBase64EncodedWireTransaction(tx);
}

export function wireBytes(tx: Transaction): Uint8Array {
  return new Uint8Array(getTransactionEncoder().encode(tx));
}

/** The serialized size and the limit of its version. */
export function sizeOf(tx: Transaction, version: TxVersion): { size: number; limit: number } {
  return { size: getTransactionSize(tx), limit: version === 1 ? MAX_V1_TRANSACTION_SIZE : MAX_TRANSACTION_SIZE };
}

export async function signWith(signers: KeyPairSigner[], tx: Transaction): Promise<Transaction> {
  return partiallySignTransaction(signers.map((s) => s.keyPair), tx);
}

/** What opens a run: its accounts and arguments. */
export interface OpenArgs {
  programId: Address;
  opener: Address;
  run: KeyPairSigner;
  model: Address;
  sectionZero: Address;
  runSize: number;
  rent: bigint;
  capacity: number;
  prompt: Uint8Array;
  temperature: number;
  topP: number;
  seed: bigint;
  /** The session key that pays the steps, and what the opener sends it. */
  session: Address;
  funding: bigint;
}

/** Create the run account, open the run and fund the session key: one transaction, all or nothing. */
export function openInstructions(a: OpenArgs): Instruction[] {
  return [
    createAccountInstruction(a.opener, a.run.address, a.rent, a.runSize, a.programId),
    getOpenRunInstruction(
      {
        opener: createNoopSigner(a.opener), run: a.run, model: a.model, sectionZero: a.sectionZero,
        capacity: a.capacity, temperature: a.temperature, topP: a.topP, seed: a.seed,
        prompt: { __kind: "Text", text: a.prompt },
      },
      { programAddress: a.programId },
    ),
    transferInstruction(a.opener, a.session, a.funding),
  ];
}

/** A step of `run`; `weights[0]` is section zero's account. Anyone may send it. */
export function stepInstruction(programId: Address, run: Address, model: Address, weights: Address[], label: bigint): Instruction {
  const ix = getStepInstruction({ run, model, sectionZero: weights[0], label }, { programAddress: programId });
  return { ...ix, accounts: [...ix.accounts, ...weights.slice(1).map((w) => ({ address: w, role: AccountRole.READONLY }))] };
}

/** Close the run (rent back to its opener) and, if any, send the session key's lamports back. */
export function closeInstructions(programId: Address, opener: Address, run: Address, session?: { address: Address; lamports: bigint }): Instruction[] {
  const close = getCloseRunInstruction({ opener: createNoopSigner(opener), run }, { programAddress: programId });
  return session && session.lamports > 0n ? [close, transferInstruction(session.address, opener, session.lamports)] : [close];
}

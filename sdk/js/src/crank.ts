/**
 * Landing a run's transactions: one to its confirmation (`land`), and the steps, many in
 * flight (`crank`), each state the chain is then seen in checked (`RunChecker`).
 *
 * A step means "advance this run by its next slice" (docs/program.md): the run account
 * after k landed steps is a function of the run's arguments and k, in whatever order they
 * land. So the crank sends the steps the count says are left, keeps a window in flight,
 * and after every landing reads the run account at a slot at least that landing's and
 * checks it; the chain's own step count and tokens say where the run is. A step refused
 * because the run had already finished (RunFinished) or missed a section its slice read
 * (MissingWeightAccount) changed nothing; any other refusal stops the run.
 */

import { getSignatureFromTransaction, type KeyPairSigner, type Transaction } from "@solana/kit";
import { CURTA_ERROR__MISSING_WEIGHT_ACCOUNT, CURTA_ERROR__RUN_FINISHED, getCurtaErrorMessage, type CurtaError } from "./generated/index.js";
import { transactionFee } from "./fees.js";
import type { JsonRpc } from "./rpc.js";
import { readRun, type RunChecker, type RunView } from "./runcheck.js";
import { buildTransaction, MAX_LOADED_DATA, signWith, STEP_UNITS, stepInstruction, transferInstruction, wireBase64, type Lifetime } from "./transactions.js";
import type { Address } from "@solana/kit";

/** A transaction the program (or the runtime) refused, or one that never landed. */
export class TransactionFailed extends Error {
  override name = "TransactionFailed";
  constructor(message: string, readonly code: number | null = null) {
    super(message);
  }
}

/** The session key cannot pay the steps the run still needs (the count was short). */
export class SessionEmpty extends TransactionFailed {
  override name = "SessionEmpty";
}

/** How often the page asks the node about what it sent (a slot is about 400 ms). */
const POLL_MS = 250;
/** Unlanded transactions are sent again this often (nodes drop them under load). */
const RESEND_MS = 2_000;
/** A fresh blockhash for new steps this often (one lives about a minute). */
const BLOCKHASH_MS = 20_000;
/** Steps in flight: four blocks' worth under the per-account compute limit, as the CLI's. */
export const STEPS_IN_FLIGHT = 32;
/** Loaded bytes a step takes besides the run and weight accounts (program, model, margin). */
const LOADED_BESIDES = 1 << 20;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The custom program error of a transaction's `err`, if it is one. */
function customCode(err: unknown): number | null {
  const ix = (err as { InstructionError?: [number, unknown] } | null)?.InstructionError;
  const custom = (ix?.[1] as { Custom?: number } | undefined)?.Custom;
  return typeof custom === "number" ? custom : null;
}

/** A transaction error in words: the program's own message where it is one of its errors. */
export function describeError(err: unknown): string {
  const code = customCode(err);
  if (code !== null) {
    const text = code >= 6000 ? getCurtaErrorMessage(code as CurtaError) : undefined;
    return text ? `${text} (program error ${code})` : `program error ${code}`;
  }
  return JSON.stringify(err);
}

/**
 * Send a signed transaction and wait until it is confirmed, sending it again meanwhile.
 *
 * @returns its signature and the slot it landed in.
 * @throws TransactionFailed it was refused, or its blockhash expired before it landed.
 */
export async function land(rpc: JsonRpc, tx: Transaction, lifetime: Lifetime, what: string): Promise<{ signature: string; slot: number }> {
  const wire = wireBase64(tx), signature = getSignatureFromTransaction(tx);
  let sent = 0;
  for (;;) {
    if (Date.now() - sent > RESEND_MS) {
      await rpc.send(wire);
      sent = Date.now();
    }
    const [status] = await rpc.statuses([signature]);
    if (status?.err) throw new TransactionFailed(`${what} was refused: ${describeError(status.err)}`, customCode(status.err));
    if (status && (status.confirmationStatus === "confirmed" || status.confirmationStatus === "finalized")) return { signature, slot: status.slot };
    if (!status && BigInt(await rpc.blockHeight()) > lifetime.lastValidBlockHeight)
      throw new TransactionFailed(`${what} did not land before its blockhash expired: nothing was spent`);
    await sleep(POLL_MS);
  }
}

/** Everything the steps of one run need. */
export interface Cranking {
  rpc: JsonRpc;
  programId: Address;
  run: Address;
  model: Address;
  /** The model's weight accounts and their lengths, in section order. */
  weights: Address[];
  lengths: number[];
  runSize: number;
  /** The dry count: the run's steps in all, and each step's sections. */
  total: number;
  sections: number[][];
  session: KeyPairSigner;
  checker: RunChecker;
  /** Called with each state checked and the generated tokens it shows first. */
  progress(view: RunView, fresh: number[]): void;
  landed(signature: string): void;
  /** Lamports the session key may still spend on fees (it keeps its rent-exempt floor). */
  spendable(): bigint;
  stepFee: bigint;
}

interface Flight {
  wire: string;
  sent: number;
  lastValid: bigint;
}

/** The weight accounts steps sent at step `at` pass: all that fit what a step may load. */
function weightsFor(c: Cranking, at: number, window: number): Address[] {
  const budget = MAX_LOADED_DATA - LOADED_BESIDES - c.runSize;
  if (c.lengths.reduce((a, b) => a + b, 0) <= budget) return c.weights;
  for (;;) {
    const wanted = [...new Set(c.sections.slice(at, at + window).flat())].sort((a, b) => a - b);
    if (window === 1 || c.lengths[0] + wanted.reduce((n, i) => n + c.lengths[i], 0) <= budget)
      return [c.weights[0], ...wanted.map((i) => c.weights[i])];
    window = Math.max(1, window >> 1);
  }
}

/**
 * Crank the run to its end: exactly the steps the count says are left, a window in flight,
 * every state seen checked; then wait until nothing sent is still in flight.
 *
 * @returns the run's last state.
 * @throws RunMismatchError a state differs from what the page computes (nothing more is sent).
 * @throws TransactionFailed the program refused a step for another reason than the run's end.
 */
export async function crank(c: Cranking, start: RunView): Promise<RunView> {
  const flights = new Map<string, Flight>();
  let view = start, seenSlot = start.slot;
  // Labels make each step a distinct transaction: from a random start, so a session key kept
  // across tabs never repeats one it sent under the same blockhash.
  let label = BigInt(crypto.getRandomValues(new Uint32Array(1))[0]) << 24n;
  let lifetime = await c.rpc.blockhash(), fetched = Date.now();
  let check = c.checker.check(view);
  c.progress(view, check.fresh);
  for (;;) {
    if (flights.size) seenSlot = Math.max(seenSlot, await settle(c, flights));
    if (flights.size === 0 || seenSlot > view.slot) {
      const next = await readRun(c.rpc, c.run, c.programId, seenSlot);
      if (!next) throw new TransactionFailed(`run ${c.run} is gone: it was closed while it ran`);
      check = c.checker.check(next);
      if (next.header.steps >= view.header.steps) view = next;
      c.progress(view, check.fresh);
    }
    if (check.finished) break;
    const at = Number(view.header.steps);
    // The count's steps, a window at a time; past the count (a program that cuts otherwise),
    // one at a time until the chain says the run is finished.
    const left = c.total > at ? c.total - at - flights.size : flights.size ? 0 : 1;
    const room = Number(c.spendable() / c.stepFee) - flights.size;
    const count = Math.min(STEPS_IN_FLIGHT - flights.size, left, room);
    if (count <= 0 && flights.size === 0) throw new SessionEmpty(`the session key ${c.session.address} cannot pay another step`);
    if (count > 0) {
      if (Date.now() - fetched > BLOCKHASH_MS) [lifetime, fetched] = [await c.rpc.blockhash(), Date.now()];
      const weights = weightsFor(c, at, STEPS_IN_FLIGHT);
      const txs = await Promise.all(Array.from({ length: count }, async () => {
        const tx = buildTransaction("legacy", c.session.address, lifetime, STEP_UNITS, [stepInstruction(c.programId, c.run, c.model, weights, label++)]);
        return signWith([c.session], tx);
      }));
      await Promise.all(txs.map(async (tx) => {
        const wire = wireBase64(tx);
        flights.set(getSignatureFromTransaction(tx), { wire, sent: Date.now(), lastValid: lifetime.lastValidBlockHeight });
        await c.rpc.send(wire);
      }));
    }
    await sleep(POLL_MS);
  }
  while (flights.size) {
    await settle(c, flights);
    if (flights.size) await sleep(POLL_MS);
  }
  return view;
}

/** Poll what is in flight: forget what landed or expired, send the rest again. Returns the
 * latest slot a step landed in (0 if none). */
async function settle(c: Cranking, flights: Map<string, Flight>): Promise<number> {
  const signatures = [...flights.keys()];
  const statuses = await c.rpc.statuses(signatures);
  let slot = 0, height: bigint | null = null;
  for (let i = 0; i < signatures.length; i++) {
    const s = statuses[i], flight = flights.get(signatures[i])!;
    if (s) {
      flights.delete(signatures[i]);
      slot = Math.max(slot, s.slot);
      const code = customCode(s.err);
      if (s.err && code !== CURTA_ERROR__RUN_FINISHED && code !== CURTA_ERROR__MISSING_WEIGHT_ACCOUNT)
        throw new TransactionFailed(`a step of run ${c.run} was refused: ${describeError(s.err)}`, code);
      c.landed(signatures[i]);
      continue;
    }
    height ??= BigInt(await c.rpc.blockHeight());
    if (height > flight.lastValid) flights.delete(signatures[i]);
    else if (Date.now() - flight.sent > RESEND_MS) {
      flight.sent = Date.now();
      await c.rpc.send(flight.wire);
    }
  }
  return slot;
}

/**
 * Send what the session key holds back to `owner`, the session paying the fee itself (as
 * its message says: `fees.ts`): used when no close follows (the run was stopped, or the
 * wallet declined to close).
 *
 * @returns the signature, or null when it holds no more than the fee.
 */
export async function sweepSession(rpc: JsonRpc, session: KeyPairSigner, owner: Address): Promise<string | null> {
  const { lamports } = await rpc.balance(session.address, "processed");
  const lifetime = await rpc.blockhash();
  const sweep = (amount: bigint) => buildTransaction("legacy", session.address, lifetime, 1_000, [transferInstruction(session.address, owner, amount)]);
  const fee = transactionFee(sweep(0n).messageBytes);
  if (lamports <= fee) return null;
  const tx = await signWith([session], sweep(lamports - fee));
  return (await land(rpc, tx, lifetime, "returning the session key's lamports")).signature;
}

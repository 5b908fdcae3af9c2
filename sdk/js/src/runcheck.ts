/**
 * An on-chain run as it lands, checked by the page's own integer core: every state the
 * chain is seen in (its run account's header and tokens, read at a slot the page has seen
 * land) must be the run that was opened (model, opener, settings, prompt) and hold only
 * tokens the integer core computes, the prompt's as the page's tokenizer encodes it.
 *
 * The chain says which step it is at: the check follows the program's schedule through
 * the run account (its step count and tokens), never by predicting the slices, so a
 * program that cuts its steps differently is checked the same way.
 */

import { getRunDecoder, RunState, type Run } from "./generated/index.js";
import { toHex } from "./format.js";
import { Region, RUN_HEADER_BYTES } from "./runlayout.js";
import type { JsonRpc } from "./rpc.js";

const RUN_DISCRIMINATOR = "c7369b56eb73f6bd";

/** The chain's run differs from the one opened, or from what the integer core computes. */
export class RunMismatchError extends Error {
  override name = "RunMismatchError";
}

/** A run account as read: its header, every token so far, the slot it was read at. */
export interface RunView {
  header: Run;
  tokens: number[];
  slot: number;
}

/** What the run must be: how it was opened, and the tokens the integer core computes. */
export interface ExpectedRun {
  address: string;
  model: string;
  opener: string;
  capacity: number;
  temperature: number;
  topP: number;
  seed: bigint;
  prompt: Uint8Array;
  promptIds: number[];
  generated: number[];
}

/**
 * Read the run account's header and tokens at a slot at least `minContextSlot`.
 *
 * @returns null when there is no account (or only lamports) at `address`.
 * @throws RunMismatchError the account is not a curta run.
 */
export async function readRun(rpc: JsonRpc, address: string, programId: string, minContextSlot = 0): Promise<RunView | null> {
  const head = await rpc.account(address, { slice: { offset: 0, length: RUN_HEADER_BYTES }, minContextSlot });
  if (!head || (head.owner === "11111111111111111111111111111111" && head.data.length === 0)) return null;
  if (head.owner !== programId) throw new RunMismatchError(`run ${address} is owned by ${head.owner}, not the program ${programId}`);
  if (head.data.length < RUN_HEADER_BYTES || toHex(head.data.subarray(0, 8)) !== RUN_DISCRIMINATOR)
    throw new RunMismatchError(`${address} is not a curta run (${head.data.length} bytes, discriminator ${toHex(head.data.subarray(0, 8))})`);
  const header = getRunDecoder().decode(head.data);
  if (header.tokenCount > header.capacity) throw new RunMismatchError(`run ${address}: ${header.tokenCount} tokens in room for ${header.capacity}`);
  const start = header.regions[Region.TOKENS];
  let tokens: number[] = [];
  if (header.tokenCount > 0) {
    const raw = await rpc.account(address, { slice: { offset: start, length: 4 * header.tokenCount }, minContextSlot: head.slot });
    if (!raw || raw.data.length !== 4 * header.tokenCount) throw new RunMismatchError(`run ${address}: its tokens could not be read`);
    const view = new DataView(raw.data.buffer, raw.data.byteOffset, raw.data.byteLength);
    tokens = Array.from({ length: header.tokenCount }, (_, i) => view.getUint32(4 * i, true));
  }
  return { header, tokens, slot: head.slot };
}

/** Checks each state of one run against what it must be; tells the tokens new since the last. */
export class RunChecker {
  /** The step count of the latest state checked. */
  steps = 0n;
  /** Generated tokens checked so far. */
  checked = 0;

  constructor(readonly expected: ExpectedRun) {}

  /**
   * Check `view`; return the generated tokens it shows for the first time and whether the
   * run has finished. A state older than one already checked (a node behind) is skipped.
   *
   * @throws RunMismatchError naming the run, the step and what differs.
   */
  check(view: RunView): { fresh: number[]; finished: boolean } {
    const h = view.header, e = this.expected;
    if (h.steps < this.steps) return { fresh: [], finished: false };
    const at = `run ${e.address} differs after step ${h.steps}`;
    const fields: [string, unknown, unknown][] = [
      ["model", h.model, e.model], ["opener", h.opener, e.opener], ["capacity", h.capacity, e.capacity],
      ["temperature", h.temperature, e.temperature], ["top-p", h.topP, e.topP], ["seed", h.seed, e.seed],
      ["prompt length", h.promptLength, e.prompt.length],
    ];
    for (const [name, chain, ours] of fields)
      if (chain !== ours) throw new RunMismatchError(`${at}: its ${name} is ${chain}, this page opened it with ${ours}`);
    this.steps = h.steps;
    if (h.state === RunState.Tokenizing) return { fresh: [], finished: false };
    if (h.promptTokens !== e.promptIds.length)
      throw new RunMismatchError(`${at}: the chain tokenized the prompt into ${h.promptTokens} tokens, this page into ${e.promptIds.length}`);
    const differs = e.promptIds.findIndex((id, i) => view.tokens[i] !== id);
    if (differs >= 0)
      throw new RunMismatchError(`${at}: prompt token ${differs + 1} is ${view.tokens[differs]} on chain, this page encodes ${e.promptIds[differs]}`);
    const generated = view.tokens.slice(h.promptTokens);
    for (let i = 0; i < generated.length; i++)
      if (generated[i] !== e.generated[i])
        throw new RunMismatchError(
          i < e.generated.length
            ? `${at}: generated token ${i + 1} is ${generated[i]} on chain, this page computes ${e.generated[i]}`
            : `${at}: the chain generated token ${i + 1} (${generated[i]}), this page computes ${e.generated.length} tokens`,
        );
    const finished = h.state === RunState.Finished;
    if (finished && generated.length !== e.generated.length)
      throw new RunMismatchError(`${at}: the run finished after ${generated.length} generated tokens, this page computes ${e.generated.length}`);
    const fresh = generated.slice(this.checked);
    this.checked = Math.max(this.checked, generated.length);
    return { fresh, finished };
  }
}

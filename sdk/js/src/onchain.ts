/**
 * Run a model on chain with a visitor's wallet: open a run, crank every step, close it.
 *
 * The wallet is asked twice: once to open (one transaction creates the run account, opens
 * the run and funds a session key), once to close (closeRun, its rent back to the wallet,
 * and the session key's lamports back with it). The steps, dozens to thousands of them, are
 * paid and signed by the session key, a keypair the page makes for this run, so no request
 * is made per step and a blockhash that expires mid-run is simply replaced (docs/browser.md
 * says why this and not one request signing every step). Should the count of steps prove
 * short, one more request tops the session key up. The session key's seed is kept by the
 * caller's `SessionStore` until the close, so a page reopened after its tab was closed can
 * finish the run with it (`finishRun`); the wallet stays the run's opener, so
 * `curta-chain close-run` closes it too.
 *
 * Before anything is signed: the run's tokens are computed by the page's integer core, its
 * steps counted by the schedule run dry (`steps.ts`, a prompt's batches planned from the
 * core's activations), its cost priced from the messages and the account's size as the CLI
 * prices them (`fees.ts`; the node's quotes only a cross-check), the wallet's balance
 * checked and the opening simulated. While it runs, every state seen is checked
 * (`runcheck.ts`).
 */

import {
  address, createKeyPairSignerFromPrivateKeyBytes, generateKeyPairSigner, type Address, type KeyPairSigner,
  type Transaction,
} from "@solana/kit";
import type { Artifact } from "./decode.js";
import { crank, land, SessionEmpty, sweepSession, type Cranking } from "./crank.js";
import { rentExemptMinimum, transactionFee } from "./fees.js";
import { RunState } from "./generated/index.js";
import { generate, IntModel, Tokenizer, type SamplingSettings } from "./inference.js";
import { RpcError, type JsonRpc, type SolanaChainId } from "./rpc.js";
import { readRun, RunChecker, type ExpectedRun, type RunView } from "./runcheck.js";
import { MAX_ACCOUNT_SIZE, runAccountSize } from "./runlayout.js";
import { countSteps, type StepCount } from "./steps.js";
import {
  buildTransaction, CLOSE_UNITS, closeInstructions, messageBase64, OPEN_UNITS, openInstructions, signWith,
  sizeOf, STEP_UNITS, stepInstruction, transferInstruction, wireBase64, type Lifetime, type TxVersion,
} from "./transactions.js";
import type { ConnectedWallet } from "./wallet.js";

/** The run cannot be made as asked: said before anything is signed or sent. */
export class RunRefused extends Error {
  override name = "RunRefused";
}

/** Where a run's session key is kept until its run is closed (the page: localStorage). */
export interface SessionStore {
  save(run: string, seed: Uint8Array, owner: string): void;
  load(run: string): { seed: Uint8Array; owner: string } | null;
  drop(run: string): void;
}

/** The model and cluster a run is made on (the caller verified the model is sealed). */
export interface ModelOnChain {
  rpc: JsonRpc;
  chain: SolanaChainId;
  programId: string;
  model: string;
  /** The model's weight accounts and section lengths, in section order. */
  weightAccounts: string[];
  sectionLengths: number[];
  artifact: Artifact;
}

/** A run to open: the prompt (its ids as the page's tokenizer encodes them) and settings. */
export interface RunRequest extends ModelOnChain {
  prompt: string;
  promptIds: number[];
  newTokens: number;
  settings: SamplingSettings;
}

/** A run priced and ready to open. Lamports throughout. */
export interface RunPlan extends RunRequest {
  promptBytes: Uint8Array;
  capacity: number;
  /** The generated tokens the integer core computes. */
  generated: number[];
  count: StepCount;
  runSize: number;
  /** The run account's rent (back at close) and the session key's rent-exempt floor. */
  rent: bigint;
  sessionRent: bigint;
  /** What the opening sends the session key: its floor and every step's fee, with margin. */
  funding: bigint;
  fees: { open: bigint; step: bigint; close: bigint; total: bigint };
  /** Where the node's getFeeForMessage disagrees with the fees computed: its total (else null). */
  nodeFees: bigint | null;
  run: KeyPairSigner;
  session: KeyPairSigner;
  sessionSeed: Uint8Array;
  version: TxVersion;
}

/** What the page is told as a run goes. */
export interface RunHooks {
  status(text: string): void;
  opened(run: string, signature: string): void;
  /** A state was checked; `fresh` are generated tokens it shows for the first time. */
  progress(view: RunView, fresh: number[]): void;
  /** A transaction of the run landed: open, step, top-up, close or return. */
  landed(kind: string, signature: string): void;
}

/** How a run ended for this page. */
export interface RunOutcome {
  run: string;
  view: RunView;
  closed: string | null;
}

/** Steps' fees the session key holds beyond the count: surplus steps, a count one short. */
const FEE_MARGIN_STEPS = 16;

/**
 * The rent of `size` bytes: the runtime's formula, checked against the node's answer (as the
 * CLI's `checked_rent`): a node that asks for more is refused, one that asks for less is
 * believed (a cluster may lower rent; an account funded too low fails the simulation).
 *
 * @throws RunRefused the node asks for more than the formula gives.
 */
async function checkedRent(rpc: JsonRpc, size: number): Promise<bigint> {
  const ours = rentExemptMinimum(size);
  let theirs: bigint;
  try {
    theirs = await rpc.rentExempt(size);
  } catch (e) {
    if (e instanceof RpcError) return ours; // a cross-check the node will not answer
    throw e;
  }
  if (theirs > ours)
    throw new RunRefused(`${rpc.url} asks ${theirs.toLocaleString("en-US")} lamports to make ${size.toLocaleString("en-US")} bytes rent-exempt; the runtime's formula gives ${ours.toLocaleString("en-US")}: refusing a node that asks for more; nothing was signed`);
  return theirs < ours ? theirs : ours;
}

/** What the node says these messages cost in all (getFeeForMessage), or null if it will not say. */
async function nodeFees(rpc: JsonRpc, messages: [Transaction, number][]): Promise<bigint | null> {
  try {
    const quotes = await Promise.all(messages.map(([tx]) => rpc.feeFor(messageBase64(tx))));
    return quotes.reduce((sum, fee, i) => sum + fee * BigInt(messages[i][1]), 0n);
  } catch (e) {
    if (e instanceof RpcError) return null;
    throw e;
  }
}

/** Whether the cluster takes v1 transactions (its enable_tx_v1 feature is active). */
async function takesV1(rpc: JsonRpc): Promise<boolean> {
  const feature = await rpc.account("txv1aq4pp281K9um3tnPgkfX8UqtFT6wcVW3hNezGLL", { commitment: "confirmed" });
  return !!feature && feature.owner === "Feature111111111111111111111111111111111111" && feature.data[0] === 1;
}

/**
 * Price the run: its tokens (the integer core), its steps (the schedule, dry), its
 * account's size and rent, and every fee, computed from the messages as validators charge
 * them (the node's quotes a cross-check only: `nodeFees` where they disagree). Nothing is
 * signed.
 *
 * @throws RunRefused the run does not fit one account or one opening transaction, or the
 *   node asks more rent than the runtime's formula gives.
 */
export async function planChainRun(r: RunRequest, wallet: ConnectedWallet): Promise<RunPlan> {
  const promptBytes = new TextEncoder().encode(r.prompt);
  const capacity = r.promptIds.length + r.newTokens;
  const runSize = runAccountSize(r.artifact.config, capacity, promptBytes.length);
  if (runSize > MAX_ACCOUNT_SIZE)
    throw new RunRefused(`a run of ${capacity} positions needs a ${runSize.toLocaleString("en-US")}-byte account, over Solana's ${MAX_ACCOUNT_SIZE.toLocaleString("en-US")}: ask for fewer tokens`);
  const model = new IntModel(r.artifact), tokenizer = new Tokenizer(r.artifact);
  const generated = [...generate(model, { promptIds: r.promptIds, steps: r.newTokens }, r.settings)];
  const shape = { capacity, prompt: promptBytes, temperature: r.settings.temperature, topP: r.settings.topP };
  const count = countSteps(r.artifact, tokenizer, shape, [...r.promptIds, ...generated]);
  const sessionSeed = crypto.getRandomValues(new Uint8Array(32));
  const run = await generateKeyPairSigner(), session = await createKeyPairSignerFromPrivateKeyBytes(sessionSeed);
  const version = wallet.version(await takesV1(r.rpc));
  const [rent, sessionRent, lifetime] = await Promise.all([checkedRent(r.rpc, runSize), checkedRent(r.rpc, 0), r.rpc.blockhash()]);
  const plan: RunPlan = {
    ...r, promptBytes, capacity, generated, count, runSize, run, session, sessionSeed, version, rent, sessionRent,
    funding: sessionRent, fees: { open: 0n, step: 0n, close: 0n, total: 0n }, nodeFees: null,
  };
  const open = openTransaction(plan, wallet.address, lifetime);
  const { size, limit } = sizeOf(open, version);
  if (size > limit)
    throw new RunRefused(`the prompt is ${promptBytes.length} bytes: the opening carries it in one ${version === "legacy" ? "legacy" : `v${version}`} transaction, which holds at most ${Math.max(promptBytes.length - (size - limit), 0)} prompt bytes`);
  const step = stepTransaction(plan, session, run.address, lifetime);
  const close = closeTransaction({ ...plan, run: run.address }, wallet.address, lifetime, 1n);
  const fees = { open: transactionFee(open.messageBytes), step: transactionFee(step.messageBytes), close: transactionFee(close.messageBytes), total: 0n };
  fees.total = fees.open + fees.close + BigInt(count.steps) * fees.step;
  plan.fees = fees;
  plan.funding = sessionRent + BigInt(count.steps + FEE_MARGIN_STEPS) * fees.step;
  const theirs = await nodeFees(r.rpc, [[open, 1], [step, count.steps], [close, 1]]);
  plan.nodeFees = theirs !== null && theirs !== fees.total ? theirs : null;
  return plan;
}

function openTransaction(p: RunPlan, opener: Address, lifetime: Lifetime): Transaction {
  return buildTransaction(p.version, opener, lifetime, OPEN_UNITS, openInstructions({
    programId: address(p.programId), opener, run: p.run, model: address(p.model), sectionZero: address(p.weightAccounts[0]),
    runSize: p.runSize, rent: p.rent, capacity: p.capacity, prompt: p.promptBytes, temperature: p.settings.temperature,
    topP: p.settings.topP, seed: p.settings.seed, session: p.session.address, funding: p.funding,
  }));
}

/** A step of `run` as the session key sends it (what its fee is quoted on). */
function stepTransaction(m: ModelOnChain, session: KeyPairSigner, run: string, lifetime: Lifetime): Transaction {
  const ix = stepInstruction(address(m.programId), address(run), address(m.model), m.weightAccounts.map((w) => address(w)), 0n);
  return buildTransaction("legacy", session.address, lifetime, STEP_UNITS, [ix]);
}

/** What closing a run takes: its version, program, address and the session key to empty. */
interface Closing {
  version: TxVersion;
  programId: string;
  run: string;
  session: KeyPairSigner;
}

function closeTransaction(c: Closing, opener: Address, lifetime: Lifetime, sessionLamports: bigint): Transaction {
  const session = { address: c.session.address, lamports: sessionLamports };
  return buildTransaction(c.version, opener, lifetime, CLOSE_UNITS, closeInstructions(address(c.programId), opener, address(c.run), session));
}

/**
 * Open the planned run with the wallet, crank it to its end checking every state, and close
 * it with the wallet. A state that differs stops the run (left open, named in the error);
 * a wallet that declines the close leaves it finished and open. Either way the session
 * key's lamports go back to the wallet.
 *
 * @throws RunRefused the wallet cannot pay, or the opening would fail (nothing signed).
 * @throws WalletError the wallet declined the opening: nothing was sent.
 * @throws RunMismatchError, TransactionFailed the run stopped (its address in the message).
 */
export async function runOnChain(plan: RunPlan, wallet: ConnectedWallet, store: SessionStore, hooks: RunHooks): Promise<RunOutcome> {
  const rpc = plan.rpc;
  const needed = plan.rent + plan.funding + plan.fees.open + plan.fees.close;
  const { lamports } = await rpc.balance(wallet.address);
  if (lamports < needed)
    throw new RunRefused(`the wallet ${wallet.address} holds ${sol(lamports)} SOL; opening this run needs ${sol(needed)} SOL (its rent, the session key's funds and the fees)`);
  let lifetime = await walletLifetime(wallet, rpc);
  const open = await signWith([plan.run], openTransaction(plan, wallet.address, lifetime));
  const simulated = await rpc.simulate(wireBase64(open));
  if (simulated.err) {
    const line = [...(simulated.logs ?? [])].reverse().find((l) => /Program log: |failed/.test(l));
    throw new RunRefused(`the opening would fail (${JSON.stringify(simulated.err)}${line ? `: ${line.replace(/^Program log: /, "")}` : ""}); nothing was signed`);
  }
  store.save(plan.run.address, plan.sessionSeed, wallet.address);
  hooks.status("waiting for the wallet to approve the opening (request 1 of 2)");
  let opened: { signature: string; slot: number };
  try {
    opened = await walletLands(wallet, rpc, open, lifetime, "the opening", () => hooks.status(`opening run ${plan.run.address}`));
  } catch (e) {
    store.drop(plan.run.address);
    throw e;
  }
  hooks.opened(plan.run.address, opened.signature);
  hooks.landed("open", opened.signature);
  const expected: ExpectedRun = {
    address: plan.run.address, model: plan.model, opener: wallet.address, capacity: plan.capacity,
    temperature: plan.settings.temperature, topP: plan.settings.topP, seed: plan.settings.seed,
    prompt: plan.promptBytes, promptIds: plan.promptIds, generated: plan.generated,
  };
  let view: RunView;
  try {
    view = await steps(plan, plan.session, plan.funding - plan.sessionRent, expected, plan.count, opened.slot, wallet, hooks);
  } catch (e) {
    // Stopped: the run stays open (the record of what differed); the session's lamports go back.
    await returnSession(plan, plan.session, wallet.address, store, plan.run.address, hooks).catch(() => undefined);
    throw e;
  }
  lifetime = await walletLifetime(wallet, rpc);
  return closeWith(plan, { ...plan, run: plan.run.address }, wallet, store, hooks, view, lifetime, 2);
}

/** Crank with `session` (which may spend `budget`), the wallet topping it up once if it runs dry. */
async function steps(m: ModelOnChain, session: KeyPairSigner, budget: bigint, expected: ExpectedRun, count: StepCount, slot: number, wallet: ConnectedWallet, hooks: RunHooks): Promise<RunView> {
  const stepFee = stepFeeOf(m, session, expected.address);
  let spent = 0n, toppedUp = false;
  const start = await readRun(m.rpc, expected.address, m.programId, slot);
  if (!start) throw new RunRefused(`run ${expected.address} does not exist`);
  const c: Cranking = {
    rpc: m.rpc, programId: address(m.programId), run: address(expected.address), model: address(m.model),
    weights: m.weightAccounts.map((w) => address(w)), lengths: m.sectionLengths, runSize: runSizeOf(m, start),
    total: count.steps, sections: count.sections, session, checker: new RunChecker(expected), stepFee,
    progress: (view, fresh) => hooks.progress(view, fresh),
    landed: (signature) => {
      spent += stepFee;
      hooks.landed("step", signature);
    },
    spendable: () => budget - spent,
  };
  hooks.status(`cranking run ${expected.address}: ${count.steps - Number(start.header.steps)} steps to go`);
  let view = start;
  for (;;) {
    try {
      return await crank(c, view);
    } catch (e) {
      if (!(e instanceof SessionEmpty) || toppedUp) throw e;
      toppedUp = true;
      view = (await readRun(m.rpc, expected.address, m.programId))!;
      // The steps the count says are left, and 64 more (a count that proved short).
      const more = BigInt(Math.max(count.steps - Number(view.header.steps), 0) + 64) * stepFee;
      hooks.status("the session key cannot pay the steps left: asking the wallet to top it up");
      const lifetime = await walletLifetime(wallet, m.rpc);
      const tx = buildTransaction(wallet.version(false), wallet.address, lifetime, 1_000, [transferInstruction(wallet.address, session.address, more)]);
      hooks.landed("top-up", (await walletLands(wallet, m.rpc, tx, lifetime, "the top-up")).signature);
      budget += more;
    }
  }
}

/** A step's fee, computed from its message (any blockhash: the fee does not depend on it). */
function stepFeeOf(m: ModelOnChain, session: KeyPairSigner, run: string): bigint {
  const lifetime = { blockhash: "11111111111111111111111111111111", lastValidBlockHeight: 0n };
  return transactionFee(stepTransaction(m, session, run, lifetime).messageBytes);
}

function runSizeOf(m: ModelOnChain, view: RunView): number {
  return view.header.regions[view.header.regions.length - 1] || runAccountSize(m.artifact.config, view.header.capacity, view.header.promptLength);
}

/** Close the run with the wallet (its opener), the session key's lamports with it. */
async function closeWith(m: ModelOnChain, c: Closing, wallet: ConnectedWallet, store: SessionStore, hooks: RunHooks, view: RunView, lifetime: Lifetime, request: number): Promise<RunOutcome> {
  // Processed: the session's last steps have landed, perhaps not yet in a confirmed block.
  const { lamports } = await m.rpc.balance(c.session.address, "processed");
  const unsigned = closeTransaction(c, wallet.address, lifetime, lamports);
  const tx = lamports > 0n ? await signWith([c.session], unsigned) : unsigned;
  hooks.status(`waiting for the wallet to approve closing run ${c.run} (request ${request})`);
  let closed: { signature: string };
  try {
    closed = await walletLands(wallet, m.rpc, tx, lifetime, "the closing");
  } catch (e) {
    // Declined, or it did not land: the session key's lamports go back without the wallet.
    await returnSession(m, c.session, wallet.address, store, c.run, hooks).catch(() => undefined);
    throw e;
  }
  store.drop(c.run);
  hooks.landed("close", closed.signature);
  return { run: c.run, view, closed: closed.signature };
}

/**
 * The blockhash of a transaction the wallet signs: a wallet that sends it simulates it first
 * at a commitment of its own choosing (agave's default is finalized), which a confirmed
 * blockhash may be too new for; a finalized one is known at every commitment.
 */
function walletLifetime(wallet: ConnectedWallet, rpc: JsonRpc): Promise<Lifetime> {
  return rpc.blockhash(wallet.sends ? "finalized" : "confirmed");
}

/**
 * One wallet request for `tx`, landed: signed by the wallet and sent by the page, or, for a
 * wallet that only signs and sends, sent by the wallet and by the page alike (the same
 * bytes, the wallet's signature checked over the page's message), then confirmed from the
 * chain. `signed` is called once the wallet has signed.
 *
 * @throws WalletError the wallet declined or signed something else.
 * @throws TransactionFailed it was refused, or expired before it landed.
 */
async function walletLands(wallet: ConnectedWallet, rpc: JsonRpc, tx: Transaction, lifetime: Lifetime, what: string, signed?: () => void): Promise<{ signature: string; slot: number }> {
  const [out] = wallet.sends ? [await wallet.signAndSend(tx)] : await wallet.sign([tx]);
  signed?.();
  return land(rpc, out, lifetime, what);
}

/** The session key's lamports back to `owner` without the wallet (the session pays the fee). */
export async function returnSession(m: ModelOnChain, session: KeyPairSigner, owner: Address, store: SessionStore, run: string, hooks: RunHooks): Promise<void> {
  const signature = await sweepSession(m.rpc, session, owner);
  if (signature) hooks.landed("return", signature);
  store.drop(run);
}

/**
 * Finish a run someone left (a closed tab, or `curta-chain run --on-chain` stopped): crank
 * what it lacks, every state checked against the integer core, with its own session key if
 * this page kept it, else a new one the wallet funds; then, if the wallet opened it, close
 * it. Anyone may crank a run; only its opener closes it.
 */
export async function finishRun(m: ModelOnChain, runAddress: string, wallet: ConnectedWallet, store: SessionStore, hooks: RunHooks): Promise<RunOutcome> {
  const start = await readRun(m.rpc, runAddress, m.programId);
  if (!start) throw new RunRefused(`run ${runAddress} does not exist (closed already?)${await sweepKept(m, runAddress, store, hooks)}`);
  const h = start.header;
  if (h.model !== m.model) throw new RunRefused(`run ${runAddress} is a run of model ${h.model}, not of ${m.model}`);
  const expected = await expectedOf(m, runAddress, start);
  const count = countSteps(m.artifact, new Tokenizer(m.artifact), { capacity: h.capacity, prompt: expected.prompt, temperature: h.temperature, topP: h.topP }, [...expected.promptIds, ...expected.generated]);
  const kept = store.load(runAddress);
  let session = kept ? await createKeyPairSignerFromPrivateKeyBytes(kept.seed) : null;
  let view = start;
  const version = wallet.version(false);
  if (h.state !== RunState.Finished) {
    const stepFee = stepFeeOf(m, session ?? (await generateKeyPairSigner()), runAddress);
    const rentFloor = rentExemptMinimum(0);
    // A kept session key pays the steps with what it holds beyond its floor; the wallet funds
    // them only when there is none or it cannot pay a step (one request), and tops it up
    // should it run dry on the way (one request).
    const held = session ? (await m.rpc.balance(session.address, "processed")).lamports : 0n;
    let budget = held - rentFloor;
    if (!session || budget < stepFee) {
      const need = BigInt(Math.max(count.steps - Number(h.steps), 1) + FEE_MARGIN_STEPS) * stepFee;
      const seed = kept?.seed ?? crypto.getRandomValues(new Uint8Array(32));
      session ??= await createKeyPairSignerFromPrivateKeyBytes(seed);
      store.save(runAddress, seed, wallet.address);
      hooks.status(`waiting for the wallet to fund the steps of run ${runAddress}`);
      const lifetime = await walletLifetime(wallet, m.rpc);
      const tx = buildTransaction(version, wallet.address, lifetime, 1_000, [transferInstruction(wallet.address, session.address, rentFloor + need - held)]);
      hooks.landed("top-up", (await walletLands(wallet, m.rpc, tx, lifetime, "funding the steps")).signature);
      budget = need;
    }
    view = await steps(m, session, budget, expected, count, start.slot, wallet, hooks);
  } else hooks.progress(view, new RunChecker(expected).check(view).fresh); // finished already: its tokens, checked
  if (h.opener !== wallet.address) {
    if (session) await returnSession(m, session, wallet.address, store, runAddress, hooks);
    hooks.status(`run ${runAddress} is finished; only its opener ${h.opener} can close it`);
    return { run: runAddress, view, closed: null };
  }
  session ??= await createKeyPairSignerFromPrivateKeyBytes(crypto.getRandomValues(new Uint8Array(32)));
  return closeWith(m, { version, programId: m.programId, run: runAddress, session }, wallet, store, hooks, view, await walletLifetime(wallet, m.rpc), wallet.requests + 1);
}

/**
 * A run closed elsewhere (`curta-chain close-run`) whose session key this page kept: what the
 * key holds goes back to the run's opener (the key signs and pays; no wallet request), and
 * the key is forgotten. Returns a clause saying so, or "".
 */
async function sweepKept(m: ModelOnChain, runAddress: string, store: SessionStore, hooks: RunHooks): Promise<string> {
  const kept = store.load(runAddress);
  if (!kept) return "";
  const session = await createKeyPairSignerFromPrivateKeyBytes(kept.seed);
  const signature = await sweepSession(m.rpc, session, address(kept.owner));
  if (signature) hooks.landed("return", signature);
  store.drop(runAddress);
  return signature ? `; the session key this page kept for it sent what it held back to ${kept.owner}` : "";
}

/** What a run read from the chain must hold: its own settings, and the integer core's tokens. */
async function expectedOf(m: ModelOnChain, runAddress: string, view: RunView): Promise<ExpectedRun> {
  const h = view.header;
  if (h.promptKind !== 0) throw new RunRefused(`run ${runAddress} was opened with token ids: this page finishes runs opened with text`);
  const raw = await m.rpc.account(runAddress, { slice: { offset: h.regions[0], length: h.promptLength }, minContextSlot: view.slot });
  if (!raw || raw.data.length !== h.promptLength) throw new RunRefused(`run ${runAddress}: its prompt could not be read`);
  const model = new IntModel(m.artifact), tokenizer = new Tokenizer(m.artifact);
  const promptIds = tokenizer.encode(new TextDecoder("utf-8", { fatal: true }).decode(raw.data));
  const settings = { temperature: h.temperature, topP: h.topP, seed: h.seed };
  const generated = h.capacity > promptIds.length ? [...generate(model, { promptIds, steps: h.capacity - promptIds.length }, settings)] : [];
  return { address: runAddress, model: m.model, opener: h.opener, capacity: h.capacity, ...settings, prompt: raw.data, promptIds, generated };
}

/** Lamports as SOL, for messages. */
export function sol(lamports: bigint): string {
  const whole = lamports / 1_000_000_000n, part = (lamports % 1_000_000_000n).toString().padStart(9, "0").replace(/0+$/, "");
  return part ? `${whole}.${part}` : `${whole}`;
}

/** Close a finished run of this wallet's (no cranking): the rent back, any kept session too. */
export async function closeOpenRun(m: ModelOnChain, runAddress: string, wallet: ConnectedWallet, store: SessionStore, hooks: RunHooks): Promise<RunOutcome> {
  const view = await readRun(m.rpc, runAddress, m.programId);
  if (!view) throw new RunRefused(`run ${runAddress} does not exist (closed already?)`);
  if (view.header.opener !== wallet.address) throw new RunRefused(`run ${runAddress} was opened by ${view.header.opener}: only its opener can close it`);
  const kept = store.load(runAddress);
  const session = await createKeyPairSignerFromPrivateKeyBytes(kept?.seed ?? crypto.getRandomValues(new Uint8Array(32)));
  return closeWith(m, { version: wallet.version(false), programId: m.programId, run: runAddress, session }, wallet, store, hooks, view, await walletLifetime(wallet, m.rpc), wallet.requests + 1);
}

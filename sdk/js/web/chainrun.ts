// The page's on-chain run: connect a wallet (Wallet Standard), price a run, open it, crank it
// checking every state against the page's integer core, close it; and finish or close a run
// left open (the replay's run account). The SDK does the work (src/onchain.ts); this shows it.
import {
  closeOpenRun, ConnectedWallet, explorerLink, finishRun, JsonRpc, onWalletsChanged, planChainRun, PromptError,
  RunState, runOnChain, sol, solanaWallets, Tokenizer, WalletError, type Artifact, type ModelOnChain, type RunHooks,
  type RunPlan, type SamplingSettings, type SessionStore, type SlotInfo, type SolanaChainId, type VerifyReport,
} from "../src/index.js";

/** What the page knows when a run is asked for (app.ts provides it). */
export interface PageState {
  /** Settled once the page knows its cluster URL (the server's config read). */
  ready: Promise<void>;
  /** The model as verified from the chain (null: none, or a file not checked against one). */
  verified(): { report: VerifyReport; slots: SlotInfo[]; artifact: Artifact; url: string } | null;
  /** Where to send a cluster URL's JSON-RPC (the server's relay, or the URL itself). */
  rpcFor(url: string): string;
  settings(): SamplingSettings;
  /** The prompt's ids and the count of new tokens, as the page's generator plans them. */
  plan(artifact: Artifact): { promptIds: number[]; steps: number };
  url(): string;
}

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const button = (id: string) => $<HTMLButtonElement>(id);

let page: PageState;
let connected: ConnectedWallet | null = null;
let busy = false;

const NO_WALLET = "No Solana wallet found in this browser. Install one that registers through the Wallet Standard " +
  "(Phantom, Solflare or Backpack, from their own sites), then reload this page.";

const KEPT = "curta-chain:session:";

/** This browser's storage, or null where the page may not use it (it then keeps nothing). */
function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

/** Sessions kept in this browser until their runs are closed (the seed of a throwaway key). */
const store: SessionStore = {
  save(run, seed, owner) {
    storage()?.setItem(KEPT + run, JSON.stringify({ seed: btoa(String.fromCharCode(...seed)), owner, at: Date.now() }));
  },
  load(run) {
    const text = storage()?.getItem(KEPT + run);
    if (!text) return null;
    try {
      const kept = JSON.parse(text) as { seed: string; owner: string };
      const seed = Uint8Array.from(atob(kept.seed), (c) => c.charCodeAt(0));
      return seed.length === 32 ? { seed, owner: kept.owner } : null;
    } catch {
      return null; // not one of ours: as if none were kept
    }
  },
  drop(run) {
    storage()?.removeItem(KEPT + run);
  },
};

/** The runs whose session keys this browser keeps, the most recently opened first. */
function keptRuns(): string[] {
  const kept = storage();
  if (!kept) return [];
  const when = (key: string): number => {
    try {
      return Number((JSON.parse(kept.getItem(key) ?? "{}") as { at?: number }).at) || 0;
    } catch {
      return 0;
    }
  };
  const keys = Object.keys(kept).filter((k) => k.startsWith(KEPT));
  return keys.sort((a, b) => when(b) - when(a)).map((k) => k.slice(KEPT.length));
}

function status(text: string, kind: "info" | "bad" | "ok" = "info"): void {
  const line = $("chain-status");
  line.textContent = text;
  line.className = kind;
}

function showWallets(): void {
  const wallets = solanaWallets(), choice = $<HTMLSelectElement>("wallet-choice");
  choice.textContent = "";
  for (const w of wallets) choice.add(new Option(w.name, w.name));
  choice.hidden = wallets.length < 2;
  if (!connected) $("wallet-status").textContent = wallets.length ? "" : NO_WALLET;
}

async function connectWallet(): Promise<ConnectedWallet | null> {
  const wallets = solanaWallets();
  if (!wallets.length) {
    $("wallet-status").textContent = NO_WALLET;
    return null;
  }
  await page.ready;
  const name = $<HTMLSelectElement>("wallet-choice").value;
  const wallet = wallets.find((w) => w.name === name) ?? wallets[0];
  const url = page.url();
  try {
    const chain: SolanaChainId = url ? await new JsonRpc(page.rpcFor(url)).chain() : "solana:mainnet";
    connected = await ConnectedWallet.connect(wallet, chain);
  } catch (e) {
    $("wallet-status").textContent = e instanceof Error ? e.message : String(e);
    return null;
  }
  const address = $("wallet-address");
  address.textContent = connected.address;
  address.dataset.chain = connected.chain;
  $("wallet-status").textContent = `${wallet.name} on ${connected.chain}`;
  $("wallet-connect").textContent = "Connected";
  showRequests();
  return connected;
}

function showRequests(): void {
  const n = connected?.requests ?? 0;
  $("chain-requests").dataset.count = String(n);
  $("chain-requests").textContent = connected ? `wallet requests so far: ${n}` : "";
}

function lamports(value: bigint): string {
  return `${sol(value)} SOL`;
}

function showCost(p: RunPlan): void {
  const cost = $("chain-cost");
  cost.textContent =
    `This run takes ${p.count.steps.toLocaleString("en-US")} step transactions for ${p.generated.length} tokens. ` +
    `Fees: ${lamports(p.fees.total)} (opening ${lamports(p.fees.open)}, ${p.count.steps} steps at ${lamports(p.fees.step)}, ` +
    `closing ${lamports(p.fees.close)}). Locked until the close at the end, then returned: the run account's rent, ` +
    `${lamports(p.rent)} (${p.runSize.toLocaleString("en-US")} bytes), and ${lamports(p.funding)} for a session key ` +
    `that pays the steps. The wallet is asked twice: to open the run and to close it.` +
    (p.nodeFees === null ? "" : ` The node says these transactions cost ${lamports(p.nodeFees)} in fees (getFeeForMessage); ` +
      `computed from their messages, as validators charge them: ${lamports(p.fees.total)}, which is what this counts.`);
  Object.assign(cost.dataset, {
    steps: String(p.count.steps), fees: String(p.fees.total), rent: String(p.rent), session: String(p.funding),
  });
}

/** Hooks that show the run as it lands in #chain-run, #chain-tokens and #chain-signatures. */
function hooksFor(chain: SolanaChainId, artifact: Artifact, promptIds: number[], shown: number[]): RunHooks {
  const tokenizer = new Tokenizer(artifact), out = $("chain-tokens"), list = $("chain-signature-list");
  const decoder = new TextDecoder();
  let previous = promptIds[promptIds.length - 1] ?? 1;
  out.textContent = decoder.decode(tokenizer.decode(promptIds.slice(1)), { stream: true });
  return {
    status: (text) => status(text),
    opened: (run) => {
      $("chain-run").textContent = run;
      $("chain-run").dataset.closed = "false";
    },
    progress: (view, fresh) => {
      for (const id of fresh) {
        out.textContent += decoder.decode(tokenizer.piece(previous, id), { stream: true });
        previous = id;
        shown.push(id);
      }
      out.dataset.tokenIds = JSON.stringify(shown);
      out.dataset.steps = String(view.header.steps);
      status(`run ${view.header.steps} steps in, ${shown.length} tokens checked${view.header.state === RunState.Finished ? ": finished" : ""}`);
    },
    landed: (kind, signature) => {
      const li = document.createElement("li");
      const link = explorerLink(chain, signature);
      const sig = document.createElement(link ? "a" : "code");
      sig.textContent = signature;
      if (link) (sig as HTMLAnchorElement).href = link;
      li.append(`${kind} `, sig);
      li.dataset.kind = kind;
      list.append(li);
      $("chain-signature-count").textContent = `${list.children.length} transactions`;
      showRequests();
    },
  };
}

/** The model as verified from the chain, for a run: refused in one line unless sealed and whole. */
function modelOnChain(): ModelOnChain {
  const v = page.verified();
  if (!v) throw new PromptError("no model verified from the chain: name a model address (a dropped file alone cannot run on chain)");
  if (v.report.state !== "sealed") throw new PromptError(`model ${v.report.model} is ${v.report.state}, not sealed: a run on chain needs a sealed model; nothing was signed`);
  if (!v.report.ok) throw new PromptError(`model ${v.report.model} is not verified: ${v.report.differences[0]?.detail ?? "see above"}; nothing was signed`);
  return {
    rpc: new JsonRpc(page.rpcFor(v.url)), chain: connected?.chain ?? "solana:localnet", programId: v.report.program.program_id,
    model: v.report.model, weightAccounts: v.slots.map((s) => s.account), sectionLengths: v.slots.map((s) => s.length),
    artifact: v.artifact,
  };
}

function begin(): void {
  busy = true;
  for (const id of ["run-on-chain", "run-finish", "chain-close"]) button(id).disabled = true;
  const out = $("chain-tokens");
  out.textContent = "";
  out.dataset.tokenIds = "[]";
  out.dataset.done = "false";
  delete out.dataset.outcome;
  $("chain-cost").textContent = "";
  $("chain-signature-list").textContent = "";
  $("chain-signature-count").textContent = "";
}

function end(outcome: string, run: string | null, closed: boolean): void {
  const out = $("chain-tokens");
  out.textContent += new TextDecoder().decode();
  out.dataset.outcome = outcome;
  out.dataset.done = "true";
  if (run) $("chain-run").dataset.closed = String(closed);
  button("chain-close").hidden = !run || closed;
  button("chain-close").disabled = false;
  button("run-on-chain").disabled = false;
  button("run-finish").disabled = false;
  busy = false;
  showRequests();
}

function failed(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.split("\n")[0];
}

async function runClicked(): Promise<void> {
  if (busy) return;
  begin();
  $("chain-run").textContent = "";
  let run: string | null = null;
  try {
    const m = modelOnChain();
    const wallet = connected ?? (await connectWallet());
    if (!wallet) throw new WalletError("connect a wallet first");
    m.chain = wallet.chain;
    const { promptIds, steps } = page.plan(m.artifact);
    status("computing the run's tokens and counting its steps");
    const plan = await planChainRun({ ...m, prompt: (document.getElementById("prompt") as HTMLInputElement).value, promptIds, newTokens: steps, settings: onChainSettings(page.settings()) }, wallet);
    showCost(plan);
    const shown: number[] = [];
    const hooks = hooksFor(wallet.chain, m.artifact, promptIds, shown);
    run = plan.run.address;
    const outcome = await runOnChain(plan, wallet, store, {
      ...hooks,
      opened: (address, signature) => {
        run = address;
        hooks.opened(address, signature);
      },
    });
    status(`run ${outcome.run} finished and closed: its ${shown.length} tokens are the ones this page computes; its rent is back with the wallet`, "ok");
    end("closed", outcome.run, true);
  } catch (e) {
    const opened = $("chain-run").textContent !== "";
    status(failed(e) + (opened ? ` (run ${run} is left open: replay it to finish or close it, or \`curta-chain close-run ${run}\`)` : ""), "bad");
    end(opened ? "stopped" : "refused", opened ? run : null, false);
  }
}

/** Greedy runs open with top-p and seed 0, as `curta-chain run --on-chain` opens them. */
function onChainSettings(s: SamplingSettings): SamplingSettings {
  return s.temperature === 0 ? { temperature: 0, topP: 0, seed: 0n } : s;
}

async function finishClicked(closeOnly: boolean): Promise<void> {
  if (busy) return;
  const address = closeOnly ? $("chain-run").textContent ?? "" : ($("run-address") as HTMLInputElement).value.trim();
  if (!address) return;
  begin();
  $("chain-run").textContent = address;
  try {
    const m = modelOnChain();
    const wallet = connected ?? (await connectWallet());
    if (!wallet) throw new WalletError("connect a wallet first");
    m.chain = wallet.chain;
    const shown: number[] = [];
    const hooks = hooksFor(wallet.chain, m.artifact, [], shown);
    const outcome = await (closeOnly ? closeOpenRun : finishRun)(m, address, wallet, store, hooks);
    status(outcome.closed ? `run ${address} is closed: its rent is back with the wallet` : `run ${address} is finished`, "ok");
    end(outcome.closed ? "closed" : "finished", address, outcome.closed !== null);
  } catch (e) {
    status(failed(e), "bad");
    end("stopped", address, false);
  }
}

/** Wire the on-chain run into the page. */
export function installChainRun(state: PageState): void {
  page = state;
  showWallets();
  onWalletsChanged(showWallets);
  $("wallet-connect").addEventListener("click", () => void connectWallet());
  $("run-on-chain").addEventListener("click", () => void runClicked());
  $("run-finish").addEventListener("click", () => void finishClicked(false));
  $("chain-close").addEventListener("click", () => void finishClicked(true));
  const kept = keptRuns();
  if (kept.length) {
    status(`this browser has a run it has not closed: ${kept.join(", ")} (replay it below to finish or close it)`);
    const field = $<HTMLInputElement>("run-address");
    if (!field.value) field.value = kept[0];
  }
}

/** Enable the buttons that need a model once one is loaded. */
export function modelLoaded(ready: boolean): void {
  if (busy) return;
  button("run-on-chain").disabled = !ready;
  button("run-finish").disabled = !ready;
}

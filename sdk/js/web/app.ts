// The page: verify a model from the chain (or a dropped .curta file), show the verdict,
// the program, the hashes, the configuration and a section map, run the model, and replay
// an on-chain run token by token. Served by `curta-chain web` (curta_chain/web).
import {
  AccountError, ArtifactError, ProgramCheckError, PromptError,
  decodeArtifact, describeDifference, fetchRun, generate, IntModel, planRun, q16, Tokenizer, toHex,
  verifyModel, weightsCommitment, ONE, type Artifact, type SlotInfo, type VerifyReport,
} from "../src/index.js";
import { installChainRun, modelLoaded } from "./chainrun.js";

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const input = (id: string) => $<HTMLInputElement>(id);

interface ServerConfig {
  url: string | null;
  model: string | null;
  relay: string | null;
  /** The name of a file the server offers at `artifact`, opened as if dropped. */
  artifact: string | null;
  /** That file is the page's own demo (no user named it): opened only when no model is. */
  demo?: boolean;
}

let server: ServerConfig = { url: null, model: null, relay: null, artifact: null, demo: false };
let loaded: { artifact: Artifact; model: string | null } | null = null;
/** The model as verified from the chain, for a run on chain (chainrun.ts). */
let verified: { report: VerifyReport; slots: SlotInfo[]; artifact: Artifact; url: string } | null = null;
let busy = false;

/** Where to send `url`'s JSON-RPC: this page's relay when it is the server's cluster. */
function rpcFor(url: string): string {
  if (server.relay && url === server.url) return new URL(server.relay, location.href).href;
  return url;
}

/** Why no node answers `url` (what the relay or the browser says), or null when one does. */
async function unreachable(url: string): Promise<string | null> {
  try {
    const answer = await fetch(rpcFor(url), { method: "POST", headers: { "content-type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"getVersion"}' });
    return answer.ok ? null : (await answer.text()).split("\n")[0] || `HTTP ${answer.status}`;
  } catch {
    return "no answer (the node is down, or it does not let this page's origin call it)";
  }
}

/** One line saying why reading `url` failed: the SDK's own message, or what the node said. */
async function reason(e: unknown, url: string): Promise<string> {
  if (e instanceof AccountError || e instanceof ProgramCheckError || e instanceof ArtifactError || e instanceof PromptError) return e.message;
  const why = await unreachable(url);
  if (why) return `cannot reach ${url}: ${why}`;
  const text = e instanceof Error ? e.message : String(e);
  return `reading ${url} failed: ${text.split("\n")[0]}`;
}

/** Say on the page when no node answers `url`: a file (the demo, a dropped one) still runs. */
async function showNode(url: string): Promise<void> {
  const why = await unreachable(url);
  const note = $("node");
  note.textContent = why ? `no node answers at ${url} (${why}); a file, the demo or one dropped here, still opens and runs` : "";
  note.hidden = !why;
  note.dataset.checked = "true";
}

/** The verdict line: ok (green), bad (red), or "info" (neither: nothing was checked yet). */
function setVerdict(text: string, ok: boolean | "info"): void {
  const v = $("verdict");
  v.textContent = text;
  v.className = `verdict ${ok === "info" ? "info" : ok ? "ok" : "bad"}`;
}

function clearResult(): void {
  for (const id of ["program", "program-hash", "authority", "declared-hash", "computed-hash", "progress-text", "differences", "config", "sections"])
    $(id).textContent = "";
  $<HTMLProgressElement>("progress").hidden = true;
}

function showProgress(phase: string, done: number, total: number): void {
  const bar = $<HTMLProgressElement>("progress");
  bar.hidden = false;
  bar.max = Math.max(total, 1);
  bar.value = done;
  $("progress-text").textContent = `${phase} ${done.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} bytes`;
}

function showConfig(a: Artifact): void {
  const c = a.config;
  const rows: [string, string][] = [
    ["dimension", `${c.dim}`], ["hidden dimension", `${c.hiddenDim}`], ["layers", `${c.layers}`],
    ["heads / kv heads", `${c.heads} / ${c.kvHeads}`], ["vocabulary", `${c.vocabSize}`], ["context", `${c.contextLength}`],
    ["classifier", a.tied ? "shared with the embedding" : "its own"], ["size", `${a.data.length.toLocaleString("en-US")} bytes in ${a.sections.length} sections`],
  ];
  const table = $<HTMLTableElement>("config");
  table.textContent = "";
  for (const [k, v] of rows) {
    const tr = table.insertRow();
    const th = document.createElement("th");
    th.textContent = k;
    tr.append(th);
    tr.insertCell().textContent = v;
  }
}

/** One bar per section, its width to scale, marked uploading / frozen / sealed (or file). */
function showSections(lengths: number[], states: string[]): void {
  const map = $("sections");
  map.textContent = "";
  lengths.forEach((length, i) => {
    const bar = document.createElement("div");
    bar.className = `bar ${states[i]}`;
    bar.style.flexGrow = String(length);
    bar.title = `section ${i}: ${length.toLocaleString("en-US")} bytes, ${states[i]}`;
    bar.textContent = `${i}: ${states[i]}`;
    bar.dataset.length = String(length);
    bar.dataset.state = states[i];
    map.append(bar);
  });
}

function showReport(report: VerifyReport, against: string | null): void {
  // Worded as `curta-chain verify --chain-only` words a verdict that compared no artifact.
  const alone = report.artifact_compared ? "" : " (no artifact was compared)";
  if (report.ok)
    setVerdict(
      `verified ${report.model}: sealed, ${report.artifact_compared ? `every byte matches ${against}` : `the chain's bytes hash to its declared hash${alone}`}`,
      true,
    );
  else {
    const causes = report.differences.filter((d) => d.kind !== "bytes");
    const first = causes[0] ?? report.differences[0];
    const more = report.differences.length - 1 + (report.differing_ranges - report.differing_ranges_listed);
    setVerdict(`NOT verified ${report.model}: ${describeDifference(first)}${more > 0 ? ` (and ${more} more)` : ""}${alone}`, false);
  }
  const p = report.program;
  $("program").textContent = p.program_id;
  $("program-hash").textContent = `${p.sha256} (${p.elf_length.toLocaleString("en-US")} bytes, ${p.shipped_build ? `shipped build ${p.shipped_build}` : "NOT a shipped build"})`;
  $("authority").textContent = p.upgrade_authority ?? "none: nobody can change the program";
  $("declared-hash").textContent = report.declared_hash;
  $("computed-hash").textContent = report.chain_hash ?? "";
  const list = $("differences");
  list.textContent = "";
  for (const d of report.differences) {
    const li = document.createElement("li");
    li.textContent = describeDifference(d);
    list.append(li);
  }
}

async function verifyFromChain(url: string, model: string, file?: { name: string; artifact: Artifact }): Promise<void> {
  clearResult();
  setVerdict(`reading model ${model} from ${url}`, true);
  let sealed = false;
  let chainArtifact: Artifact | null = null;
  let slots: SlotInfo[] = [];
  verified = null;
  const started = performance.now();
  try {
    const report = await verifyModel(rpcFor(url), model, {
      artifact: file?.artifact,
      onModel: (m) => (sealed = m.state === "sealed"),
      onSlots: (s: SlotInfo[]) => {
        slots = s;
        showSections(s.map((x) => x.length), s.map((x) => (sealed ? "sealed" : x.frozen ? "frozen" : "uploading")));
      },
      onProgress: (p) => showProgress(p.phase, p.done, p.total),
      onArtifact: (decoded) => (chainArtifact = decoded), // null: the report says why
    });
    // How long reading and hashing took, for scripts/bench_browser.py.
    $("verdict").dataset.seconds = ((performance.now() - started) / 1000).toFixed(6);
    showReport(report, file?.name ?? null);
    if (chainArtifact) showConfig(chainArtifact);
    if (chainArtifact) verified = { report, slots, artifact: chainArtifact, url };
    setLoaded(chainArtifact ?? file?.artifact ?? null, model);
  } catch (e) {
    setVerdict(`NOT verified ${model}: ${await reason(e, url)}`, false);
    setLoaded(file?.artifact ?? null, null);
  }
}

function setLoaded(artifact: Artifact | null, model: string | null): void {
  loaded = artifact ? { artifact, model } : null;
  $<HTMLButtonElement>("generate").disabled = !artifact;
  $<HTMLButtonElement>("run-load").disabled = !artifact;
  modelLoaded(!!artifact);
}

async function dropped(file: File): Promise<void> {
  await opened(file.name, new Uint8Array(await file.arrayBuffer()));
}

/** A local artifact (dropped, or the server's): decoded, then checked against the model if any. */
async function opened(name: string, bytes: Uint8Array): Promise<void> {
  const file = { name };
  let artifact: Artifact;
  try {
    artifact = decodeArtifact(bytes, file.name);
  } catch (e) {
    clearResult();
    setVerdict(`NOT verified: ${e instanceof Error ? e.message : String(e)}`, false);
    setLoaded(null, null);
    return;
  }
  const url = input("url").value.trim(), model = input("model").value.trim();
  if (url && model) return verifyFromChain(url, model, { name: file.name, artifact });
  clearResult();
  showConfig(artifact);
  showSections(artifact.sections.map((s) => s.length), artifact.sections.map(() => "file"));
  const hash = toHex(await weightsCommitment(artifact.sections, (done) => showProgress("hashing", done, artifact.data.length)));
  $("computed-hash").textContent = hash;
  // Nothing was checked against the chain: not a verdict either way.
  setVerdict(`${file.name} is a valid artifact (hash ${hash}); name a model address to check it against the chain`, "info");
  setLoaded(artifact, null);
}

/** Let the page paint between tokens without the 4 ms clamp of nested timers. */
function yieldToPage(): Promise<void> {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(0);
  });
}

function settings() {
  const temperature = q16(input("temperature").value.trim(), "temperature", 100 * ONE);
  const topP = q16(input("top-p").value.trim(), "top-p", ONE);
  const seedText = input("seed").value.trim();
  if (!/^\d+$/.test(seedText) || BigInt(seedText) >= 1n << 64n) throw new PromptError(`seed ${seedText}: expected a whole number 0 to 2^64 - 1`);
  return { temperature, topP, seed: BigInt(seedText) };
}

async function runModel(): Promise<void> {
  if (!loaded || busy) return;
  busy = true;
  const out = $("generated"), rate = $("rate");
  out.textContent = "";
  out.dataset.tokenIds = "[]";
  out.dataset.done = "false";
  rate.textContent = "";
  try {
    const model = new IntModel(loaded.artifact), tokenizer = new Tokenizer(loaded.artifact);
    const steps = Number(input("steps").value.trim());
    const plan = planRun(model, tokenizer, input("prompt").value, steps);
    const s = settings();
    const decoder = new TextDecoder();
    out.textContent = decoder.decode(tokenizer.decode(plan.promptIds.slice(1)), { stream: true });
    const ids: number[] = [];
    let previous = plan.promptIds[plan.promptIds.length - 1];
    const start = performance.now();
    let first = start, computing = 0;
    const iterator = generate(model, plan, s);
    for (;;) {
      const began = performance.now();
      const next = iterator.next();
      computing += performance.now() - began;
      if (next.done) break;
      if (!ids.length) first = performance.now();
      ids.push(next.value);
      out.textContent += decoder.decode(tokenizer.piece(previous, next.value), { stream: true });
      previous = next.value;
      out.dataset.tokenIds = JSON.stringify(ids);
      const perSecond = ids.length > 1 ? (ids.length - 1) / ((performance.now() - first) / 1000) : null;
      rate.textContent = `${ids.length} tokens${perSecond ? `, ${perSecond.toFixed(1)} tokens/s` : ""}`;
      if (perSecond) rate.dataset.tokensPerSecond = perSecond.toFixed(3);
      await yieldToPage();
    }
    out.textContent += decoder.decode();
    rate.dataset.computeSeconds = (computing / 1000).toFixed(6);
  } catch (e) {
    rate.textContent = e instanceof Error ? e.message : String(e);
  } finally {
    out.dataset.done = "true";
    busy = false;
  }
}

async function replay(): Promise<void> {
  const check = $("run-check"), marks = $("run-tokens");
  check.textContent = "";
  marks.textContent = "";
  const address = input("run-address").value.trim();
  const url = input("url").value.trim();
  if (!loaded) return;
  try {
    // Processed: a run others are cranking shows every token that has landed so far.
    const got = await fetchRun(rpcFor(url), address, { commitment: "processed" });
    const run = got.run;
    if (loaded.model && run.model !== loaded.model) {
      check.textContent = `differs: run ${address} is a run of model ${run.model}, not of ${loaded.model}`;
      return;
    }
    const model = new IntModel(loaded.artifact), tokenizer = new Tokenizer(loaded.artifact);
    const promptIds = got.promptText
      ? tokenizer.encode(new TextDecoder("utf-8", { fatal: true }).decode(got.promptText))
      : got.tokens.slice(0, run.promptTokens);
    const chainPrompt = got.tokens.slice(0, run.promptTokens);
    const chainGenerated = got.tokens.slice(run.promptTokens);
    const ours: number[] = [];
    const promptSame = JSON.stringify(promptIds) === JSON.stringify(chainPrompt);
    if (promptSame) {
      const plan = { promptIds, steps: run.capacity - run.promptTokens };
      for (const id of generate(model, plan, { temperature: run.temperature, topP: run.topP, seed: run.seed })) {
        ours.push(id);
        if (ours.length >= chainGenerated.length) break;
      }
    }
    chainPrompt.forEach((id, i) => mark(id, promptIds[i] === id ? "prompt" : "differs", `prompt token ${i + 1}`));
    let first = -1;
    chainGenerated.forEach((id, i) => {
      const same = ours[i] === id;
      if (!same && first < 0) first = i;
      mark(id, same ? "match" : "differs", same ? `generated token ${i + 1}: ${id}` : `generated token ${i + 1}: the chain has ${id}, this page computes ${ours[i]}`);
    });
    if (!promptSame) {
      const i = chainPrompt.findIndex((id, j) => promptIds[j] !== id);
      check.textContent = `differs at prompt token ${i + 1}: the chain has ${chainPrompt[i]}, this page encodes ${promptIds[i]}`;
    } else if (first >= 0)
      check.textContent = `differs at generated token ${first + 1} of ${chainGenerated.length}: the chain has ${chainGenerated[first]}, this page computes ${ours[first]}`;
    else check.textContent = `matches: the chain's ${chainGenerated.length} generated tokens are the ones this page computes${run.state === 2 ? "" : " (the run is not finished)"}`;
    check.dataset.differsAt = String(first >= 0 ? first + 1 : 0);
  } catch (e) {
    check.textContent = `differs: ${await reason(e, url)}`;
  }

  function mark(id: number, kind: string, title: string): void {
    const span = document.createElement("span");
    span.className = kind;
    span.title = title;
    span.textContent = String(id);
    marks.append(span);
  }
}

async function start(): Promise<void> {
  let configured = (): void => undefined;
  installChainRun({
    ready: new Promise<void>((resolve) => (configured = resolve)),
    verified: () => verified,
    rpcFor,
    settings,
    plan: (artifact) => planRun(new IntModel(artifact), new Tokenizer(artifact), input("prompt").value, Number(input("steps").value.trim())),
    url: () => input("url").value.trim(),
  });
  try {
    const answer = await fetch("config.json");
    if (answer.ok) server = await answer.json();
  } catch {
    // Opened from somewhere else than `curta-chain web`: no relay, no defaults.
  }
  const query = new URLSearchParams(location.search);
  input("url").value = query.get("url") ?? server.url ?? "";
  input("model").value = query.get("model") ?? server.model ?? "";
  configured();
  $("load-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const url = input("url").value.trim(), model = input("model").value.trim();
    if (url && model) void verifyFromChain(url, model);
  });
  const drop = $("drop");
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const file = event.dataTransfer?.files[0];
    if (file) void dropped(file);
  });
  input("file").addEventListener("change", () => {
    const file = input("file").files?.[0];
    if (file) void dropped(file);
  });
  $("generate").addEventListener("click", () => void runModel());
  $("run-load").addEventListener("click", () => void replay());
  document.body.dataset.ready = "true";
  const url = input("url").value.trim(), model = input("model").value.trim();
  if (url) void showNode(url);
  // The server's file is checked against a named model, except the page's own demo: a
  // model named with no file of the user's is verified from the chain alone, as
  // verifyModel does without an artifact.
  if (server.artifact && !(server.demo && url && model)) {
    const answer = await fetch("artifact");
    await opened(server.artifact, new Uint8Array(await answer.arrayBuffer()));
  } else if (url && model) await verifyFromChain(url, model);
}

void start();

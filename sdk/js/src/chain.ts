/**
 * Read a model from a cluster and verify it, as `curta-chain verify --output json` does
 * (curta_chain/chain/verify.py): the program check with its ELF hash and upgrade authority,
 * each weight account's binding, the section count and lengths, the hash recomputed from
 * the chain's own bytes, the configuration decoded from them, and the sealed state.
 *
 * Weight accounts are read in 1 MiB `dataSlice` pieces, so a 10 MiB section never needs one
 * 14 MB JSON answer. What this trusts is the one RPC node it reads.
 */

import { getBase64Encoder, type Address, type Rpc, type SolanaRpcApi } from "@solana/kit";
import { address as toAddress, createSolanaRpc, getAddressDecoder, getAddressEncoder, getProgramDerivedAddress } from "@solana/kit";
import { ArtifactError, decodeArtifact, type Artifact } from "./decode.js";
import { toHex } from "./format.js";
import { CONFIG_FIELDS, MAX_SECTION_SIZE, WEIGHT_HEADER_SIZE } from "./layout.js";
import { hashSection, sha256 } from "./hash.js";
import {
  getModelDecoder, getRunDecoder, getWeightAccountDecoder, ModelState, PromptKind, WEIGHT_ACCOUNT_DISCRIMINATOR,
  type Model, type Run, type WeightAccount,
} from "./generated/index.js";
import { SHIPPED_BUILDS } from "./generated/shipped.js";

export const MODEL_ACCOUNT_SIZE = 856;
export const ACCOUNT_SLICE = 1 << 20;
const LOADER_V2 = "BPFLoader2111111111111111111111111111111111";
const LOADER_V3 = "BPFLoaderUpgradeab1e11111111111111111111111";
const NOBODY = "11111111111111111111111111111111";
const SYSTEM_PROGRAM = "11111111111111111111111111111111";
const ZERO_KEY = "11111111111111111111111111111111";
const PROGRAMDATA_METADATA_SIZE = 45;
/** Slice reads in flight at once while the weight accounts are read. */
const PARALLEL_READS = 8;
/** Differing byte ranges listed (all are counted), as the CLI lists by default. */
export const LISTED_RANGES = 10;

/** There is no curta model (or weight account) where one was asked for. */
export class AccountError extends Error {
  override name = "AccountError";
}

/** The program a model lives under is not an executable program of a BPF loader. */
export class ProgramCheckError extends Error {
  override name = "ProgramCheckError";
}

export type CurtaRpc = Rpc<SolanaRpcApi>;
export type Commitment = "processed" | "confirmed" | "finalized";

interface RawAccount {
  owner: string;
  executable: boolean;
  lamports: bigint;
  data: Uint8Array;
}

const base64 = getBase64Encoder();
type FromBase64 = { fromBase64?: (text: string) => Uint8Array };

/** An account's base64 data as bytes: the platform's decoder where there is one (fast). */
function fromBase64(text: string): Uint8Array {
  const native = (Uint8Array as unknown as FromBase64).fromBase64;
  if (native) return native(text); // Chromium 140+, Firefox 133+, Safari 18.2+
  if (typeof Buffer !== "undefined") return new Uint8Array(Buffer.from(text, "base64"));
  return new Uint8Array(base64.encode(text));
}
const MODEL_DISCRIMINATOR = "98ddf77ab97ddf97";

/**
 * A cluster to read: a kit RPC, or its URL. Given the URL, weight accounts' slices are read
 * with fetch and JSON.parse: kit's own JSON parser (every number a BigInt) takes about
 * 330 ms per 1 MiB slice where JSON.parse takes 50 (measured with Node 20, localnet).
 */
export type Cluster = CurtaRpc | string;

interface RawAnswer {
  result?: { context: { slot: number }; value: { owner: string; executable: boolean; lamports: number; data: [string, string] } | null };
  error?: { code: number; message: string };
}

class Reader {
  slot = 0;
  readonly rpc: CurtaRpc;
  private readonly url: string | null;
  constructor(cluster: Cluster, readonly commitment: Commitment) {
    this.url = typeof cluster === "string" ? cluster : null;
    this.rpc = typeof cluster === "string" ? createSolanaRpc(cluster) : cluster;
  }

  /** One slice of an account through fetch and JSON.parse (see Cluster). */
  private async rawSlice(url: string, address: string, slice: { offset: number; length: number }): Promise<RawAccount | null> {
    const body = { jsonrpc: "2.0", id: 1, method: "getAccountInfo", params: [address, { encoding: "base64", commitment: this.commitment, dataSlice: slice }] };
    const answer = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    if (!answer.ok) throw new Error(`HTTP error (${answer.status}): ${(await answer.text()).split("\n")[0]}`);
    const parsed = (await answer.json()) as RawAnswer;
    if (parsed.error || !parsed.result) throw new Error(`getAccountInfo ${address}: ${parsed.error?.message ?? "no result"}`);
    const { value, context } = parsed.result;
    this.slot = Math.max(this.slot, context.slot);
    if (!value) return null;
    return { owner: value.owner, executable: value.executable, lamports: BigInt(value.lamports), data: fromBase64(value.data[0]) };
  }

  async account(address: string, slice?: { offset: number; length: number }): Promise<RawAccount | null> {
    if (slice && this.url) return this.rawSlice(this.url, address, slice);
    const { value, context } = await this.rpc
      .getAccountInfo(toAddress(address), { encoding: "base64", commitment: this.commitment, ...(slice && { dataSlice: slice }) })
      .send();
    this.slot = Math.max(this.slot, Number(context.slot));
    if (!value) return null;
    return { owner: value.owner, executable: value.executable, lamports: BigInt(value.lamports), data: fromBase64(value.data[0]) };
  }

  async accounts(addresses: string[], head: number): Promise<(RawAccount | null)[]> {
    const out: (RawAccount | null)[] = [];
    for (let i = 0; i < addresses.length; i += 100) {
      const { value, context } = await this.rpc
        .getMultipleAccounts(addresses.slice(i, i + 100).map(toAddress), { encoding: "base64", commitment: this.commitment, dataSlice: { offset: 0, length: head } })
        .send();
      this.slot = Math.max(this.slot, Number(context.slot));
      for (const v of value)
        out.push(v ? { owner: v.owner, executable: v.executable, lamports: BigInt(v.lamports), data: fromBase64(v.data[0]) } : null);
    }
    return out;
  }

  /** `length` bytes of an account from `offset`, in 1 MiB slices, a few in flight. */
  async data(address: string, offset: number, length: number, onBytes?: (n: number) => void): Promise<Uint8Array> {
    const [out] = await this.many([{ address, offset, length }], onBytes);
    return out;
  }

  /** Several accounts' bytes, every 1 MiB slice of all of them through one pool of reads. */
  async many(spans: { address: string; offset: number; length: number }[], onBytes?: (n: number) => void): Promise<Uint8Array[]> {
    const outs = spans.map((s) => new Uint8Array(s.length));
    const jobs: [number, number][] = [];
    spans.forEach((s, i) => {
      for (let at = 0; at < s.length; at += ACCOUNT_SLICE) jobs.push([i, at]);
    });
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const [i, at] = jobs[next++];
        const { address, offset, length } = spans[i];
        const want = Math.min(ACCOUNT_SLICE, length - at);
        const got = await this.account(address, { offset: offset + at, length: want });
        if (!got) throw new AccountError(`weight account ${address} does not exist`);
        if (got.data.length !== want)
          throw new AccountError(`weight account ${address}: ${got.data.length} bytes at offset ${offset + at}, expected ${want}`);
        outs[i].set(got.data, at);
        onBytes?.(want);
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_READS, jobs.length) }, worker));
    return outs;
  }
}

/** A model as read: the account decoded, its program, and where it was read. */
export interface FetchedModel {
  address: string;
  programId: string;
  model: Model;
  /** The state by name: uploading, sealing, sealed, failed, closing. */
  state: string;
  slot: number;
}

function stateName(state: ModelState): string {
  return ModelState[state].toLowerCase();
}

function decodeModelAccount(address: string, data: Uint8Array): Model {
  if (data.length !== MODEL_ACCOUNT_SIZE)
    throw new AccountError(`${address} is not a curta model: model account: ${data.length} bytes, expected ${MODEL_ACCOUNT_SIZE}`);
  const discriminator = toHex(data.subarray(0, 8));
  if (discriminator !== MODEL_DISCRIMINATOR)
    throw new AccountError(`${address} is not a curta model: model account: discriminator ${discriminator} at offset 0, expected ${MODEL_DISCRIMINATOR} (Model)`);
  const model = getModelDecoder().decode(data);
  if (model.sectionCount > 18) throw new AccountError(`${address} is not a curta model: model account: sectionCount ${model.sectionCount} at offset 105 > 18`);
  // Bounded before anything is sized from it: a node claiming a 2^50-byte section is refused
  // here, before a byte of it is asked for (program/accounts.py's words).
  model.sections.slice(0, model.sectionCount).forEach((slot, i) => {
    if (slot.length > BigInt(MAX_SECTION_SIZE))
      throw new AccountError(
        `${address} is not a curta model: model account: section ${i} length ${slot.length.toLocaleString("en-US")} at offset ${160 + 40 * i} > ${MAX_SECTION_SIZE.toLocaleString("en-US")} (the spec's largest section)`,
      );
  });
  return model;
}

async function fetchWith(reader: Reader, address: string, programId?: string): Promise<FetchedModel> {
  const info = await reader.account(address);
  if (!info) throw new AccountError(`${address}: no such account`);
  if (programId !== undefined && info.owner !== programId)
    throw new AccountError(`${address} is not a curta model: owned by ${info.owner}, expected ${programId}`);
  if (info.owner === SYSTEM_PROGRAM) throw new AccountError(`${address} is not a curta model: owned by the System Program (a wallet)`);
  const model = decodeModelAccount(address, info.data);
  return { address, programId: info.owner, model, state: stateName(model.state), slot: reader.slot };
}

/**
 * Read the model account at `address`.
 *
 * @param options.programId the curta program it must belong to (default: its owner).
 * @throws AccountError no account there, or not a curta model.
 */
export async function fetchModel(rpc: Cluster, address: string, options: { programId?: string; commitment?: Commitment } = {}): Promise<FetchedModel> {
  return fetchWith(new Reader(rpc, options.commitment ?? "confirmed"), address, options.programId);
}

/** The program as deployed, as `verify --output json` reports it under "program". */
export interface DeployedProgram {
  program_id: string;
  loader: string;
  programdata: string | null;
  upgrade_authority: string | null;
  last_deploy_slot: number | null;
  sha256: string;
  elf_length: number;
  shipped_build: string | null;
  upgradeable: boolean;
  /** Every hash `programHashes` may name for these bytes (with and without padding). */
  hashes: string[];
}

async function readProgram(reader: Reader, programId: string): Promise<DeployedProgram> {
  const how = "deploy the shipped program with `curta-chain deploy`, or pass --program-id ADDRESS";
  const info = await reader.account(programId);
  if (!info) throw new ProgramCheckError(`program ${programId}: no such account; ${how}`);
  if (!info.executable) {
    const owner = info.owner === SYSTEM_PROGRAM ? "the System Program: a wallet" : info.owner;
    throw new ProgramCheckError(`program ${programId} is not an executable program (owned by ${owner}); ${how}`);
  }
  if (info.owner === LOADER_V2) return identify(programId, info.owner, null, null, null, info.data);
  if (info.owner !== LOADER_V3)
    throw new ProgramCheckError(`program ${programId} is owned by ${info.owner}, not by a BPF loader curta-chain checks (${LOADER_V2} or ${LOADER_V3})`);
  const view = new DataView(info.data.buffer, info.data.byteOffset, info.data.byteLength);
  if (info.data.length < 36 || view.getUint32(0, true) !== 2) throw new ProgramCheckError(`program ${programId}: its loader state is not a program`);
  const programdata = getAddressDecoder().decode(info.data.subarray(4, 36));
  // The program data is where the loader puts it, or the program account is lying about it.
  const [derived] = await getProgramDerivedAddress({ programAddress: toAddress(LOADER_V3), seeds: [getAddressEncoder().encode(toAddress(programId))] });
  if (programdata !== derived)
    throw new ProgramCheckError(`program ${programId} names ${programdata} as its program data; the loader keeps it at ${derived}`);
  const data = await reader.account(programdata);
  if (!data || data.owner !== LOADER_V3) throw new ProgramCheckError(`program ${programId}: its program data ${programdata} is missing (the program was closed)`);
  const dv = new DataView(data.data.buffer, data.data.byteOffset, data.data.byteLength);
  if (data.data.length < PROGRAMDATA_METADATA_SIZE || dv.getUint32(0, true) !== 3) throw new ProgramCheckError(`program data ${programdata} is not program data`);
  const slot = Number(dv.getBigUint64(4, true));
  // The default address is nobody's: solana-test-validator's --bpf-program sets it to mean
  // upgrades disabled (as curta_chain/chain/program_check.py reads it).
  const named = data.data[12] ? getAddressDecoder().decode(data.data.subarray(13, 45)) : null;
  const authority = named === NOBODY ? null : named;
  return identify(programId, info.owner, programdata, authority, slot, data.data.subarray(PROGRAMDATA_METADATA_SIZE));
}

async function identify(programId: string, loader: string, programdata: string | null, authority: string | null, slot: number | null, deployed: Uint8Array): Promise<DeployedProgram> {
  let stripped = deployed.length;
  while (stripped > 0 && deployed[stripped - 1] === 0) stripped--;
  let build: (typeof SHIPPED_BUILDS)[number] | null = null;
  for (const b of SHIPPED_BUILDS)
    if (deployed.length >= b.length && stripped <= b.length && toHex(await sha256(deployed.subarray(0, b.length))) === b.sha256) {
      build = b;
      break;
    }
  const length = build ? build.length : Math.max(elfExtent(deployed), stripped);
  const lengths = [...new Set([length, stripped, deployed.length])];
  const hashes = (await Promise.all(lengths.map(async (n) => toHex(await sha256(deployed.subarray(0, n)))))).sort();
  return {
    program_id: programId,
    loader,
    programdata,
    upgrade_authority: authority,
    last_deploy_slot: slot,
    sha256: toHex(await sha256(deployed.subarray(0, length))),
    elf_length: length,
    shipped_build: build ? build.name : null,
    upgradeable: authority !== null,
    hashes,
  };
}

/** How far an ELF64 file's own headers say it extends (0 if `data` is not one). */
export function elfExtent(data: Uint8Array): number {
  const magic = [0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01];
  if (data.length < 64 || magic.some((b, i) => data[i] !== b)) return 0;
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const phoff = Number(v.getBigUint64(32, true)), shoff = Number(v.getBigUint64(40, true));
  const phentsize = v.getUint16(54, true), phnum = v.getUint16(56, true);
  const shentsize = v.getUint16(58, true), shnum = v.getUint16(60, true);
  let end = Math.max(64, phoff + phnum * phentsize, shoff + shnum * shentsize);
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    if (phentsize >= 40 && at + 40 <= data.length) end = Math.max(end, Number(v.getBigUint64(at + 8, true)) + Number(v.getBigUint64(at + 32, true)));
  }
  for (let i = 0; i < shnum; i++) {
    const at = shoff + i * shentsize;
    if (shentsize >= 40 && at + 40 <= data.length && v.getUint32(at + 4, true) !== 8)
      end = Math.max(end, Number(v.getBigUint64(at + 24, true)) + Number(v.getBigUint64(at + 32, true)));
  }
  return Math.min(end, data.length);
}

/** One way the chain differs from what it should hold (verify.py's Difference). */
export interface Difference {
  kind: string;
  section: number | null;
  offset: number | null;
  length: number | null;
  detail: string;
}

function difference(kind: string, detail: string, section: number | null = null, offset: number | null = null, length: number | null = null): Difference {
  return { kind, section, offset, length, detail };
}

/** A difference as the CLI prints it: `kind section S offset O length L: detail`. */
export function describeDifference(d: Difference): string {
  let where = "";
  if (d.section !== null) {
    where = ` section ${d.section}`;
    if (d.offset !== null) where += ` offset ${d.offset} length ${d.length}`;
  }
  return `${d.kind}${where}: ${d.detail}`;
}

/** Equal parts of a section that `difference_bins` counts differing bytes in (as the CLI). */
export const DIFFERENCE_BINS = 48;

/**
 * How many of the common bytes differ in each of DIFFERENCE_BINS equal parts: numpy's
 * `histogram` over `linspace(0, n, DIFFERENCE_BINS + 1)` edges, as `curta-chain verify` counts.
 */
function differenceBins(chain: Uint8Array, local: Uint8Array): number[] {
  const n = Math.min(chain.length, local.length);
  const last = Math.max(n, 1);
  const step = last / DIFFERENCE_BINS;
  const edge = (k: number): number => (k === DIFFERENCE_BINS ? last : k * step);
  const bins = new Array<number>(DIFFERENCE_BINS).fill(0);
  for (let j = 0; j < n; j++) {
    if (chain[j] === local[j]) continue;
    let k = Math.min(Math.floor(j / step), DIFFERENCE_BINS - 1);
    while (k > 0 && j < edge(k)) k--;
    while (k < DIFFERENCE_BINS - 1 && j >= edge(k + 1)) k++;
    bins[k] += 1;
  }
  return bins;
}

/** The verdict: the fields of `curta-chain verify --output json`, same names and values. */
export interface VerifyReport {
  model: string;
  ok: boolean;
  state: string;
  declared_hash: string;
  chain_hash: string | null;
  /** The artifact's hash; null when no artifact was given (the chain is checked alone). */
  artifact_hash: string | null;
  /** Whether an artifact was compared (false: the chain was checked alone). */
  artifact_compared: boolean;
  differences: Difference[];
  differing_ranges: number;
  differing_ranges_listed: number;
  differing_bytes: number;
  /** Per section, the differing bytes in each of DIFFERENCE_BINS equal parts of it. */
  difference_bins: number[][];
  program: Omit<DeployedProgram, "hashes">;
  slot: number;
  cross_checked: null;
}

/** What verifyModel tells as it reads: bytes read and hashed so far, of `total`. */
export interface VerifyProgress {
  phase: "reading" | "hashing";
  done: number;
  total: number;
  /** The section being hashed (-1 while reading: every section is read at once). */
  section: number;
}

export interface VerifyOptions {
  /** The artifact the model must hold (its bytes, or decoded); without it the chain is checked alone. */
  artifact?: Artifact | Uint8Array;
  /** SHA-256s (hex) of programs trusted besides the shipped builds (`--program-hash`). */
  programHashes?: string[];
  /** The curta program the model must belong to (default: the model account's owner). */
  programId?: string;
  /** A program that can still be upgraded is a difference (`--require-final`). */
  requireFinal?: boolean;
  commitment?: Commitment;
  /** How many differing byte ranges to list (null: all); all are counted. */
  listedRanges?: number | null;
  onProgress?: (progress: VerifyProgress) => void;
  /** Given the artifact decoded from the chain's bytes (null: they are not one): the page runs it. */
  onArtifact?: (artifact: Artifact | null) => void;
  /** Given each slot's weight account, length and frozen flag (null: unreadable) once known. */
  onSlots?: (slots: SlotInfo[]) => void;
  /** Given the model account as soon as it is read. */
  onModel?: (model: FetchedModel) => void;
}

/** One section slot of a model as read: its weight account, length and frozen flag. */
export interface SlotInfo {
  account: string;
  length: number;
  frozen: boolean | null;
}

/**
 * Verify the model at `address` from the chain alone, or against an artifact.
 *
 * @returns the report `curta-chain verify --output json` gives for the same model.
 * @throws AccountError there is no curta model at `address`.
 * @throws ProgramCheckError there is no executable program where the model's owner says.
 */
export async function verifyModel(rpc: Cluster, address: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  const reader = new Reader(rpc, options.commitment ?? "confirmed");
  const fetched = await fetchWith(reader, address, options.programId);
  options.onModel?.(fetched);
  const program = await readProgram(reader, fetched.programId);
  const model = fetched.model;
  const artifact = options.artifact instanceof Uint8Array ? decodeArtifact(options.artifact) : options.artifact;
  const ours = artifact ? toHex(await hashArtifact(artifact)) : null;
  const found = programDifferences(program, model, options.programHashes ?? [], options.requireFinal ?? false);
  const slots = model.sections.slice(0, model.sectionCount);
  if (artifact) {
    if (slots.length !== artifact.sections.length) found.push(difference("section-count", `chain ${slots.length}, artifact ${artifact.sections.length}`));
    slots.forEach((slot, i) => {
      if (i < artifact.sections.length && Number(slot.length) !== artifact.sections[i].length)
        found.push(difference("section-length", `chain ${slot.length}, artifact ${artifact.sections[i].length}`, i));
    });
  }
  const total = slots.reduce((n, s) => n + Number(s.length), 0);
  const sections = await readSections(reader, fetched.programId, address, slots, found, (done, section) =>
    options.onProgress?.({ phase: "reading", done, total, section }),
  options.onSlots);
  const ranges: Difference[] = [];
  let countedRanges = 0, countedBytes = 0;
  const bins: number[][] = sections.map(() => new Array<number>(DIFFERENCE_BINS).fill(0));
  const limit = options.listedRanges === undefined ? LISTED_RANGES : options.listedRanges;
  if (artifact)
    sections.forEach((section, i) => {
      if (section && i < artifact.sections.length) {
        const room = limit === null ? null : Math.max(limit - ranges.length, 0);
        const [listed, count, size] = byteRanges(i, section, artifact.sections[i], room);
        ranges.push(...listed);
        countedRanges += count;
        countedBytes += size;
        if (count) bins[i] = differenceBins(section, artifact.sections[i]);
      }
    });
  let chainHash: string | null = null;
  const declared = toHex(model.declaredHash);
  if (sections.every((s) => s !== null)) {
    const complete = sections as Uint8Array[];
    let running: Uint8Array = new Uint8Array(32);
    let done = 0;
    for (let i = 0; i < complete.length; i++)
      running = await hashSection(complete[i], running, (n) => options.onProgress?.({ phase: "hashing", done: (done += n), total, section: i }));
    chainHash = toHex(running);
    const [decoded, problems] = configDifferences(address, complete, artifact);
    options.onArtifact?.(decoded);
    found.push(...problems);
    if (chainHash !== declared) found.push(difference("hash", `the chain's bytes hash to ${chainHash}, the model declares ${declared}`));
  }
  if (ours !== null && declared !== ours) found.push(difference("declared-hash", `the model declares ${declared}, the artifact's hash is ${ours}`));
  if (model.state !== ModelState.Sealed) found.push(difference("state", `the model is ${fetched.state}, not sealed`));
  else if (toHex(model.runningHash) !== declared) found.push(difference("state", "sealed, but its running hash is not the declared one"));
  found.push(...ranges);
  const { hashes: _hashes, ...shown } = program;
  return {
    model: address,
    ok: found.length === 0 && countedRanges === 0,
    state: fetched.state,
    declared_hash: declared,
    chain_hash: chainHash,
    artifact_hash: ours,
    artifact_compared: ours !== null,
    differences: found,
    differing_ranges: countedRanges,
    differing_ranges_listed: ranges.length,
    differing_bytes: countedBytes,
    difference_bins: bins,
    program: shown,
    slot: reader.slot,
    cross_checked: null,
  };
}

async function hashArtifact(artifact: Artifact): Promise<Uint8Array> {
  let running: Uint8Array = new Uint8Array(32);
  for (const s of artifact.sections) running = await hashSection(s, running);
  return running;
}

function programDifferences(program: DeployedProgram, model: Model, trusted: string[], requireFinal: boolean): Difference[] {
  const out: Difference[] = [];
  if (program.shipped_build === null && !trusted.some((h) => program.hashes.includes(h.toLowerCase()))) {
    const builds = SHIPPED_BUILDS.map((b) => `${b.name} ${b.sha256}`).join(", ");
    out.push(
      difference(
        "program",
        `program ${program.program_id} holds ${program.elf_length.toLocaleString("en-US")} bytes with sha256 ${program.sha256}, ` +
          `not a build shipped with curta-chain (${builds}); refusing it (--program-hash names a build you trust)`,
      ),
    );
  }
  const deployed = program.last_deploy_slot;
  const sealSlot = Number(model.sealSlot);
  if (deployed !== null && sealSlot && deployed >= sealSlot)
    out.push(difference("program", `the program was deployed at slot ${deployed}, after sealing began at slot ${sealSlot}: its sealed state is no evidence`));
  if (requireFinal && program.upgradeable)
    out.push(difference("program", `the program can still be upgraded by ${program.upgrade_authority} (--require-final)`));
  return out;
}

async function readSections(
  reader: Reader,
  programId: string,
  address: string,
  slots: Model["sections"],
  found: Difference[],
  onBytes: (done: number, section: number) => void,
  onSlots?: (slots: SlotInfo[]) => void,
): Promise<(Uint8Array | null)[]> {
  const heads = await reader.accounts(
    slots.filter((s) => s.weightAccount !== ZERO_KEY).map((s) => s.weightAccount),
    WEIGHT_HEADER_SIZE,
  );
  // Each bound slot's header, or why its account is not a weight account of this program.
  let seen = 0;
  const decoded = slots.map((s) => (s.weightAccount === ZERO_KEY ? null : weightHeader(s.weightAccount, heads[seen++], programId)));
  onSlots?.(
    slots.map((s, i) => {
      const head = decoded[i];
      return { account: s.weightAccount, length: Number(s.length), frozen: head && typeof head !== "string" ? head.frozen : null };
    }),
  );
  let done = 0;
  const out: (Uint8Array | null)[] = [];
  const spans: { address: string; offset: number; length: number }[] = [];
  const readable: number[] = [];
  for (let index = 0; index < slots.length; index++) {
    const slot = slots[index];
    if (slot.weightAccount === ZERO_KEY) {
      found.push(difference("account", "no weight account is bound", index));
      out.push(null);
      continue;
    }
    const account = slot.weightAccount;
    const header = decoded[index]!;
    let problem = typeof header === "string" ? header : null;
    if (typeof header !== "string" && (header.model !== address || header.sectionIndex !== index || header.sectionLength !== slot.length))
      problem = `${account} is bound to section ${header.sectionIndex} of ${header.model}`;
    if (problem) {
      found.push(difference("account", problem, index));
      out.push(null);
      continue;
    }
    out.push(null);
    readable.push(index);
    spans.push({ address: account, offset: WEIGHT_HEADER_SIZE, length: Number(slot.length) });
  }
  const read = await reader.many(spans, (n) => onBytes((done += n), -1));
  readable.forEach((index, i) => (out[index] = read[i]));
  return out;
}

/** A weight account's header, or the line saying why `info` is not one (accounts.py's words). */
function weightHeader(account: string, info: RawAccount | null, programId: string): WeightAccount | string {
  if (!info) return `weight account ${account} does not exist`;
  if (info.owner !== programId) return `${account} is not a weight account: owned by ${info.owner}`;
  const what = `${account} is not a weight account: weight account`;
  if (info.data.length < WEIGHT_HEADER_SIZE) return `${what}: ${info.data.length} bytes, expected at least ${WEIGHT_HEADER_SIZE}`;
  const got = toHex(info.data.subarray(0, 8)), want = toHex(WEIGHT_ACCOUNT_DISCRIMINATOR);
  if (got !== want) return `${what}: discriminator ${got} at offset 0, expected ${want} (WeightAccount)`;
  const header = getWeightAccountDecoder().decode(info.data.subarray(0, WEIGHT_HEADER_SIZE));
  if (header.sectionLength > BigInt(MAX_SECTION_SIZE))
    return `${what}: section length ${header.sectionLength.toLocaleString("en-US")} at offset 80 > ${MAX_SECTION_SIZE.toLocaleString("en-US")} (the spec's largest section)`;
  return header;
}

function byteRanges(section: number, chain: Uint8Array, local: Uint8Array, limit: number | null): [Difference[], number, number] {
  const n = Math.min(chain.length, local.length);
  const listed: Difference[] = [];
  let count = 0, bytes = 0, start = -1;
  for (let i = 0; i <= n; i++) {
    const differs = i < n && chain[i] !== local[i];
    if (differs) bytes++;
    if (differs && start < 0) start = i;
    if (!differs && start >= 0) {
      if (limit === null || listed.length < limit) listed.push(difference("bytes", "the chain's bytes differ from the artifact's", section, start, i - start));
      count++;
      start = -1;
    }
  }
  return [listed, count, bytes];
}

/** Decode the chain's own artifact and compare its configuration with the artifact's. */
function configDifferences(address: string, sections: Uint8Array[], artifact?: Artifact): [Artifact | null, Difference[]] {
  let chain: Artifact;
  try {
    chain = artifactFromSections(sections, `model ${address}`);
  } catch (e) {
    if (e instanceof ArtifactError) return [null, [difference("config", `the chain's bytes are not a valid artifact: ${e.message}`, 0)]];
    throw e;
  }
  if (!artifact || JSON.stringify(chain.config) === JSON.stringify(artifact.config)) return [chain, []];
  return [chain, [difference("config", `chain ${pyConfig(chain.config)}, artifact ${pyConfig(artifact.config)}`, 0)]];
}

/** A configuration as verify.py prints it: Python's ModelConfig, its field names. */
function pyConfig(c: Artifact["config"]): string {
  return `ModelConfig(${CONFIG_FIELDS.map(([name, python]) => `${python}=${c[name]}`).join(", ")})`;
}

/** The chain's sections of a verified model, decoded: what the page runs. */
export function artifactFromSections(sections: Uint8Array[], source: string): Artifact {
  const whole = new Uint8Array(sections.reduce((n, s) => n + s.length, 0));
  let at = 0;
  for (const s of sections) whole.set(s, (at += s.length) - s.length);
  return decodeArtifact(whole, source);
}

export const RUN_HEADER_SIZE = 512;
const RUN_DISCRIMINATOR = "c7369b56eb73f6bd";
/** Region indices of a run account (programs/curta/inference.h). */
const REGION_PROMPT = 0;
const REGION_TOKENS = 2;

/** An on-chain run (`curta-chain run --on-chain`) as read: its settings, prompt and tokens. */
export interface FetchedRun {
  address: string;
  run: Run;
  /** The prompt's text bytes, or null when the prompt was given as token ids. */
  promptText: Uint8Array | null;
  /** Every token so far: the prompt's (`run.promptTokens` of them), then the generated ones. */
  tokens: number[];
  slot: number;
}

/**
 * Read the run account at `address`: its header, prompt and tokens.
 *
 * @throws AccountError no account there, or not a curta run.
 */
export async function fetchRun(rpc: Cluster, address: string, options: { commitment?: Commitment } = {}): Promise<FetchedRun> {
  const reader = new Reader(rpc, options.commitment ?? "confirmed");
  const info = await reader.account(address, { offset: 0, length: RUN_HEADER_SIZE });
  if (!info) throw new AccountError(`${address}: no such account`);
  if (info.data.length < RUN_HEADER_SIZE || toHex(info.data.subarray(0, 8)) !== RUN_DISCRIMINATOR)
    throw new AccountError(`${address} is not a curta run: ${info.data.length < RUN_HEADER_SIZE ? `${info.data.length} bytes` : `discriminator ${toHex(info.data.subarray(0, 8))}`}, expected a Run account`);
  const run = getRunDecoder().decode(info.data);
  const text = run.promptKind === PromptKind.Text;
  const promptBytes = text ? run.promptLength : 4 * run.promptLength;
  const prompt = await reader.data(address, run.regions[REGION_PROMPT], promptBytes);
  const raw = await reader.data(address, run.regions[REGION_TOKENS], 4 * run.tokenCount);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const tokens = Array.from({ length: run.tokenCount }, (_, i) => view.getUint32(4 * i, true));
  return { address, run, promptText: text ? prompt : null, tokens, slot: reader.slot };
}

// A LiteSVM from npm `litesvm` 1.5 (Agave 4.3), driven over stdin/stdout by pytest.
//
// One JSON request per line in, one JSON answer per line out: {"id", "op", ...} gives
// {"id", "result"} or {"id", "error"}. Python builds and signs every transaction (with the
// package's own instruction builders); this runner only runs them, so the lifecycle is
// written once, in Python, and the same bytes run here and in solders' LiteSVM.
//
// ops: init {features: "mainnet" | "all", deactivate: [id]} -> {known, active}
//      blockhash -> base58 | airdrop {address, lamports} | add_program {address, elf}
//      send {tx} -> {ok, error, custom, units, logs} | account {address} -> null | {...}
//      minimum_balance {size} | slot | warp {slot}
//      set_account {address, lamports, owner, data}: an account's state, as a test puts it
// Byte fields are base64; addresses base58; lamports and slots decimal strings.
//
// package-lock.json: litesvm 1.5.0 lists six platform packages as optional dependencies, but
// only litesvm-linux-x64-gnu was published at 1.5.0, and `npm ci` refuses a lock without the
// others (npm/cli#4828). Their entries (os, cpu and libc only; never fetched on linux x64
// glibc, where this runs) were added to the lock by hand.
import { createInterface } from "node:readline";
import { FailedTransactionMetadata, FeatureSet, LiteSVM } from "litesvm";
import { getAddressDecoder, getAddressEncoder, getTransactionDecoder } from "@solana/kit";

const addressBytes = getAddressEncoder();
const addressText = getAddressDecoder();
const decodeTransaction = getTransactionDecoder();
const AIRDROP_POOL = 10n ** 18n;
let svm = null;

function featureSet(features, deactivate) {
  if (features !== "all") throw new Error(`features ${features}: use "mainnet" or "all"`);
  const set = FeatureSet.allEnabled();
  for (const id of deactivate) set.deactivate(addressBytes.encode(id));
  return set;
}

function init({ features, deactivate = [] }) {
  if (features === "mainnet" && deactivate.length === 0) {
    svm = new LiteSVM(); // litesvm's bundled mainnet feature set, builtins, sysvars, SPL programs
  } else {
    svm = LiteSVM.default()
      .withFeatureSet(featureSet(features, deactivate))
      .withBuiltins()
      .withLamports(AIRDROP_POOL)
      .withSysvars()
      .withPrecompiles();
  }
  svm = svm.withTransactionHistory(0n); // identical seal steps are separate transactions
  const all = FeatureSet.allEnabled().getActiveFeatures().map((id) => addressText.decode(id));
  return { known: all };
}

function outcome(meta) {
  const failed = meta instanceof FailedTransactionMetadata;
  const inner = failed ? meta.meta() : meta;
  let custom = null;
  if (failed) {
    const err = meta.err();
    const detail = typeof err?.err === "function" ? err.err() : null;
    if (detail !== null && typeof detail === "object" && "code" in detail) custom = detail.code;
  }
  return {
    ok: !failed,
    error: failed ? String(meta.err()) : null,
    custom,
    units: Number(inner.computeUnitsConsumed()),
    logs: inner.logs(),
  };
}

const ops = {
  init,
  blockhash: () => svm.latestBlockhash(),
  airdrop: ({ address, lamports }) => {
    const meta = svm.airdrop(address, BigInt(lamports));
    if (meta instanceof FailedTransactionMetadata) throw new Error(`airdrop: ${meta.err()}`);
    return null;
  },
  add_program: ({ address, elf }) => svm.addProgram(address, Buffer.from(elf, "base64")) ?? null,
  send: ({ tx }) => outcome(svm.sendTransaction(decodeTransaction.decode(Buffer.from(tx, "base64")))),
  account: ({ address }) => {
    const account = svm.getAccount(address);
    if (!account.exists) return null;
    return {
      lamports: String(account.lamports),
      owner: account.programAddress,
      executable: account.executable,
      data: Buffer.from(account.data).toString("base64"),
    };
  },
  minimum_balance: ({ size }) => String(svm.minimumBalanceForRentExemption(BigInt(size))),
  slot: () => String(svm.getClock().slot),
  warp: ({ slot }) => svm.warpToSlot(BigInt(slot)) ?? null,
  set_account: ({ address, lamports, owner, data }) => {
    const bytes = Buffer.from(data, "base64");
    svm.setAccount({
      address,
      lamports: BigInt(lamports),
      programAddress: owner,
      executable: false,
      data: bytes,
      space: BigInt(bytes.length),
    });
    return null;
  },
};

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  let answer;
  try {
    const op = ops[request.op];
    if (!op) throw new Error(`unknown op ${request.op}`);
    answer = { id: request.id, result: op(request) };
  } catch (error) {
    answer = { id: request.id, error: String(error?.message ?? error) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}

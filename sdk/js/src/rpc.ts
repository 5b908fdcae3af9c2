/**
 * JSON-RPC over fetch for the on-chain run: sends, statuses, fees, balances and reads at a
 * slot the client has seen (`minContextSlot`), each failure one line. And which cluster a
 * node serves, from its genesis hash, as the Wallet Standard names it.
 */

export class RpcError extends Error {
  override name = "RpcError";
  constructor(message: string, readonly code: number | null = null) {
    super(message);
  }
}

/** The Wallet Standard's Solana chains (`@solana/wallet-standard-chains`). */
export type SolanaChainId = "solana:mainnet" | "solana:devnet" | "solana:testnet" | "solana:localnet";

/** The public clusters by genesis hash; any other node is a localnet to a wallet. */
const GENESIS: Record<string, SolanaChainId> = {
  "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d": "solana:mainnet",
  EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG: "solana:devnet",
  "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY": "solana:testnet",
};

/** A transaction's page on the explorer, where the cluster is a public one (else null). */
export function explorerLink(chain: SolanaChainId, signature: string): string | null {
  if (chain === "solana:localnet") return null;
  const cluster = chain === "solana:mainnet" ? "" : `?cluster=${chain.slice("solana:".length)}`;
  return `https://explorer.solana.com/tx/${signature}${cluster}`;
}

/** A node's answer to getSignatureStatuses, one signature. */
export interface SignatureStatus {
  slot: number;
  err: unknown;
  confirmationStatus: "processed" | "confirmed" | "finalized" | null;
}

/** A JSON-RPC endpoint: `url` is where the page sends (the server's relay, or the node). */
export class JsonRpc {
  private id = 0;
  constructor(readonly url: string) {}

  async call<T>(method: string, params: unknown[] = []): Promise<T> {
    const body = JSON.stringify({ jsonrpc: "2.0", id: ++this.id, method, params });
    let answer: Response;
    try {
      answer = await fetch(this.url, { method: "POST", headers: { "content-type": "application/json" }, body });
    } catch {
      throw new RpcError(`${method}: no answer from ${this.url}`);
    }
    const text = await answer.text();
    let parsed: { result?: T; error?: { code: number; message: string } };
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new RpcError(`${method}: HTTP ${answer.status} from ${this.url}: ${text.split("\n")[0].slice(0, 200)}`);
    }
    if (parsed.error) throw new RpcError(`${method}: ${parsed.error.message}`, parsed.error.code);
    if (!("result" in parsed)) throw new RpcError(`${method}: no result from ${this.url}`);
    return parsed.result as T;
  }

  async chain(): Promise<SolanaChainId> {
    return GENESIS[await this.call<string>("getGenesisHash")] ?? "solana:localnet";
  }

  /** The latest blockhash at `commitment` (a finalized one is known to every node's preflight). */
  async blockhash(commitment: "confirmed" | "finalized" = "confirmed"): Promise<{ blockhash: string; lastValidBlockHeight: bigint; slot: number }> {
    const r = await this.call<{ context: { slot: number }; value: { blockhash: string; lastValidBlockHeight: number } }>(
      "getLatestBlockhash", [{ commitment }]);
    return { blockhash: r.value.blockhash, lastValidBlockHeight: BigInt(r.value.lastValidBlockHeight), slot: r.context.slot };
  }

  async blockHeight(): Promise<number> {
    return this.call<number>("getBlockHeight", [{ commitment: "confirmed" }]);
  }

  async balance(address: string, commitment = "confirmed"): Promise<{ lamports: bigint; slot: number }> {
    const r = await this.call<{ context: { slot: number }; value: number }>("getBalance", [address, { commitment }]);
    return { lamports: BigInt(r.value), slot: r.context.slot };
  }

  async rentExempt(bytes: number): Promise<bigint> {
    return BigInt(await this.call<number>("getMinimumBalanceForRentExemption", [bytes]));
  }

  /** The fee the node says a message costs (base64 of the compiled message). */
  async feeFor(message: string): Promise<bigint> {
    const r = await this.call<{ value: number | null }>("getFeeForMessage", [message, { commitment: "confirmed" }]);
    if (r.value === null) throw new RpcError("getFeeForMessage: the node does not know the message's blockhash");
    return BigInt(r.value);
  }

  /** An account's bytes (a slice of them), read at a slot at least `minContextSlot`. */
  async account(address: string, options: { slice?: { offset: number; length: number }; minContextSlot?: number; commitment?: string } = {}): Promise<{ owner: string; lamports: bigint; data: Uint8Array; slot: number } | null> {
    const config: Record<string, unknown> = { encoding: "base64", commitment: options.commitment ?? "processed" };
    if (options.slice) config.dataSlice = options.slice;
    if (options.minContextSlot) config.minContextSlot = options.minContextSlot;
    const r = await this.call<{ context: { slot: number }; value: { owner: string; lamports: number; data: [string, string] } | null }>(
      "getAccountInfo", [address, config]);
    if (!r.value) return null;
    return { owner: r.value.owner, lamports: BigInt(r.value.lamports), data: base64Bytes(r.value.data[0]), slot: r.context.slot };
  }

  /** Send a signed transaction (base64) without preflight; its signature as the node says. */
  async send(wire: string): Promise<string> {
    return this.call<string>("sendTransaction", [wire, { encoding: "base64", skipPreflight: true, maxRetries: 0 }]);
  }

  /** Simulate a transaction (base64) without checking its signatures, at the latest blockhash. */
  async simulate(wire: string): Promise<{ err: unknown; logs: string[] | null; unitsConsumed?: number }> {
    const r = await this.call<{ value: { err: unknown; logs: string[] | null; unitsConsumed?: number } }>(
      "simulateTransaction", [wire, { encoding: "base64", sigVerify: false, replaceRecentBlockhash: true, commitment: "processed" }]);
    return r.value;
  }

  async statuses(signatures: string[]): Promise<(SignatureStatus | null)[]> {
    const out: (SignatureStatus | null)[] = [];
    for (let i = 0; i < signatures.length; i += 256) {
      const r = await this.call<{ value: (SignatureStatus | null)[] }>("getSignatureStatuses", [signatures.slice(i, i + 256)]);
      if (!Array.isArray(r.value) || r.value.length !== Math.min(256, signatures.length - i))
        throw new RpcError("getSignatureStatuses: the node answered for a different number of signatures");
      out.push(...r.value);
    }
    return out;
  }
}

function base64Bytes(text: string): Uint8Array {
  const native = (Uint8Array as unknown as { fromBase64?: (t: string) => Uint8Array }).fromBase64;
  if (native) return native(text);
  const binary = atob(text);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/**
 * A visitor's wallet through the Wallet Standard (`@wallet-standard/app`): whatever wallets
 * registered in the page (Phantom, Solflare, Backpack, or a test's own), no wallet-specific
 * code. The page needs `standard:connect` and one way to sign: `solana:signTransaction`
 * where the wallet offers it (the page then sends what the wallet signed to its own
 * cluster), else `solana:signAndSendTransaction` (the wallet sends, to its cluster; the page
 * puts the wallet's signature on its own copy of the transaction and sends that too, the
 * same bytes, then confirms from the chain). Every signature a wallet returns is checked:
 * the message is the one the page built, and the wallet's signature verifies over it.
 */

import { getWallets } from "@wallet-standard/app";
import type { Wallet, WalletAccount } from "@wallet-standard/base";
import { StandardConnect, type StandardConnectFeature } from "@wallet-standard/features";
import {
  SolanaSignAndSendTransaction, SolanaSignTransaction, type SolanaSignAndSendTransactionFeature,
  type SolanaSignTransactionFeature,
} from "@solana/wallet-standard-features";
import {
  getAddressDecoder, getBase58Decoder, getPublicKeyFromAddress, getTransactionDecoder, getTransactionEncoder, verifySignature,
  type Address, type SignatureBytes, type Transaction,
} from "@solana/kit";
import type { SolanaChainId } from "./rpc.js";
import type { TxVersion } from "./transactions.js";

/** The wallet declined, failed, or returned what the page cannot use: nothing was sent. */
export class WalletError extends Error {
  override name = "WalletError";
}

/** Wallets registered in this page that can connect and sign Solana transactions. */
export function solanaWallets(): Wallet[] {
  return getWallets().get().filter(usable);
}

/** Call `listener` whenever a wallet registers (or leaves); returns the unsubscriber. */
export function onWalletsChanged(listener: () => void): () => void {
  const wallets = getWallets();
  const off = [wallets.on("register", listener), wallets.on("unregister", listener)];
  return () => off.forEach((f) => f());
}

function usable(w: Wallet): boolean {
  return StandardConnect in w.features && (SolanaSignTransaction in w.features || SolanaSignAndSendTransaction in w.features);
}

type Signing = SolanaSignTransactionFeature[typeof SolanaSignTransaction];
type SigningAndSending = SolanaSignAndSendTransactionFeature[typeof SolanaSignAndSendTransaction];

/** A connected account of a wallet, and how many signing requests the page made of it. */
export class ConnectedWallet {
  requests = 0;
  private constructor(readonly wallet: Wallet, readonly account: WalletAccount, readonly chain: SolanaChainId) {}

  get address(): Address {
    return getAddressDecoder().decode(Uint8Array.from(this.account.publicKey));
  }

  /** The wallet only signs and sends (no `solana:signTransaction`): it sends what it signs. */
  get sends(): boolean {
    return !(SolanaSignTransaction in this.wallet.features);
  }

  private get signing(): Signing {
    return (this.wallet.features as SolanaSignTransactionFeature)[SolanaSignTransaction];
  }

  private get signingAndSending(): SigningAndSending {
    return (this.wallet.features as SolanaSignAndSendTransactionFeature)[SolanaSignAndSendTransaction];
  }

  /** The transaction versions the wallet signs (legacy and v0 where it says nothing). */
  get versions(): TxVersion[] {
    const feature = this.sends ? this.signingAndSending : this.signing;
    return [...(feature.supportedTransactionVersions ?? ["legacy", 0])] as TxVersion[];
  }

  /**
   * The version the page builds the wallet's transactions in: legacy, else v0; v1 only
   * where the wallet declares it and the cluster takes it (`clusterTakesV1`).
   */
  version(clusterTakesV1: boolean): TxVersion {
    const v = this.versions;
    if (clusterTakesV1 && v.includes(1)) return 1;
    if (v.includes("legacy")) return "legacy";
    if (v.includes(0)) return 0;
    throw new WalletError(`${this.wallet.name} signs neither legacy nor v0 transactions (it declares ${v.join(", ") || "none"})`);
  }

  /**
   * Ask the wallet to connect (its own prompt); the first account it grants.
   *
   * @throws WalletError the wallet declined or granted no account.
   */
  static async connect(wallet: Wallet, chain: SolanaChainId): Promise<ConnectedWallet> {
    if (!usable(wallet)) throw new WalletError(`${wallet.name} cannot sign Solana transactions for this page (neither solana:signTransaction nor solana:signAndSendTransaction)`);
    const connect = (wallet.features as StandardConnectFeature)[StandardConnect].connect;
    let accounts: readonly WalletAccount[];
    try {
      accounts = (await connect()).accounts;
    } catch (e) {
      throw new WalletError(`${wallet.name} did not connect: ${message(e)}`);
    }
    const feature = SolanaSignTransaction in wallet.features ? SolanaSignTransaction : SolanaSignAndSendTransaction;
    const account = accounts.find((a) => a.features?.includes(feature)) ?? accounts[0];
    if (!account) throw new WalletError(`${wallet.name} granted no account`);
    if (account.publicKey?.length !== 32) throw new WalletError(`${wallet.name}'s account has a ${account.publicKey?.length ?? 0}-byte key, not a Solana address`);
    return new ConnectedWallet(wallet, account, chain);
  }

  /**
   * Have the wallet sign `transactions` in one request (the standard's signTransaction takes
   * several inputs); the page's own signatures on them stay.
   *
   * @throws WalletError the wallet declined, or changed a message, or its signature is wrong.
   */
  async sign(transactions: Transaction[]): Promise<Transaction[]> {
    const encoder = getTransactionEncoder(), decoder = getTransactionDecoder();
    const chain = this.account.chains?.includes(this.chain) ? { chain: this.chain } : {};
    const inputs = transactions.map((tx) => ({ account: this.account, transaction: new Uint8Array(encoder.encode(tx)), ...chain }));
    this.requests += 1;
    let outputs: readonly { signedTransaction: Uint8Array }[];
    try {
      outputs = await this.signing.signTransaction(...inputs);
    } catch (e) {
      throw new WalletError(`${this.wallet.name} declined to sign: ${message(e)}; nothing was sent`);
    }
    if (outputs.length !== transactions.length)
      throw new WalletError(`${this.wallet.name} returned ${outputs.length} signed transactions for ${transactions.length}; nothing was sent`);
    return Promise.all(outputs.map(async (out, i) => {
      let signed: Transaction;
      try {
        signed = decoder.decode(out.signedTransaction);
      } catch (e) {
        throw new WalletError(`${this.wallet.name} returned a transaction that does not decode: ${message(e)}; nothing was sent`);
      }
      if (!sameBytes(signed.messageBytes, transactions[i].messageBytes))
        throw new WalletError(`${this.wallet.name} changed the transaction it was asked to sign; nothing was sent`);
      const signature = signed.signatures[this.address];
      if (!signature || !(await this.verifies(signature, transactions[i])))
        throw new WalletError(`${this.wallet.name}'s signature does not verify; nothing was sent`);
      return this.withSignature(transactions[i], signature);
    }));
  }

  /**
   * Have a wallet that only signs and sends sign `transaction` and send it (one request, to
   * the wallet's cluster, `chain` named). Returns the page's own transaction with the
   * wallet's signature on it, for the page to send to its cluster too (the same bytes) and
   * to confirm from the chain.
   *
   * @throws WalletError the wallet declined or failed, or its signature is not over the
   *   page's message (the wallet signed another transaction: the page's co-signatures do not
   *   cover it, and the page goes no further).
   */
  async signAndSend(transaction: Transaction): Promise<Transaction> {
    const input = { account: this.account, transaction: new Uint8Array(getTransactionEncoder().encode(transaction)), chain: this.chain };
    this.requests += 1;
    let outputs: readonly { signature: Uint8Array }[];
    try {
      outputs = await this.signingAndSending.signAndSendTransaction(input);
    } catch (e) {
      throw new WalletError(`${this.wallet.name} declined to sign: ${message(e)}; nothing was sent`);
    }
    const signature = outputs[0]?.signature;
    if (outputs.length !== 1 || signature?.length !== 64)
      throw new WalletError(`${this.wallet.name} returned ${outputs.length} signatures for one transaction (or not a 64-byte signature)`);
    if (!(await this.verifies(signature as SignatureBytes, transaction)))
      throw new WalletError(`${this.wallet.name} signed and sent a transaction other than the one it was asked to sign (signature ${getBase58Decoder().decode(signature)}); the page stops here`);
    return this.withSignature(transaction, signature as SignatureBytes);
  }

  private async verifies(signature: SignatureBytes, tx: Transaction): Promise<boolean> {
    return verifySignature(await getPublicKeyFromAddress(this.address), signature, tx.messageBytes);
  }

  /** The page's transaction with the wallet's signature (its own signatures stand). */
  private withSignature(tx: Transaction, signature: SignatureBytes): Transaction {
    return { ...tx, signatures: { ...tx.signatures, [this.address]: signature } } as Transaction;
  }
}

function sameBytes(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function message(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split("\n")[0] || "no reason given";
}

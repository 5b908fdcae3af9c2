// A Wallet Standard wallet of the tests' own, injected before the page loads (Playwright's
// add_init_script), as a browser extension injects one: Ed25519 through WebCrypto, the key
// from window.__testWalletConfig (set by an init script before this one):
//   { seed: base64 of 32 bytes, address: base58, name, versions: ["legacy", 0],
//     signTransaction: true (false: the wallet does not offer solana:signTransaction),
//     signAndSend: false (true: it offers solana:signAndSendTransaction, and sends what it
//       signs to `rpc`, its own cluster's URL, preflight and all, as a wallet does),
//     rpc: URL, reject: [signing requests to decline, counted from 1],
//     tamper: false (true: change the message's last byte, as a wallet that edits) }
// It registers through the standard's events (wallet-standard:register-wallet and
// app-ready), grants one account on connect, signs what it is asked and records every
// request in window.__walletRequests (method, inputs), so a test counts them.
(() => {
  const config = window.__testWalletConfig;
  if (!config) return;
  const requests = (window.__walletRequests = []);
  const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  const fromBase58 = (text) => {
    let n = 0n;
    for (const c of text) n = n * 58n + BigInt(B58.indexOf(c));
    const out = new Uint8Array(32);
    for (let i = 31; i >= 0; i--, n >>= 8n) out[i] = Number(n & 0xffn);
    return out;
  };
  const seed = Uint8Array.from(atob(config.seed), (c) => c.charCodeAt(0));
  const pkcs8 = new Uint8Array([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20, ...seed]);
  const keyPromise = crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
  const publicKey = fromBase58(config.address);
  const chains = ["solana:mainnet", "solana:devnet", "solana:testnet", "solana:localnet"];
  const signs = config.signTransaction ?? true;
  const features = [...(signs ? ["solana:signTransaction"] : []), ...(config.signAndSend ? ["solana:signAndSendTransaction"] : [])];
  const account = Object.freeze({ address: config.address, publicKey, chains, features, label: "test", icon: undefined });
  let connected = false;
  const listeners = new Set();

  const shortvec = (bytes, at) => {
    let value = 0, shift = 0, length = 0;
    for (;;) {
      const b = bytes[at + length++];
      value |= (b & 0x7f) << shift;
      if (!(b & 0x80)) return [value, length];
      shift += 7;
    }
  };

  /** Where a wire transaction's message and signatures are, and its signers' keys. */
  function layout(bytes) {
    if (bytes[0] === 0x81) {
      // v1 (SIMD-0385): the message first (version, header, config mask, lifetime, counts,
      // addresses, ...), the signatures after it, one per signer.
      const signers = bytes[1], keysAt = 42;
      const messageEnd = bytes.length - 64 * signers;
      return { message: bytes.subarray(0, messageEnd), signaturesAt: messageEnd, signers, keysAt };
    }
    const [count, head] = shortvec(bytes, 0);
    const message = bytes.subarray(head + 64 * count);
    const versioned = (message[0] & 0x80) !== 0;
    if (versioned && (message[0] & 0x7f) !== 0) throw new Error(`unknown transaction version ${message[0] & 0x7f}`);
    const header = versioned ? 1 : 0;
    const [, keysHead] = shortvec(message, header + 3);
    return { message, signaturesAt: head, signers: message[header], keysAt: header + 3 + keysHead };
  }

  /** Sign a wire transaction (legacy or v0, and v1 where declared) this account must sign. */
  async function signOne(wire) {
    const bytes = new Uint8Array(wire);
    if (config.tamper) bytes[bytes.length - 1] ^= 1;
    const versions = config.versions ?? ["legacy", 0];
    if (bytes[0] === 0x81 && !versions.includes(1)) throw new Error("this wallet does not sign v1 transactions");
    const { message, signaturesAt, signers, keysAt } = layout(bytes);
    let index = -1;
    for (let i = 0; i < signers; i++) {
      const key = message.subarray(keysAt + 32 * i, keysAt + 32 * (i + 1));
      if (key.every((b, j) => b === publicKey[j])) index = i;
    }
    if (index < 0) throw new Error("this account is not a signer of the transaction");
    const signature = new Uint8Array(await crypto.subtle.sign("Ed25519", await keyPromise, message));
    const out = new Uint8Array(bytes);
    out.set(signature, signaturesAt + 64 * index);
    return out;
  }

  async function request(method, inputs) {
    requests.push({ method, inputs: inputs.length });
    const signing = requests.filter((r) => r.method !== "connect").length;
    if ((config.reject ?? []).includes(signing)) throw new Error("User rejected the request.");
    return Promise.all(inputs.map(async (input) => {
      if (input.account.address !== config.address) throw new Error("unknown account");
      return { signedTransaction: await signOne(input.transaction) };
    }));
  }

  /** Send a signed wire transaction to the wallet's own cluster, as a wallet does (preflight). */
  async function send(wire) {
    let text = "";
    for (const b of wire) text += String.fromCharCode(b);
    const body = { jsonrpc: "2.0", id: 1, method: "sendTransaction", params: [btoa(text), { encoding: "base64" }] };
    const answer = await (await fetch(config.rpc, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json();
    if (answer.error) throw new Error(`the wallet's cluster refused the transaction: ${answer.error.message}`);
  }

  async function signAndSend(inputs) {
    const signed = await request("signAndSendTransaction", inputs);
    return Promise.all(signed.map(async ({ signedTransaction }) => {
      if (!inputs[0].chain) throw new Error("signAndSendTransaction needs a chain");
      await send(signedTransaction);
      const { signaturesAt } = layout(signedTransaction);
      return { signature: signedTransaction.slice(signaturesAt, signaturesAt + 64) };
    }));
  }

  const wallet = {
    version: "1.0.0",
    name: config.name ?? "Test Wallet",
    icon: "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxIDEiLz4=",
    chains,
    get accounts() {
      return connected ? [account] : [];
    },
    features: {
      "standard:connect": {
        version: "1.0.0",
        connect: async () => {
          requests.push({ method: "connect", inputs: 0 });
          connected = true;
          listeners.forEach((l) => l({ accounts: [account] }));
          return { accounts: [account] };
        },
      },
      "standard:events": {
        version: "1.0.0",
        on: (event, listener) => {
          if (event !== "change") return () => {};
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
      },
      ...(signs
        ? {
            "solana:signTransaction": {
              version: "1.0.0",
              supportedTransactionVersions: config.versions ?? ["legacy", 0],
              signTransaction: (...inputs) => request("signTransaction", inputs),
            },
          }
        : {}),
      ...(config.signAndSend
        ? {
            "solana:signAndSendTransaction": {
              version: "1.0.0",
              supportedTransactionVersions: config.versions ?? ["legacy", 0],
              signAndSendTransaction: (...inputs) => signAndSend(inputs),
            },
          }
        : {}),
    },
  };

  const register = ({ register }) => register(wallet);
  class RegisterWalletEvent extends Event {
    constructor(callback) {
      super("wallet-standard:register-wallet", { bubbles: false, cancelable: false, composed: false });
      this.detail = callback;
    }
  }
  window.dispatchEvent(new RegisterWalletEvent(register));
  window.addEventListener("wallet-standard:app-ready", ({ detail }) => register(detail));
})();

/**
 * The weights hash: one SHA-256 chain over chunks of at most 65,536 bytes,
 * `running = sha256(running || chunk)` from 32 zero bytes, carried from one section to the
 * next, the chunks starting again at each section (curta_chain/artifact/hashing.py).
 *
 * Node hashes with node:crypto (synchronous, fast); a browser with WebCrypto.
 */

import { HASH_CHUNK_SIZE } from "./layout.js";

type Sha = (running: Uint8Array, chunk: Uint8Array) => Promise<Uint8Array>;

let sha: Sha | undefined;

async function chainStep(): Promise<Sha> {
  if (sha) return sha;
  const isNode = typeof process !== "undefined" && !!process.versions?.node;
  if (isNode) {
    const { createHash } = await import("node:crypto");
    sha = async (running, chunk) => new Uint8Array(createHash("sha256").update(running).update(chunk).digest());
  } else {
    const buffer = new Uint8Array(32 + HASH_CHUNK_SIZE);
    sha = async (running, chunk) => {
      buffer.set(running, 0);
      buffer.set(chunk, 32);
      return new Uint8Array(await crypto.subtle.digest("SHA-256", buffer.subarray(0, 32 + chunk.length)));
    };
  }
  return sha;
}

/** Called after each chunk with the bytes hashed so far. */
export type Progress = (hashedBytes: number) => void;

/**
 * Continue the chain from `running` over one section's bytes.
 *
 * @returns the running hash after the section's last chunk.
 */
export async function hashSection(section: Uint8Array, running: Uint8Array, onChunk?: (bytes: number) => void): Promise<Uint8Array> {
  const step = await chainStep();
  for (let offset = 0; offset < section.length; offset += HASH_CHUNK_SIZE) {
    const chunk = section.subarray(offset, offset + HASH_CHUNK_SIZE);
    running = await step(running, chunk);
    onChunk?.(chunk.length);
  }
  return running;
}

/**
 * The 32-byte weights hash of `sections` (section zero first), equal to `curta-chain hash`.
 *
 * @param onProgress told the bytes hashed so far after each 64 KiB chunk.
 */
export async function weightsCommitment(sections: Uint8Array[], onProgress?: Progress): Promise<Uint8Array> {
  let running: Uint8Array = new Uint8Array(32);
  let done = 0;
  for (const section of sections)
    running = await hashSection(section, running, (n) => onProgress?.((done += n)));
  return running;
}

/** The SHA-256 of `bytes` (node:crypto in Node, WebCrypto in a browser). */
export async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  const isNode = typeof process !== "undefined" && !!process.versions?.node;
  if (isNode) {
    const { createHash } = await import("node:crypto");
    return new Uint8Array(createHash("sha256").update(bytes).digest());
  }
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

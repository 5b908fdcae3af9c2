/** Number formats of the Python decoder's messages, so both name a byte the same way. */

/** `1234567` as `1,234,567` (Python's `{:,}`). */
export function commas(value: number | bigint): string {
  const text = BigInt(value).toString();
  const negative = text.startsWith("-");
  const digits = negative ? text.slice(1) : text;
  return (negative ? "-" : "") + digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** `value` as `0x` and at least `width` hex digits (Python's `{:#0{width+2}x}`). */
export function hex(value: number, width: number): string {
  return "0x" + value.toString(16).padStart(width, "0");
}

/** Bytes as a person reads them (Python's `shown_bytes`): printable ASCII as text, else hex. */
export function shownBytes(bytes: Uint8Array): string {
  const values = Array.from(bytes);
  if (values.length && values.every((b) => b > 0x20 && b < 0x7f)) {
    return String.fromCharCode(...values);
  }
  return values.length ? `${values.map((b) => b.toString(16).padStart(2, "0")).join(" ")} (hex)` : "nothing";
}

/** Bytes as lowercase hex. */
export function toHex(bytes: ArrayLike<number>): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Lowercase or uppercase hex as bytes. */
export function fromHex(text: string): Uint8Array {
  if (text.length % 2 || /[^0-9a-fA-F]/.test(text)) throw new Error(`not hex: ${text}`);
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

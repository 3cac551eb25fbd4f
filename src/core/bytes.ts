/**
 * Byte helpers shared by every layer: joins, UTF-8, hex, strict base64, and
 * the views WebCrypto accepts. No dependencies (core/ imports nothing).
 */

/** Bytes WebCrypto accepts: a view on a plain (not shared) ArrayBuffer. */
export type Bytes = Uint8Array<ArrayBuffer>;

/**
 * `bytes` as a view WebCrypto accepts. Copies only when the view sits on a
 * SharedArrayBuffer (WebCrypto refuses those); any other view is used as is,
 * including Node Buffers with an offset into a shared pool.
 */
export function asBytes(bytes: Uint8Array): Bytes {
  if (typeof SharedArrayBuffer !== "undefined" && bytes.buffer instanceof SharedArrayBuffer) {
    return new Uint8Array(bytes);
  }
  return bytes as Bytes;
}

/** The concatenation of `parts`. */
export function concatBytes(...parts: readonly Uint8Array[]): Bytes {
  return joinBytes(parts);
}

/** The concatenation of a list of byte arrays (no argument-count limit). */
export function joinBytes(parts: readonly Uint8Array[]): Bytes {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** UTF-8 bytes of `text`. */
export function utf8(text: string): Bytes {
  return new TextEncoder().encode(text);
}

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += byte.toString(16).padStart(2, "0");
  return out;
}

/**
 * Standard base64 (with padding) of `bytes`: the characters' ASCII codes
 * written into one array, decoded once. A string grown one character at a
 * time took 17.8 s for a 52 MB thread export, and its millions of pieces ran
 * a Playwright worker out of memory; `fromCharCode` over chunks, then `btoa`,
 * still took 0.8 s for 16 MiB (its spread arguments).
 */
export function toBase64(bytes: Uint8Array): string {
  // The alphabet as ASCII codes, then the padding `=` (made here: a module-level call would stay in every bundle).
  const codes = utf8("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=");
  const out = new Uint8Array(Math.ceil(bytes.length / 3) * 4);
  let o = 0;
  for (let i = 0; i < bytes.length; i += 3) {
    const rest = bytes.length - i;
    const n = (bytes[i]! << 16) | ((rest > 1 ? bytes[i + 1]! : 0) << 8) | (rest > 2 ? bytes[i + 2]! : 0);
    out[o++] = codes[n >> 18]!;
    out[o++] = codes[(n >> 12) & 63]!;
    out[o++] = codes[rest > 1 ? (n >> 6) & 63 : 64]!;
    out[o++] = codes[rest > 2 ? n & 63 : 64]!;
  }
  return new TextDecoder().decode(out);
}

/**
 * Decodes base64, standard or URL-safe, padding optional, surrounding
 * whitespace ignored. Strict otherwise: a key pasted with a typo must fail
 * loudly, not decode to different bytes (as `atob` tolerates some cases), so
 * the text is checked first and `atob` only decodes it.
 */
export function fromBase64(text: string): Bytes {
  const clean = text.trim().replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  if (!/^[A-Za-z0-9+/]*$/.test(clean) || clean.length % 4 === 1) {
    throw new TypeError("Invalid base64: expected only A-Z, a-z, 0-9, +, / (or - and _) and optional = padding.");
  }
  const binary = atob(clean);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Bytes of lower-case (or upper-case) hex. */
export function fromHex(hex: string): Bytes {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** True for a Uint8Array of any realm (values read back from IndexedDB may come from another one). */
export function isUint8Array(value: unknown): value is Uint8Array {
  return Object.prototype.toString.call(value) === "[object Uint8Array]";
}

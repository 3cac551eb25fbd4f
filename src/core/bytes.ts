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

const BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Standard base64 (with padding) of `bytes`. */
export function toBase64(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const a = bytes[i]!;
    const b = bytes[i + 1];
    const c = bytes[i + 2];
    out += BASE64_ALPHABET[a >> 2];
    out += BASE64_ALPHABET[((a & 3) << 4) | ((b ?? 0) >> 4)];
    out += b === undefined ? "=" : BASE64_ALPHABET[((b & 15) << 2) | ((c ?? 0) >> 6)];
    out += c === undefined ? "=" : BASE64_ALPHABET[c & 63];
  }
  return out;
}

/**
 * Decodes base64, standard or URL-safe, padding optional, surrounding
 * whitespace ignored. Strict otherwise: a key pasted with a typo must fail
 * loudly, not decode to different bytes (as `atob` tolerates some cases).
 */
export function fromBase64(text: string): Bytes {
  const clean = text.trim().replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  if (!/^[A-Za-z0-9+/]*$/.test(clean) || clean.length % 4 === 1) {
    throw new TypeError("Invalid base64: expected only A-Z, a-z, 0-9, +, / (or - and _) and optional = padding.");
  }
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let index = 0;
  for (const char of clean) {
    value = (value << 6) | BASE64_ALPHABET.indexOf(char);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (value >> bits) & 0xff;
    }
  }
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

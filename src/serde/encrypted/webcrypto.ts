/**
 * Stateless WebCrypto helpers for EncryptedSerializer: PBKDF2 key derivation,
 * AES-GCM with associated data, data-key wrapping, key ids, and the byte and
 * base64 plumbing around them. No key, counter or cache lives here; the
 * serializer owns all state.
 *
 * Everything is `crypto.subtle`, so it runs the same in pages, workers and
 * Node 20, needs no dependency, and the key bytes of non-extractable keys
 * never reach JavaScript.
 */

/** Bytes WebCrypto accepts: a view on a plain (not shared) ArrayBuffer. */
export type Bytes = Uint8Array<ArrayBuffer>;

/** AES-GCM IV length: 96 bits, the size GCM is designed for (NIST SP 800-38D §8.2). */
export const IV_BYTES = 12;

/** AES-GCM authentication tag length: the full 128 bits. */
export const TAG_BYTES = 16;

/** Length of a key id (see {@link keyId}). */
export const KEY_ID_BYTES = 8;

/** What a key is used for: data encryption, and wrapping other keys. */
export const AES_KEY_USAGES: readonly KeyUsage[] = ["encrypt", "decrypt", "wrapKey", "unwrapKey"];

/**
 * `crypto.subtle`, or an error that says why it is missing. Browsers only
 * expose it in secure contexts: an app served over plain http from a LAN
 * address has no WebCrypto at all.
 */
export function subtle(): SubtleCrypto {
  const value = (globalThis as { crypto?: Crypto }).crypto?.subtle;
  if (!value) {
    throw new Error(
      "WebCrypto (crypto.subtle) is not available. Browsers only provide it in secure contexts: serve the page over https or from localhost. In Node, use version 20 or later.",
    );
  }
  return value;
}

/** `n` cryptographically random bytes. */
export function randomBytes(n: number): Bytes {
  const bytes = new Uint8Array(n);
  globalThis.crypto.getRandomValues(bytes);
  return bytes;
}

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

/**
 * An AES-GCM-256 key from a passphrase: PBKDF2-HMAC-SHA256 over `salt` with
 * `iterations` rounds, non-extractable. PBKDF2 is the only password KDF
 * WebCrypto offers; OWASP asks for at least 600,000 rounds of it.
 */
export async function deriveAesKey(passphrase: Uint8Array, salt: Uint8Array, iterations: number): Promise<CryptoKey> {
  const material = await subtle().importKey("raw", asBytes(passphrase), "PBKDF2", false, ["deriveKey"]);
  return subtle().deriveKey(
    { name: "PBKDF2", hash: "SHA-256", salt: asBytes(salt), iterations },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    [...AES_KEY_USAGES],
  );
}

/** A non-extractable AES-GCM key from 16 or 32 raw bytes. */
export function importAesKey(raw: Uint8Array): Promise<CryptoKey> {
  return subtle().importKey("raw", asBytes(raw), { name: "AES-GCM" }, false, [...AES_KEY_USAGES]);
}

/** A fresh random AES-GCM-256 key. */
export function generateAesKey(extractable: boolean): Promise<CryptoKey> {
  return subtle().generateKey({ name: "AES-GCM", length: 256 }, extractable, [...AES_KEY_USAGES]);
}

/** AES-GCM encryption of `plaintext` under `key` with `iv` and associated data `aad`: ciphertext ‖ 16-byte tag. */
export async function aesGcmEncrypt(key: CryptoKey, iv: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Promise<Bytes> {
  const sealed = await subtle().encrypt(
    { name: "AES-GCM", iv: asBytes(iv), additionalData: asBytes(aad), tagLength: TAG_BYTES * 8 },
    key,
    asBytes(plaintext),
  );
  return new Uint8Array(sealed);
}

/**
 * AES-GCM decryption. Rejects (WebCrypto's `OperationError`) when the key,
 * IV, associated data, ciphertext or tag differ in any bit from what was
 * encrypted: GCM never returns unauthenticated plaintext.
 */
export async function aesGcmDecrypt(key: CryptoKey, iv: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Promise<Bytes> {
  const plain = await subtle().decrypt(
    { name: "AES-GCM", iv: asBytes(iv), additionalData: asBytes(aad), tagLength: TAG_BYTES * 8 },
    key,
    asBytes(sealed),
  );
  return new Uint8Array(plain);
}

/**
 * Wraps (encrypts) the AES key `dek` under `kek` with AES-GCM and associated
 * data `aad`. The result is the same bytes as `aesGcmEncrypt(kek, iv,
 * rawBytesOf(dek), aad)`; `wrapKey` is used when `kek` allows it, so the data
 * key's bytes never enter JavaScript. `dek` must be extractable (WebCrypto's
 * rule for wrapping), which is why a data key is only extractable while it
 * is being wrapped.
 */
export async function wrapAesKey(kek: CryptoKey, dek: CryptoKey, iv: Uint8Array, aad: Uint8Array): Promise<Bytes> {
  const params: AesGcmParams = { name: "AES-GCM", iv: asBytes(iv), additionalData: asBytes(aad), tagLength: TAG_BYTES * 8 };
  if (kek.usages.includes("wrapKey")) {
    return new Uint8Array(await subtle().wrapKey("raw", dek, kek, params));
  }
  const raw = new Uint8Array(await subtle().exportKey("raw", dek));
  try {
    return await aesGcmEncrypt(kek, iv, raw, aad);
  } finally {
    raw.fill(0);
  }
}

/**
 * Unwraps an AES-GCM data key wrapped by {@link wrapAesKey}. Rejects with
 * WebCrypto's `OperationError` when `kek` or `aad` is not the one it was
 * wrapped with. `extractable` only while re-wrapping it under another key.
 */
export async function unwrapAesKey(
  kek: CryptoKey,
  wrapped: Uint8Array,
  iv: Uint8Array,
  aad: Uint8Array,
  extractable: boolean,
): Promise<CryptoKey> {
  const params: AesGcmParams = { name: "AES-GCM", iv: asBytes(iv), additionalData: asBytes(aad), tagLength: TAG_BYTES * 8 };
  const usages: KeyUsage[] = ["encrypt", "decrypt"];
  if (kek.usages.includes("unwrapKey")) {
    return subtle().unwrapKey("raw", asBytes(wrapped), kek, params, { name: "AES-GCM" }, extractable, usages);
  }
  const raw = await aesGcmDecrypt(kek, iv, wrapped, aad);
  try {
    return await subtle().importKey("raw", raw, { name: "AES-GCM" }, extractable, usages);
  } finally {
    raw.fill(0);
  }
}

/** The fixed IV of the key-id computation, never a random one (see {@link keyId}). */
const KEY_ID_IV = utf8("lg-idb-keyid"); // 12 bytes
const KEY_ID_AAD = utf8("langgraph-checkpoint-indexeddb:key-id:v1");

/**
 * A short public fingerprint of an AES-GCM key (8 bytes), so an envelope can
 * say which key sealed it, and a wrong key is reported as such instead of as
 * tampering.
 *
 * Non-extractable keys cannot be hashed directly, so this is a key check
 * value in the spirit of the banking "encrypt zeros" KCV, made safe for GCM:
 * the key seals the *empty* message under a fixed IV and fixed associated
 * data, which yields only the 16-byte tag `GHASH_H(aad) ⊕ AES_K(J0)`, no
 * keystream. The tag's SHA-256, cut to 8 bytes, is the id. Learning it tells
 * an attacker nothing usable: forging needs `H`, and the fixed IV would only
 * matter if a random data IV ever equalled it (2^-96 per value). Brute-forcing
 * a passphrase through it costs the same PBKDF2 work as through the wrapped
 * data key kept next to it.
 */
export async function keyId(key: CryptoKey): Promise<Bytes> {
  const tag = await aesGcmEncrypt(key, KEY_ID_IV, new Uint8Array(0), KEY_ID_AAD);
  const digest = new Uint8Array(await subtle().digest("SHA-256", tag));
  return digest.slice(0, KEY_ID_BYTES);
}

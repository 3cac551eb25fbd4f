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
import { asBytes, utf8, type Bytes } from "../../core/bytes.js";
import { IndexedDBCheckpointError } from "../../core/errors.js";

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
    throw new IndexedDBCheckpointError(
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

/** AES-GCM parameters: a 96-bit IV, the associated data, a 128-bit tag. */
function gcmParams(iv: Uint8Array, aad: Uint8Array): AesGcmParams {
  return { name: "AES-GCM", iv: asBytes(iv), additionalData: asBytes(aad), tagLength: TAG_BYTES * 8 };
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
export async function aesGcmEncrypt(
  key: CryptoKey,
  iv: Uint8Array,
  plaintext: Uint8Array,
  aad: Uint8Array,
): Promise<Bytes> {
  const sealed = await subtle().encrypt(gcmParams(iv, aad), key, asBytes(plaintext));
  return new Uint8Array(sealed);
}

/**
 * AES-GCM decryption. Rejects (WebCrypto's `OperationError`) when the key,
 * IV, associated data, ciphertext or tag differ in any bit from what was
 * encrypted: GCM never returns unauthenticated plaintext.
 */
export async function aesGcmDecrypt(
  key: CryptoKey,
  iv: Uint8Array,
  sealed: Uint8Array,
  aad: Uint8Array,
): Promise<Bytes> {
  const plain = await subtle().decrypt(gcmParams(iv, aad), key, asBytes(sealed));
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
  const params = gcmParams(iv, aad);
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
  const params = gcmParams(iv, aad);
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

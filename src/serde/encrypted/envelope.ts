/**
 * The envelope of one encrypted value (format version, binding, key id,
 * inner type, IV, ciphertext and tag) and its associated data: how a value
 * is sealed to its row and opened only there. The byte layout is specified
 * in docs/encryption.md ("Formats"); frozen: see the golden files.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { RowRef } from "../protocol.js";
import { IV_BYTES, KEY_ID_BYTES, TAG_BYTES, aesGcmDecrypt, aesGcmEncrypt, randomBytes } from "./webcrypto.js";
import { DecryptionError } from "../../core/errors.js";
import { type Bytes, asBytes, concatBytes, utf8, toHex } from "../../core/bytes.js";

/** The suffix added to the inner serializer's type tag. */
export const AES_GCM_SUFFIX = "+aes-gcm";

/** The envelope format version this module writes (byte 0 of every value). */
export const ENVELOPE_VERSION = 1;

/** PBKDF2-HMAC-SHA256 rounds used by `fromPassphrase` unless told otherwise (OWASP, 2023). */
export const DEFAULT_PBKDF2_ITERATIONS = 600_000;

/** Fixed part of the header: version, binding, key id, inner type length. */
export const FIXED_HEADER_BYTES = 3 + KEY_ID_BYTES;

/** The shortest envelope: a 1-byte inner type, the IV, an empty ciphertext and the tag. */
export const MIN_ENVELOPE_BYTES = FIXED_HEADER_BYTES + 1 + IV_BYTES + TAG_BYTES;

/** Binding byte: sealed by `dumpsTyped` for the serializer's fixed context. */
export const BIND_CONTEXT = 0;
/** Binding byte: sealed by `dumpsTypedForRow` for one row. */
export const BIND_ROW = 1;

/** Domain separation of value envelopes' associated data: a value can never be taken for a wrapped key, or the reverse. */
export const DOMAIN = utf8("langgraph-checkpoint-indexeddb:aes-gcm:v1");
/** Domain separation of wrapped data keys' associated data (see {@link DOMAIN}). */
export const WRAP_DOMAIN = utf8("langgraph-checkpoint-indexeddb:aes-gcm:dek:v1");

/** What {@link inspectEnvelope} reads from an encrypted value's header. */
export interface EnvelopeInfo {
  /** Envelope format version. */
  version: number;
  /** The inner serializer's type tag. */
  innerType: string;
  /** Key id (hex) of the key that sealed it. */
  keyId: string;
  /** Whether it was bound to a row or to the serializer's fixed context. */
  binding: "row" | "context";
}

/** What a value is bound to: the associated data besides the header. */
export type Binding = { kind: typeof BIND_CONTEXT; context: string } | { kind: typeof BIND_ROW; row: RowRef };

/** A key that seals or opens envelopes, with its id. */
export interface SealingKey {
  readonly id: Bytes;
  readonly hex: string;
  readonly key: CryptoKey;
}

/** The keys a serializer opens (by id) and the one it seals with. */
export interface Keyring {
  readonly current: SealingKey;
  readonly byId: ReadonlyMap<string, SealingKey>;
}

/** Everything besides keys that decides how values are sealed and opened. */
export interface SealOptions {
  readonly inner: SerializerProtocol;
  readonly allowPlaintext: boolean;
  readonly context: string;
}

// ------------------------------------------------------------------ bytes

/** `str(s)` of the associated data: length, then UTF-16 code units, big-endian. */
export function pushString(out: number[], text: string): void {
  pushU32(out, text.length);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    out.push(unit >> 8, unit & 0xff);
  }
}

/** Appends `n` as 4 big-endian bytes (lengths in the associated data). */
export function pushU32(out: number[], n: number): void {
  out.push((n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

/** Appends `n` as an 8-byte big-endian float, -0 as 0 (numbers in row keys). */
export function pushF64(out: number[], n: number): void {
  const view = new DataView(new ArrayBuffer(8));
  // -0 and 0 are one IndexedDB key; bind them alike.
  view.setFloat64(0, Object.is(n, -0) ? 0 : n);
  for (let i = 0; i < 8; i++) out.push(view.getUint8(i));
}

/** The associated data of one value (docs/encryption.md, "Formats"). */
export function associatedData(header: Uint8Array, binding: Binding): Bytes {
  const tail: number[] = [];
  if (binding.kind === BIND_CONTEXT) {
    pushString(tail, binding.context);
  } else {
    pushU32(tail, binding.row.length);
    for (const part of binding.row) {
      if (typeof part === "string") {
        tail.push(0x73);
        pushString(tail, part);
      } else if (typeof part === "number") {
        tail.push(0x6e);
        pushF64(tail, part);
      } else {
        throw new TypeError(`A row reference holds only strings and numbers, got ${typeof part}.`);
      }
    }
  }
  return concatBytes(DOMAIN, header, new Uint8Array(tail));
}

/** Associated data of a wrapped data key: which KEK wrapped which DEK. */
export function wrapAad(kekId: Uint8Array, dekId: Uint8Array): Bytes {
  return concatBytes(WRAP_DOMAIN, kekId, dekId);
}

/** A binding in words, for error messages naming the row or context a value failed under. */
export function describeBinding(binding: Binding): string {
  return binding.kind === BIND_ROW
    ? `row ${JSON.stringify(binding.row)}`
    : `context ${JSON.stringify(binding.context)}`;
}

// ------------------------------------------------------------------ envelopes

/** An envelope's fields, as views into its bytes. */
export interface Envelope {
  readonly version: number;
  readonly binding: number;
  /** Key id, hex. */
  readonly keyId: string;
  readonly innerType: string;
  /** Everything before the IV (authenticated as associated data). */
  readonly header: Bytes;
  readonly iv: Bytes;
  /** Ciphertext and tag. */
  readonly sealed: Bytes;
}

/** Splits `bytes` into envelope fields, or says why they are not an envelope. */
export function splitEnvelope(bytes: Bytes): Envelope | string {
  if (bytes.length < MIN_ENVELOPE_BYTES) {
    return `it is ${bytes.length} bytes, shorter than any AES-GCM envelope (${MIN_ENVELOPE_BYTES}); it was truncated or altered`;
  }
  const version = bytes[0]!;
  if (version !== ENVELOPE_VERSION) {
    return `envelope format version ${version} is unknown (this package writes version ${ENVELOPE_VERSION}); a newer version of langgraph-checkpoint-indexeddb wrote it, or it was altered`;
  }
  const binding = bytes[1]!;
  const typeLength = bytes[FIXED_HEADER_BYTES - 1]!;
  const headerEnd = FIXED_HEADER_BYTES + typeLength;
  if (
    (binding !== BIND_CONTEXT && binding !== BIND_ROW) ||
    typeLength === 0 ||
    headerEnd + IV_BYTES + TAG_BYTES > bytes.length
  ) {
    return "its envelope header is malformed; it was altered";
  }
  let innerType: string;
  try {
    innerType = new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(FIXED_HEADER_BYTES, headerEnd));
  } catch {
    return "its envelope header is malformed; it was altered";
  }
  return {
    version,
    binding,
    keyId: toHex(bytes.subarray(2, 2 + KEY_ID_BYTES)),
    innerType,
    header: bytes.subarray(0, headerEnd),
    iv: bytes.subarray(headerEnd, headerEnd + IV_BYTES),
    sealed: bytes.subarray(headerEnd + IV_BYTES),
  };
}

/**
 * Reads the header of an encrypted value without decrypting it, for tools
 * and tests (which key sealed each row, for example). Returns `undefined`
 * when `data` is not an envelope. Nothing here is authenticated until the
 * value is actually decrypted.
 */
export function inspectEnvelope(data: Uint8Array): EnvelopeInfo | undefined {
  const envelope = splitEnvelope(asBytes(data));
  if (typeof envelope === "string") return undefined;
  return {
    version: envelope.version,
    innerType: envelope.innerType,
    keyId: envelope.keyId,
    binding: envelope.binding === BIND_ROW ? "row" : "context",
  };
}

/** Encrypts the inner serializer's bytes into an envelope. */
export async function sealBytes(
  key: SealingKey,
  innerType: string,
  data: Uint8Array,
  binding: Binding,
): Promise<[string, Uint8Array]> {
  const typeBytes = utf8(innerType);
  if (typeBytes.length === 0 || typeBytes.length > 255) {
    throw new TypeError(`The inner serializer's type tag must be 1 to 255 bytes, got ${JSON.stringify(innerType)}.`);
  }
  const header = concatBytes(
    new Uint8Array([ENVELOPE_VERSION, binding.kind]),
    key.id,
    new Uint8Array([typeBytes.length]),
    typeBytes,
  );
  const iv = randomBytes(IV_BYTES);
  const sealed = await aesGcmEncrypt(key.key, iv, data, associatedData(header, binding));
  return [innerType + AES_GCM_SUFFIX, concatBytes(header, iv, sealed)];
}

/**
 * Decides what a stored value is: our envelope (returned), plaintext that may
 * be read (`undefined`), or anything else (a DecryptionError saying why).
 */
export function classify(
  ring: Keyring,
  options: SealOptions,
  type: string,
  data: Uint8Array | string,
  binding: Binding,
): Envelope | undefined {
  const envelope =
    typeof data === "string" ? "it is a string, but encrypted values are bytes" : splitEnvelope(asBytes(data));
  if (type.endsWith(AES_GCM_SUFFIX)) {
    if (typeof envelope === "string")
      throw new DecryptionError(`Cannot decrypt the value of ${describeBinding(binding)}: ${envelope}.`);
    const tagged = type.slice(0, -AES_GCM_SUFFIX.length);
    if (tagged !== envelope.innerType) {
      throw new DecryptionError(
        `Cannot decrypt the value of ${describeBinding(binding)}: its type tag says "${tagged}" but its envelope says "${envelope.innerType}". It was altered.`,
      );
    }
    return envelope;
  }
  // MemorySaver drops type tags and hands our envelopes back as "json": an
  // envelope under one of our keys is ours whatever its tag. Without
  // allowPlaintext, anything shaped like an envelope is treated as one, so a
  // foreign key is reported as such.
  if (
    typeof envelope !== "string" &&
    !type.includes("+") &&
    (ring.byId.has(envelope.keyId) || !options.allowPlaintext)
  ) {
    return envelope;
  }
  assertPlaintextAllowed(options, type, binding);
  return undefined;
}

/** Decrypts an envelope to the inner serializer's bytes, or fails with a DecryptionError saying why. */
export async function openEnvelope(ring: Keyring, envelope: Envelope, binding: Binding): Promise<Bytes> {
  const where = describeBinding(binding);
  const key = ring.byId.get(envelope.keyId);
  if (!key) {
    throw new DecryptionError(
      `Cannot decrypt the value of ${where}: it was encrypted under another key (key id ${envelope.keyId}; this serializer has ${[...ring.byId.keys()].join(", ")}). Wrong passphrase or key, or a value copied from another database.`,
    );
  }
  if (envelope.binding !== binding.kind) {
    const written = envelope.binding === BIND_ROW ? "for a row (dumpsTypedForRow)" : "without a row (dumpsTyped)";
    throw new DecryptionError(
      `Cannot decrypt the value of ${where}: it was written ${written}. It was copied from elsewhere or altered.`,
    );
  }
  try {
    return await aesGcmDecrypt(key.key, envelope.iv, envelope.sealed, associatedData(envelope.header, binding));
  } catch (error) {
    throw new DecryptionError(
      `Cannot decrypt the value of ${where}: authentication failed. The value was altered, or it was written to another row or context.`,
      { cause: error },
    );
  }
}

/** Serializes with the inner serde and seals the result under the ring's current key. */
export async function seal(
  ring: Keyring,
  options: SealOptions,
  value: unknown,
  binding: Binding,
): Promise<[string, Uint8Array]> {
  const [innerType, data] = await options.inner.dumpsTyped(value);
  return sealBytes(ring.current, innerType, data, binding);
}

/** Opens a stored value (or passes plaintext through, if allowed) and deserializes it with the inner serde. */
export async function open(
  ring: Keyring,
  options: SealOptions,
  type: string,
  data: Uint8Array | string,
  binding: Binding,
): Promise<unknown> {
  const envelope = classify(ring, options, type, data, binding);
  if (!envelope) return options.inner.loadsTyped(type, data);
  return options.inner.loadsTyped(envelope.innerType, await openEnvelope(ring, envelope, binding));
}

/** Fails closed on a value that is not ours: plaintext (unless allowed) or another scheme's ciphertext. */
export function assertPlaintextAllowed(options: SealOptions, type: string, binding: Binding): void {
  if (type.includes("+")) {
    throw new DecryptionError(
      `Cannot decrypt the value of ${describeBinding(binding)}: its type "${type}" is encrypted in a format this serializer does not read (only "${AES_GCM_SUFFIX}"; "+aes" is Python's EAX format).`,
    );
  }
  if (!options.allowPlaintext) {
    throw new DecryptionError(
      `Refusing the unencrypted value (type "${type}") of ${describeBinding(binding)}: this EncryptedSerializer only reads encrypted values. If the data was written before encryption was turned on, pass \`allowPlaintext: true\` while migrating.`,
    );
  }
}

/**
 * `EncryptedSerializer`: a `SerializerProtocol` that encrypts what an inner
 * serializer produces with AES-GCM (WebCrypto), for any LangGraph.js
 * checkpoint saver, and with two extras when it serves IndexedDBSaver or
 * IndexedDBStore (see binding.ts): every value is bound to its row, and rows
 * are encrypted under a random data key kept wrapped in the database.
 *
 * ## Envelope (format version 1)
 *
 * A value is stored as `[type, bytes]` where `type` is the inner type plus
 * `+aes-gcm` (`msgpack+aes-gcm`, `json+aes-gcm`, `bytes+aes-gcm`; never
 * `+aes`, which is Python's EAX format) and `bytes` is:
 *
 * | offset   | size   | field                                                          |
 * |---------:|-------:|----------------------------------------------------------------|
 * | 0        | 1      | format version, `0x01`                                         |
 * | 1        | 1      | binding: `0x00` fixed context (`dumpsTyped`), `0x01` row (`dumpsTypedForRow`) |
 * | 2        | 8      | key id of the sealing key (`keyId` in crypto.ts)               |
 * | 10       | 1      | L, length of the inner type tag in bytes (1-255)               |
 * | 11       | L      | the inner serializer's type tag, UTF-8 (`msgpack`)             |
 * | 11+L     | 12     | IV, fresh random bytes for every value                          |
 * | 23+L     | n + 16 | AES-GCM ciphertext of the inner serializer's n bytes, then the 128-bit tag |
 *
 * Overhead: 39 + L bytes per value (46 for msgpack). Everything before the
 * IV is the header; the associated data (authenticated, not stored) is
 *
 * ```
 * "langgraph-checkpoint-indexeddb:aes-gcm:v1" ‖ header ‖ binding
 * binding (context) = str(context)
 * binding (row)     = u32(part count) ‖ per part: 0x73 ‖ str(part) for a string,
 *                                                  0x6E ‖ float64 for a number
 * str(s)            = u32(s.length) ‖ s as UTF-16 code units
 * ```
 *
 * (all integers big-endian). So neither the header (which key, which inner
 * type decides how the plaintext is parsed) nor the row can change without
 * failing authentication. Strings go in as UTF-16 code units, not UTF-8, so
 * two ids that differ only in lone surrogates still bind differently.
 *
 * The inner type is in the envelope, not only in the type tag, because
 * MemorySaver (and possibly other savers) drop the tag and call
 * `loadsTyped("json", bytes)`: an envelope under one of our keys is
 * recognised and opened whatever tag it comes with, and the tag, when it is
 * there, must agree with the header.
 *
 * ## Keys
 *
 * The key a serializer is made with is a key-encryption key (KEK). Used with
 * any saver through `dumpsTyped`, it seals values itself. Used with
 * IndexedDBSaver/IndexedDBStore, `forDatabase` makes a random AES-256 data
 * key (DEK) per database, wraps it under the KEK, and the storage keeps that
 * {@link AesGcmKeyRecord} in its `meta` store; rows are sealed with the DEK.
 * A new passphrase re-wraps the DEK (`rewrapFor`), no row changes; a new DEK
 * (`beginRekey`/`endRekey`, driven by `rekeyDatabase` in binding.ts)
 * re-encrypts rows.
 *
 * ## IV budget
 *
 * IVs are 96 random bits per value. NIST SP 800-38D §8.3 caps random-IV
 * AES-GCM at 2^32 encryptions per key (keeping the chance of a repeated IV
 * under 2^-32). A DEK is per database and every checkpoint, channel value,
 * pending write or store item written costs one encryption: a million writes
 * a day would take over 11,000 years to get there. `rekeyDatabase` starts a
 * fresh DEK (a fresh budget) whenever an app wants one; the passphrase KEK
 * itself only ever encrypts the few wrapped DEKs.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type {
DataKeyRotation,
DatabaseBinding,
KeyRecord,
RekeyableSerializer,
RewrappableSerializer,
RowBoundSerializer,
RowRef,
} from "../protocol.js";
import { IV_BYTES,KEY_ID_BYTES,TAG_BYTES,aesGcmDecrypt,aesGcmEncrypt,deriveAesKey,generateAesKey,importAesKey,keyId,randomBytes,unwrapAesKey,wrapAesKey } from "./webcrypto.js";
import { DecryptionError } from "../../core/errors.js";
import { MsgpackSerializer } from "../msgpack/index.js";
import { type Bytes,asBytes,concatBytes,utf8,toHex,fromBase64,fromHex,isUint8Array } from "../../core/bytes.js";

/** The suffix added to the inner serializer's type tag. */
export const AES_GCM_SUFFIX = "+aes-gcm";

/** The envelope format version this module writes (byte 0 of every value). */
export const ENVELOPE_VERSION = 1;

/** PBKDF2-HMAC-SHA256 rounds used by `fromPassphrase` unless told otherwise (OWASP, 2023). */
export const DEFAULT_PBKDF2_ITERATIONS = 600_000;

/** Fixed part of the header: version, binding, key id, inner type length. */
const FIXED_HEADER_BYTES = 3 + KEY_ID_BYTES;

/** The shortest envelope: a 1-byte inner type, the IV, an empty ciphertext and the tag. */
const MIN_ENVELOPE_BYTES = FIXED_HEADER_BYTES + 1 + IV_BYTES + TAG_BYTES;

/** Binding byte: sealed by `dumpsTyped` for the serializer's fixed context. */
const BIND_CONTEXT = 0;
/** Binding byte: sealed by `dumpsTypedForRow` for one row. */
const BIND_ROW = 1;

const DOMAIN = utf8("langgraph-checkpoint-indexeddb:aes-gcm:v1");
const WRAP_DOMAIN = utf8("langgraph-checkpoint-indexeddb:aes-gcm:dek:v1");

/** Options shared by every factory of {@link EncryptedSerializer}. */
export interface EncryptedSerializerOptions {
  /** The serializer whose output is encrypted. Default: a new `MsgpackSerializer`. */
  serde?: SerializerProtocol;
  /**
   * Read values that were stored unencrypted (their type has no `+aes-gcm`)
   * instead of failing with `DecryptionError`. Only for migrating data
   * written before encryption was turned on: while it is set, anyone who can
   * write to the storage can plant plaintext values. New values are always
   * encrypted.
   */
  allowPlaintext?: boolean;
  /**
   * What `dumpsTyped`/`loadsTyped` bind values to (the associated data), for
   * savers that do not name rows (MemorySaver, the official server savers).
   * Such savers can only get a fixed context: a value moved between their
   * rows still decrypts. Default `""`. Values written with one context do not
   * read with another, so separate apps sharing a key can keep apart.
   */
  context?: string;
}

/** Options of {@link EncryptedSerializer.fromPassphrase}. */
export interface PassphraseOptions extends EncryptedSerializerOptions {
  /**
   * PBKDF2 salt, not secret but required: a string (UTF-8) or bytes. Use 16
   * random bytes per user or database, stored next to the data (NIST SP
   * 800-132); the same passphrase and salt always give the same key.
   */
  salt: string | Uint8Array;
  /**
   * PBKDF2-HMAC-SHA256 rounds. Default {@link DEFAULT_PBKDF2_ITERATIONS}
   * (600,000, ~0.2-1 s). Lower it only in tests: it is what makes guessing
   * passphrases against a stolen database slow.
   */
  iterations?: number;
}

/** One data key, wrapped under the KEK, as kept in {@link AesGcmKeyRecord}. */
export interface WrappedDataKey {
  /** The data key's key id, hex: the id its envelopes carry. */
  readonly id: string;
  /** IV of the wrapping. */
  readonly iv: Uint8Array;
  /** AES-GCM of the raw 32-byte key under the KEK (+ 16-byte tag). */
  readonly wrapped: Uint8Array;
  /** When the key was made (ms since epoch), for people looking at the record. */
  readonly created: number;
}

/**
 * The key record EncryptedSerializer keeps in a database's `meta` store. It
 * holds no secret: the data keys are wrapped, and `kek` is a key check that
 * lets a wrong passphrase be reported before any row is read.
 */
export interface AesGcmKeyRecord extends KeyRecord {
  readonly kind: "aes-gcm";
  /** Record format version. */
  readonly v: 1;
  /** Key id (hex) of the KEK that wrapped `keys`: the key check. */
  readonly kek: string;
  /**
   * The data keys: the first seals new rows; any others are retired keys
   * still read while `rekeyDatabase` re-encrypts rows (or after it was
   * interrupted).
   */
  readonly keys: readonly WrappedDataKey[];
}

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
type Binding = { kind: typeof BIND_CONTEXT; context: string } | { kind: typeof BIND_ROW; row: RowRef };

/** A key that seals or opens envelopes, with its id. */
interface SealingKey {
  readonly id: Bytes;
  readonly hex: string;
  readonly key: CryptoKey;
}

/** The keys a serializer opens (by id) and the one it seals with. */
interface Keyring {
  readonly current: SealingKey;
  readonly byId: ReadonlyMap<string, SealingKey>;
}

/** Everything besides keys that decides how values are sealed and opened. */
interface SealOptions {
  readonly inner: SerializerProtocol;
  readonly allowPlaintext: boolean;
  readonly context: string;
}

// ------------------------------------------------------------------ bytes

/** `str(s)` of the associated data: length, then UTF-16 code units, big-endian. */
function pushString(out: number[], text: string): void {
  pushU32(out, text.length);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    out.push(unit >> 8, unit & 0xff);
  }
}

function pushU32(out: number[], n: number): void {
  out.push((n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

function pushF64(out: number[], n: number): void {
  const view = new DataView(new ArrayBuffer(8));
  // -0 and 0 are one IndexedDB key; bind them alike.
  view.setFloat64(0, Object.is(n, -0) ? 0 : n);
  for (let i = 0; i < 8; i++) out.push(view.getUint8(i));
}

/** The associated data of one value (see the module comment). */
function associatedData(header: Uint8Array, binding: Binding): Bytes {
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
function wrapAad(kekId: Uint8Array, dekId: Uint8Array): Bytes {
  return concatBytes(WRAP_DOMAIN, kekId, dekId);
}

function describeBinding(binding: Binding): string {
  return binding.kind === BIND_ROW ? `row ${JSON.stringify(binding.row)}` : `context ${JSON.stringify(binding.context)}`;
}

// ------------------------------------------------------------------ envelopes

/** An envelope's fields, as views into its bytes. */
interface Envelope {
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
function splitEnvelope(bytes: Bytes): Envelope | string {
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
  if ((binding !== BIND_CONTEXT && binding !== BIND_ROW) || typeLength === 0 || headerEnd + IV_BYTES + TAG_BYTES > bytes.length) {
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
async function sealBytes(key: SealingKey, innerType: string, data: Uint8Array, binding: Binding): Promise<[string, Uint8Array]> {
  const typeBytes = utf8(innerType);
  if (typeBytes.length === 0 || typeBytes.length > 255) {
    throw new TypeError(`The inner serializer's type tag must be 1 to 255 bytes, got ${JSON.stringify(innerType)}.`);
  }
  const header = concatBytes(new Uint8Array([ENVELOPE_VERSION, binding.kind]), key.id, new Uint8Array([typeBytes.length]), typeBytes);
  const iv = randomBytes(IV_BYTES);
  const sealed = await aesGcmEncrypt(key.key, iv, data, associatedData(header, binding));
  return [innerType + AES_GCM_SUFFIX, concatBytes(header, iv, sealed)];
}

/**
 * Decides what a stored value is: our envelope (returned), plaintext that may
 * be read (`undefined`), or anything else (a DecryptionError saying why).
 */
function classify(ring: Keyring, options: SealOptions, type: string, data: Uint8Array | string, binding: Binding): Envelope | undefined {
  const envelope = typeof data === "string" ? "it is a string, but encrypted values are bytes" : splitEnvelope(asBytes(data));
  if (type.endsWith(AES_GCM_SUFFIX)) {
    if (typeof envelope === "string") throw new DecryptionError(`Cannot decrypt the value of ${describeBinding(binding)}: ${envelope}.`);
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
  if (typeof envelope !== "string" && !type.includes("+") && (ring.byId.has(envelope.keyId) || !options.allowPlaintext)) {
    return envelope;
  }
  assertPlaintextAllowed(options, type, binding);
  return undefined;
}

/** Decrypts an envelope to the inner serializer's bytes, or fails with a DecryptionError saying why. */
async function openEnvelope(ring: Keyring, envelope: Envelope, binding: Binding): Promise<Bytes> {
  const where = describeBinding(binding);
  const key = ring.byId.get(envelope.keyId);
  if (!key) {
    throw new DecryptionError(
      `Cannot decrypt the value of ${where}: it was encrypted under another key (key id ${envelope.keyId}; this serializer has ${[...ring.byId.keys()].join(", ")}). Wrong passphrase or key, or a value copied from another database.`,
    );
  }
  if (envelope.binding !== binding.kind) {
    const written = envelope.binding === BIND_ROW ? "for a row (dumpsTypedForRow)" : "without a row (dumpsTyped)";
    throw new DecryptionError(`Cannot decrypt the value of ${where}: it was written ${written}. It was copied from elsewhere or altered.`);
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
async function seal(ring: Keyring, options: SealOptions, value: unknown, binding: Binding): Promise<[string, Uint8Array]> {
  const [innerType, data] = await options.inner.dumpsTyped(value);
  return sealBytes(ring.current, innerType, data, binding);
}

/** Opens a stored value (or passes plaintext through, if allowed) and deserializes it with the inner serde. */
async function open(ring: Keyring, options: SealOptions, type: string, data: Uint8Array | string, binding: Binding): Promise<unknown> {
  const envelope = classify(ring, options, type, data, binding);
  if (!envelope) return options.inner.loadsTyped(type, data);
  return options.inner.loadsTyped(envelope.innerType, await openEnvelope(ring, envelope, binding));
}

/** Fails closed on a value that is not ours: plaintext (unless allowed) or another scheme's ciphertext. */
function assertPlaintextAllowed(options: SealOptions, type: string, binding: Binding): void {
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

// ------------------------------------------------------------------ key records

/** Validates a stored key record's shape, or fails with a DecryptionError. */
function parseRecord(stored: KeyRecord): AesGcmKeyRecord {
  if (stored.kind !== "aes-gcm") {
    throw new DecryptionError(
      `This database's key record was written by a "${String(stored.kind)}" serializer, not by EncryptedSerializer (aes-gcm). Open it with the serializer it was created with.`,
    );
  }
  const record = stored as Partial<AesGcmKeyRecord>;
  if (record.v !== 1) {
    throw new DecryptionError(
      `This database's key record has version ${String(record.v)}; this package reads version 1. It was written by a newer version of langgraph-checkpoint-indexeddb, or altered.`,
    );
  }
  const hex16 = /^[0-9a-f]{16}$/;
  const valid =
    typeof record.kek === "string" &&
    hex16.test(record.kek) &&
    Array.isArray(record.keys) &&
    record.keys.length > 0 &&
    record.keys.every(
      (entry: Partial<WrappedDataKey>) =>
        typeof entry === "object" &&
        entry !== null &&
        typeof entry.id === "string" &&
        hex16.test(entry.id) &&
        isUint8Array(entry.iv) &&
        entry.iv.length === IV_BYTES &&
        isUint8Array(entry.wrapped) &&
        entry.wrapped.length > TAG_BYTES,
    );
  if (!valid) throw new DecryptionError("This database's encryption key record is malformed: it was altered.");
  return record as AesGcmKeyRecord;
}

/** A keyring from unwrapped data keys, the first one current. */
function ringOf(keys: readonly SealingKey[]): Keyring {
  return { current: keys[0]!, byId: new Map(keys.map((key) => [key.hex, key])) };
}

function resolveOptions(options: EncryptedSerializerOptions | undefined): SealOptions {
  const inner = options?.serde ?? new MsgpackSerializer();
  if (typeof inner.dumpsTyped !== "function" || typeof inner.loadsTyped !== "function") {
    throw new TypeError("EncryptedSerializer: `serde` must be a SerializerProtocol (with dumpsTyped and loadsTyped).");
  }
  const context = options?.context ?? "";
  if (typeof context !== "string") throw new TypeError("EncryptedSerializer: `context` must be a string.");
  return { inner, allowPlaintext: options?.allowPlaintext === true, context };
}

// ------------------------------------------------------------------ serializers

/**
 * Encrypts every value of a LangGraph.js checkpoint saver or store with
 * AES-GCM-256 (WebCrypto), around an inner serializer. Works with any
 * `BaseCheckpointSaver`; with IndexedDBSaver and IndexedDBStore it also binds
 * each value to its row and keeps a wrapped data key in the database, so a
 * wrong passphrase fails at open and a passphrase change re-encrypts nothing.
 *
 * Fails closed: plaintext, another scheme's ciphertext, a wrong key, a value
 * moved to another row and any flipped bit are all `DecryptionError`, never
 * garbage (plaintext can be let through with `allowPlaintext` for migration).
 *
 * The threat model (what this protects against in a browser, and what it
 * does not) is in docs/encryption.md.
 *
 * @example
 * ```ts
 * const serde = await EncryptedSerializer.fromPassphrase(passphrase, { salt: "my-app:user-42" });
 * const checkpointer = new IndexedDBSaver({ dbName: "my-app", serde });
 *
 * // Or a key the page can use but never read, kept in IndexedDB itself:
 * const key = await EncryptedSerializer.generateKey();
 * const serde2 = EncryptedSerializer.fromKey(key);
 *
 * // Any other saver (values bound to a fixed context instead of rows):
 * const memory = new MemorySaver(serde);
 * ```
 */
export class EncryptedSerializer implements RowBoundSerializer, RewrappableSerializer, RekeyableSerializer {
  /** The key-encryption key; seals values itself when no database key is in use. */
  readonly #kek: CryptoKey;
  readonly #options: SealOptions;
  #ring: Promise<Keyring> | undefined;

  /** Use the static factories: they check and prepare the key. */
  private constructor(kek: CryptoKey, options: SealOptions) {
    this.#kek = kek;
    this.#options = options;
  }

  /**
   * A serializer whose key is derived from a passphrase with
   * PBKDF2-HMAC-SHA256 (600,000 rounds by default). The same passphrase,
   * salt and rounds give the same key in any browser or Node. The passphrase
   * is Unicode-normalized (NFC) first, so it types the same on every device.
   *
   * @param passphrase A non-empty string.
   * @param options `salt` (required), `iterations`, and the common options.
   */
  static async fromPassphrase(passphrase: string, options: PassphraseOptions): Promise<EncryptedSerializer> {
    if (typeof passphrase !== "string" || passphrase === "") {
      throw new TypeError("EncryptedSerializer.fromPassphrase: the passphrase must be a non-empty string.");
    }
    const { salt, iterations = DEFAULT_PBKDF2_ITERATIONS } = options ?? ({} as PassphraseOptions);
    const saltBytes = typeof salt === "string" ? utf8(salt) : isUint8Array(salt) ? salt : undefined;
    if (!saltBytes || saltBytes.length === 0) {
      throw new TypeError(
        "EncryptedSerializer.fromPassphrase: `salt` is required, a non-empty string or Uint8Array. Use 16 random bytes per user or database, stored next to the data (it is not secret), e.g. crypto.getRandomValues(new Uint8Array(16)).",
      );
    }
    if (!Number.isSafeInteger(iterations) || iterations < 1) {
      throw new TypeError(`EncryptedSerializer.fromPassphrase: \`iterations\` must be a positive integer (default ${DEFAULT_PBKDF2_ITERATIONS}).`);
    }
    const resolved = resolveOptions(options);
    const kek = await deriveAesKey(utf8(passphrase.normalize("NFC")), saltBytes, iterations);
    return new EncryptedSerializer(kek, resolved);
  }

  /**
   * A serializer from raw key bytes, for Node, workers and tests: the
   * counterpart of Python's `LANGGRAPH_AES_KEY`. 16 or 32 bytes (AES-128 or
   * AES-256); 24-byte AES-192 keys are refused because Chromium has no
   * AES-192. A string is read as base64 (standard or URL-safe). Python reads
   * `LANGGRAPH_AES_KEY` as the raw UTF-8 bytes of the string; to use the same
   * key, pass `new TextEncoder().encode(process.env.LANGGRAPH_AES_KEY)`.
   * (The data format is not Python's either way: AES-GCM, not EAX.)
   *
   * @param key The key: bytes, or their base64.
   * @param options The common options.
   */
  static async fromRawKey(key: Uint8Array | ArrayBuffer | string, options?: EncryptedSerializerOptions): Promise<EncryptedSerializer> {
    const raw =
      typeof key === "string" ? fromBase64(key) : key instanceof ArrayBuffer ? new Uint8Array(key) : isUint8Array(key) ? key : undefined;
    if (!raw) throw new TypeError("EncryptedSerializer.fromRawKey: pass a Uint8Array, an ArrayBuffer or a base64 string.");
    if (raw.length !== 16 && raw.length !== 32) {
      throw new TypeError(
        `EncryptedSerializer.fromRawKey: an AES key is 16 or 32 bytes, got ${raw.length}${raw.length === 24 ? " (AES-192 is not supported: Chromium's WebCrypto lacks it)" : ""}. Make one with crypto.getRandomValues(new Uint8Array(32)).`,
      );
    }
    const resolved = resolveOptions(options);
    return new EncryptedSerializer(await importAesKey(raw), resolved);
  }

  /**
   * A serializer for an existing WebCrypto key: an AES-GCM `CryptoKey` with
   * `encrypt` and `decrypt` usages (and `wrapKey`/`unwrapKey`, to keep the
   * data key's bytes inside WebCrypto; without them it is wrapped through
   * `encrypt`). Typically one made by {@link EncryptedSerializer.generateKey}
   * and kept in IndexedDB.
   *
   * @param key The key; it may be non-extractable.
   * @param options The common options.
   */
  static fromKey(key: CryptoKey, options?: EncryptedSerializerOptions): EncryptedSerializer {
    const algorithm = (key as { algorithm?: { name?: string } } | null)?.algorithm;
    if (typeof key !== "object" || key === null || algorithm?.name !== "AES-GCM" || key.type !== "secret") {
      throw new TypeError(
        `EncryptedSerializer.fromKey: expected an AES-GCM CryptoKey, got ${algorithm?.name ?? typeof key}. Make one with EncryptedSerializer.generateKey().`,
      );
    }
    if (!key.usages.includes("encrypt") || !key.usages.includes("decrypt")) {
      throw new TypeError(
        `EncryptedSerializer.fromKey: the key needs the "encrypt" and "decrypt" usages (it has ${key.usages.join(", ") || "none"}).`,
      );
    }
    return new EncryptedSerializer(key, resolveOptions(options));
  }

  /**
   * A new random AES-GCM-256 key, non-extractable: the page can use it but
   * never read its bytes. A `CryptoKey` survives structured clone, so it can
   * be stored in IndexedDB as is and survives reloads:
   *
   * ```ts
   * let key = await idbKeyval.get("key");
   * if (!key) await idbKeyval.set("key", (key = await EncryptedSerializer.generateKey()));
   * const serde = EncryptedSerializer.fromKey(key);
   * ```
   *
   * Anyone who can read the origin's storage can use it too (it is next to
   * the data): it protects against copying the database elsewhere, not
   * against code running in the page. See docs/encryption.md.
   */
  static generateKey(): Promise<CryptoKey> {
    return generateAesKey(false);
  }

  /** The key id (hex) of this serializer's own key, as its envelopes and key records name it. */
  async keyId(): Promise<string> {
    return (await this.#kekRing()).current.hex;
  }

  /** The KEK as a one-key ring, for values sealed without a database key. */
  #kekRing(): Promise<Keyring> {
    this.#ring ??= keyId(this.#kek).then((id) => ringOf([{ id, hex: toHex(id), key: this.#kek }]));
    return this.#ring;
  }

  /** Serializes with the inner serializer and encrypts under this serializer's key, bound to the fixed `context`. */
  async dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    return seal(await this.#kekRing(), this.#options, value, { kind: BIND_CONTEXT, context: this.#options.context });
  }

  /** Decrypts a value from {@link dumpsTyped} and deserializes it. */
  async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    return open(await this.#kekRing(), this.#options, type, data, { kind: BIND_CONTEXT, context: this.#options.context });
  }

  /** Like `dumpsTyped`, bound to `row` instead of the fixed context. */
  async dumpsTypedForRow(value: unknown, row: RowRef): Promise<[string, Uint8Array]> {
    return seal(await this.#kekRing(), this.#options, value, { kind: BIND_ROW, row });
  }

  /** Like `loadsTyped`, for a value written by `dumpsTypedForRow(…, row)`; any other row fails. */
  async loadsTypedForRow(type: string, data: Uint8Array | string, row: RowRef): Promise<unknown> {
    return open(await this.#kekRing(), this.#options, type, data, { kind: BIND_ROW, row });
  }

  /**
   * The serializer for one database. On a fresh database (`stored`
   * undefined), makes a random data key and returns it wrapped, as the
   * record to keep. Otherwise unwraps the stored data keys; a wrong
   * passphrase or key fails here with `DecryptionError`, before any row is
   * read.
   */
  async forDatabase(stored: KeyRecord | undefined): Promise<DatabaseBinding> {
    if (stored === undefined) {
      const { record, ring } = await this.#newDataKey([], []);
      return { serde: new DatabaseSerializer(ring, this.#options), record };
    }
    const ring = await this.#openRecord(parseRecord(stored));
    return { serde: new DatabaseSerializer(ring, this.#options) };
  }

  /**
   * The stored key record re-wrapped under `next`'s key: a passphrase or key
   * change that re-encrypts no row. Fails with `DecryptionError` if this
   * serializer's key does not open `stored`, and checks that `next` opens
   * the result before returning it.
   *
   * @param stored The database's current key record.
   * @param next An EncryptedSerializer with the new passphrase or key.
   */
  async rewrapFor(stored: KeyRecord, next: SerializerProtocol): Promise<KeyRecord> {
    if (!(next instanceof EncryptedSerializer)) {
      throw new TypeError(
        "Changing the key of an encrypted database needs another EncryptedSerializer. To stop encrypting, copy the threads into a new database with a plain serializer.",
      );
    }
    const record = parseRecord(stored);
    const ours = await this.#checkKek(record);
    const theirs = (await next.#kekRing()).current.id;
    const keys = await Promise.all(
      record.keys.map(async (entry): Promise<WrappedDataKey> => {
        const dekId = fromHex(entry.id);
        const dek = await this.#unwrap(ours, entry, true);
        const iv = randomBytes(IV_BYTES);
        return { id: entry.id, iv, wrapped: await wrapAesKey(next.#kek, dek, iv, wrapAad(theirs, dekId)), created: entry.created };
      }),
    );
    const rewrapped: AesGcmKeyRecord = { kind: "aes-gcm", v: 1, kek: toHex(theirs), keys };
    await next.#openRecord(rewrapped);
    return rewrapped;
  }

  /**
   * Starts replacing the database's data key: a record whose first key is a
   * fresh data key and whose others are the old ones (still read), and the
   * function that re-encrypts one value under the new key. Resumes instead
   * (same record) when an earlier rekey was interrupted.
   */
  async beginRekey(stored: KeyRecord | undefined): Promise<DataKeyRotation> {
    if (stored === undefined) {
      const { record, ring } = await this.#newDataKey([], []);
      return { record, rewrite: rewriterOf(ring, this.#options) };
    }
    const record = parseRecord(stored);
    const ring = await this.#openRecord(record);
    if (record.keys.length > 1) return { record, rewrite: rewriterOf(ring, this.#options) };
    const next = await this.#newDataKey(record.keys, [...ring.byId.values()]);
    return { record: next.record, rewrite: rewriterOf(next.ring, this.#options) };
  }

  /** Ends a rekey: the record with only its current data key, once no row uses the others. */
  async endRekey(stored: KeyRecord): Promise<KeyRecord> {
    const record = parseRecord(stored);
    await this.#openRecord(record);
    return { kind: "aes-gcm", v: 1, kek: record.kek, keys: [record.keys[0]!] } satisfies AesGcmKeyRecord;
  }

  /** This serializer's KEK id, after checking `record` was wrapped by it (the key check). */
  async #checkKek(record: AesGcmKeyRecord): Promise<SealingKey> {
    const ours = (await this.#kekRing()).current;
    if (record.kek !== ours.hex) {
      throw new DecryptionError(
        `Wrong passphrase or key: this database's data key is locked by key ${record.kek}, and this EncryptedSerializer's key is ${ours.hex}. Nothing was read. Check the passphrase (or key), and that the salt and iterations are the ones the database was created with.`,
      );
    }
    return ours;
  }

  /** Unwraps one data key of `record` (wrapped by `kek`). */
  async #unwrap(kek: SealingKey, entry: WrappedDataKey, extractable: boolean): Promise<CryptoKey> {
    try {
      return await unwrapAesKey(this.#kek, entry.wrapped, entry.iv, wrapAad(kek.id, fromHex(entry.id)), extractable);
    } catch (error) {
      throw new DecryptionError(
        "Wrong passphrase or key: the database's data key does not unwrap with this EncryptedSerializer's key (or the key record was altered). Nothing was read.",
        { cause: error },
      );
    }
  }

  /** Unwraps every data key of `record` into a keyring, checking each one's id. */
  async #openRecord(record: AesGcmKeyRecord): Promise<Keyring> {
    const kek = await this.#checkKek(record);
    const keys = await Promise.all(
      record.keys.map(async (entry): Promise<SealingKey> => {
        const key = await this.#unwrap(kek, entry, false);
        const id = await keyId(key);
        if (toHex(id) !== entry.id) {
          throw new DecryptionError("This database's encryption key record is inconsistent (a data key's id does not match): it was altered.");
        }
        return { id, hex: entry.id, key };
      }),
    );
    return ringOf(keys);
  }

  /**
   * A fresh data key, wrapped under the KEK, ahead of `retired` (entries and
   * their unwrapped keys), as a record and a ring.
   */
  async #newDataKey(
    retired: readonly WrappedDataKey[],
    retiredKeys: readonly SealingKey[],
  ): Promise<{ record: AesGcmKeyRecord; ring: Keyring }> {
    const kek = (await this.#kekRing()).current;
    // Extractable only so wrapKey accepts it; the copy we use is unwrapped non-extractable.
    const dek = await generateAesKey(true);
    const id = await keyId(dek);
    const iv = randomBytes(IV_BYTES);
    const entry: WrappedDataKey = { id: toHex(id), iv, wrapped: await wrapAesKey(this.#kek, dek, iv, wrapAad(kek.id, id)), created: Date.now() };
    const usable = await this.#unwrap(kek, entry, false);
    const record: AesGcmKeyRecord = { kind: "aes-gcm", v: 1, kek: kek.hex, keys: [entry, ...retired] };
    return { record, ring: ringOf([{ id, hex: entry.id, key: usable }, ...retiredKeys]) };
  }
}

/**
 * The serializer `forDatabase` hands to IndexedDBSaver/IndexedDBStore: rows
 * sealed with the database's data key, opened with any of its keys.
 */
class DatabaseSerializer implements RowBoundSerializer {
  readonly #ring: Keyring;
  readonly #options: SealOptions;

  constructor(ring: Keyring, options: SealOptions) {
    this.#ring = ring;
    this.#options = options;
  }

  dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    return seal(this.#ring, this.#options, value, { kind: BIND_CONTEXT, context: this.#options.context });
  }

  loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    return open(this.#ring, this.#options, type, data, { kind: BIND_CONTEXT, context: this.#options.context });
  }

  dumpsTypedForRow(value: unknown, row: RowRef): Promise<[string, Uint8Array]> {
    return seal(this.#ring, this.#options, value, { kind: BIND_ROW, row });
  }

  loadsTypedForRow(type: string, data: Uint8Array | string, row: RowRef): Promise<unknown> {
    return open(this.#ring, this.#options, type, data, { kind: BIND_ROW, row });
  }
}

/**
 * Re-encrypts one stored row value under the ring's current key, without
 * going through the inner serializer (its bytes are kept exactly). Returns
 * `undefined` when the value already is under the current key. Plaintext
 * values are encrypted when `allowPlaintext` is set (finishing a migration),
 * and fail otherwise, as reading them would.
 */
function rewriterOf(ring: Keyring, options: SealOptions): DataKeyRotation["rewrite"] {
  return async ([type, data], row) => {
    const binding: Binding = { kind: BIND_ROW, row };
    const envelope = classify(ring, options, type, data, binding);
    if (!envelope) return sealBytes(ring.current, type, typeof data === "string" ? utf8(data) : data, binding);
    if (envelope.keyId === ring.current.hex) return undefined;
    return sealBytes(ring.current, envelope.innerType, await openEnvelope(ring, envelope, binding), binding);
  };
}

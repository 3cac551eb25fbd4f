/**
 * The database's key record: the data keys, each wrapped by the key
 * encryption key, and the keyring built from it; and the rewriter that moves
 * values to the newest data key.
 */
import type { KeyRecord } from "../protocol.js";
import type { DataKeyRotation } from "../rekey.js";
import { IV_BYTES, TAG_BYTES } from "./webcrypto.js";
import { DecryptionError } from "../../core/errors.js";
import { MsgpackSerializer } from "../msgpack/index.js";
import { utf8, isUint8Array } from "../../core/bytes.js";
import type { EncryptedSerializerOptions } from "./options.js";
import {
  BIND_ROW,
  type Binding,
  type Keyring,
  type SealOptions,
  type SealingKey,
  classify,
  openEnvelope,
  sealBytes,
} from "./envelope.js";

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

// ------------------------------------------------------------------ key records

/** Validates a stored key record's shape, or fails with a DecryptionError. */
export function parseRecord(stored: KeyRecord): AesGcmKeyRecord {
  // The record is a `meta` row anyone with the profile's files can edit: it may hold anything, even null
  // (an object without a kind was written by no serializer: not a record of another one).
  if (typeof stored !== "object" || stored === null || Array.isArray(stored) || typeof stored.kind !== "string") {
    throw new DecryptionError("This database's encryption key record is malformed: it was altered.");
  }
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
    // Array.from: `every` skips a sparse array's holes, which structured clone keeps (an edited record).
    Array.from(record.keys).every(
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
export function ringOf(keys: readonly SealingKey[]): Keyring {
  return { current: keys[0]!, byId: new Map(keys.map((key) => [key.hex, key])) };
}

/** Validates `EncryptedSerializer` options and fills in the defaults (MsgpackSerializer inside, no plaintext, empty context). */
export function resolveOptions(options: EncryptedSerializerOptions | undefined): SealOptions {
  const inner = options?.serde ?? new MsgpackSerializer();
  if (typeof inner.dumpsTyped !== "function" || typeof inner.loadsTyped !== "function") {
    throw new TypeError("EncryptedSerializer: `serde` must be a SerializerProtocol (with dumpsTyped and loadsTyped).");
  }
  const context = options?.context ?? "";
  if (typeof context !== "string") throw new TypeError("EncryptedSerializer: `context` must be a string.");
  return { inner, allowPlaintext: options?.allowPlaintext === true, context };
}

/**
 * Re-encrypts one stored row value under the ring's current key, without
 * going through the inner serializer (its bytes are kept exactly). Returns
 * `undefined` when the value already is under the current key. Plaintext
 * values are encrypted when `allowPlaintext` is set (finishing a migration),
 * and fail otherwise, as reading them would.
 */
export function rewriterOf(ring: Keyring, options: SealOptions): DataKeyRotation["rewrite"] {
  return async (typed, row) => {
    // A row altered outside the package may hold anything here: name it, not what classify trips on.
    const [type, data] = Array.isArray(typed) ? typed : [];
    if (typeof type !== "string" || !(isUint8Array(data) || typeof data === "string")) {
      throw new DecryptionError(
        `Cannot decrypt the value of row ${JSON.stringify(row)}: it is not a [type, bytes] pair; it was altered.`,
      );
    }
    const binding: Binding = { kind: BIND_ROW, row };
    const envelope = classify(ring, options, type, data, binding);
    if (!envelope) return sealBytes(ring.current, type, typeof data === "string" ? utf8(data) : data, binding);
    if (envelope.keyId === ring.current.hex) return undefined;
    return sealBytes(ring.current, envelope.innerType, await openEnvelope(ring, envelope, binding), binding);
  };
}

/**
 * The small protocol between a storage class (IndexedDBSaver, IndexedDBStore)
 * and its serializer, for serializers that need more than `dumpsTyped`:
 *
 * - row binding: the storage class names the row every value is written to,
 *   and a serializer that understands it (EncryptedSerializer) makes that
 *   name part of the value (AES-GCM associated data), so a value copied into
 *   another row no longer reads;
 * - per-database keys: the serializer keeps a record in the database's `meta`
 *   store (a wrapped data key and a key check), read before any data is.
 *
 * Any other `SerializerProtocol` (JsonPlusSerializer, MsgpackSerializer, an
 * app's own) works unchanged: the storage class falls back to plain
 * `dumpsTyped`/`loadsTyped`.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { sameClone } from "../core/equality.js";
import { DecryptionError, IndexedDBCheckpointError } from "../core/errors.js";

/**
 * Names the row a value lives in, most significant part first, for example
 * `["blob", threadId, checkpointNs, channel, version]`.
 */
export type RowRef = readonly (string | number)[];

/** A serializer that binds each value to the row it is stored in. */
export interface RowBoundSerializer extends SerializerProtocol {
  /** Like `dumpsTyped`, for a value that will be stored in `row`. */
  dumpsTypedForRow(value: unknown, row: RowRef): Promise<[string, Uint8Array]>;
  /** Like `loadsTyped`, for a value read from `row`; fails if it was written to another row. */
  loadsTypedForRow(type: string, data: Uint8Array | string, row: RowRef): Promise<unknown>;
}

/**
 * What a keyed serializer keeps in a database's `meta` store: opaque to the
 * storage class, structured-cloneable (it may hold a `CryptoKey`).
 */
export interface KeyRecord {
  /** Who wrote the record, e.g. `"aes-gcm"`. */
  readonly kind: string;
  readonly [field: string]: unknown;
}

/** The serializer to use for one database, and the key record to store if new. */
export interface DatabaseBinding {
  /** The serializer that reads and writes this database's rows. */
  serde: SerializerProtocol;
  /** A record to store in `meta` (first use, or after a key change). */
  record?: KeyRecord;
}

/** A serializer with per-database key material kept in the database itself. */
export interface DatabaseKeyedSerializer extends SerializerProtocol {
  /**
   * Given the database's stored key record (undefined on a fresh database),
   * returns the serializer for that database. Throws `DecryptionError` when
   * the key does not open the record: a wrong passphrase fails here, before
   * any row is read.
   */
  forDatabase(stored: KeyRecord | undefined, database?: DatabaseInfo): Promise<DatabaseBinding>;
  /**
   * The id of the key that the serializer bound to `stored` seals new values
   * under (synchronous: it is checked inside write transactions). Without
   * it, storage classes can only tell whether a key record exists.
   */
  sealingKeyId?(stored: KeyRecord): string;
}

/** What a keyed serializer may ask of the database it binds to, when it has no key record. */
export interface DatabaseInfo {
  /** The database's name, for error messages. */
  readonly name: string;
  /** Whether the database already holds values (a missing key record then means it was lost or removed). */
  populated(): Promise<boolean>;
}

/** True when `serde` binds values to rows. */
export function isRowBound(serde: SerializerProtocol): serde is RowBoundSerializer {
  const candidate = serde as Partial<RowBoundSerializer>;
  return typeof candidate.dumpsTypedForRow === "function" && typeof candidate.loadsTypedForRow === "function";
}

/** True when `serde` keeps key material in the database. */
export function isDatabaseKeyed(serde: SerializerProtocol): serde is DatabaseKeyedSerializer {
  return typeof (serde as Partial<DatabaseKeyedSerializer>).forDatabase === "function";
}

/**
 * Serializes `value` for `row`, binding it when the serializer can.
 * @internal
 */
export function dumpForRow(serde: SerializerProtocol, value: unknown, row: RowRef): Promise<[string, Uint8Array]> {
  return isRowBound(serde) ? serde.dumpsTypedForRow(value, row) : serde.dumpsTyped(value);
}

/**
 * Deserializes a value read from `row`, checking the binding when the serializer can.
 * @internal
 */
export function loadForRow(
  serde: SerializerProtocol,
  type: string,
  data: Uint8Array | string,
  row: RowRef,
): Promise<unknown> {
  return isRowBound(serde) ? serde.loadsTypedForRow(type, data, row) : serde.loadsTyped(type, data);
}

/** A serializer bound to a database, and the id of the key it seals under (none: the database has no key record). */
export interface BoundSerializer {
  readonly serde: SerializerProtocol;
  readonly keyId: string | undefined;
}

/**
 * The id of the key values are sealed under in a database whose key record
 * is `stored`, as `serde` (the storage class's configured serializer) names
 * it: `undefined` without a record, the record's kind when `serde` cannot
 * name the key (then only the record's presence is compared).
 * @internal
 */
export function keyIdOf(serde: SerializerProtocol | undefined, stored: KeyRecord | undefined): string | undefined {
  if (stored === undefined) return undefined;
  const keyed = serde && isDatabaseKeyed(serde) ? serde : undefined;
  return keyed?.sealingKeyId?.(stored) ?? String(stored.kind);
}

/**
 * Thrown inside a write transaction whose values were sealed under a key the
 * database no longer uses (another tab ran `rekey` or `changeKey`): it aborts
 * the transaction, so nothing is written. {@link withCurrentKey} handles it.
 * @internal
 */
export class StaleKeyWrite extends Error {}

/**
 * Throws {@link StaleKeyWrite} unless `current` (the key id read in the write
 * transaction itself) is the one the values were sealed under.
 * @internal
 */
export function checkKeyId(bound: BoundSerializer, current: string | undefined): void {
  if (current !== bound.keyId) throw new StaleKeyWrite();
}

/**
 * Runs a write (`attempt`: serialize with the bound serializer, then one
 * transaction that calls {@link checkKeyId}) and, when another tab changed
 * the database's key meanwhile, binds again from the new key record and
 * runs it once more. When this storage's key does not open the new record
 * (a new passphrase), or the key changed again, fails with
 * `KeyChangedError`: never a write under a retired key.
 * @internal
 */
export async function withCurrentKey<T>(
  dbName: string,
  bind: () => Promise<BoundSerializer>,
  unbind: () => void,
  attempt: (bound: BoundSerializer) => Promise<T>,
): Promise<T> {
  for (let tries = 0; ; tries++) {
    const bound = await bind();
    try {
      return await attempt(bound);
    } catch (error) {
      if (!(error instanceof StaleKeyWrite)) throw error;
      unbind();
      // Rare: the rest (and the error's text) loads on demand.
      const { keyChanged } = await import("./key-change.js");
      if (tries > 0) throw keyChanged(dbName, error, "changed again");
      try {
        await bind();
      } catch (bindError) {
        throw keyChanged(dbName, bindError);
      }
    }
  }
}

/**
 * Resolves the serializer a storage class uses for its database: the serde
 * itself, or, for a keyed serde, the binding made from the database's stored
 * key record. `readRecord`/`addRecord` are the storage class's own meta
 * accessors; `addRecord` must fail (resolve false) when a record already
 * exists, so two tabs opening a fresh database agree on one key.
 * @internal
 */
export async function bindSerializer(
  serde: SerializerProtocol,
  readRecord: () => Promise<KeyRecord | undefined>,
  addRecord: (record: KeyRecord) => Promise<boolean>,
  putRecord: (record: KeyRecord) => Promise<void>,
  database?: DatabaseInfo,
): Promise<BoundSerializer> {
  if (!isDatabaseKeyed(serde)) {
    // Fail closed: an encrypted database must not take plaintext rows from
    // a saver that was opened without its key.
    const stored = await readRecord();
    if (stored !== undefined) {
      throw new DecryptionError(
        `This database is encrypted (${stored.kind}); open it with an EncryptedSerializer and its passphrase or key.`,
      );
    }
    return { serde, keyId: undefined };
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    const stored = await readRecord();
    const binding = await serde.forDatabase(stored, database);
    const bound = { serde: binding.serde, keyId: keyIdOf(serde, binding.record ?? stored) };
    if (!binding.record) return bound;
    if (stored === undefined) {
      // Another tab may have created the key meanwhile: then use theirs.
      if (await addRecord(binding.record)) return bound;
      continue;
    }
    await putRecord(binding.record);
    return bound;
  }
  throw new IndexedDBCheckpointError("Could not agree on an encryption key record with another tab; try again.");
}

// ---------------------------------------------------------------- key changes
//
// Additive protocol for changing keys. The storage class provides two small
// pieces (a compare-and-swap on its key record, and a pass over its stored
// values) and calls `changeDatabaseKey` or `rekeyDatabase`; the serializer
// does all the cryptography.

/** A serialized value as a storage class keeps it. */
export type StoredValue = readonly [type: string, data: Uint8Array | string];

/**
 * Re-encodes one stored value that lives in `row`: resolves to the value to
 * store instead, or `undefined` when it is already current (leave it).
 */
export type ValueRewriter = (value: StoredValue, row: RowRef) => Promise<[string, Uint8Array] | undefined>;

/** The storage class's access to its key record in `meta`. */
export interface KeyRecordAccess {
  /** The stored key record, if any. */
  read(): Promise<KeyRecord | undefined>;
  /**
   * Stores `next` if the record is still `expected` (compare with
   * {@link sameClone}, in the same transaction as the put), and resolves
   * whether it did. On success the storage class must also drop the
   * serializer it bound (its cached `bindSerializer` result), so its next
   * operation binds again from the new record.
   */
  replace(expected: KeyRecord | undefined, next: KeyRecord): Promise<boolean>;
}

/** A keyed serializer that can re-wrap its database's key record under another serializer's key. */
export interface RewrappableSerializer extends DatabaseKeyedSerializer {
  /**
   * The record `stored` re-wrapped for `next` (a new passphrase or key). Fails
   * with `DecryptionError` when this serializer does not open `stored`, and
   * with a `TypeError` when `next` cannot take it over.
   */
  rewrapFor(stored: KeyRecord, next: SerializerProtocol): Promise<KeyRecord>;
}

/** A data key change in progress: the record to store, and how to re-encode each value. */
export interface DataKeyRotation {
  /** The record with the new data key current and the old ones still readable. */
  record: KeyRecord;
  /** Re-encrypts one value under the new data key (`undefined`: already is). */
  rewrite: ValueRewriter;
}

/** A keyed serializer that can replace its database's data key. */
export interface RekeyableSerializer extends DatabaseKeyedSerializer {
  /** Starts a data key change for the database holding `stored` (a fresh key, even after an interrupted one). */
  beginRekey(stored: KeyRecord | undefined): Promise<DataKeyRotation>;
  /** The record without the retired data keys, once no value uses them. */
  endRekey(stored: KeyRecord): Promise<KeyRecord>;
}

/** True when `serde` can re-wrap a database key record. */
export function isRewrappable(serde: SerializerProtocol): serde is RewrappableSerializer {
  return isDatabaseKeyed(serde) && typeof (serde as Partial<RewrappableSerializer>).rewrapFor === "function";
}

/** True when `serde` can replace a database's data key. */
export function isRekeyable(serde: SerializerProtocol): serde is RekeyableSerializer {
  const candidate = serde as Partial<RekeyableSerializer>;
  return (
    isDatabaseKeyed(serde) && typeof candidate.beginRekey === "function" && typeof candidate.endRekey === "function"
  );
}

/** Options of `changeKey` (IndexedDBSaver and IndexedDBStore). */
export interface ChangeKeyOptions {
  /**
   * Only re-wrap the data key under the new passphrase or key: instant
   * whatever the database's size, but the data key stays the same, so the
   * old passphrase plus any old copy of the key record (a backup, disk
   * residue) still decrypts every value, including values written after the
   * change. For a passphrase that leaked, leave it off (the default): the
   * data key is then replaced and every value re-encrypted.
   */
  rewrapOnly?: boolean;
}

/** How often a key change retries when another tab changed the record meanwhile. */
const RECORD_ATTEMPTS = 3;

/**
 * Changes the key (passphrase) of a database from `current`'s to `next`'s
 * by re-wrapping its data key: no value is re-encrypted, so it is instant
 * whatever the database's size, and a crash leaves either the old or the new
 * record (one put). Afterwards only `next` opens the stored record; but the
 * data key is the same, so an old copy of the record (a backup, disk
 * residue) plus the old passphrase still opens every value, old and new:
 * follow with {@link rekeyDatabase} under `next` to retire it. On a database
 * with no key record yet (nothing encrypted under a database key) it does
 * nothing and resolves false: `next` makes the record on first use. When
 * `next` already opens the record (an interrupted change run again), it
 * leaves it as is.
 *
 * The storage class then uses `next` as its serializer.
 * @internal
 */
export async function changeDatabaseKey(
  current: SerializerProtocol,
  next: SerializerProtocol,
  records: KeyRecordAccess,
): Promise<boolean> {
  for (let attempt = 0; attempt < RECORD_ATTEMPTS; attempt++) {
    const stored = await records.read();
    if (stored === undefined) return false;
    if (!isRewrappable(current)) {
      throw new TypeError(
        `This database's values are encrypted (key record "${stored.kind}"), but its current serializer cannot re-wrap the key. Open it with the EncryptedSerializer it was created with.`,
      );
    }
    // Resuming a change whose re-wrap was stored but whose re-encryption was cut off.
    if (
      isDatabaseKeyed(next) &&
      (await next.forDatabase(stored).then(
        (b) => !b.record,
        () => false,
      ))
    )
      return true;
    const record = await current.rewrapFor(stored, next);
    if (await records.replace(stored, record)) return true;
  }
  throw new IndexedDBCheckpointError(
    "Could not change the encryption key: another tab kept changing the key record. Try again.",
  );
}

/** Passes over the values after the first, to catch values written under the old key meanwhile. */
const REKEY_MAX_PASSES = 5;

/**
 * Replaces a database's data key and re-encrypts every value under the new
 * one (and, with `allowPlaintext`, encrypts any plaintext value left from
 * before encryption was turned on). Steps, each safe to interrupt:
 *
 * 1. store a record with a fresh data key current and the old ones still
 *    readable (after an interrupted rekey too: the record's key order is not
 *    sealed, so its first key is not trusted to be the new one);
 * 2. `rewriteAll(rewrite)` until a pass changes nothing: values written
 *    meanwhile by someone still on the old key are caught by the next pass;
 * 3. store the record without the old key.
 *
 * After a crash, every value still reads (both keys are in the record) and
 * running it again finishes the job. Other tabs bind again once the record
 * changed: the storage classes check the key id in every write transaction
 * (`withCurrentKey`), so none writes under the old key after step 1, and
 * hold a lock around the whole change (serde/key-change.ts).
 *
 * @param serde The storage's configured serializer (an EncryptedSerializer).
 * @param records Compare-and-swap access to the key record.
 * @param rewriteAll Calls `rewrite` for every stored serialized value with
 *   its row, stores each returned value in place of the old one (only if the
 *   row still holds the old value), and resolves with how many it replaced.
 * @internal
 */
export async function rekeyDatabase(
  serde: SerializerProtocol,
  records: KeyRecordAccess,
  rewriteAll: (rewrite: ValueRewriter) => Promise<number>,
): Promise<void> {
  if (!isRekeyable(serde)) {
    throw new TypeError("Re-encrypting a database needs an EncryptedSerializer as its serializer.");
  }
  let rotation: DataKeyRotation | undefined;
  for (let attempt = 0; attempt < RECORD_ATTEMPTS && !rotation; attempt++) {
    const stored = await records.read();
    const candidate = await serde.beginRekey(stored);
    if (sameClone(stored, candidate.record) || (await records.replace(stored, candidate.record))) rotation = candidate;
  }
  if (!rotation)
    throw new IndexedDBCheckpointError(
      "Could not start re-encrypting: another tab kept changing the key record. Try again.",
    );
  let passes = 0;
  while ((await rewriteAll(rotation.rewrite)) > 0) {
    if (++passes >= REKEY_MAX_PASSES) {
      throw new IndexedDBCheckpointError(
        "Re-encrypting did not converge: values keep being written under the old data key (another tab still open?). Every value still reads; close the other tabs and run it again.",
      );
    }
  }
  for (let attempt = 0; attempt < RECORD_ATTEMPTS; attempt++) {
    const stored = await records.read();
    if (stored === undefined) throw new IndexedDBCheckpointError("The key record disappeared while re-encrypting.");
    if (await records.replace(stored, await serde.endRekey(stored))) return;
  }
  throw new IndexedDBCheckpointError(
    "Could not finish re-encrypting: another tab kept changing the key record. Every value still reads; try again.",
  );
}

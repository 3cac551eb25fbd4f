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
import { DecryptionError, IndexedDBCheckpointError, KeyChangedError } from "../core/errors.js";
import { failuresModule } from "./lazy.js";

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
  return keyed?.sealingKeyId?.(stored) ?? String((stored as Partial<KeyRecord> | null)?.kind);
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
      // Rare: the error's text loads on demand.
      if (tries > 0) throw await keyChanged(dbName, error, "changed again");
      try {
        await bind();
      } catch (bindError) {
        throw await keyChanged(dbName, bindError);
      }
    }
  }
}

/**
 * The error of a storage instance whose key another tab changed: `cause`, a
 * `DecryptionError` from binding again (the key does not open the new
 * record), becomes a `KeyChangedError`; anything else stays as it is, unless
 * `reason` says the key changed again during the retry. Its text loads with
 * the rare failures (failures.ts).
 * @internal
 */
export async function keyChanged(dbName: string, cause: unknown, reason?: string): Promise<unknown> {
  if (!reason && !(cause instanceof DecryptionError)) return cause;
  // A KeyChangedError either way: in fewer words when the rare failures' chunk cannot load (offline).
  const words = await failuresModule().then(
    (failures) => failures.keyChangedMessage(dbName, reason),
    () => `The key of ${dbName} changed.`,
  );
  return new KeyChangedError(words, { cause });
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
        `This database is encrypted (${String((stored as Partial<KeyRecord> | null)?.kind)}); open it with an EncryptedSerializer and its passphrase or key.`,
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

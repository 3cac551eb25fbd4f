/**
 * Changing a database's key, as a protocol between a storage class
 * (IndexedDBSaver, IndexedDBStore) and its serializer. The storage class
 * provides two small pieces (a compare-and-swap on its key record, and a
 * pass over its stored values) and calls `changeDatabaseKey` or
 * `rekeyDatabase`; the serializer does all the cryptography. Additive to the
 * binding protocol of protocol.ts, which it builds on.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { sameClone } from "../core/equality.js";
import { IndexedDBCheckpointError } from "../core/errors.js";
import { type DatabaseKeyedSerializer, type KeyRecord, type RowRef, isDatabaseKeyed } from "./protocol.js";

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
        `This database's values are encrypted (key record "${String((stored as Partial<KeyRecord> | null)?.kind)}"), but its current serializer cannot re-wrap the key. Open it with the EncryptedSerializer it was created with.`,
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

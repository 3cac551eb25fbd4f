/**
 * What replication (src/sync/) needs of a saver beyond its public API: its
 * database (raw rows, so ciphertext travels exactly as stored), its write
 * queue (in order with the saver's own writes, and through idb's write
 * helpers so the journal sees them), its change feed, its clock and its key
 * record. Not public API: the saver registers its context (registry.ts)
 * when it is constructed, and only code that imports these modules reaches
 * it, so the class carries no method for it and a look-alike is refused.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { Database } from "../idb/database.js";
import type { KeyRecord } from "../serde/protocol.js";
import { contextOf } from "./registry.js";
import type { SaverSchema, SaverStoreName } from "./schema.js";
import type { WriteTx } from "./tombstones.js";

/**
 * A saver's raw rows, writes, change feed, clock and key record. Not public API, but not
 * marked internal either: sync/'s declarations name it, and `stripInternal` would leave them
 * importing a type their package lacks.
 */
export interface SaverRawAccess {
  /** The saver's database (reads). */
  readonly db: Database<SaverSchema>;
  /** Writes through the saver's queue, in order with its own writes. */
  write<R>(stores: SaverStoreName[], work: (tx: WriteTx) => Promise<R>, action: string): Promise<R>;
  /** Tells this tab's listeners and other tabs about a committed change. */
  emit(change: { threadId: string; checkpointNs?: string; checkpointId?: string; kind: "put" | "delete" }): void;
  /** A timestamp in ms that strictly increases within the saver. */
  now(): number;
  /** The saver's serializer bound to the database (to check rows before deleting them). */
  serde(): Promise<SerializerProtocol>;
  /** The database's encryption key record, if any. */
  readKeyRecord(): Promise<KeyRecord | undefined>;
  /**
   * Stores `record` as the database's key record, with the key-id copy the
   * saver keeps beside it, unless the database has one; resolves with the
   * record now stored (the given one, or the one already there).
   */
  adoptKeyRecord(record: KeyRecord): Promise<KeyRecord>;
}

/**
 * The raw access of `saver`, or undefined when it is not an `IndexedDBSaver`
 * (of this copy of the package). @internal
 */
export function rawAccessOf(saver: unknown): SaverRawAccess | undefined {
  const ctx = contextOf(saver);
  if (!ctx) return undefined;
  return {
    db: ctx.db,
    write: (stores, work, action) => ctx.writes.write(stores, work, action, false),
    emit: (change) => ctx.feed.emit(change),
    now: () => ctx.now(),
    serde: () => ctx.serde(),
    readKeyRecord: () => ctx.readKeyRecord(),
    async adoptKeyRecord(record) {
      let existing: KeyRecord | undefined;
      await ctx.storeKeyRecord(record, async (tx) => {
        existing = (await tx.objectStore("meta").get("key"))?.value as KeyRecord | undefined;
        return existing === undefined;
      });
      return existing ?? record;
    },
  };
}

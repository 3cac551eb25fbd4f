/**
 * What replication (src/sync/) needs of a saver beyond its public API: its
 * database (raw rows, so ciphertext travels exactly as stored), its write
 * queue (in order with the saver's own writes, and through idb's write
 * helpers so the journal sees them), its change feed and its clock.
 * Not public API: reached only through the internal `_rawAccess()`.
 */
import type { Database } from "../idb/database.js";
import type { SaverContext } from "./context.js";
import type { SaverSchema, SaverStoreName } from "./schema.js";
import type { WriteTx } from "./tombstones.js";

/** A saver's raw rows, writes, change feed and clock. @internal */
export interface SaverRawAccess {
  /** The saver's database (reads). */
  readonly db: Database<SaverSchema>;
  /** Writes through the saver's queue, in order with its own writes. */
  write<R>(stores: SaverStoreName[], work: (tx: WriteTx) => Promise<R>, action: string): Promise<R>;
  /** Tells this tab's listeners and other tabs about a committed change. */
  emit(change: { threadId: string; checkpointNs?: string; checkpointId?: string; kind: "put" | "delete" }): void;
  /** A timestamp in ms that strictly increases within the saver. */
  now(): number;
}

/** The raw access of the saver whose context is `ctx`. @internal */
export function rawAccess(ctx: SaverContext): SaverRawAccess {
  return {
    db: ctx.db,
    write: (stores, work, action) => ctx.writes.write(stores, work, action, false),
    emit: (change) => ctx.feed.emit(change),
    now: () => ctx.now(),
  };
}

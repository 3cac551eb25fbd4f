/**
 * Deleted threads: `deleteThread` leaves a tombstone (in `meta`, with a copy
 * in `writes` so `putWrites` can check it without touching another store),
 * and the late `put`/`putWrites` of a run still in flight on that thread are
 * dropped instead of resurrecting it.
 */
import { SerializationError } from "../core/errors.js";
import type { KeyRanges, Tx } from "../idb/database.js";
import type { SaverSchema, SaverStoreName } from "./schema.js";
import { TOMBSTONE_NAMES, tombstoneName, tombstoneThread, type Tombstone } from "../rows/shapes.js";

/** How many checkpoint ids of late writes a tombstone remembers. */
export const TOMBSTONE_DROPPED_LIMIT = 1000;

/** Stores that a delete of a whole thread touches. */
export const THREAD_STORES: SaverStoreName[] = ["checkpoints", "blobs", "writes", "threads", "meta"];

/** A read-write transaction over the saver's stores. */
export type WriteTx = Tx<SaverSchema, "readwrite">;

/**
 * Thrown inside a write transaction to abort it: the write belongs to a run
 * still in flight on a thread deleted meanwhile.
 */
export class LateWrite extends Error {
  constructor(readonly tombstone: Tombstone) {
    super("late write to a deleted thread");
  }
}

/**
 * A stored tombstone, checked: one altered outside the saver gives a
 * SerializationError naming the thread, not a TypeError from deep inside.
 */
export function asTombstone(value: unknown, threadId: string): Tombstone | undefined {
  if (value === undefined) return undefined;
  const tombstone = value as Partial<Tombstone> | null;
  if (typeof tombstone?.max_deleted_id !== "string" || !Array.isArray(tombstone.dropped)) {
    throw new SerializationError(
      `The tombstone of deleted thread "${threadId}" is malformed: it was altered outside the saver. clearTombstone("${threadId}") removes it.`,
    );
  }
  return tombstone as Tombstone;
}

/** Reads a thread's tombstone in `tx` (undefined when the thread was never deleted). */
export async function readTombstone(
  tx: Tx<SaverSchema, IDBTransactionMode>,
  threadId: string,
): Promise<Tombstone | undefined> {
  return asTombstone((await tx.objectStore("meta").get(tombstoneName(threadId)))?.value, threadId);
}

/** Every tombstone of the database, by thread id, checked as {@link readTombstone} checks one. */
export async function readTombstones(
  tx: Tx<SaverSchema, IDBTransactionMode>,
  ranges: KeyRanges,
): Promise<Map<string, Tombstone>> {
  const rows = await tx.objectStore("meta").getAll(ranges.bound(TOMBSTONE_NAMES.lower, TOMBSTONE_NAMES.upper));
  const tombstones = new Map<string, Tombstone>();
  for (const row of rows) {
    const threadId = tombstoneThread(row.name);
    tombstones.set(threadId, asTombstone(row.value, threadId)!);
  }
  return tombstones;
}

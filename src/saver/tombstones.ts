/**
 * Deleted threads: `deleteThread` leaves a tombstone (in `meta`, with a copy
 * in `writes` so `putWrites` can check it without touching another store),
 * and the late `put`/`putWrites` of a run still in flight on that thread are
 * dropped instead of resurrecting it.
 */
import { SerializationError } from "../core/errors.js";
import type { Tx } from "../idb/database.js";
import { issue, storeDelete, storePut } from "../idb/requests.js";
import type { SaverContext } from "./context.js";
import { assertId } from "./ids.js";
import { prefixBounds } from "./keys.js";
import {
  TOMBSTONE_NS,
  tombstoneName,
  tombstoneWrite,
  tombstoneWriteKey,
  type SaverSchema,
  type SaverStoreName,
  type Tombstone,
} from "./schema.js";

/** How many checkpoint ids of late writes a tombstone remembers. */
export const TOMBSTONE_DROPPED_LIMIT = 1000;

/** Stores that a delete of a whole thread touches. */
export const THREAD_STORES: SaverStoreName[] = ["checkpoints", "blobs", "writes", "threads", "meta"];

/** A read-write transaction over the saver's stores. */
export type WriteTx = Tx<SaverSchema, "readwrite">;

/** True when a deleted thread must ignore writes aimed at `checkpointId`. */
export function isDeadCheckpoint(tombstone: Tombstone | undefined, checkpointId: string, exists: boolean): boolean {
  if (!tombstone || exists) return false;
  return checkpointId <= tombstone.max_deleted_id || tombstone.dropped.includes(checkpointId);
}

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
  tx: Tx<SaverSchema, "readwrite">,
  threadId: string,
): Promise<Tombstone | undefined> {
  return asTombstone((await tx.objectStore("meta").get(tombstoneName(threadId)))?.value, threadId);
}

/** Deletes every row of `threadId` and leaves its tombstone. */
export async function deleteThread(ctx: SaverContext, threadId: string): Promise<void> {
  assertId("thread_id", threadId);
  const deleted = await ctx.writes.write(
    THREAD_STORES,
    async (tx) => {
      const bounds = prefixBounds(threadId);
      const range = ctx.db.ranges.bound(bounds.lower, bounds.upper);
      const [previous, checkpointKeys, allWriteKeys] = await Promise.all([
        readTombstone(tx, threadId),
        tx.objectStore("checkpoints").getAllKeys(range),
        tx.objectStore("writes").getAllKeys(range),
      ]);
      const writeKeys = allWriteKeys.filter((key) => key[1] !== TOMBSTONE_NS);
      if (checkpointKeys.length === 0 && writeKeys.length === 0) return false;
      let maxId = previous?.max_deleted_id ?? "";
      for (const key of checkpointKeys) if (key[2] > maxId) maxId = key[2];
      for (const key of writeKeys) if (key[2] > maxId) maxId = key[2];
      issue(storeDelete(tx.objectStore("checkpoints"), range));
      issue(storeDelete(tx.objectStore("blobs"), range));
      issue(storeDelete(tx.objectStore("writes"), range));
      issue(storeDelete(tx.objectStore("threads"), threadId));
      const tombstone: Tombstone = { max_deleted_id: maxId, dropped: previous?.dropped ?? [], deleted_at: Date.now() };
      issue(storePut(tx.objectStore("writes"), tombstoneWrite(threadId, tombstone)));
      await storePut(tx.objectStore("meta"), { name: tombstoneName(threadId), value: tombstone });
      return true;
    },
    "delete thread",
    false,
  );
  if (deleted) ctx.feed.emit({ threadId, kind: "delete" });
}

/**
 * Forgets that `threadId` was deleted: writes whose parents predate the
 * delete are accepted again. `importThread` calls it to restore a thread
 * (a pruned thread's oldest checkpoint points to a parent that is gone).
 * Only call it when no run of the deleted thread is still going.
 */
export async function clearTombstone(ctx: SaverContext, threadId: string): Promise<void> {
  assertId("thread_id", threadId);
  await ctx.writes.write(
    ["meta", "writes"],
    (tx) => {
      issue(storeDelete(tx.objectStore("meta"), tombstoneName(threadId)));
      issue(storeDelete(tx.objectStore("writes"), tombstoneWriteKey(threadId)));
    },
    "clear a tombstone",
    false,
  );
}

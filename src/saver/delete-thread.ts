/**
 * `deleteThread` and `clearTombstone`: deleting a whole thread leaves a
 * tombstone (see tombstones.ts), so the late writes of a run still in
 * flight are dropped. Loaded on demand: most apps delete rarely.
 */
import { issue, storeDelete, storePut } from "../idb/requests.js";
import type { SaverContext } from "./context.js";
import { assertId } from "./ids.js";
import { prefixBounds } from "./keys.js";
import { TOMBSTONE_NS, tombstoneName, tombstoneWrite, tombstoneWriteKey, type Tombstone } from "./schema.js";
import { THREAD_STORES, readTombstone } from "./tombstones.js";

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

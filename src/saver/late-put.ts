/**
 * What a put rolled back as a late write (a run still in flight on a deleted
 * thread, see put.ts) leaves behind: its id among the tombstone's dropped
 * checkpoints, so its writes and children are dropped too; and the careful
 * path of `putWrites` (a deleted thread, or a key-id copy that disagreed).
 * Loaded with the maintenance chunk (maintenance.ts, through lazy.ts's one
 * loader): only a deleted thread or a key change takes these paths, never a
 * chat's first answer. An `import()` of its own here made Rolldown split
 * shared entry code into a second up-front file (core/channel.ts, +550 B up
 * front, +780 B in all); the maintenance loader adds no `import()` site.
 */
import { issue, storeDelete, storePut } from "../idb/requests.js";
import { checkKeyRow, type SaverContext } from "./context.js";
import { prefixBounds } from "./keys.js";
import {
  KEY_ID_WRITE_KEY,
  isDeadCheckpoint,
  keyIdWrite,
  tombstoneName,
  tombstoneWrite,
  tombstoneWriteKey,
  type Tombstone,
  type WriteRow,
} from "../rows/shapes.js";
import type { BoundSerializer } from "../serde/protocol.js";
import { TOMBSTONE_DROPPED_LIMIT, asTombstone, readTombstone } from "./tombstones.js";
import { storeWrites } from "./write-rows.js";

/** Records checkpoint `checkpointId` as dropped in its thread's tombstone (`seen`, or the one stored now). @internal */
export function recordLatePut(
  ctx: SaverContext,
  threadId: string,
  checkpointNs: string,
  checkpointId: string,
  seen: Tombstone,
): Promise<void> {
  return ctx.writes.write(
    ["meta", "writes"],
    async (tx) => {
      const current = (await readTombstone(tx, threadId)) ?? seen;
      const next: Tombstone = {
        ...current,
        dropped: [...current.dropped, checkpointId].slice(-TOMBSTONE_DROPPED_LIMIT),
      };
      // Its writes may have come first (putWrites before put): drop them too.
      const bounds = prefixBounds(threadId, checkpointNs, checkpointId);
      issue(storeDelete(tx.objectStore("writes"), ctx.db.ranges.bound(bounds.lower, bounds.upper)));
      issue(storePut(tx.objectStore("writes"), tombstoneWrite(threadId, next)));
      await storePut(tx.objectStore("meta"), { name: tombstoneName(threadId), value: next });
    },
    "record a late write",
    false,
  );
}

/**
 * Stores a task's write `rows` (all of one checkpoint) asking the key record
 * itself and the thread's tombstone, in a transaction of their own: writes
 * of a run still in flight on a deleted thread are dropped. @internal
 */
export function putWritesCarefully(ctx: SaverContext, bound: BoundSerializer, rows: WriteRow[]): Promise<void> {
  const { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } = rows[0]!;
  return ctx.writes.write(
    ["writes", "checkpoints", "meta"],
    async (tx) => {
      const store = tx.objectStore("writes");
      const [tombstoneRow, keyCopy, key] = await Promise.all([
        store.get(tombstoneWriteKey(threadId)),
        store.get(KEY_ID_WRITE_KEY),
        tx.objectStore("meta").get("key"),
      ]);
      checkKeyRow(ctx, bound, key);
      // The record is the truth: a copy that says otherwise (planted or
      // altered outside the saver) is put right, not obeyed forever.
      if (keyCopy && keyCopy.key_id !== bound.keyId) {
        issue(bound.keyId ? storePut(store, keyIdWrite(bound.keyId)) : storeDelete(store, KEY_ID_WRITE_KEY));
      }
      const tombstone = asTombstone(tombstoneRow?.tombstone, threadId);
      const exists = (await tx.objectStore("checkpoints").getKey([threadId, checkpointNs, checkpointId])) !== undefined;
      // Writes of a run still in flight on a deleted thread are dropped.
      if (isDeadCheckpoint(tombstone, checkpointId, exists)) return;
      await storeWrites(store, rows, ctx.writeTime());
    },
    "put writes",
    false,
  );
}

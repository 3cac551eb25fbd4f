/**
 * `deleteThread` and `clearTombstone`: deleting a whole thread leaves a
 * tombstone (see tombstones.ts), so the late writes of a run still in
 * flight are dropped. Loaded on demand: most apps delete rarely.
 */
import { issue, storeDelete, storePut } from "../idb/requests.js";
import type { SaverContext } from "./context.js";
import { assertId } from "../rows/ids.js";
import { prefixBounds } from "./keys.js";
import type { KeyRanges } from "../idb/database.js";
import {
  TOMBSTONE_NS,
  tombstoneName,
  tombstoneWrite,
  tombstoneWriteKey,
  type CheckpointRow,
  type Tombstone,
} from "../rows/shapes.js";
import { checkpointOfMark, revaluedNamesOf } from "../rows/marks.js";
import { THREAD_STORES, readTombstone, type WriteTx } from "./tombstones.js";
import { keepUsedInline, namedBlobs } from "./runs.js";

/** Deletes every row of `threadId` and leaves its tombstone. */
export async function deleteThread(ctx: SaverContext, threadId: string): Promise<void> {
  assertId("thread_id", threadId);
  const deleted = await ctx.writes.write(
    THREAD_STORES,
    async (tx) => (await deleteUpTo(tx, ctx.db.ranges, threadId)) !== undefined,
    "delete thread",
    false,
  );
  if (deleted) ctx.feed.emit({ threadId, kind: "delete" });
}

/**
 * Deletes the rows of `threadId` whose checkpoint id is at most
 * `maxDeletedId` (every row when it is not given) and raises the thread's
 * tombstone to it, in `tx`. Without `maxDeletedId`, a thread with no rows is
 * left as it is and the result is undefined. A thread left with no rows
 * loses its summary; one that keeps some (a delete from another device, up
 * to what that device had) needs its summary rewritten by the caller.
 * Values the deleted rows held inline that the rows kept name move to blob
 * rows (`check`: see `keepUsedInline`). Resolves to the tombstone now stored.
 */
export async function deleteUpTo(
  tx: WriteTx,
  ranges: KeyRanges,
  threadId: string,
  maxDeletedId?: string,
  check?: (row: CheckpointRow) => void,
): Promise<Tombstone | undefined> {
  const bounds = prefixBounds(threadId);
  const range = ranges.bound(bounds.lower, bounds.upper);
  const marks = revaluedNamesOf(threadId);
  const [previous, checkpointKeys, allWriteKeys, markNames] = await Promise.all([
    readTombstone(tx, threadId),
    tx.objectStore("checkpoints").getAllKeys(range),
    tx.objectStore("writes").getAllKeys(range),
    // The thread's revalued marks (prune.ts): those of deleted checkpoints go with them.
    tx.objectStore("meta").getAllKeys(ranges.bound(marks.lower, marks.upper)),
  ]);
  const writeKeys = allWriteKeys.filter((key) => key[1] !== TOMBSTONE_NS);
  let max = maxDeletedId;
  // Every row of the thread: whatever its ids, even one planted with an id that is not a string (JavaScript's
  // `<=` between a number and a string is false both ways: such a row would set the maximum, keep every real
  // row of the thread, and the delete would resolve with them still there).
  const whole = max === undefined;
  if (max === undefined) {
    if (checkpointKeys.length === 0 && writeKeys.length === 0) return undefined;
    max = previous?.max_deleted_id ?? "";
    for (const key of [...checkpointKeys, ...writeKeys]) if (typeof key[2] === "string" && key[2] > max) max = key[2];
  }
  const upTo = max;
  for (const name of markNames) {
    if (checkpointOfMark(name).checkpointId <= upTo) issue(storeDelete(tx.objectStore("meta"), name));
  }
  const checkpointsGone = whole || checkpointKeys.every((key) => key[2] <= upTo);
  if (checkpointsGone && (whole || writeKeys.every((key) => key[2] <= upTo))) {
    // The whole thread: range deletes (the tombstone copy goes too, and is written again below).
    issue(storeDelete(tx.objectStore("checkpoints"), range));
    issue(storeDelete(tx.objectStore("writes"), range));
    issue(storeDelete(tx.objectStore("threads"), threadId));
  } else {
    // Read before the deletes (requests run in issue order): see below.
    const read = tx.objectStore("checkpoints").getAll(range);
    for (const key of checkpointKeys) if (key[2] <= upTo) issue(storeDelete(tx.objectStore("checkpoints"), key));
    for (const key of writeKeys) if (key[2] <= upTo) issue(storeDelete(tx.objectStore("writes"), key));
    // Row format 2: values the deleted rows held inline that the rows kept name become blob rows.
    const rows = await read;
    const kept = rows.filter((row) => row.checkpoint_id > upTo);
    keepUsedInline(
      tx,
      rows.filter((row) => row.checkpoint_id <= upTo),
      namedBlobs(kept),
      check,
    );
  }
  // Channel values are shared along a thread's history: they go only with its last checkpoint.
  if (checkpointsGone) issue(storeDelete(tx.objectStore("blobs"), range));
  return raiseTombstone(tx, threadId, previous, upTo);
}

/**
 * Stores the tombstone of `threadId` at `maxDeletedId`, or at `previous`'s
 * if that is higher (a tombstone never moves back: writes it dropped stay
 * dropped), keeping the late writes `previous` remembers. Writes both
 * copies; resolves once the requests succeeded.
 */
async function raiseTombstone(
  tx: WriteTx,
  threadId: string,
  previous: Tombstone | undefined,
  maxDeletedId: string,
): Promise<Tombstone> {
  const tombstone: Tombstone = {
    max_deleted_id: previous && previous.max_deleted_id > maxDeletedId ? previous.max_deleted_id : maxDeletedId,
    dropped: previous?.dropped ?? [],
    deleted_at: Date.now(),
  };
  await Promise.all([
    storePut(tx.objectStore("writes"), tombstoneWrite(threadId, tombstone)),
    storePut(tx.objectStore("meta"), { name: tombstoneName(threadId), value: tombstone }),
  ]);
  return tombstone;
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

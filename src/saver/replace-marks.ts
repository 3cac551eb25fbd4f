/**
 * `importThread`'s `ifExists: "replace"` into an IndexedDBSaver: the
 * checkpoints of the thread it replaced that the imported thread does not
 * hold again get the removed mark `prune` and `deleteForRuns` leave (an
 * existing `meta` record, rows/marks.ts). The replace deletes the thread and
 * lifts its tombstone (clearTombstone), so nothing else in the database
 * tells of the delete: the crash journal of a tab that was closed meanwhile
 * read the old checkpoints as lost by a crash and replayed them into the
 * imported thread, and sync never sent their removal to the server.
 */
import { issue, storePut } from "../idb/requests.js";
import type { SaverContext } from "./context.js";
import { assertId } from "../rows/ids.js";
import { prefixBounds } from "./keys.js";
import { removedName, type RemovedCheckpoint } from "../rows/marks.js";

/** A checkpoint of a thread: its namespace and id. */
export type ThreadCheckpoint = readonly [checkpointNs: string, checkpointId: string];

/**
 * Without `replaced`: the checkpoints `threadId` holds now (keys only,
 * nothing decoded), read before an import replaces it. With `replaced`
 * (that read): marks removed, in one transaction, those the thread does not
 * hold now. One the import wrote again keeps no mark: sync would never
 * store it again, and the server would drop it.
 */
export async function markReplaced(
  ctx: SaverContext,
  threadId: string,
  replaced?: readonly ThreadCheckpoint[],
): Promise<ThreadCheckpoint[]> {
  assertId("thread_id", threadId);
  const bounds = prefixBounds(threadId);
  const range = ctx.db.ranges.bound(bounds.lower, bounds.upper);
  if (!replaced) {
    const keys = await ctx.db.read(
      ["checkpoints"],
      (tx) => tx.objectStore("checkpoints").getAllKeys(range),
      "read a thread's checkpoint ids",
    );
    return keys.map((key) => [key[1], key[2]] as const);
  }
  if (replaced.length > 0)
    await ctx.writes.write(
      ["checkpoints", "meta"],
      async (tx) => {
        const kept = new Set(
          (await tx.objectStore("checkpoints").getAllKeys(range)).map((key) => `${key[1]}\u0000${key[2]}`),
        );
        const marker: RemovedCheckpoint = { removed_at: Date.now() };
        for (const [ns, id] of replaced) {
          if (!kept.has(`${ns}\u0000${id}`))
            issue(storePut(tx.objectStore("meta"), { name: removedName(threadId, ns, id), value: marker }));
        }
        return true;
      },
      "mark a replaced thread's checkpoints removed",
      false,
    );
  return [];
}

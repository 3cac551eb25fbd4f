/**
 * Whether a saver syncs between devices: given to a `SyncClient` in this
 * page, or its database holds a sync record (sync/state.ts names every one
 * `sync\0...` in `meta`: a device id, the user at a server, a cursor, a
 * thread's fingerprints), written by a round here, in another tab, or before
 * a reload. For what rewrites a stored checkpoint in place (the Agent
 * Server's `threads.patchState`): the sync server stores a checkpoint once,
 * so such a change would stay on this device, and is refused instead.
 */
import { contextOf } from "./registry.js";

/** Savers given to a `SyncClient` in this page (before its first round writes a record too). */
const attached = new WeakSet<object>();

/** The `meta` names of the sync records: every one sync/ writes begins so. */
const SYNC_RECORDS = { lower: "sync\u0000", upper: "sync\u0000\uffff" } as const;

/** Marks `saver` as synced (the `SyncClient` constructor calls this). @internal */
export function markSyncing(saver: object): void {
  attached.add(saver);
}

/**
 * True when `saver` is an `IndexedDBSaver` given to a `SyncClient` in this
 * page, or whose database has a sync record; false for any other saver. @internal
 */
export async function syncsBetweenDevices(saver: unknown): Promise<boolean> {
  if (typeof saver === "object" && saver !== null && attached.has(saver)) return true;
  const ctx = contextOf(saver);
  if (!ctx) return false;
  const found = await ctx.db.read(
    ["meta"],
    (tx) => tx.objectStore("meta").getKey(ctx.db.ranges.bound(SYNC_RECORDS.lower, SYNC_RECORDS.upper)),
    "look for a sync record",
  );
  return found !== undefined;
}

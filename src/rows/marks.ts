/**
 * The `meta` records that mark one checkpoint for sync: removed by `prune`
 * or `deleteForRuns` (pushed as removals, never stored again by a pull),
 * and revalued by a prune's snapshot (pushed again with it). Written by the
 * saver's maintenance operations, read by sync; a module of their own, so
 * an app's first chunk does not carry them.
 */

/**
 * A checkpoint `prune` or `deleteForRuns` removed (a `meta` record, see
 * {@link removedName}): sync never stores it again, whatever a pull sends,
 * so a server replaying rows this device pushed earlier cannot bring a
 * rolled-back checkpoint back as the thread's head.
 */
export interface RemovedCheckpoint {
  /** When it was removed (ms since the epoch). */
  removed_at: number;
}

/** A `meta` record name marking one checkpoint (`kind`, then thread, namespace and id). */
function markName(kind: string, threadId: string, checkpointNs: string, checkpointId: string): string {
  return `${kind}\u0000${threadId}\u0000${checkpointNs}\u0000${checkpointId}`;
}

/** The `meta` record name marking one checkpoint as removed (see {@link RemovedCheckpoint}). */
export function removedName(threadId: string, checkpointNs: string, checkpointId: string): string {
  return markName("removed", threadId, checkpointNs, checkpointId);
}

/** Bounds of every removed checkpoint's `meta` record name. */
export const REMOVED_NAMES = { lower: "removed\u0000", upper: "removed\u0001" } as const;

/**
 * A checkpoint `prune` gave a value it did not have (a `DeltaSnapshot` of a
 * delta channel, stored at a version the checkpoint had without a value): a
 * `meta` record, see {@link revaluedName}. A pushed checkpoint otherwise
 * changes only by its writes, so sync pushes this one again, with the value,
 * in the next round of every server it talks to (sync/changes.ts); without
 * it another device that pulls the removals of the checkpoints before it
 * would rebuild the channel from writes it no longer has.
 */
export interface RevaluedCheckpoint {
  /** When the value was stored (ms since the epoch, the saver's clock). */
  revalued_at: number;
}

/** The `meta` record name marking one checkpoint as revalued (see {@link RevaluedCheckpoint}). */
export function revaluedName(threadId: string, checkpointNs: string, checkpointId: string): string {
  return markName("revalued", threadId, checkpointNs, checkpointId);
}

/** Bounds of every revalued checkpoint's `meta` record name. */
export const REVALUED_NAMES = { lower: "revalued\u0000", upper: "revalued\u0001" } as const;

/** Bounds of the `meta` record names of one thread's revalued checkpoints (no namespace or id holds U+0000). */
export function revaluedNamesOf(threadId: string): { lower: string; upper: string } {
  const prefix = markName("revalued", threadId, "", "").slice(0, -1);
  return { lower: prefix, upper: `${prefix}\uffff` };
}

/**
 * The checkpoint a {@link removedName} or {@link revaluedName} names: split
 * from the end, since checkpoint ids and namespaces hold no U+0000 while a
 * thread id stored before the saver refused it may.
 */
export function checkpointOfMark(name: string): { threadId: string; checkpointNs: string; checkpointId: string } {
  const rest = name.slice(name.indexOf("\u0000") + 1);
  const idAt = rest.lastIndexOf("\u0000");
  const nsAt = rest.lastIndexOf("\u0000", idAt - 1);
  return {
    threadId: rest.slice(0, nsAt),
    checkpointNs: rest.slice(nsAt + 1, idAt),
    checkpointId: rest.slice(idAt + 1),
  };
}

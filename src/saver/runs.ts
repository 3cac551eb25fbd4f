/**
 * Removing checkpoints by run: `deleteForRuns` (through the run index), and
 * the removal of one checkpoint row with its writes, shared with prune.
 */
import { issue, storeDelete, storePut } from "../idb/requests.js";
import type { SaverContext } from "./context.js";
import { assertId } from "../rows/ids.js";
import { prefixBounds } from "./keys.js";
import { assertRowFields, threadRows } from "./reads.js";
import { inlineBlobs, type CheckpointRow, type Version } from "../rows/shapes.js";
import { removedName, revaluedName, type RemovedCheckpoint } from "../rows/marks.js";
import { orphanSnapshots, storeSnapshots } from "./snapshots.js";
import { refreshThread } from "./threads.js";
import { THREAD_STORES, type WriteTx } from "./tombstones.js";
import type { DeleteForRunsOptions } from "./types.js";
import type { KeyRanges } from "../idb/database.js";
import { rowIdentity, stillVerified, verifiedRunRows } from "./verify-runs.js";
import { blobIdentity } from "../core/identity.js";

/**
 * Deletes the checkpoints whose `metadata.run_id` is one of `runIds`, in
 * every thread (or only `options.threadId`) and namespace, with their pending
 * writes and the channel values only they use. Finds them through the run
 * index (no scan).
 */
export async function deleteForRuns(
  ctx: SaverContext,
  runIds: string[],
  options: DeleteForRunsOptions = {},
): Promise<void> {
  if (!Array.isArray(runIds)) throw new Error("deleteForRuns: runIds must be an array of run ids.");
  for (const runId of runIds) assertId("run_id", runId);
  const only = options.threadId;
  if (only !== undefined) assertId("thread_id", only);
  if (runIds.length === 0) return;
  const ranges = ctx.db.ranges;
  // Decrypting cannot happen inside the deleting transaction: check first, and snapshot what the deletion cuts.
  const verified = await verifiedRunRows(ctx, [...new Set(runIds)]);
  const snapshots = options.channels ? await orphanSnapshots(ctx, [...new Set(runIds)], only, options.channels) : [];
  const touched = await ctx.writes.write(
    THREAD_STORES,
    async (tx) => {
      const checkpoints = tx.objectStore("checkpoints");
      const keyLists = await Promise.all(
        [...new Set(runIds)].map((runId) => checkpoints.index("by_run").getAllKeys(runId)),
      );
      const keys = keyLists.flat().filter((key) => only === undefined || (key as IDBValidKey[])[0] === only);
      if (keys.length === 0) return [];
      // A row put or changed since the check was not verified: it stays.
      const doomed = (await Promise.all(keys.map((key) => checkpoints.get(key)))).filter(
        (row): row is CheckpointRow => !!row && stillVerified(verified, row),
      );
      if (doomed.length === 0) return [];
      for (const row of doomed) deleteCheckpointRows(ctx, tx, row);
      // The rows left, read after the deletes: a doomed row's blob stays if any of them names it. Not only
      // a doomed row's parent and children: once a checkpoint between two users of a blob is gone (an
      // earlier deleteForRuns, a prune), the users left are not neighbours.
      const threads = [...new Set(doomed.map((row) => row.thread_id))];
      const remaining = await Promise.all(threads.map((threadId) => threadRows(tx, ranges, "checkpoints", threadId)));
      const used = namedBlobs(remaining.flat());
      keepUsedInline(tx, doomed, used);
      for (const row of doomed) {
        for (const [channel, version] of Object.entries(row.channel_versions)) {
          if (!used.has(blobName(row.thread_id, row.checkpoint_ns, channel, version))) {
            issue(storeDelete(tx.objectStore("blobs"), [row.thread_id, row.checkpoint_ns, channel, version]));
          }
        }
      }
      // The snapshots of the checkpoints left whose parent went (their versions are named: no delete above).
      const left = new Set(remaining.flat().map(rowIdentity));
      await storeSnapshots(
        ctx,
        tx,
        snapshots.filter(({ row }) => left.has(rowIdentity(row))),
      );
      for (const [i, threadId] of threads.entries()) await refreshThread(ctx, tx, threadId, remaining[i]!);
      return threads;
    },
    "delete checkpoints of runs",
    false,
  );
  for (const threadId of touched) ctx.feed.emit({ threadId, kind: "delete-runs" });
}

/** A blob's key as a string, for the sets {@link namedBlobs} builds. */
export function blobName(threadId: string, checkpointNs: string, channel: string, version: Version): string {
  return `${threadId}\u0000${blobIdentity(checkpointNs, channel, version)}`;
}

/**
 * The blobs that `rows` name (as {@link blobName}s): a deleting write keeps a
 * blob while any checkpoint left names it, and deletes it otherwise.
 */
export function namedBlobs(rows: CheckpointRow[]): Set<string> {
  const named = new Set<string>();
  for (const row of rows) {
    // A row without versions names values no one can tell: deleting around it could lose them.
    assertRowFields(row);
    for (const [channel, version] of Object.entries(row.channel_versions)) {
      named.add(blobName(row.thread_id, row.checkpoint_ns, channel, version));
    }
  }
  return named;
}

/** Deletes one checkpoint row and its writes (its blobs are the caller's business). */
export function deleteCheckpointRows(ctx: SaverContext, tx: WriteTx, row: CheckpointRow): void {
  removeCheckpoint(tx, ctx.db.ranges, row.thread_id, row.checkpoint_ns, row.checkpoint_id);
}

/**
 * Deletes one checkpoint with its writes and marks it removed (its blobs are
 * the caller's business): sync sends the removal to the server, and no pull
 * stores the checkpoint again, even one replaying rows this device pushed.
 * A revalued mark of it goes: there is nothing left to push again.
 */
export function removeCheckpoint(tx: WriteTx, ranges: KeyRanges, threadId: string, ns: string, id: string): void {
  issue(storeDelete(tx.objectStore("checkpoints"), [threadId, ns, id]));
  const marker: RemovedCheckpoint = { removed_at: Date.now() };
  const meta = tx.objectStore("meta");
  issue(storePut(meta, { name: removedName(threadId, ns, id), value: marker }));
  issue(storeDelete(meta, revaluedName(threadId, ns, id)));
  const bounds = prefixBounds(threadId, ns, id);
  issue(storeDelete(tx.objectStore("writes"), ranges.bound(bounds.lower, bounds.upper)));
}

/**
 * Row format 2: the values deleted rows (`doomed`) held inline that a
 * checkpoint left still names (`used`) move to blob rows, bytes unchanged
 * (an inline value is sealed as its blob row would be). Each doomed row is
 * first checked for fields it can hold them in (a `SerializationError`
 * naming it), then handed to `check`, if given (sync's pull, which checks
 * the clear versions of such rows: see sync/pull-checks.ts).
 */
export function keepUsedInline(
  tx: WriteTx,
  doomed: CheckpointRow[],
  used: Set<string>,
  check?: (row: CheckpointRow) => void,
): void {
  for (const row of doomed) {
    // Their clear versions decide which values move: without them, a value would be dropped unseen.
    assertRowFields(row);
    check?.(row);
    for (const blob of inlineBlobs(row)) {
      if (used.has(blobName(blob.thread_id, blob.checkpoint_ns, blob.channel, blob.version))) {
        issue(storePut(tx.objectStore("blobs"), blob));
      }
    }
  }
}

/**
 * Deletes the blobs of `threadId` that no checkpoint left names (rows put
 * meanwhile included), and keeps as blobs the values the deleted rows
 * `doomed` held inline that those left name (`check`: see
 * {@link keepUsedInline}); resolves to the checkpoints left.
 */
export async function deleteUnusedBlobs(
  tx: WriteTx,
  ranges: KeyRanges,
  threadId: string,
  doomed: CheckpointRow[] = [],
  check?: (row: CheckpointRow) => void,
): Promise<CheckpointRow[]> {
  const bounds = prefixBounds(threadId);
  const [remaining, blobKeys] = await Promise.all([
    threadRows(tx, ranges, "checkpoints", threadId),
    tx.objectStore("blobs").getAllKeys(ranges.bound(bounds.lower, bounds.upper)),
  ]);
  const used = namedBlobs(remaining);
  for (const key of blobKeys)
    if (!used.has(blobName(key[0], key[1], key[2], key[3]))) issue(storeDelete(tx.objectStore("blobs"), key));
  keepUsedInline(tx, doomed, used, check);
  return remaining;
}

/**
 * The walk up a checkpoint's parent chain (delta-channel history, prune's
 * kept chains): a read plan like those of reads.ts, apart because only the
 * lazily loaded delta history and prune use it.
 */
import type { KeyRanges } from "../idb/database.js";
import { versionKey } from "../core/identity.js";
import { SerializationError } from "../core/errors.js";
import { prefixBounds } from "./keys.js";
import { assertRowFields, type ReadTx } from "./reads.js";
import { inlineBlob, type BlobRow, type CheckpointRow, type Version, type WriteRow } from "../rows/shapes.js";

/** What the ancestor walk found for the delta-channel history. */
export interface AncestorWalk {
  /** Ancestor ids from the parent of the target up, nearest first. */
  path: string[];
  /** The rows of `path` (same order): their parent links and versions steered the walk. */
  rows: CheckpointRow[];
  /** The parent row of the last of `rows`, if the walk read it (its chain proves that row: chain.ts). */
  tail?: CheckpointRow;
  /** Per channel: the blob that seeds it and the depth in `path` it was found at. */
  seeds: Map<string, { blob: BlobRow; depth: number }>;
  /** Per requested channel (same order): its writes on its part of the path. */
  writesByChannel: WriteRow[][];
}

/** Rows fetched per request while walking up the parent chain. */
const WALK_BATCH = 128;

/** Index of `id` in the ascending `ids`, or -1. */
function indexOf(ids: string[], id: string): number {
  let low = 0;
  let high = ids.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const here = ids[mid]!;
    if (here === id) return mid;
    if (here < id) low = mid + 1;
    else high = mid - 1;
  }
  return -1;
}

/**
 * The delta-channel history walk, in a few requests of one transaction
 * whatever the depth:
 * 1. every checkpoint id of the namespace, and for each channel the versions
 *    that have a blob row (keys only); a value held inline (row format 2)
 *    is found in the row that introduced it, which the walk reads anyway;
 * 2. the parent chain, read in batches of rows just below the current id
 *    (a parent is almost always older, so its id sorts lower; when it is not,
 *    it is read on its own), checked against those versions in memory;
 * 3. the seed blobs and each channel's writes on its part of the path, one
 *    range read of the writes index `[thread, ns, channel, checkpoint_id]` each.
 */
export async function walkAncestors(
  tx: ReadTx,
  ranges: KeyRanges,
  target: CheckpointRow | undefined,
  channels: string[],
  whileReading?: (rows: CheckpointRow[], tail: CheckpointRow | undefined) => void,
): Promise<AncestorWalk> {
  const path: string[] = [];
  const pathRows: CheckpointRow[] = [];
  const seeds = new Map<string, { blob: BlobRow; depth: number }>();
  if (!target) return { path, rows: pathRows, seeds, writesByChannel: channels.map(() => []) };
  const { thread_id: threadId, checkpoint_ns: checkpointNs } = target;
  const checkpoints = tx.objectStore("checkpoints");
  const blobStore = tx.objectStore("blobs");
  const nsBounds = prefixBounds(threadId, checkpointNs);
  const [checkpointKeys, ...blobKeyLists] = await Promise.all([
    checkpoints.getAllKeys(ranges.bound(nsBounds.lower, nsBounds.upper)),
    ...channels.map((channel) => {
      const bounds = prefixBounds(threadId, checkpointNs, channel);
      return blobStore.getAllKeys(ranges.bound(bounds.lower, bounds.upper));
    }),
  ]);
  const ids = checkpointKeys.map((key) => key[2]);
  const valued = new Map(
    channels.map((channel, i) => [channel, new Set(blobKeyLists[i]!.map((key) => versionKey(key[3])))]),
  );
  const seedAt = new Map<string, { version: Version; depth: number; inline?: BlobRow }>();
  const remaining = new Set(channels);
  const fetched = new Map<string, CheckpointRow>();
  // Parent links come from rows anyone with the database files can edit: a
  // cycle (or a chain longer than the namespace) would walk forever.
  const visited = new Set<string>([target.checkpoint_id]);
  let cursor = target.parent_checkpoint_id;
  while (cursor !== undefined && remaining.size > 0) {
    if (visited.has(cursor) || path.length >= ids.length) {
      throw new SerializationError(
        `The parent links of thread "${threadId}" (namespace "${checkpointNs}") form a cycle at checkpoint ${cursor}: the rows were altered outside the saver. Delete the thread or restore it from an export.`,
      );
    }
    visited.add(cursor);
    let row = fetched.get(cursor);
    if (!row) {
      const at = indexOf(ids, cursor);
      if (at < 0) break;
      const low = ids[Math.max(0, at - WALK_BATCH + 1)]!;
      const batch = await checkpoints.getAll(
        ranges.bound([threadId, checkpointNs, low], [threadId, checkpointNs, cursor]),
      );
      for (const each of batch) fetched.set(each.checkpoint_id, each);
      row = fetched.get(cursor);
      if (!row) break;
    }
    assertRowFields(row);
    const depth = path.push(cursor) - 1;
    pathRows.push(row);
    for (const channel of remaining) {
      const version = row.channel_versions[channel];
      if (version === undefined) continue;
      if (valued.get(channel)!.has(versionKey(version))) {
        seedAt.set(channel, { version, depth });
        remaining.delete(channel);
        continue;
      }
      // Row format 2: the row that introduced the version holds it inline; the seed is the
      // youngest row at that version, where a blob row would have stopped the walk.
      const inline = inlineBlob(row, channel, version);
      if (inline) {
        let youngest = depth;
        while (youngest > 0 && pathRows[youngest - 1]!.channel_versions[channel] === version) youngest--;
        seedAt.set(channel, { version, depth: youngest, inline });
        remaining.delete(channel);
      }
    }
    cursor = row.parent_checkpoint_id;
  }
  const tail = cursor === undefined ? undefined : fetched.get(cursor);
  const writesIndex = tx.objectStore("writes").index("by_channel");
  const reads = Promise.all([
    Promise.all(
      channels.map((channel) => {
        const seed = seedAt.get(channel);
        return seed?.inline ?? (seed ? blobStore.get([threadId, checkpointNs, channel, seed.version]) : undefined);
      }),
    ),
    Promise.all(
      channels.map(async (channel) => {
        const last = seedAt.get(channel)?.depth ?? path.length - 1;
        if (last < 0) return [];
        const onPath = new Set(path.slice(0, last + 1));
        let low = path[0]!;
        let high = path[0]!;
        for (const id of onPath) {
          if (id < low) low = id;
          if (id > high) high = id;
        }
        const rows = await writesIndex.getAll(
          ranges.bound([threadId, checkpointNs, channel, low], [threadId, checkpointNs, channel, high]),
        );
        return rows.filter((write) => onPath.has(write.checkpoint_id));
      }),
    ),
  ]);
  // Synchronous work on the path (its link check) fits here, while the reads
  // are out. If it throws, the transaction aborts and fails these reads: the
  // thrown error is the one to report, not their rejection, left unhandled.
  reads.catch(() => undefined);
  whileReading?.(pathRows, tail);
  const [seedBlobs, writesByChannel] = await reads;
  channels.forEach((channel, i) => {
    const blob = seedBlobs[i];
    if (blob) seeds.set(channel, { blob, depth: seedAt.get(channel)!.depth });
  });
  return { path, rows: pathRows, seeds, writesByChannel, ...(tail && { tail }) };
}

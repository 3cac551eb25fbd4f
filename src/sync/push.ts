/**
 * The push side of replication: what an `IndexedDBSaver` holds, read as the
 * wire carries it. Rows move as stored (`[type, bytes]`, ciphertext for an
 * encrypted saver, bound to the same thread/namespace/checkpoint/channel ids
 * on every device), so nothing is decoded or re-encoded here. The pull side,
 * which applies what other devices pushed, is pull.ts.
 */
import { crc32 } from "../core/crc32.js";
import { blobIdentity, checkpointIdentity } from "../core/identity.js";
import { prefixBounds } from "../saver/keys.js";
import type { SaverRawAccess } from "../saver/raw-access.js";
import {
  inlineBlobs,
  isTombstoneWrite,
  type BlobRow,
  type CheckpointRow,
  type ValueKey,
  type WriteRow,
} from "../rows/shapes.js";
import { REMOVED_NAMES, checkpointOfMark } from "../rows/marks.js";
import { readValue } from "../saver/reads.js";
import { readTombstones } from "../saver/tombstones.js";
import type { WireCheckpoint, WireRemoved, WireWrite } from "./protocol.js";

/** The identity of a checkpoint across devices. */
export function checkpointKeyOf(threadId: string, ns: string, id: string): string {
  return `${threadId}\u0000${checkpointIdentity(ns, id)}`;
}

const encoder = new TextEncoder();

/**
 * A fingerprint of a checkpoint's pending writes: the checkpoint row itself
 * never changes once put, but writes may be added later (and special ones
 * replaced), which must be pushed again.
 */
export function writesFingerprint(
  writes: readonly Pick<WireWrite, "task_id" | "idx" | "channel" | "task_path" | "value">[],
): string {
  const sorted = [...writes].sort((a, b) =>
    a.task_id !== b.task_id ? (a.task_id < b.task_id ? -1 : 1) : a.idx - b.idx,
  );
  let crc = 0;
  for (const write of sorted) {
    crc = crc32(
      crc,
      encoder.encode(
        `${write.task_id}\u0000${write.idx}\u0000${write.channel}\u0000${write.task_path}\u0000${write.value[0]}\u0000`,
      ),
    );
    crc = crc32(crc, write.value[1]);
  }
  return `${sorted.length}:${(crc >>> 0).toString(16)}`;
}

/**
 * A digest of one special write (negative idx: the channels whose writes
 * replace, such as `__interrupt__`): its slot and its value, so a value seen
 * earlier in that slot is recognised when a pull sends it again.
 */
export function specialDigest(write: Pick<WireWrite, "task_id" | "idx" | "channel" | "value">): string {
  let crc = crc32(0, encoder.encode(`${write.channel}\u0000${write.value[0]}\u0000`));
  crc = crc32(crc, write.value[1]);
  return `${write.task_id}\u0000${write.idx}\u0000${write.value[1].length}:${(crc >>> 0).toString(16)}`;
}

/**
 * `wire` without the special writes whose value this device already
 * exchanged with the server (`seen`: pushed or pulled there). Such a value
 * tells the server nothing new, and sent with a checkpoint pushed for
 * another reason (a regular write added) it would replace a newer value
 * another device put in that slot since.
 */
export function withoutExchanged(wire: WireCheckpoint, seen: readonly string[] | undefined): WireCheckpoint {
  if (seen === undefined || seen.length === 0) return wire;
  const writes = wire.writes.filter((write) => write.idx >= 0 || !seen.includes(specialDigest(write)));
  return writes.length === wire.writes.length ? wire : { ...wire, writes };
}

/** The digests of a checkpoint's special writes (see {@link specialDigest}). */
export function specialDigests(writes: readonly WireWrite[]): string[] {
  return writes.filter((write) => write.idx < 0).map(specialDigest);
}

/**
 * What is stored locally: thread ids with checkpoints (unless
 * `options.threads` is false), tombstones (thread id to max deleted id), and
 * checkpoints removed by prune or deleteForRuns. A malformed tombstone fails the read
 * (`SerializationError`), as it fails the saver's own writes to that thread.
 */
export async function localInventory(
  access: SaverRawAccess,
  options: { threads: boolean } = { threads: true },
): Promise<{ threads: string[]; tombstones: Map<string, string>; removed: WireRemoved[] }> {
  return access.db.read(
    ["checkpoints", "meta"],
    async (tx) => {
      const ranges = access.db.ranges;
      const [keys, stored, removedNames] = await Promise.all([
        // Every checkpoint key only when asked: a round that knows what changed lists no thread.
        options.threads ? tx.objectStore("checkpoints").getAllKeys() : [],
        readTombstones(tx, ranges),
        tx.objectStore("meta").getAllKeys(ranges.bound(REMOVED_NAMES.lower, REMOVED_NAMES.upper)),
      ]);
      const threads = [...new Set(keys.map((key) => key[0]))];
      const tombstones = new Map([...stored].map(([threadId, tombstone]) => [threadId, tombstone.max_deleted_id]));
      const removed = removedNames.map((name): WireRemoved => {
        const { threadId, checkpointNs, checkpointId } = checkpointOfMark(name);
        return { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId };
      });
      return { threads, tombstones, removed };
    },
    "read what to sync",
  );
}

/** A local checkpoint as a push bundle, with its writes' fingerprint. */
export interface LocalCheckpoint {
  key: string;
  fingerprint: string;
  wire: WireCheckpoint;
}

/** Every checkpoint of a thread as stored, in push order (namespace, then id: parents first). */
export async function readThread(access: SaverRawAccess, threadId: string): Promise<LocalCheckpoint[]> {
  const { checkpoints, blobs, writes } = await access.db.read(
    ["checkpoints", "blobs", "writes"],
    async (tx) => {
      const bounds = prefixBounds(threadId);
      const range = access.db.ranges.bound(bounds.lower, bounds.upper);
      const [checkpoints, blobs, writes] = await Promise.all([
        tx.objectStore("checkpoints").getAll(range),
        tx.objectStore("blobs").getAll(range),
        tx.objectStore("writes").getAll(range),
      ]);
      return { checkpoints, blobs, writes };
    },
    "read a thread to sync",
  );
  return bundles(checkpoints, blobs, writes);
}

/**
 * The checkpoints of `keys` as stored (those still there), with their
 * values and writes, in push order: what a round reads when it knows what
 * changed (changes.ts), at the cost of those checkpoints alone.
 */
export async function readCheckpoints(
  access: SaverRawAccess,
  keys: readonly (readonly [string, string, string])[],
): Promise<LocalCheckpoint[]> {
  if (keys.length === 0) return [];
  const { checkpoints, blobs, writes } = await access.db.read(
    ["checkpoints", "blobs", "writes"],
    async (tx) => {
      const ranges = access.db.ranges;
      const [rows, writes] = await Promise.all([
        Promise.all(keys.map((key) => tx.objectStore("checkpoints").get([...key]))),
        Promise.all(
          keys.map(([threadId, ns, id]) => {
            const bounds = prefixBounds(threadId, ns, id);
            return tx.objectStore("writes").getAll(ranges.bound(bounds.lower, bounds.upper));
          }),
        ),
      ]);
      const checkpoints = rows.filter((row) => row !== undefined);
      const wanted = new Map<string, ValueKey>();
      for (const row of checkpoints)
        for (const [channel, version] of Object.entries(row.channel_versions))
          wanted.set(`${row.thread_id}\u0000${blobIdentity(row.checkpoint_ns, channel, version)}`, [
            row.thread_id,
            row.checkpoint_ns,
            channel,
            version,
          ]);
      // A value an ancestor introduced: its blob row, or (row format 2) the ancestor row holding it inline.
      const blobs = await Promise.all(
        [...wanted.values()].map(([threadId, ns, channel, version]) => readValue(tx, threadId, ns, channel, version)),
      );
      return { checkpoints, blobs: blobs.filter((blob) => blob !== undefined), writes: writes.flat() };
    },
    "read changed checkpoints to sync",
  );
  checkpoints.sort((a, b) => compareKeys(a, b));
  return bundles(checkpoints, blobs, writes);
}

/** Push order: thread, namespace, then id (parents first), as the store's key order. */
function compareKeys(a: CheckpointRow, b: CheckpointRow): number {
  for (const field of ["thread_id", "checkpoint_ns", "checkpoint_id"] as const)
    if (a[field] !== b[field]) return a[field] < b[field] ? -1 : 1;
  return 0;
}

/** Checkpoint rows as push bundles, each with its blobs and writes from those given. */
function bundles(checkpoints: CheckpointRow[], blobs: BlobRow[], writes: WriteRow[]): LocalCheckpoint[] {
  // Row format 2 values held inline go on the wire as the blobs they stand for (format 1 bundles).
  const blobIndex = new Map(
    [...blobs, ...checkpoints.flatMap(inlineBlobs)].map((blob) => [
      `${blob.thread_id}\u0000${blobIdentity(blob.checkpoint_ns, blob.channel, blob.version)}`,
      blob,
    ]),
  );
  const writesByCheckpoint = new Map<string, WireWrite[]>();
  for (const write of writes) {
    if (isTombstoneWrite(write)) continue;
    const key = checkpointKeyOf(write.thread_id, write.checkpoint_ns, write.checkpoint_id);
    const list = writesByCheckpoint.get(key) ?? [];
    list.push({
      task_id: write.task_id,
      idx: write.idx,
      channel: write.channel,
      task_path: write.task_path,
      value: write.value,
    });
    writesByCheckpoint.set(key, list);
  }
  return checkpoints.map((row) => {
    const key = checkpointKeyOf(row.thread_id, row.checkpoint_ns, row.checkpoint_id);
    const rowWrites = writesByCheckpoint.get(key) ?? [];
    const wire: WireCheckpoint = {
      thread_id: row.thread_id,
      checkpoint_ns: row.checkpoint_ns,
      checkpoint_id: row.checkpoint_id,
      checkpoint: row.checkpoint,
      metadata: row.metadata,
      channel_versions: row.channel_versions,
      blobs: [],
      writes: rowWrites,
    };
    if (row.parent_checkpoint_id !== undefined) wire.parent_checkpoint_id = row.parent_checkpoint_id;
    if (row.chain !== undefined) wire.chain = row.chain;
    if (row.parent_writes !== undefined) wire.parent_writes = row.parent_writes;
    if (row.run_id !== undefined) wire.run_id = row.run_id;
    for (const [channel, version] of Object.entries(row.channel_versions)) {
      const blob = blobIndex.get(`${row.thread_id}\u0000${blobIdentity(row.checkpoint_ns, channel, version)}`);
      if (blob) wire.blobs.push({ channel, version, value: blob.value });
    }
    return { key, fingerprint: writesFingerprint(rowWrites), wire };
  });
}

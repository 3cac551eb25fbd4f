/**
 * Row transfer between an `IndexedDBSaver`'s stores and the wire: reads a
 * thread's stored rows as bundles to push, and applies pulled changes. Rows
 * move as stored (`[type, bytes]`, ciphertext for an encrypted saver, bound
 * to the same thread/namespace/checkpoint/channel ids on every device), so
 * nothing is decoded or re-encoded here.
 *
 * A pulled batch is applied in ONE read-write transaction (checkpoints, their
 * blobs, writes, thread summaries, tombstones): a reader sees all of it or
 * none. Only IndexedDB requests are awaited inside it.
 */
import { addIfAbsent, issue, storeDelete, storePut } from "../idb/requests.js";
import { crc32 } from "../core/crc32.js";
import { prefixBounds } from "../saver/keys.js";
import type { SaverRawAccess } from "../saver/index.js";
import {
  TOMBSTONE_NS,
  tombstoneName,
  tombstoneWrite,
  type CheckpointRow,
  type Tombstone,
  type WriteRow,
} from "../saver/schema.js";
import type { KeyRecord } from "../serde/protocol.js";
import type { WireChange, WireCheckpoint, WireDelete, WireWrite } from "./protocol.js";
import { updateSyncState, type ThreadSyncUpdate } from "./state.js";
import { blobIdentity } from "../core/identity.js";

/** The identity of a checkpoint across devices. */
export function checkpointKeyOf(threadId: string, ns: string, id: string): string {
  return `${threadId}\u0000${ns}\u0000${id}`;
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

/** What is stored locally: thread ids with checkpoints, and tombstones (thread id to max deleted id). */
export async function localInventory(
  access: SaverRawAccess,
): Promise<{ threads: string[]; tombstones: Map<string, string> }> {
  return access.db.read(
    ["checkpoints", "meta"],
    async (tx) => {
      const ranges = access.db.ranges;
      const [keys, meta] = await Promise.all([
        tx.objectStore("checkpoints").getAllKeys(),
        tx.objectStore("meta").getAll(ranges.bound("tombstone\u0000", "tombstone\u0001")),
      ]);
      const threads = [...new Set(keys.map((key) => key[0]))];
      const tombstones = new Map<string, string>();
      for (const row of meta) {
        const tombstone = row.value as Partial<Tombstone> | undefined;
        if (typeof tombstone?.max_deleted_id === "string")
          tombstones.set(row.name.slice("tombstone\u0000".length), tombstone.max_deleted_id);
      }
      return { threads, tombstones };
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
  const blobIndex = new Map(
    blobs.map((blob) => [
      `${blob.checkpoint_ns}\u0000${blob.channel}\u0000${typeof blob.version}:${String(blob.version)}`,
      blob,
    ]),
  );
  const writesByCheckpoint = new Map<string, WireWrite[]>();
  for (const write of writes) {
    if (write.checkpoint_ns === TOMBSTONE_NS) continue;
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
    if (row.run_id !== undefined) wire.run_id = row.run_id;
    for (const [channel, version] of Object.entries(row.channel_versions)) {
      const blob = blobIndex.get(`${row.checkpoint_ns}\u0000${channel}\u0000${typeof version}:${String(version)}`);
      if (blob) wire.blobs.push({ channel, version, value: blob.value });
    }
    return { key, fingerprint: writesFingerprint(rowWrites), wire };
  });
}

/** What applying a pulled batch did. */
export interface Applied {
  /** Fingerprints of the checkpoints stored or merged, as now stored locally. */
  fingerprints: Map<string, string>;
  /** Deletes applied (a thread's tombstone raised). */
  deletes: WireDelete[];
  /** Threads that changed. */
  threads: Set<string>;
}

/**
 * Applies pulled changes, in order, in one transaction. Checkpoints are
 * added if absent (they are immutable), blobs likewise, writes by the
 * `putWrites` rules (regular: first wins; special: replace). A checkpoint at
 * or below its thread's tombstone is dropped; a delete removes every
 * checkpoint at or below its `max_deleted_id` and raises the tombstone.
 * The sync state (fingerprints, the new cursor) commits in the same transaction.
 */
export async function applyChanges(
  access: SaverRawAccess,
  changes: WireChange[],
  sync: { scope: string; cursor: number },
): Promise<Applied> {
  const now = access.now();
  const events: { threadId: string; checkpointNs?: string; checkpointId?: string; kind: "put" | "delete" }[] = [];
  const applied = await access.write(
    ["checkpoints", "blobs", "writes", "threads", "meta"],
    async (tx) => {
      events.length = 0; // a retried transaction starts over
      const result: Applied = { fingerprints: new Map(), deletes: [], threads: new Set() };
      const ranges = access.db.ranges;
      const meta = tx.objectStore("meta");
      const checkpoints = tx.objectStore("checkpoints");
      const writes = tx.objectStore("writes");
      const blobs = tx.objectStore("blobs");
      const tombstones = new Map<string, Tombstone | undefined>();
      const tombstoneOf = async (threadId: string): Promise<Tombstone | undefined> => {
        if (!tombstones.has(threadId)) {
          const value = (await meta.get(tombstoneName(threadId)))?.value as Tombstone | undefined;
          tombstones.set(threadId, typeof value?.max_deleted_id === "string" ? value : undefined);
        }
        return tombstones.get(threadId);
      };
      const refreshSummary = async (threadId: string): Promise<void> => {
        const root = prefixBounds(threadId, "");
        const newest = await checkpoints.openCursor(ranges.bound(root.lower, root.upper), "prev");
        if (!newest) return void (await storeDelete(tx.objectStore("threads"), threadId));
        const row: CheckpointRow = newest.value;
        await storePut(tx.objectStore("threads"), {
          thread_id: threadId,
          updated_at: now,
          latest: { checkpoint_ns: row.checkpoint_ns, checkpoint_id: row.checkpoint_id, metadata: row.metadata },
        });
      };

      // Requests go out without waiting where order alone is enough
      // (IndexedDB runs a transaction's requests in issue order): tombstones
      // first, then the rows, then the read-backs and summaries.
      await Promise.all(
        [...new Set(changes.map((c) => (c.kind === "delete" ? c.delete.thread_id : c.checkpoint.thread_id)))].map(
          tombstoneOf,
        ),
      );
      const stored: { wire: WireCheckpoint; added: Promise<boolean> }[] = [];
      const summaries = new Set<string>();
      const seenBlobs = new Set<string>();
      for (const change of changes) {
        if (change.kind === "delete") {
          const { thread_id: threadId, max_deleted_id: max } = change.delete;
          const previous = tombstones.get(threadId);
          const bounds = prefixBounds(threadId);
          const range = ranges.bound(bounds.lower, bounds.upper);
          const [checkpointKeys, writeKeys] = await Promise.all([
            checkpoints.getAllKeys(range),
            writes.getAllKeys(range),
          ]);
          for (const key of checkpointKeys) if (key[2] <= max) issue(storeDelete(checkpoints, key));
          for (const key of writeKeys) if (key[1] !== TOMBSTONE_NS && key[2] <= max) issue(storeDelete(writes, key));
          if (checkpointKeys.every((key) => key[2] <= max)) issue(storeDelete(blobs, range));
          const tombstone: Tombstone = {
            max_deleted_id: previous && previous.max_deleted_id > max ? previous.max_deleted_id : max,
            dropped: previous?.dropped ?? [],
            deleted_at: Date.now(),
          };
          tombstones.set(threadId, tombstone);
          issue(storePut(writes, tombstoneWrite(threadId, tombstone)));
          issue(storePut(meta, { name: tombstoneName(threadId), value: tombstone }));
          summaries.add(threadId);
          result.deletes.push(change.delete);
          result.threads.add(threadId);
          events.push({ threadId, kind: "delete" });
          continue;
        }
        const wire = change.checkpoint;
        const tombstone = tombstones.get(wire.thread_id);
        if (tombstone && wire.checkpoint_id <= tombstone.max_deleted_id) continue;
        const row: CheckpointRow = {
          thread_id: wire.thread_id,
          checkpoint_ns: wire.checkpoint_ns,
          checkpoint_id: wire.checkpoint_id,
          checkpoint: wire.checkpoint,
          metadata: wire.metadata,
          channel_versions: { ...wire.channel_versions },
          created_at: now,
        };
        if (wire.parent_checkpoint_id !== undefined) row.parent_checkpoint_id = wire.parent_checkpoint_id;
        // Sealed with the checkpoint (binding version 3): without it the row no longer opens.
        if (wire.chain !== undefined) row.chain = wire.chain;
        if (wire.run_id !== undefined) row.run_id = wire.run_id;
        const added = addIfAbsent(checkpoints, row);
        issue(added);
        for (const blob of wire.blobs) {
          // Unchanged channels share one version across checkpoints: add it once.
          const blobKey = `${wire.thread_id}\u0000${blobIdentity(wire.checkpoint_ns, blob.channel, blob.version)}`;
          if (seenBlobs.has(blobKey)) continue;
          seenBlobs.add(blobKey);
          issue(
            addIfAbsent(blobs, {
              thread_id: wire.thread_id,
              checkpoint_ns: wire.checkpoint_ns,
              channel: blob.channel,
              version: blob.version,
              value: blob.value,
            }),
          );
        }
        for (const write of wire.writes) {
          const row: WriteRow = {
            thread_id: wire.thread_id,
            checkpoint_ns: wire.checkpoint_ns,
            checkpoint_id: wire.checkpoint_id,
            task_id: write.task_id,
            idx: write.idx,
            channel: write.channel,
            task_path: write.task_path,
            value: write.value,
          };
          issue(write.idx < 0 ? storePut(writes, row) : addIfAbsent(writes, row));
        }
        stored.push({ wire, added });
        if (wire.checkpoint_ns === "") summaries.add(wire.thread_id);
        result.threads.add(wire.thread_id);
      }
      // What is stored now (after first-wins merges): the fingerprints to remember.
      await Promise.all(
        stored.map(async ({ wire, added }) => {
          const bounds = prefixBounds(wire.thread_id, wire.checkpoint_ns, wire.checkpoint_id);
          const [isNew, rows] = await Promise.all([added, writes.getAll(ranges.bound(bounds.lower, bounds.upper))]);
          result.fingerprints.set(
            checkpointKeyOf(wire.thread_id, wire.checkpoint_ns, wire.checkpoint_id),
            writesFingerprint(rows),
          );
          if (isNew || wire.writes.length > 0)
            events.push({
              threadId: wire.thread_id,
              checkpointNs: wire.checkpoint_ns,
              checkpointId: wire.checkpoint_id,
              kind: "put",
            });
        }),
      );
      await Promise.all([...summaries].map(refreshSummary));
      const updates: ThreadSyncUpdate[] = result.deletes.map((d) => ({
        threadId: d.thread_id,
        tomb: d.max_deleted_id,
      }));
      for (const [key, fp] of result.fingerprints) {
        const at = key.indexOf("\u0000");
        updates.push({ threadId: key.slice(0, at), fps: [[key.slice(at + 1), fp]] });
      }
      await updateSyncState(tx, sync.scope, updates, sync.cursor);
      return result;
    },
    "apply pulled changes",
  );
  // Told once committed: other tabs re-read and find the pulled rows.
  for (const event of events) access.emit(event);
  return applied;
}

/** The database's encryption key record, if any. */
export function readKeyRecord(access: SaverRawAccess): Promise<KeyRecord | undefined> {
  return access.db.read(
    ["meta"],
    async (tx) => (await tx.objectStore("meta").get("key"))?.value as KeyRecord | undefined,
    "read the key record",
  );
}

/**
 * Stores `record` as the database's key record unless it has one; resolves
 * with the record now stored (the given one, or the one already there).
 */
export function adoptKeyRecord(access: SaverRawAccess, record: KeyRecord): Promise<KeyRecord> {
  return access.write(
    ["meta"],
    async (tx) => {
      const meta = tx.objectStore("meta");
      const existing = (await meta.get("key"))?.value as KeyRecord | undefined;
      if (existing !== undefined) return existing;
      await storePut(meta, { name: "key", value: record });
      return record;
    },
    "adopt the synced key record",
  );
}

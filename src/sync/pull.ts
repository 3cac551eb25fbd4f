/**
 * The pull side of replication: applies changes other devices pushed to an
 * `IndexedDBSaver`'s stores, as stored (see push.ts), through the saver's
 * own rules for tombstones, deletes and thread summaries.
 *
 * A pulled batch is applied in ONE read-write transaction (checkpoints, their
 * blobs, writes, thread summaries, tombstones): a reader sees all of it or
 * none. Only IndexedDB requests are awaited inside it.
 */
import { blobIdentity, checkpointIdentity } from "../core/identity.js";
import { addIfAbsent, issue, storePut } from "../idb/requests.js";
import { deleteUpTo } from "../saver/delete-thread.js";
import { deleteUnusedBlobs, removeCheckpoint } from "../saver/runs.js";
import { prefixBounds } from "../saver/keys.js";
import type { SaverRawAccess } from "../saver/raw-access.js";
import { heldInline, type CheckpointRow, type Tombstone, type ValueKey, type WriteRow } from "../rows/shapes.js";
import { removedName } from "../rows/marks.js";
import { takeOffAbsent } from "../saver/absent.js";
import { summarizeThread } from "../saver/threads.js";
import { readTombstone, type WriteTx } from "../saver/tombstones.js";
import type { WireChange, WireCheckpoint, WireDelete, WireRemoved, WireWrite } from "./protocol.js";
import { checkpointKeyOf, specialDigest, writesFingerprint } from "./push.js";
import { addReplayed, withRevalued } from "./changes.js";
import { writeChecked } from "./pull-checks.js";
import { readThreadSync, updateSyncState, type ThreadSyncRecord, type ThreadSyncUpdate } from "./state.js";

/** The fingerprint recorded for a checkpoint whose pulled special write was refused as a replay. */
const REPLAYED = "replayed";

/**
 * Puts pulled special writes (negative idx: they replace), in order, except
 * replays: a value this device pushed or pulled in that slot before, sent
 * again over a different stored value, is an older one coming back (a
 * hostile server, or a device that had not seen the newer one) and does not
 * replace it. Resolves to the checkpoints with a refused replay and the
 * digests of what was put and of the local values kept over a replay, by
 * checkpoint key.
 */
async function applySpecialWrites(
  tx: WriteTx,
  special: { wire: WireCheckpoint; write: WireWrite; row: WriteRow }[],
  records: Map<string, ThreadSyncRecord>,
): Promise<{ replayed: Set<string>; seen: Map<string, string[]>; kept: Map<string, string[]> }> {
  const writes = tx.objectStore("writes");
  const locals = await Promise.all(
    special.map(({ row }) => writes.get([row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.task_id, row.idx])),
  );
  const replayed = new Set<string>();
  const seen = new Map<string, string[]>();
  const kept = new Map<string, string[]>();
  for (const [i, { wire, write, row }] of special.entries()) {
    const key = checkpointKeyOf(wire.thread_id, wire.checkpoint_ns, wire.checkpoint_id);
    const digest = specialDigest(write);
    const local = locals[i];
    const known = records.get(wire.thread_id)?.seen?.[checkpointIdentity(wire.checkpoint_ns, wire.checkpoint_id)];
    if (local && specialDigest(local) !== digest && known?.includes(digest)) {
      replayed.add(key);
      kept.set(key, [...(kept.get(key) ?? []), specialDigest(local)]);
      continue;
    }
    issue(storePut(writes, row));
    seen.set(key, [...(seen.get(key) ?? []), digest]);
  }
  return { replayed, seen, kept };
}

/** The thread a change is about. */
function threadOf(change: WireChange): string {
  if (change.kind === "delete") return change.delete.thread_id;
  return change.kind === "removed" ? change.removed.thread_id : change.checkpoint.thread_id;
}

/** What applying a pulled batch did. */
export interface Applied {
  /** Fingerprints of the checkpoints stored or merged, as now stored locally. */
  fingerprints: Map<string, string>;
  /** Deletes applied (a thread's tombstone raised). */
  deletes: WireDelete[];
  /** Checkpoints removed (prune or deleteForRuns on another device). */
  removed: WireRemoved[];
  /** Threads that changed. */
  threads: Set<string>;
}

/**
 * Applies pulled changes, in order, in one transaction. Checkpoints are
 * added if absent (they are immutable), blobs likewise; a regular write
 * takes the server's value (the first the server took: the same on every
 * device), a special write replaces unless it is a replay. A checkpoint at
 * or below its thread's tombstone is dropped; a delete removes every
 * checkpoint at or below its `max_deleted_id` and raises the tombstone.
 * The sync state (fingerprints, the new cursor) commits in the same transaction.
 * Under encryption, the deleted rows that hold values inline are checked
 * first (pull-checks.ts): an edited one fails the pull with a
 * `DecryptionError` naming it, and nothing is applied.
 */
export async function applyChanges(
  access: SaverRawAccess,
  changes: WireChange[],
  sync: {
    scope: string;
    cursor: number;
    /**
     * The revalued marks the round read (checkpoint key to time, engine.ts): a
     * pulled checkpoint's fingerprint names its mark, as the round's does.
     * A mark written since costs one push of that checkpoint, no more.
     */
    revalued?: ReadonlyMap<string, number>;
  },
): Promise<Applied> {
  const now = access.now();
  const events: { threadId: string; checkpointNs?: string; checkpointId?: string; kind: "put" | "delete" }[] = [];
  const applied = await writeChecked(
    access,
    changes,
    ["checkpoints", "blobs", "writes", "threads", "meta"],
    async (tx, check) => {
      events.length = 0; // a retried transaction starts over
      const result: Applied = { fingerprints: new Map(), deletes: [], removed: [], threads: new Set() };
      const ranges = access.db.ranges;
      const checkpoints = tx.objectStore("checkpoints");
      const writes = tx.objectStore("writes");
      const blobs = tx.objectStore("blobs");
      const tombstones = new Map<string, Tombstone | undefined>();
      const records = new Map<string, ThreadSyncRecord>();
      const tombstoneOf = async (threadId: string): Promise<void> => {
        const [tombstone, record] = await Promise.all([
          readTombstone(tx, threadId),
          readThreadSync(tx, sync.scope, threadId),
        ]);
        tombstones.set(threadId, tombstone);
        records.set(threadId, record);
      };
      // Checkpoints this device removed (prune, deleteForRuns) stay removed.
      const removed = new Set<string>();
      const markRemoved = async ({ thread_id, checkpoint_ns, checkpoint_id }: WireCheckpoint): Promise<void> => {
        if ((await tx.objectStore("meta").getKey(removedName(thread_id, checkpoint_ns, checkpoint_id))) !== undefined)
          removed.add(checkpointKeyOf(thread_id, checkpoint_ns, checkpoint_id));
      };

      // Requests go out without waiting where order alone is enough
      // (IndexedDB runs a transaction's requests in issue order): tombstones
      // first, then the rows, then the read-backs and summaries.
      await Promise.all([...new Set(changes.map(threadOf))].map(tombstoneOf));
      await Promise.all(changes.map((c) => (c.kind === "checkpoint" ? markRemoved(c.checkpoint) : undefined)));
      const stored: { wire: WireCheckpoint; added: Promise<boolean>; valued: Promise<boolean>[] }[] = [];
      const summaries = new Set<string>();
      const seenBlobs = new Set<string>();
      // The keys of the blobs added: rows may list those versions as having no value (saver/absent.ts).
      const newBlobs: Promise<ValueKey | undefined>[] = [];
      const special: { wire: WireCheckpoint; write: WireWrite; row: WriteRow }[] = [];
      const pruned = new Set<string>();
      const gone: Promise<CheckpointRow | undefined>[] = [];
      for (const change of changes) {
        if (change.kind === "removed") {
          const { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } = change.removed;
          // Read before the delete (requests run in issue order): the values it holds inline may be used.
          gone.push(checkpoints.get([threadId, ns, id]));
          removeCheckpoint(tx, ranges, threadId, ns, id);
          removed.add(checkpointKeyOf(threadId, ns, id));
          pruned.add(threadId);
          summaries.add(threadId);
          result.removed.push(change.removed);
          result.threads.add(threadId);
          events.push({ threadId, kind: "delete" });
          continue;
        }
        if (change.kind === "delete") {
          const { thread_id: threadId, max_deleted_id: max } = change.delete;
          tombstones.set(threadId, await deleteUpTo(tx, ranges, threadId, max, check?.see));
          summaries.add(threadId);
          result.deletes.push(change.delete);
          result.threads.add(threadId);
          events.push({ threadId, kind: "delete" });
          continue;
        }
        const wire = change.checkpoint;
        const tombstone = tombstones.get(wire.thread_id);
        if (tombstone && wire.checkpoint_id <= tombstone.max_deleted_id) continue;
        if (removed.has(checkpointKeyOf(wire.thread_id, wire.checkpoint_ns, wire.checkpoint_id))) continue;
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
        // Hashed into that chain (binding version 4): without it the chain no longer proves the row.
        if (wire.parent_writes !== undefined) row.parent_writes = wire.parent_writes;
        if (wire.run_id !== undefined) row.run_id = wire.run_id;
        const added = addIfAbsent(checkpoints, row);
        issue(added);
        // Whether each value it brings was new here.
        const valued: Promise<boolean>[] = [];
        for (const blob of wire.blobs) {
          // Unchanged channels share one version across checkpoints: add it once.
          const blobKey = `${wire.thread_id}\u0000${blobIdentity(wire.checkpoint_ns, blob.channel, blob.version)}`;
          if (seenBlobs.has(blobKey)) continue;
          seenBlobs.add(blobKey);
          const key: ValueKey = [wire.thread_id, wire.checkpoint_ns, blob.channel, blob.version];
          // A checkpoint of this device may hold the value inline (row format 2: a bundle carries every
          // value its checkpoint names, as blobs): versions are unique, so it is the same value, and a
          // blob row would only copy it. Its holder, removed later in this page, leaves it as a blob row
          // if a row kept still names it (keepUsedInline). Every row the index names, checked as readValue
          // checks them: an edited row listing the key (its clear inline_keys) holds nothing to read.
          const addedBlob = checkpoints
            .index("by_value")
            .getAll(key)
            .then((rows) =>
              heldInline(rows, wire.thread_id, wire.checkpoint_ns, blob.channel, blob.version) === undefined
                ? addIfAbsent(blobs, {
                    thread_id: wire.thread_id,
                    checkpoint_ns: wire.checkpoint_ns,
                    channel: blob.channel,
                    version: blob.version,
                    value: blob.value,
                  })
                : false,
            );
          issue(addedBlob);
          valued.push(addedBlob);
          newBlobs.push(addedBlob.then((isNew) => (isNew ? key : undefined)));
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
          if (write.idx < 0) special.push({ wire, write, row });
          // The server's value is the first it took, for every device: one this device wrote into
          // the same slot while apart gives way (keeping it, the device never matched the server).
          else issue(storePut(writes, row));
        }
        stored.push({ wire, added, valued });
        if (wire.checkpoint_ns === "") summaries.add(wire.thread_id);
        result.threads.add(wire.thread_id);
      }
      const relisted = await takeOffAbsent(
        tx,
        (await Promise.all(newBlobs)).filter((key) => key !== undefined),
      );
      // Those checkpoints now read a value they did not: what a reader kept of them is stale.
      for (const row of relisted) {
        events.push({
          threadId: row.thread_id,
          checkpointNs: row.checkpoint_ns,
          checkpointId: row.checkpoint_id,
          kind: "put",
        });
      }
      const { replayed, seen, kept } = await applySpecialWrites(tx, special, records);
      // What is stored now (after first-wins merges): the fingerprints to remember.
      await Promise.all(
        stored.map(async ({ wire, added, valued }) => {
          const bounds = prefixBounds(wire.thread_id, wire.checkpoint_ns, wire.checkpoint_id);
          const [isNew, rows, news] = await Promise.all([
            added,
            writes.getAll(ranges.bound(bounds.lower, bounds.upper)),
            Promise.all(valued),
          ]);
          const key = checkpointKeyOf(wire.thread_id, wire.checkpoint_ns, wire.checkpoint_id);
          const fingerprint = withRevalued(writesFingerprint(rows), sync.revalued?.get(key));
          // A refused replay leaves the server holding an older value than this
          // device: no fingerprint matches, so the next round pushes ours again.
          result.fingerprints.set(key, replayed.has(key) ? REPLAYED : fingerprint);
          // A value new here may be one a checkpoint held before already names without listing it as
          // absent (a pulled row, or one put before schema step 5; rows listing it were told above):
          // that checkpoint now reads it, and a reader that kept it without the value must drop it.
          if (isNew || wire.writes.length > 0 || news.includes(true))
            events.push({
              threadId: wire.thread_id,
              checkpointNs: wire.checkpoint_ns,
              checkpointId: wire.checkpoint_id,
              kind: "put",
            });
        }),
      );
      // Channel values only removed checkpoints used go with them.
      const goneRows = (await Promise.all(gone)).filter((row) => row !== undefined);
      await Promise.all(
        [...pruned].map((threadId) =>
          deleteUnusedBlobs(
            tx,
            ranges,
            threadId,
            goneRows.filter((row) => row.thread_id === threadId),
            check?.see,
          ),
        ),
      );
      // Every deleted row seen: one holding values inline that was not checked aborts the page here.
      check?.settle();
      await Promise.all([...summaries].map((threadId) => summarizeThread(tx, ranges, threadId, now)));
      const updates: ThreadSyncUpdate[] = result.deletes.map((d) => ({
        threadId: d.thread_id,
        tomb: d.max_deleted_id,
      }));
      for (const r of result.removed)
        updates.push({ threadId: r.thread_id, gone: [checkpointIdentity(r.checkpoint_ns, r.checkpoint_id)] });
      for (const [key, fp] of result.fingerprints) {
        const at = key.indexOf("\u0000");
        const local = key.slice(at + 1);
        updates.push({
          threadId: key.slice(0, at),
          fps: [[local, fp]],
          seen: [[local, seen.get(key) ?? []]],
          // Kept over a replay: the server holds another value, so ours goes again.
          unseen: [[local, kept.get(key) ?? []]],
        });
      }
      await updateSyncState(tx, sync.scope, updates, sync.cursor);
      // Ours goes again (a refused replay, a value kept over one): the next round reads the thread
      // whole, whatever its rows' stamps (changes.ts).
      const again = new Set<string>();
      for (const [key, fp] of result.fingerprints)
        if (fp === REPLAYED || (kept.get(key)?.length ?? 0) > 0) again.add(key.slice(0, key.indexOf("\u0000")));
      if (again.size > 0) await addReplayed(tx, sync.scope, again, now);
      return result;
    },
    "apply pulled changes",
  );
  // Told once committed: other tabs re-read and find the pulled rows.
  for (const event of events) access.emit(event);
  return applied;
}

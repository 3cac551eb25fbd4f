/**
 * What the crash journal needs to know of the saver's schema: after a
 * recovery, the current rows of the newest checkpoints (with their channel
 * values, pending writes and thread summary) of every thread and namespace
 * the journal's last records wrote to, re-appended because their own append
 * may have been cut off by the crash; and which rows a replay must leave
 * out, those of threads deleted since. The journal itself knows no schema.
 */
import type { Op, Payload, SchemaRules } from "../journal/raw.js";
import { completion, request } from "../journal/active.js";
import { SAVER_STORE_NAMES } from "./schema.js";
import { isValidKey } from "../core/guards.js";
import { sameValue } from "../core/equality.js";
import { namespaceMapKey } from "./keys.js";
import {
  TOMBSTONE_NAMES,
  heldInline,
  inlineBlob,
  isDeadCheckpoint,
  tombstoneThread,
  type BlobRow,
  type CheckpointRow,
  type MetaRow,
  type ThreadRow,
  type Tombstone,
  type Version,
} from "../rows/shapes.js";
import type { RemovedCheckpoint } from "../rows/marks.js";
import { unjournaled, withoutHeld } from "./journal-held.js";

/** How many newest checkpoints per namespace are journaled again. */
const PER_NAMESPACE = 4;

/**
 * Put operations for the current rows of the newest checkpoints of every
 * thread and namespace that `records` wrote to (see the module's note).
 */
export async function resyncNewestRows(db: IDBDatabase, records: readonly Payload[]): Promise<Op[]> {
  const perNamespace = PER_NAMESPACE;
  const namespaces = new Map<string, [string, string]>();
  for (const record of records) {
    if (!("o" in record)) continue;
    for (const op of record.o) {
      if ((op[0] === "checkpoints" || op[0] === "writes") && (op[1] === 0 || op[1] === 1)) {
        const row = op[2] as { thread_id: string; checkpoint_ns: string };
        namespaces.set(namespaceMapKey(row.thread_id, row.checkpoint_ns), [row.thread_id, row.checkpoint_ns]);
      }
    }
  }
  if (namespaces.size === 0) return [];
  const KeyRange = (globalThis as { IDBKeyRange: typeof IDBKeyRange }).IDBKeyRange;
  const tx = db.transaction(
    SAVER_STORE_NAMES.filter((store) => db.objectStoreNames.contains(store)),
    "readonly",
  );
  const ops: Op[] = [];
  const threads = new Set<string>();
  for (const [threadId, ns] of namespaces.values()) {
    // Only what the saver writes: a row of another shape (an edit of the journal) names no namespace of ours.
    if (typeof threadId !== "string" || typeof ns !== "string") continue;
    if (ns.startsWith("\u0000")) continue; // a tombstone copy, not a namespace
    threads.add(threadId);
    const range = KeyRange.bound([threadId, ns], [threadId, ns, []]);
    const rows: CheckpointRow[] = [];
    await new Promise<void>((resolve, reject) => {
      const cursor = tx.objectStore("checkpoints").openCursor(range, "prev");
      cursor.onerror = () => reject(cursor.error);
      cursor.onsuccess = () => {
        const current = cursor.result;
        if (!current || rows.length >= perNamespace) return resolve();
        rows.push(current.value);
        current.continue();
      };
    });
    for (const row of rows) {
      ops.push(["checkpoints", 0, row]);
      const checkpoints = tx.objectStore("checkpoints");
      // A row edited in the database may hold anything as its versions: it is journaled again as it is, with the
      // values of the versions that can be keys. Recovery must not throw on it: it runs before every operation.
      const versions: unknown = row.channel_versions;
      const entries = typeof versions === "object" && versions !== null ? Object.entries(versions) : [];
      const blobs = await Promise.all(
        entries.map(async ([channel, version]: [string, Version]) => {
          if (!isValidKey([channel, version])) return undefined;
          // Row format 2: a value this row holds inline comes back with it; one an
          // ancestor holds inline is re-appended as the blob row it stands for.
          if (inlineBlob(row, channel, version)) return undefined;
          const key = [threadId, ns, channel, version];
          const blob = (await request(tx.objectStore("blobs").get(key))) as BlobRow | undefined;
          if (blob || !checkpoints.indexNames.contains("by_value")) return blob;
          const holders = (await request(checkpoints.index("by_value").getAll(key))) as CheckpointRow[];
          return heldInline(holders, threadId, ns, channel, version);
        }),
      );
      for (const blob of blobs) if (blob !== undefined) ops.push(["blobs", 0, blob]);
      const writes = await request(
        tx
          .objectStore("writes")
          .getAll(KeyRange.bound([threadId, ns, row.checkpoint_id], [threadId, ns, row.checkpoint_id, []])),
      );
      for (const write of writes) ops.push(["writes", 0, write]);
    }
  }
  for (const threadId of threads) {
    const thread = await request(tx.objectStore("threads").get(threadId));
    if (thread !== undefined) ops.push(["threads", 0, thread]);
  }
  return ops;
}

/**
 * `records` without the rows of checkpoints deleted since the journal
 * recorded them by a tab without the journal: those a thread's tombstone in
 * `db` marks deleted (a deleted thread), and those `prune` or `deleteForRuns`
 * marked removed after the journal's generation `generation` (a time: the
 * journaling saver rewrites its journal after its own removals); replaying
 * them would bring them back. Blobs of a deleted thread stay only when a
 * checkpoint kept here lists their version (a new run on the thread after
 * the delete); a blob a removed checkpoint lists, only when a kept one lists
 * it too; deletes and other rows stay. `records` starting with a snapshot
 * are kept whole (see below).
 */
export async function withoutDeleted(
  db: IDBDatabase,
  records: readonly Payload[],
  generation: number,
): Promise<Payload[]> {
  // A snapshot replays over every store, tombstones included: what follows it lands on the snapshot's rows,
  // not on the database's. Its tombstones may be older than the journal's own clearTombstone (the crash lost
  // it): filtered by them, a thread put back after that clear would be lost.
  if (records.some((record) => "snap" in record)) return [...records];
  const [tombstones, removed] = await Promise.all([tombstonesOf(db), removedSince(db, generation)]);
  if (tombstones.size === 0 && removed.size === 0) return [...records];
  const dead = (row: { thread_id?: unknown; checkpoint_ns?: unknown }, checkpointId: unknown) => {
    // The tombstone's copy in `writes` (its namespace starts with U+0000) is no checkpoint's.
    if (typeof checkpointId !== "string" || String(row.checkpoint_ns).startsWith("\u0000")) return false;
    if (removed.has(markKey(row.thread_id, row.checkpoint_ns, checkpointId))) return true;
    const tombstone = tombstones.get(row.thread_id as string);
    return tombstone !== undefined && isDeadCheckpoint(tombstone, checkpointId, false);
  };
  const versionsOf = (row: Partial<CheckpointRow>) =>
    Object.entries(row.channel_versions ?? {}).map(([channel, version]) =>
      JSON.stringify([row.thread_id, row.checkpoint_ns, channel, version]),
    );
  // The versions of every checkpoint that stays (their values stay too), and of every removed one left out.
  const listed = new Set<string>();
  const unlisted = new Set<string>();
  const kept = records.map((record): Payload => {
    if (!("o" in record)) return record;
    const ops = record.o.filter((op) => {
      if (op[1] !== 0 && op[1] !== 1) return true;
      const row = op[2] as Partial<CheckpointRow & ThreadRow>;
      switch (op[0]) {
        case "checkpoints":
          if (dead(row, row.checkpoint_id)) {
            for (const version of versionsOf(row)) unlisted.add(version);
            return false;
          }
          for (const version of versionsOf(row)) listed.add(version);
          return true;
        case "writes":
          return !dead(row, row.checkpoint_id);
        case "threads":
          return !dead(
            { thread_id: row.thread_id, checkpoint_ns: row.latest?.checkpoint_ns ?? "" },
            row.latest?.checkpoint_id,
          );
        default:
          return true;
      }
    });
    return { o: ops };
  });
  return kept.map((record) => {
    if (!("o" in record)) return record;
    return {
      o: record.o.filter((op) => {
        if (op[0] !== "blobs" || (op[1] !== 0 && op[1] !== 1)) return true;
        const blob = op[2] as Partial<BlobRow>;
        const version = JSON.stringify([blob.thread_id, blob.checkpoint_ns, blob.channel, blob.version]);
        if (!tombstones.has(blob.thread_id as string) && !unlisted.has(version)) return true;
        return listed.has(version);
      }),
    };
  });
}

/**
 * Whether the database's key record is not the one the journal recorded
 * last: a tab without the journal ran `rekey()` or `changeKey()` (or
 * encrypted a plain database), so the journal's rows are sealed under a key
 * the database no longer has. A database without a key record (wiped, or
 * never encrypted) is restored from the journal as usual.
 */
export async function keyChanged(db: IDBDatabase, records: readonly Payload[]): Promise<boolean> {
  if (!db.objectStoreNames.contains("meta")) return false;
  const current = await request(db.transaction("meta", "readonly").objectStore("meta").get(KEY_RECORD));
  return current !== undefined && !sameValue(current, lastKeyRecord(records));
}

const KEY_RECORD = "key";

/** The key record as the journal's newest record holding it left it (undefined: none, or deleted). */
function lastKeyRecord(records: readonly Payload[]): unknown {
  const isKey = (row: unknown) => (row as { name?: unknown } | null)?.name === KEY_RECORD;
  for (const record of [...records].reverse()) {
    if ("snap" in record) return (record.snap.meta ?? []).find(isKey);
    if (!("o" in record)) continue;
    for (const op of [...record.o].reverse()) {
      if (op[0] !== "meta") continue;
      if ((op[1] === 0 || op[1] === 1) && isKey(op[2])) return op[2];
      if (op[1] === 2 && op[2] === KEY_RECORD) return undefined;
    }
  }
  return undefined;
}

/**
 * Whether a thread's tombstone was raised, or a checkpoint marked removed
 * (`prune`, `deleteForRuns`), after `generation` (the time the journal was
 * last rewritten): the journaling saver compacts right after its own
 * deletes, so that delete was another tab's, and the journal still holds the
 * rows it deleted.
 */
export async function deletedSince(
  db: IDBDatabase,
  generation: number,
  records: readonly Payload[] = [],
): Promise<boolean> {
  for (const tombstone of (await tombstonesOf(db)).values()) {
    if (typeof tombstone.deleted_at === "number" && tombstone.deleted_at > generation) return true;
  }
  return (await removedSince(db, generation)).size > 0 || (await unjournaled(db, records));
}

/**
 * The `meta` name prefix of a removed checkpoint's mark: rows/marks.ts's
 * `removedName` is this, then thread, namespace and id joined by U+0000 (a
 * stored format: it never changes). Spelled here, not imported: the
 * maintenance chunk imports rows/marks.ts, and Rolldown made it a file of its own
 * once this chunk did too (+323 B gzip in all).
 */
const REMOVED_PREFIX = "removed\u0000";

/** A checkpoint as its removed mark's name ends: thread, namespace and id joined by U+0000. */
function markKey(threadId: unknown, checkpointNs: unknown, checkpointId: unknown): string {
  return `${String(threadId)}\u0000${String(checkpointNs)}\u0000${String(checkpointId)}`;
}

/**
 * The checkpoints `prune` or `deleteForRuns` marked removed after
 * `generation` (their `meta` marks, which sync keeps too), as {@link markKey}s.
 * A mark altered outside the saver counts as none.
 */
async function removedSince(db: IDBDatabase, generation: number): Promise<Set<string>> {
  const removed = new Set<string>();
  if (!db.objectStoreNames.contains("meta")) return removed;
  const KeyRange = (globalThis as { IDBKeyRange: typeof IDBKeyRange }).IDBKeyRange;
  const range = KeyRange.bound(REMOVED_PREFIX, "removed\u0001");
  const rows = (await request(db.transaction("meta", "readonly").objectStore("meta").getAll(range))) as {
    name: string;
    value: Partial<RemovedCheckpoint> | null;
  }[];
  for (const { name, value } of rows) {
    const at = value?.removed_at;
    if (typeof at === "number" && at > generation) removed.add(name.slice(REMOVED_PREFIX.length));
  }
  return removed;
}

/**
 * Lifts the removed marks whose checkpoint nothing in the journal's
 * `records` puts (no checkpoint row, no pending write): they guard against a
 * replay bringing it back (see {@link withoutDeleted}), and this journal no
 * longer can. Before, they grew with every prune for good. A mark committed
 * after the journal's snapshot was read names a checkpoint the snapshot may
 * hold, and stays. Not in a database that syncs (a `sync` record in `meta`):
 * sync pushes the marks and refuses their checkpoints from a server.
 */
async function liftMarks(db: IDBDatabase, records: readonly Payload[]): Promise<void> {
  if (!db.objectStoreNames.contains("meta")) return;
  const journaled = new Set<string>();
  const note = (store: string, row: unknown) => {
    const { thread_id, checkpoint_ns, checkpoint_id } = (row ?? {}) as Partial<CheckpointRow>;
    if (store === "checkpoints" || store === "writes") journaled.add(markKey(thread_id, checkpoint_ns, checkpoint_id));
  };
  for (const record of records) {
    if ("snap" in record)
      for (const [store, rows] of Object.entries(record.snap)) rows.forEach((row) => note(store, row));
    else if ("o" in record) for (const op of record.o) if (op[1] === 0 || op[1] === 1) note(op[0], op[2]);
  }
  // Read-only first: a read-write transaction holds up every other tab's writes, and most opens lift nothing.
  if ((await liftable(db, "readonly", journaled)) === 0) return;
  await liftable(db, "readwrite", journaled); // read again where it deletes: a tab may have synced meanwhile
}

/**
 * Counts the removed marks whose checkpoint `journaled` lacks (none in a
 * database that syncs), and in a `readwrite` transaction deletes them.
 */
async function liftable(db: IDBDatabase, mode: IDBTransactionMode, journaled: Set<string>): Promise<number> {
  const KeyRange = (globalThis as { IDBKeyRange: typeof IDBKeyRange }).IDBKeyRange;
  const tx = db.transaction("meta", mode);
  const meta = tx.objectStore("meta");
  const done = completion(tx);
  void done.catch(() => undefined); // a failed read rejects first, and is the one reported
  const [synced, names] = await Promise.all([
    request(meta.count(KeyRange.bound("sync\u0000", "sync\u0001"))),
    request(meta.getAllKeys(KeyRange.bound(REMOVED_PREFIX, "removed\u0001"))),
  ]);
  const lifted = synced === 0 ? names.filter((name) => !journaled.has(String(name).slice(REMOVED_PREFIX.length))) : [];
  if (mode === "readwrite") for (const name of lifted) meta.delete(name);
  await done;
  return lifted.length;
}

/** Every tombstone in `db`, by thread; one altered outside the saver reads as none (the saver's own reads report it). */
async function tombstonesOf(db: IDBDatabase): Promise<Map<string, Tombstone>> {
  const tombstones = new Map<string, Tombstone>();
  if (!db.objectStoreNames.contains("meta")) return tombstones;
  const KeyRange = (globalThis as { IDBKeyRange: typeof IDBKeyRange }).IDBKeyRange;
  const range = KeyRange.bound(TOMBSTONE_NAMES.lower, TOMBSTONE_NAMES.upper);
  const rows = (await request(db.transaction("meta", "readonly").objectStore("meta").getAll(range))) as {
    name: string;
    value: Partial<Tombstone> | null;
  }[];
  for (const { name, value } of rows) {
    if (typeof value?.max_deleted_id === "string" && Array.isArray(value.dropped))
      tombstones.set(tombstoneThread(name), value as Tombstone);
  }
  return tombstones;
}

/**
 * Whether a put holds what must not stay in the journal's older records: the
 * key record (retired key material) and tombstones. Not sync's records
 * (cursor, fingerprints), which every round writes: compacting at each would
 * write a snapshot of the whole database every round.
 */
function purgeOnPut(store: string, row: unknown): boolean {
  const name = store === "meta" ? (row as { name?: unknown } | null)?.name : undefined;
  return name === KEY_RECORD || (typeof name === "string" && name.startsWith(TOMBSTONE_NAMES.lower));
}

/**
 * `records` without what places this device's next pull: its sync pull
 * cursor, and its device id. Without a cursor put, a replay leaves the
 * database the cursor it holds (none after a wipe), and the next pull
 * starts from it and brings again what came after. A journaled cursor
 * commits with the rows its pull brought, but it also covers rows a tab
 * without this journal pulled before (journal "off", or the journal
 * another tab held): put back without them, it would make every later
 * pull skip them, and they would be lost on this device. Pulled again,
 * rows the database holds change nothing. A snapshot's cursor stays: it
 * was read in one transaction with every row it covers.
 *
 * Nor the sync device id, from any record, snapshots too: the server
 * leaves a device's own pushes out of its pulls, and those such a tab
 * wrote and pushed are lacking too. Put back, the id kept them out of
 * every pull for good; without it, the next round makes a new one, and
 * its pulls bring them (and rows the database holds, which change nothing).
 */
function withoutPullPlace(records: readonly Payload[]): Payload[] {
  // A cursor's name is `sync\0<scope>\0cursor`, its value a number; the id's `sync\0device` (sync/state.ts; a
  // stored format, so they never change). Spelled here, not imported: sync/ stays out of the journal's chunk.
  const device = (row: unknown) => (row as Partial<MetaRow> | null)?.name === "sync\u0000device";
  const placesPull = (op: Op) => {
    const row = op[2] as Partial<MetaRow> | null;
    return (
      op[0] === "meta" &&
      op[1] < 2 &&
      (device(row) || (typeof row?.value === "number" && /^sync\0[^]*\0cursor$/.test(String(row.name))))
    );
  };
  return records.map((record): Payload => {
    if ("o" in record) return { o: record.o.filter((op) => !placesPull(op)) };
    if (!("snap" in record) || !record.snap.meta) return record;
    return { snap: { ...record.snap, meta: record.snap.meta.filter((row) => !device(row)) } };
  });
}

/** The saver's rules for a journal's recovery (journal/raw.ts `SchemaRules`). */
export const journalRules: SchemaRules = {
  resync: resyncNewestRows,
  // A thread summary or a meta row another tab overwrites says nothing of the journal's records.
  proof: ["checkpoints", "blobs", "writes"],
  // Left out: what other tabs deleted since, then what the database holds already (only what it lost is replayed),
  // and any sync cursor or device id (they may leave rows the journal lacks out of every pull).
  retain: async (db, records, generation) =>
    withoutPullPlace(await withoutHeld(db, await withoutDeleted(db, records, generation))),
  stale: keyChanged,
  deletedSince,
  purgeOnPut,
  settled: liftMarks,
};

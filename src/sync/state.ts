/**
 * What a device remembers about its sync with one server and user: the pull
 * cursor, and per thread the fingerprint of each checkpoint as last pushed
 * or pulled and the newest delete sent. Kept as records in the saver's own
 * `meta` store (names `sync\0<scope>\0...`; no schema change), so a pulled
 * batch, its fingerprints and the cursor commit in ONE transaction: a crash
 * never leaves the cursor ahead of the rows, or rows without their record.
 */
import type { SaverRawAccess } from "../saver/raw-access.js";
import type { MetaRow } from "../rows/shapes.js";
import type { Tx } from "../idb/database.js";
import type { SaverSchema } from "../saver/schema.js";
import { storeDelete, storePut } from "../idb/requests.js";
import { isStringList } from "../core/guards.js";

/** One thread's sync record. */
export interface ThreadSyncRecord {
  /** `ns \0 checkpoint id` to the writes fingerprint the server is known to have. */
  fps: Record<string, string>;
  /** The newest `max_deleted_id` the server is known to have. */
  tomb?: string;
  /**
   * `ns \0 checkpoint id` to digests of the special writes (negative idx,
   * those replace) this device pushed or pulled there, oldest first: a pull
   * that sends one of them again over a different stored value is a replay,
   * and does not put the older value back.
   */
  seen?: Record<string, string[]>;
  /**
   * `ns \0 checkpoint id` of the removals (prune, deleteForRuns) the server
   * has acknowledged, pushed from here or pulled: the others go (again).
   */
  removed?: string[];
}

/** How many special-write digests one checkpoint keeps (a checkpoint sees a few interrupts and resumes). */
const SEEN_LIMIT = 64;

/** A device's sync state with one server and user. */
export interface SyncState {
  cursor: number;
  threads: Map<string, ThreadSyncRecord>;
}

function prefix(scope: string): string {
  return `sync\u0000${scope}\u0000`;
}

function cursorName(scope: string): string {
  return `${prefix(scope)}cursor`;
}

function threadName(scope: string, threadId: string): string {
  return `${prefix(scope)}thread\u0000${threadId}`;
}

/**
 * Reads the state of `scope`: every thread's record, or only those of
 * `threads` (a round that knows what changed reads no other).
 */
export function readSyncState(access: SaverRawAccess, scope: string, threads?: Iterable<string>): Promise<SyncState> {
  return access.db.read(
    ["meta"],
    async (tx) => {
      if (threads !== undefined) {
        const meta = tx.objectStore("meta");
        const ids = [...new Set(threads)];
        const [cursor, ...records] = await Promise.all([
          meta.get(cursorName(scope)),
          ...ids.map((threadId) => meta.get(threadName(scope, threadId))),
        ]);
        const state: SyncState = { cursor: cursorOf(cursor?.value), threads: new Map() };
        ids.forEach((threadId, i) => {
          const record = records[i];
          if (record !== undefined) state.threads.set(threadId, threadRecordOf(record.value));
        });
        return state;
      }
      const start = prefix(scope);
      const rows = await tx.objectStore("meta").getAll(access.db.ranges.bound(start, `${start}\uffff`));
      const state: SyncState = { cursor: 0, threads: new Map() };
      const threadPrefix = `${start}thread\u0000`;
      for (const row of rows) {
        if (row.name === cursorName(scope)) state.cursor = cursorOf(row.value);
        else if (row.name.startsWith(threadPrefix))
          state.threads.set(row.name.slice(threadPrefix.length), threadRecordOf(row.value));
      }
      return state;
    },
    "read the sync state",
  );
}

/** A change to one thread's record. */
export interface ThreadSyncUpdate {
  threadId: string;
  /** Fingerprints now known to the server (`ns \0 id` to fingerprint). */
  fps?: [string, string][];
  /** A delete now known to the server: drops fingerprints at or below it. */
  tomb?: string;
  /** Special-write digests now seen (`ns \0 id` to digests), added to those kept. */
  seen?: [string, string[]][];
  /**
   * Special-write digests to forget (`ns \0 id` to digests): a local value
   * kept over a refused replay, which the server no longer holds, so the
   * next push sends it again.
   */
  unseen?: [string, string[]][];
  /** Checkpoints (`ns \0 id`) the server no longer has: their removal acknowledged, so not sent again. */
  gone?: string[];
}

/** One thread's record in `tx` (an empty one when there is none). */
export async function readThreadSync(
  tx: Tx<SaverSchema, IDBTransactionMode>,
  scope: string,
  threadId: string,
): Promise<ThreadSyncRecord> {
  return threadRecordOf((await tx.objectStore("meta").get(threadName(scope, threadId)))?.value);
}

/**
 * A stored cursor as a pull can send it: the server's sequence numbers are
 * whole numbers from 0. Another value (a record edited on disk) reads as 0,
 * as a cursor forgotten does: the next pull starts over; a negative or NaN
 * one sent as it is made the server refuse every round.
 */
function cursorOf(value: unknown): number {
  return Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : 0;
}

/**
 * A stored thread record, without its parts of another type (a record edited
 * on disk, or absent: empty). What goes was known of the server, so at worst
 * the next round sends again what the server already holds; a record taken as
 * it was failed every round with a TypeError (a `removed` not a list).
 */
function threadRecordOf(value: unknown): ThreadSyncRecord {
  const stored = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  const entries = (map: unknown, keep: (item: unknown) => boolean) =>
    typeof map === "object" && map !== null ? Object.entries(map).filter(([, item]) => keep(item)) : [];
  const record: ThreadSyncRecord = {
    fps: Object.fromEntries(entries(stored.fps, (fp) => typeof fp === "string")) as Record<string, string>,
  };
  if (typeof stored.tomb === "string") record.tomb = stored.tomb;
  const seen = entries(stored.seen, isStringList);
  if (seen.length > 0) record.seen = Object.fromEntries(seen) as Record<string, string[]>;
  if (isStringList(stored.removed)) record.removed = stored.removed;
  return record;
}

/** Merges updates (and a new cursor) into the state inside `tx`; only IndexedDB requests are awaited. */
export async function updateSyncState(
  tx: Tx<SaverSchema, "readwrite">,
  scope: string,
  updates: ThreadSyncUpdate[],
  cursor?: number,
): Promise<void> {
  const meta = tx.objectStore("meta");
  const byThread = new Map<string, ThreadSyncUpdate[]>();
  for (const update of updates) byThread.set(update.threadId, [...(byThread.get(update.threadId) ?? []), update]);
  await Promise.all(
    [...byThread].map(async ([threadId, list]) => {
      const name = threadName(scope, threadId);
      const current = await readThreadSync(tx, scope, threadId);
      const next: ThreadSyncRecord = {
        fps: { ...current.fps },
        ...(current.tomb !== undefined ? { tomb: current.tomb } : {}),
      };
      const seen: Record<string, string[]> = { ...current.seen };
      const removed = new Set(current.removed);
      for (const update of list) {
        if (update.tomb !== undefined) {
          if (next.tomb === undefined || update.tomb > next.tomb) next.tomb = update.tomb;
          const gone = (key: string) => key.slice(key.indexOf("\u0000") + 1) <= update.tomb!;
          for (const key of Object.keys(next.fps)) if (gone(key)) delete next.fps[key];
          for (const key of Object.keys(seen)) if (gone(key)) delete seen[key];
          for (const key of removed) if (gone(key)) removed.delete(key);
        }
        for (const [key, fp] of update.fps ?? []) next.fps[key] = fp;
        for (const key of update.gone ?? []) {
          delete next.fps[key];
          delete seen[key];
          removed.add(key);
        }
        for (const [key, digests] of update.seen ?? []) {
          const kept = (seen[key] ?? []).filter((digest) => !digests.includes(digest));
          seen[key] = [...kept, ...digests].slice(-SEEN_LIMIT);
        }
        for (const [key, digests] of update.unseen ?? [])
          if (seen[key]) seen[key] = seen[key].filter((digest) => !digests.includes(digest));
      }
      if (Object.keys(seen).length > 0) next.seen = seen;
      if (removed.size > 0) next.removed = [...removed];
      await storePut(meta, { name, value: next } satisfies MetaRow);
    }),
  );
  if (cursor !== undefined) await storePut(meta, { name: cursorName(scope), value: cursor });
}

/**
 * Forgets what this device knows of the server's side of `scope`: the
 * cursor, each thread's fingerprints, newest delete and acknowledged
 * removals, and the scan records. For a server that no longer holds what it
 * told this device (its database restored from an older backup, a replica
 * that had not caught up): the next round then scans every local row, sends
 * what the server lacks (the rest it already holds) and pulls from the
 * start. The special-write digests stay, as do the removed marks
 * (`removed\0...`): a server that only says it lost everything must not
 * get an older value put back, nor a removal undone.
 */
export function forgetScope(access: SaverRawAccess, scope: string): Promise<void> {
  const start = prefix(scope);
  const threadPrefix = `${start}thread\u0000`;
  return access.write(
    ["meta"],
    async (tx) => {
      const meta = tx.objectStore("meta");
      const rows = await meta.getAll(access.db.ranges.bound(start, `${start}\uffff`));
      await storeDelete(meta, access.db.ranges.bound(start, `${start}\uffff`));
      for (const row of rows) {
        const seen = row.name.startsWith(threadPrefix) ? threadRecordOf(row.value).seen : undefined;
        if (seen !== undefined) await storePut(meta, { name: row.name, value: { fps: {}, seen } } satisfies MetaRow);
      }
    },
    "forget the sync state of a server that lost data",
  );
}

/** Records what a push made known to the server (a transaction of its own). */
export function recordPushed(access: SaverRawAccess, scope: string, updates: ThreadSyncUpdate[]): Promise<void> {
  return access.write(["meta"], (tx) => updateSyncState(tx, scope, updates), "record a sync push");
}

/**
 * This database's device id (random, made once): pushes carry it so the
 * server can leave a device's own checkpoints out of its pulls.
 */
export function deviceId(access: SaverRawAccess): Promise<string> {
  const fresh = globalThis.crypto.randomUUID();
  return access.write(
    ["meta"],
    async (tx) => {
      const meta = tx.objectStore("meta");
      const stored = (await meta.get("sync\u0000device"))?.value;
      if (typeof stored === "string") return stored;
      await storePut(meta, { name: "sync\u0000device", value: fresh });
      return fresh;
    },
    "make the sync device id",
  );
}

/** The name of the record keeping the user last seen at a server URL. */
function userName(url: string): string {
  return `sync\u0000user\u0000${url}`;
}

/** Remembers who the token at `url` belongs to, so pending changes can be counted while offline. */
export function rememberUser(access: SaverRawAccess, url: string, user: string): Promise<void> {
  return access.write(
    ["meta"],
    async (tx) => {
      const meta = tx.objectStore("meta");
      if ((await meta.get(userName(url)))?.value !== user) await storePut(meta, { name: userName(url), value: user });
    },
    "remember the sync user",
  );
}

/** The sync scope last used at `url`, or undefined before the first successful round. */
export async function lastScope(access: SaverRawAccess, url: string): Promise<string | undefined> {
  const user = await access.db.read(
    ["meta"],
    async (tx) => (await tx.objectStore("meta").get(userName(url)))?.value,
    "read the sync user",
  );
  return typeof user === "string" ? `${url}\u0000${user}` : undefined;
}

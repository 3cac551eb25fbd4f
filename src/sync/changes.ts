/**
 * What changed locally since a round last looked, so a round costs what
 * changed (issue 23), not what is stored.
 *
 * The saver stamps each checkpoint row (`created_at`) and each pending write
 * (`written_at`) in the transaction that stores it (schema version 4 indexes
 * both). A round takes the time before it opens its read transaction, reads
 * the keys of the rows stamped since the last round's time, and at its end
 * records its own time as the next one's. A write whose transaction was
 * created before that read transaction is committed before the read runs
 * (IndexedDB orders transactions on the same stores by creation), so the read
 * sees it; one created after it is stamped later than the time taken. The
 * slack covers small clock adjustments; a clock set back further than the
 * recorded time makes the round scan everything, as does a database without
 * a record (the first round, or one after an upgrade from schema version 3,
 * whose rows carry no stamp).
 *
 * Threads a round could not send (ids the protocol refuses, rows the server
 * refused) and checkpoints whose special write a pull refused as a replay
 * (pull.ts: ours must go again) are read again next round: the record keeps
 * their thread ids.
 */
import type { SaverRawAccess } from "../saver/raw-access.js";
import type { Tx } from "../idb/database.js";
import type { SaverSchema } from "../saver/schema.js";
import type { MetaRow } from "../rows/shapes.js";
import { checkpointOfMark, REVALUED_NAMES, type RevaluedCheckpoint } from "../rows/marks.js";
import { storePut } from "../idb/requests.js";

/** How far before the last round's time a round looks again (ms): clock adjustments of the page's system. */
export const SCAN_SLACK_MS = 2_000;

/** What a round records for the next one. */
export interface ScanRecord {
  /** `Date.now()` taken before the round read what changed. */
  since: number;
  /** Threads to read whole next round whatever their stamps. */
  retry: string[];
}

/** A checkpoint's key: thread id, namespace, checkpoint id. */
export type CheckpointKey = [threadId: string, checkpointNs: string, checkpointId: string];

/**
 * The record's name: per scope (server and user) and per `threadIds` filter,
 * since a round limited to some threads must not hide the others' changes
 * from an unlimited one.
 */
export function scanName(scope: string, threadIds: readonly string[] | undefined): string {
  const filter = threadIds === undefined ? "" : `\u0000${JSON.stringify([...threadIds].sort())}`;
  return `sync\u0000${scope}\u0000scan${filter}`;
}

/** The name of the scope's list of threads whose pulled special write was refused as a replay. */
function replayedName(scope: string): string {
  return `sync\u0000${scope}\u0000replayed`;
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

/**
 * The scope's replayed threads: thread id to the time its entry was made,
 * so a round removes only the entries it read (a pull in the same round may
 * make a new one).
 */
export type Replayed = Record<string, number>;

function replayedMap(value: unknown): Replayed {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value).filter(([, at]) => typeof at === "number"));
}

/** The record of the last round, and the scope's replayed threads (read again whatever the filter). */
export async function readScan(
  access: SaverRawAccess,
  scope: string,
  threadIds: readonly string[] | undefined,
): Promise<{ scan: ScanRecord | undefined; replayed: Replayed }> {
  return access.db.read(
    ["meta"],
    async (tx) => {
      const meta = tx.objectStore("meta");
      const [scan, replayed] = await Promise.all([meta.get(scanName(scope, threadIds)), meta.get(replayedName(scope))]);
      const value = scan?.value as Partial<ScanRecord> | undefined;
      // A record this code did not write (edited outside the saver) is ignored: the round scans everything.
      const valid = typeof value?.since === "number" && Number.isFinite(value.since);
      return {
        scan: valid ? { since: value.since!, retry: stringList(value.retry) } : undefined,
        replayed: replayedMap(replayed?.value),
      };
    },
    "read the sync scan record",
  );
}

/**
 * The keys of checkpoints stored or given writes at or after `since`
 * (keys only: no row is read).
 */
export async function changedSince(access: SaverRawAccess, since: number): Promise<CheckpointKey[]> {
  return access.db.read(
    ["checkpoints", "writes"],
    async (tx) => {
      const range = access.db.ranges.bound(since, Infinity);
      const [checkpoints, writes] = await Promise.all([
        tx.objectStore("checkpoints").index("by_created").getAllKeys(range),
        tx.objectStore("writes").index("by_written").getAllKeys(range),
      ]);
      const keys = new Map<string, CheckpointKey>();
      for (const [threadId, ns, id] of [...checkpoints, ...writes])
        keys.set(JSON.stringify([threadId, ns, id]), [threadId, ns, id]);
      return [...keys.values()];
    },
    "read what changed since the last sync round",
  );
}

/** A checkpoint `prune` gave a value, and when (a revalued mark, rows/marks.ts). */
export type Revalued = [threadId: string, checkpointNs: string, checkpointId: string, revaluedAt: number];

/**
 * Every checkpoint `prune` gave a value (revalued marks): a round pushes
 * each again once, with the value, since the fingerprint it compares covers
 * their writes alone (engine.ts adds the mark's time to it).
 */
export async function revaluedCheckpoints(access: SaverRawAccess): Promise<Revalued[]> {
  const marks = await access.db.read(
    ["meta"],
    (tx) => tx.objectStore("meta").getAll(access.db.ranges.bound(REVALUED_NAMES.lower, REVALUED_NAMES.upper)),
    "read the checkpoints prune gave a value",
  );
  return marks.map((mark) => {
    const { threadId, checkpointNs, checkpointId } = checkpointOfMark(mark.name);
    return [threadId, checkpointNs, checkpointId, revaluedAt(mark.value)];
  });
}

/** The time of a revalued mark's value; a value this code did not write reads as new (Infinity). */
function revaluedAt(value: unknown): number {
  const at = (value as Partial<RevaluedCheckpoint> | null)?.revalued_at;
  // Pushing again costs a round trip; missing one, a value.
  return typeof at === "number" && Number.isFinite(at) ? at : Infinity;
}

/** A checkpoint's fingerprint (its writes') with its revalued mark's time, if it has one. */
export function withRevalued(fingerprint: string, at: number | undefined): string {
  return at === undefined ? fingerprint : `${fingerprint}@${at}`;
}

/**
 * Records a round's end: its time and the threads to read again. The
 * replayed entries it read at its start (`read`) leave the list.
 */
export function recordScan(
  access: SaverRawAccess,
  scope: string,
  threadIds: readonly string[] | undefined,
  record: ScanRecord,
  read: Replayed,
): Promise<void> {
  return access.write(
    ["meta"],
    async (tx) => {
      const meta = tx.objectStore("meta");
      if (Object.keys(read).length > 0) {
        const current = replayedMap((await meta.get(replayedName(scope)))?.value);
        const left = Object.fromEntries(Object.entries(current).filter(([threadId, at]) => read[threadId] !== at));
        await storePut(meta, { name: replayedName(scope), value: left } satisfies MetaRow);
      }
      await storePut(meta, { name: scanName(scope, threadIds), value: record } satisfies MetaRow);
    },
    "record the sync scan",
  );
}

/** Adds threads to the scope's replayed list inside a pull's transaction, stamped `now`. */
export async function addReplayed(
  tx: Tx<SaverSchema, "readwrite">,
  scope: string,
  threadIds: Iterable<string>,
  now: number,
): Promise<void> {
  const meta = tx.objectStore("meta");
  const current = replayedMap((await meta.get(replayedName(scope)))?.value);
  for (const threadId of threadIds) current[threadId] = now;
  await storePut(meta, { name: replayedName(scope), value: current } satisfies MetaRow);
}

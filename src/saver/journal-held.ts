/**
 * The journal's records beside the database's rows at a recovery. What of a
 * replay the database already holds: rows another tab wrote again under the
 * same keys (an older export of the thread imported over it) or that are
 * there as the journal has them, left out, so that a replay puts back only
 * what the database lost, and its report ("restored") tells of nothing else.
 * And the other way round: rows the database holds that the journal lacks
 * (another tab wrote them), for which the journal is rewritten.
 */
import type { Op, Payload } from "../journal/raw.js";
import { request } from "../journal/active.js";
import { sameValue } from "../core/equality.js";
import type { ThreadRow } from "../rows/shapes.js";

/**
 * Stores whose rows, once put under a key, keep their meaning: a checkpoint
 * is written once, a blob is one version of one channel. One the database
 * holds under the key, even in other bytes (an import re-encrypts, stamps
 * its own time), is the database's and stays.
 */
const SETTLED = ["checkpoints", "blobs"];

/**
 * `records` without the puts the database already holds (see the module's
 * note): an insert-if-absent whose key is there, a put of a checkpoint or a
 * blob whose key is there, any other put whose row is there as it is; and
 * the thread summary of a record whose checkpoint is there (it names that
 * checkpoint, and the database's summary is newer). Deletes stay. Records
 * holding a snapshot are kept whole: it clears every store first.
 */
export async function withoutHeld(db: IDBDatabase, records: readonly Payload[]): Promise<Payload[]> {
  if (records.some((record) => "snap" in record)) return [...records];
  const stores = [...new Set(records.flatMap((record) => ("o" in record ? record.o.map((op) => op[0]) : [])))].filter(
    (store) => db.objectStoreNames.contains(store),
  );
  // A database with no checkpoint (wiped, new) holds none of it: no read per row of a whole journal.
  const checkpoints = db.objectStoreNames.contains("checkpoints")
    ? await request(db.transaction("checkpoints", "readonly").objectStore("checkpoints").count())
    : 0;
  if (stores.length === 0 || checkpoints === 0) return [...records];
  const tx = db.transaction(stores, "readonly");
  const isPut = (op: Op): op is [string, 0 | 1, unknown] => (op[1] === 0 || op[1] === 1) && stores.includes(op[0]);
  // One read per put, all in one transaction: a replay is the database's last few lost records, or a whole journal.
  const held = await Promise.all(
    records.map((record) =>
      "o" in record
        ? Promise.all(
            record.o.map((op) => {
              if (!isPut(op)) return undefined;
              const store = tx.objectStore(op[0]);
              const path = store.keyPath ?? [];
              const row = op[2] as Record<string, unknown>;
              return request<unknown>(
                store.get((typeof path === "string" ? row[path] : path.map((part) => row[part])) as IDBValidKey),
              );
            }),
          )
        : [],
    ),
  );
  return records.map((record, i): Payload => {
    if (!("o" in record)) return record;
    const found = held[i]!;
    const there = (op: Op, j: number) =>
      isPut(op) && found[j] !== undefined && (op[1] === 1 || SETTLED.includes(op[0]) || sameValue(found[j], op[2]));
    const superseded = record.o.some((op, j) => op[0] === "checkpoints" && there(op, j));
    return { o: record.o.filter((op, j) => !there(op, j) && !(superseded && op[0] === "threads" && isPut(op))) };
  });
}

/** The stores whose rows another tab may add without changing a thread summary. */
const ROW_STORES = ["checkpoints", "blobs", "writes"] as const;

/**
 * Whether the database holds rows the journal's `records` lack: another tab
 * wrote them while this journal was closed, or a crash cut off this tab's
 * own last appends, and a restore after a wipe would leave them out (a
 * thread copied there was gone): the journal is rewritten from the database.
 * Seen two ways, in one walk of the records and one read transaction (the
 * records are a whole journal, read at every open):
 * - a thread summary that is not the one the records left for its thread
 *   (a run, `copyThread`, an import);
 * - more checkpoint, blob or pending-write rows than the records leave:
 *   rows that change no summary (a subgraph namespace's checkpoints,
 *   pending writes alone). A range delete or a clear of those stores the
 *   journal holds after its snapshot (a crash cut off the compaction that
 *   follows one) leaves the count unknown: rewritten too;
 * - a special pending write (negative idx: an error, an interrupt, a
 *   resume) whose row is not the records' last: the saver replaces those
 *   in place, which leaves the count as it was. The other rows keep their
 *   value under their key (unique checkpoint ids and branch-tagged
 *   versions, first-wins regular writes): counted, not compared.
 */
export async function unjournaled(db: IDBDatabase, records: readonly Payload[]): Promise<boolean> {
  const stores: string[] = ROW_STORES.filter((store) => db.objectStoreNames.contains(store));
  const tx = db.transaction(["threads", ...stores], "readonly");
  const summaries = new Map<unknown, unknown>();
  const idOf = (row: unknown) => (row as Partial<ThreadRow> | null)?.thread_id;
  // Each row store's keys, with the last row the records leave under each.
  const keys = new Map(stores.map((store): [string, Map<string, unknown>] => [store, new Map()]));
  const paths = new Map(stores.map((store) => [store, [tx.objectStore(store).keyPath ?? []].flat()]));
  const keyParts = (store: string, row: unknown) =>
    paths.get(store)!.map((part) => (row as Record<string, unknown> | null)?.[part]);
  const keyOf = (store: string, row: unknown) => JSON.stringify(keyParts(store, row));
  for (const record of records) {
    if ("snap" in record) {
      summaries.clear();
      for (const row of record.snap.threads ?? []) summaries.set(idOf(row), row);
      for (const [store, held] of keys) {
        held.clear();
        for (const row of record.snap[store] ?? []) held.set(keyOf(store, row), row);
      }
    } else if ("o" in record) {
      for (const op of record.o) {
        if (op[0] === "threads") {
          if (op[1] === 0 || (op[1] === 1 && !summaries.has(idOf(op[2])))) summaries.set(idOf(op[2]), op[2]);
          else if (op[1] === 2) summaries.delete(op[2]);
          else if (op[1] > 2) summaries.clear(); // a range delete or a clear: whatever is left must be journaled again
          continue;
        }
        const held = keys.get(op[0]);
        if (!held) continue;
        if (op[1] === 0) held.set(keyOf(op[0], op[2]), op[2]);
        else if (op[1] === 1) {
          // An insert: first wins. A refused one (a task's write repeated) is journaled too, and changes nothing.
          const key = keyOf(op[0], op[2]);
          if (!held.has(key)) held.set(key, op[2]);
        } else if (op[1] === 2) held.delete(JSON.stringify(op[2]));
        else return true;
      }
    }
  }
  const special = [...(keys.get("writes")?.values() ?? [])].filter((row) => {
    const idx = (row as { idx?: unknown } | null)?.idx;
    return typeof idx === "number" && idx < 0;
  });
  const [threads, counts, found] = await Promise.all([
    request(tx.objectStore("threads").getAll()),
    Promise.all(stores.map((store) => request(tx.objectStore(store).count()))),
    Promise.all(special.map((row) => heldRow(tx.objectStore("writes"), keyParts("writes", row)))),
  ]);
  return (
    threads.some((row) => !sameValue(row, summaries.get(idOf(row)))) ||
    counts.some((count, i) => count > keys.get(stores[i]!)!.size) ||
    found.some((row, i) => row === NOT_A_KEY || !sameValue(row, special[i]))
  );
}

/** What {@link heldRow} answers for a journal row whose key parts are no key (a damaged or crafted journal). */
const NOT_A_KEY = Symbol("not a key");

/**
 * The row `store` holds under `parts`, or {@link NOT_A_KEY} when they are no valid key: `get` throws a
 * DataError at once for those, which must not fail the open; the journal is rewritten from the database instead.
 */
function heldRow(store: IDBObjectStore, parts: unknown[]): Promise<unknown> {
  try {
    return request<unknown>(store.get(parts as IDBValidKey));
  } catch {
    return Promise.resolve(NOT_A_KEY);
  }
}

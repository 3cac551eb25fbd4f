/**
 * What of a recovery's replay the database already holds: rows another tab
 * wrote again under the same keys (an older export of the thread imported
 * over it) or that are there as the journal has them. Left out, so that a
 * replay puts back only what the database lost, and its report ("restored")
 * tells of nothing else.
 */
import type { Op, Payload } from "../journal/raw.js";
import { sameValue } from "../core/equality.js";

/** The result of one IndexedDB request, as a promise (the journal's rules read the raw connection). */
export function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

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

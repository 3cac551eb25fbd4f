/**
 * The journal's records and its raw IndexedDB work: reading the database
 * before the saver's first transaction (emptiness, the newest record it
 * reflects, snapshots) and replaying records. It runs on the raw connection
 * the database seam hands over, before any other transaction, and works on
 * whatever stores the journal was told about (it knows no schema).
 */
import { sameValue } from "../core/equality.js";
import { isValidKey } from "../core/guards.js";
import { parseJournal } from "./format.js";

/** The saver's stores, the default of {@link replayFile} (tests, tools). */
const SAVER_STORES = ["checkpoints", "blobs", "writes", "threads", "meta"] as const;

/** One request of a committed transaction. */
export type Op =
  | [store: string, code: 0 | 1, value: unknown] // 0 put, 1 add (insert if absent)
  | [store: string, code: 2, key: unknown] // delete one key
  | [store: string, code: 3, range: RangeSpec] // delete a key range
  | [store: string, code: 4]; // clear

/** An IDBKeyRange as plain data. */
export interface RangeSpec {
  l?: unknown;
  u?: unknown;
  lo: boolean;
  uo: boolean;
}

/** A journal record's payload. */
export type Payload = { h: number; db: string } | { o: Op[] } | { snap: Record<string, unknown[]> };

/**
 * What the journal re-appends after a recovery: the current rows of the
 * newest checkpoints that `records` (the journal's last records) touched,
 * since their own append may have been cut off by the crash. The saver knows
 * its schema; the journal does not.
 */
export type Resync = (db: IDBDatabase, records: readonly Payload[]) => Promise<Op[]>;

/** True for an `IDBKeyRange` (duck-typed: fake-indexeddb's and the browser's classes differ). */
export function isKeyRange(value: unknown): value is IDBKeyRange {
  return (
    value !== null && typeof value === "object" && "lowerOpen" in value && "upperOpen" in value && "includes" in value
  );
}

/** A key range as plain data the journal can serialize ({@link toRange} rebuilds it). */
export function rangeSpec(range: IDBKeyRange): RangeSpec {
  const spec: RangeSpec = { lo: range.lowerOpen, uo: range.upperOpen };
  if (range.lower !== undefined) spec.l = range.lower;
  if (range.upper !== undefined) spec.u = range.upper;
  return spec;
}

function toRange(spec: RangeSpec): IDBKeyRange {
  const KeyRange = (globalThis as { IDBKeyRange: typeof IDBKeyRange }).IDBKeyRange;
  if (spec.l !== undefined && spec.u !== undefined) return KeyRange.bound(spec.l, spec.u, spec.lo, spec.uo);
  if (spec.l !== undefined) return KeyRange.lowerBound(spec.l, spec.lo);
  return KeyRange.upperBound(spec.u, spec.uo);
}

/** The result of one raw IndexedDB request, as a promise. */
export function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Resolves once `tx` commits; rejects with its error if it fails or aborts. */
export function completion(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("journal replay aborted"));
  });
}

/** The journaled stores this database has. */
export function presentStores(db: IDBDatabase, stores: readonly string[]): string[] {
  return stores.filter((store) => db.objectStoreNames.contains(store));
}

/** The store of the database's bookkeeping ("format", the snapshot's mark): its rows are no saver data. */
const META = "meta";

/** True when no store holds saver rows (meta's "format" record does not count). */
export async function isEmpty(db: IDBDatabase, journaled: readonly string[]): Promise<boolean> {
  const stores = presentStores(db, journaled).filter((store) => store !== META);
  if (stores.length === 0) return true;
  const tx = db.transaction(stores, "readonly");
  const counts = await Promise.all(stores.map((store) => request(tx.objectStore(store).count())));
  return counts.every((count) => count === 0);
}

/** Every row of every store, in one transaction. */
export async function snapshot(db: IDBDatabase, journaled: readonly string[]): Promise<Record<string, unknown[]>> {
  const stores = presentStores(db, journaled);
  const tx = db.transaction(stores, "readonly");
  const rows = await Promise.all(stores.map((store) => request(tx.objectStore(store).getAll())));
  return Object.fromEntries(stores.map((store, i) => [store, rows[i]!]));
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Whether each record of a journal file is one the journal writes, for
 * `parseJournal`'s `accept`: a header first, then transactions and
 * snapshots whose every request the database `db` takes (an object with a
 * valid key under its store's key path, a valid key or key range). The
 * file lives in OPFS, which whoever edits the profile can edit: a record
 * of another shape would otherwise throw in the middle of recovery, at
 * every open, and no operation of the saver could run. Refused, it is
 * corrupt like a record failing its CRC. Requests to stores the database
 * lacks are skipped on replay, so they are not checked.
 */
export function recordCheck(
  db: IDBDatabase,
  journaled: readonly string[],
): (record: unknown, index: number) => boolean {
  const stores = presentStores(db, journaled);
  const tx = stores.length > 0 ? db.transaction(stores, "readonly") : undefined;
  const paths = new Map(stores.map((store) => [store, tx!.objectStore(store).keyPath]));
  const rowKeyed = (store: string, row: unknown) => isObject(row) && isValidKey(keyAt(paths.get(store)!, row));
  const opOk = (op: unknown): boolean => {
    if (!Array.isArray(op) || typeof op[0] !== "string") return false;
    if (!paths.has(op[0])) return true;
    switch (op[1]) {
      case 0:
      case 1:
        return rowKeyed(op[0], op[2]);
      case 2:
        return isValidKey(op[2]);
      case 3:
        try {
          return isObject(op[2]) && (toRange(op[2] as unknown as RangeSpec), true);
        } catch {
          return false;
        }
      case 4:
        return true;
      default:
        return false;
    }
  };
  return (record, index) => {
    if (!isObject(record)) return false;
    if (index === 0) return "h" in record;
    if ("snap" in record) {
      const snap = record.snap;
      return (
        isObject(snap) &&
        stores.every((store) => {
          const rows = snap[store];
          return rows === undefined || (Array.isArray(rows) && rows.every((row) => rowKeyed(store, row)));
        })
      );
    }
    if ("o" in record) return Array.isArray(record.o) && record.o.every(opOk);
    return true;
  };
}

/** The key at `path` in `row`: what IndexedDB would take as the row's in-line key. */
function keyAt(path: string | string[] | null, row: Record<string, unknown>): unknown {
  return Array.isArray(path) ? path.map((part) => row[part]) : path === null ? undefined : row[path];
}

/** The primary key of `value` in `store` (in-line keys only: every store of ours has a key path). */
export function keyOf(store: IDBObjectStore, value: unknown): IDBValidKey {
  return keyAt(store.keyPath, value as Record<string, unknown>) as IDBValidKey;
}

/**
 * What recovery needs to know of the database's schema, from its owner (the
 * saver: saver/journal-adapter.ts); the journal knows none.
 */
export interface SchemaRules {
  /** See {@link Resync}. */
  resync: Resync;
  /**
   * Stores whose rows, once put under a key, no other writer changes (the
   * saver's checkpoints, blobs, writes): a record is known to have reached
   * the database when its rows there are all held. Another tab without this
   * journal may overwrite the others (a thread's summary), which says
   * nothing of this journal's records.
   */
  proof: readonly string[];
  /**
   * What a replay may re-apply of `records`, in a journal last rewritten at
   * `generation` (the saver leaves out rows of threads deleted, and of
   * checkpoints removed, since).
   */
  retain(db: IDBDatabase, records: readonly Payload[], generation: number): Promise<Payload[]>;
  /** Whether a put (of `row` to `store`) compacts the journal like a delete (see `ActiveJournalOptions.purgeOnPut`). */
  purgeOnPut(store: string, row: unknown): boolean;
  /** Whether the journal's rows are sealed under a key the database (not empty) no longer has. */
  stale(db: IDBDatabase, records: readonly Payload[]): Promise<boolean>;
  /**
   * Whether a writer without this journal deleted rows after its generation
   * `generation` (a time: see `markSnapshot`) was written: the journal's
   * records still hold them, and a restore after a wipe would bring them back.
   * Or wrote rows the journal's `records` lack: a restore would leave them out.
   */
  deletedSince(db: IDBDatabase, generation: number, records: readonly Payload[]): Promise<boolean>;
  /**
   * Told at the end of a recovery what the journal holds now (its records
   * after the header): the saver lifts what guarded only against records the
   * journal no longer holds (the removed marks of checkpoints it cannot replay).
   */
  settled(db: IDBDatabase, records: readonly Payload[]): Promise<void>;
}

/**
 * Index of the newest record whose rows the database still holds exactly
 * (its last put or insert of each key it writes in the `proof` stores), or
 * -1. Records that put nothing there (deletes, rows other writers may
 * overwrite) prove nothing and are skipped.
 */
export async function newestReflected(
  db: IDBDatabase,
  journaled: readonly string[],
  records: Payload[],
  proof: readonly string[],
): Promise<number> {
  const stores = presentStores(db, journaled);
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i]!;
    if ("snap" in record) return i; // a snapshot: replaying from it is always right
    if (!("o" in record)) continue;
    const last = new Map<string, Op>();
    const tx = db.transaction(stores, "readonly");
    for (const op of record.o) {
      if (!stores.includes(op[0])) continue; // replay skips it too
      const store = tx.objectStore(op[0]);
      const key = op[1] === 0 || op[1] === 1 ? keyOf(store, op[2]) : undefined;
      last.set(key === undefined ? `${op[0]}\u0000#${last.size}` : `${op[0]}\u0000${JSON.stringify(key)}`, op);
    }
    const checks = [...last.values()].filter((op) => (op[1] === 0 || op[1] === 1) && proof.includes(op[0]));
    if (checks.length === 0) continue;
    const found = await Promise.all(
      checks.map((op) => request(tx.objectStore(op[0]).get(keyOf(tx.objectStore(op[0]), op[2])))),
    );
    const holds = checks.every((op, j) => (op[1] === 0 ? sameValue(found[j], op[2]) : found[j] !== undefined));
    if (holds) return i;
  }
  return -1;
}

/** The key of the row marking, in the database, the snapshot a journal file starts with. */
const SNAPSHOT_MARK = "journal\u0000snapshot";

/**
 * Marks in the database that it has reached the snapshot of journal
 * generation `generation`, in a transaction of its own committed before the
 * snapshot is read: a database holding the mark holds everything the
 * snapshot does, so recovery need not replay it.
 */
export async function markSnapshot(db: IDBDatabase, generation: number): Promise<void> {
  if (!db.objectStoreNames.contains(META)) return;
  const tx = db.transaction(META, "readwrite");
  const path = tx.objectStore(META).keyPath as string;
  tx.objectStore(META).put({ [path]: SNAPSHOT_MARK, value: generation });
  await completion(tx);
}

/**
 * Whether `record` is a snapshot holding the mark of generation `generation`:
 * one taken after the mark was committed, so a database without that mark
 * lost transactions. An older release's snapshot has none.
 */
export function markedSnapshot(record: Payload, generation: number): boolean {
  if (!("snap" in record)) return false;
  const rows = record.snap[META];
  return (
    Array.isArray(rows) &&
    rows.some((row) => {
      const mark = row as { name?: unknown; value?: unknown } | null;
      return mark?.name === SNAPSHOT_MARK && mark.value === generation;
    })
  );
}

/** Whether the database holds the mark of journal generation `generation` (see {@link markSnapshot}). */
export async function reachedSnapshot(db: IDBDatabase, generation: number): Promise<boolean> {
  if (!db.objectStoreNames.contains(META)) return false;
  const row = await request(db.transaction(META, "readonly").objectStore(META).get(SNAPSHOT_MARK));
  return (row as { value?: unknown } | undefined)?.value === generation;
}

/**
 * Asked right before each read-write transaction of a replay is created, as
 * the database asks before each of its own (`DatabaseOptions.beforeWrite`):
 * a promise to wait for, then ask again, or undefined to go ahead.
 */
export type WriteGate = () => Promise<void> | undefined;

/**
 * Re-applies `records` in order, several per transaction (each transaction
 * all or nothing, so a crash during recovery leaves a state the next
 * recovery replays again). Returns how many records carried operations.
 * `gate` is asked before each transaction (the saver's write lease: other
 * savers answering reads from memory must drop what they kept first).
 */
export async function replay(
  db: IDBDatabase,
  journaled: readonly string[],
  records: Payload[],
  gate?: WriteGate,
): Promise<number> {
  const stores = presentStores(db, journaled);
  let applied = 0;
  const BATCH = 256;
  for (let start = 0; start < records.length; start += BATCH) {
    // Asked again after each wait, so the transaction is created in the same tick as the last yes.
    for (let wait = gate?.(); wait; wait = gate?.()) await wait;
    const tx = db.transaction(stores, "readwrite");
    const finished = completion(tx);
    for (const record of records.slice(start, start + BATCH)) {
      if ("snap" in record) {
        for (const store of stores) {
          const objects = tx.objectStore(store);
          objects.clear();
          for (const row of record.snap[store] ?? []) objects.put(row);
        }
        applied++;
      } else if ("o" in record) {
        for (const op of record.o) {
          if (!stores.includes(op[0])) continue;
          const objects = tx.objectStore(op[0]);
          switch (op[1]) {
            case 0:
              objects.put(op[2]);
              break;
            case 1: {
              const req = objects.add(op[2]);
              req.onerror = (event) => {
                // First write wins: an existing row stays, the transaction goes on.
                if (req.error?.name === "ConstraintError") {
                  event.preventDefault();
                  event.stopPropagation();
                }
              };
              break;
            }
            case 2:
              objects.delete(op[2] as IDBValidKey);
              break;
            case 3:
              objects.delete(toRange(op[2]));
              break;
            case 4:
              objects.clear();
              break;
          }
        }
        applied++;
      }
    }
    await finished;
  }
  return applied;
}

/** Replays a whole journal file into `db` (tests, tools). @internal */
export async function replayFile(
  db: IDBDatabase,
  bytes: Uint8Array,
  journaled: readonly string[] = SAVER_STORES,
): Promise<number> {
  const records = parseJournal(bytes).records as Payload[];
  return replay(db, journaled, records.slice(1));
}

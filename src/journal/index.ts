/**
 * A crash journal for the saver's database, kept outside IndexedDB.
 *
 * Chromium can lose the last few committed IndexedDB transactions when the
 * browser is killed, and now and then deletes a corrupted origin database
 * whole on the next start. With a journal, every committed read-write
 * transaction is also appended (and flushed) to a file outside IndexedDB,
 * and before the first read the database is brought back up to date from it.
 *
 * How: {@link JournaledDatabase} is the saver's {@link Database}. Its `write`
 * records every `put`, `add` (insert-if-absent), `delete` and `clear` the
 * transaction issues, and once the transaction has committed appends them as
 * one record (the exact rows, already serialized and encrypted by the
 * saver). Replaying a journal suffix is idempotent (puts and deletes are
 * blind, inserts first-wins), so recovery replays from a little before the
 * newest record the database still reflects. Compaction rewrites the
 * journal as one snapshot of the database, dropping what was deleted or pruned.
 *
 * Without a journal, a marker outside IndexedDB still tells a database that
 * was wiped (recreated empty after it held data) from a new one.
 */
import { unwrap, type IDBPDatabase, type StoreNames } from "idb";
import { Database, type DatabaseOptions, type TxWork } from "../idb/database.js";
import { IndexedDBCheckpointError } from "../core/errors.js";
import { concatBytes, frameRecord, parseJournal } from "./format.js";
import { OpfsJournalBackend } from "./opfs-backend.js";
import type { SaverSchema } from "../saver/schema.js";

// ---------------------------------------------------------------- public types

/** Where the journal lives: `"opfs"` (browsers), `"memory"` (tests), `"off"`, or a custom backend. */
export type JournalOption = "opfs" | "memory" | "off" | JournalBackend;

/** What the saver found and did when it opened the database. */
export interface RecoveryReport {
  /**
   * - `"ok"`: nothing to do (a new database, or one up to date with its journal);
   * - `"restored"`: journal records the database had lost were re-applied;
   * - `"wiped"`: the database had been emptied (say, Chromium deleted it as corrupted)
   *   and there is no journal to restore it from: its data is gone;
   * - `"journal-unavailable"`: the journal could not be opened (another tab holds it,
   *   no OPFS): the saver runs without it.
   */
  kind: "ok" | "restored" | "wiped" | "journal-unavailable";
  /** True when the database was recreated empty after holding data. */
  fromEmpty: boolean;
  /** Transactions re-applied from the journal. */
  recoveredWrites: number;
  /** Transactions in the journal (after the last compaction). */
  journalRecords: number;
  /** True when the journal's last record was torn by a crash and skipped. */
  tornRecord: boolean;
  /** Time spent checking and restoring, in ms. */
  elapsedMs: number;
  /** Why the journal is unavailable, or failed later. */
  error?: unknown;
}

/**
 * The database was found empty after it had held data (for instance Chromium
 * deleted it as corrupted after a crash) and no journal could restore it.
 * Thrown by the saver's first operation with `onWipe: "throw"`.
 */
export class DatabaseWipedError extends IndexedDBCheckpointError {
  constructor(readonly report: RecoveryReport) {
    super(
      `The IndexedDB database was emptied since it was last used (the browser may have deleted it after a crash); its checkpoints are lost. Enable the journal (journal: "opfs") to restore it next time.`,
    );
  }
}

/**
 * The file a journal lives in. Implementations: OPFS through a worker
 * (journal-opfs.ts) and memory (tests). Calls never overlap: the journal
 * queues them.
 */
export interface JournalBackend {
  /** Opens the journal and returns its current bytes (possibly with a torn tail). */
  open(): Promise<Uint8Array>;
  /** Cuts the file at `length` (drops a torn tail). */
  truncate(length: number): Promise<void>;
  /** Appends `bytes` and makes them durable before resolving. */
  append(bytes: Uint8Array): Promise<void>;
  /** Replaces the whole content with `bytes`, crash-safely (the old content survives a crash until the new is durable). */
  replace(bytes: Uint8Array): Promise<void>;
  /** Releases the file. */
  close(): Promise<void>;
}

/** A marker outside IndexedDB saying "this database has held data". */
export interface WipeMarker {
  has(): Promise<boolean>;
  set(): Promise<void>;
}

// ---------------------------------------------------------------- memory backend

/** Journals of the memory backend, by name: they outlive saver instances, as files would. */
const memoryFiles = new Map<string, Uint8Array>();
const memoryMarkers = new Set<string>();

/** A journal kept in this process's memory: for tests, and where OPFS is missing. */
export class MemoryJournalBackend implements JournalBackend {
  constructor(readonly name: string) {}
  async open(): Promise<Uint8Array> {
    return memoryFiles.get(this.name) ?? new Uint8Array(0);
  }
  async truncate(length: number): Promise<void> {
    memoryFiles.set(this.name, (memoryFiles.get(this.name) ?? new Uint8Array(0)).slice(0, length));
  }
  async append(bytes: Uint8Array): Promise<void> {
    memoryFiles.set(this.name, concatBytes([memoryFiles.get(this.name) ?? new Uint8Array(0), bytes]));
  }
  async replace(bytes: Uint8Array): Promise<void> {
    memoryFiles.set(this.name, bytes.slice());
  }
  async close(): Promise<void> {}
  /** The bytes of a memory journal (tests). */
  static file(name: string): Uint8Array | undefined {
    return memoryFiles.get(name);
  }
  /** Overwrites a memory journal (tests: tear its tail). */
  static setFile(name: string, bytes: Uint8Array | undefined): void {
    if (bytes) memoryFiles.set(name, bytes);
    else memoryFiles.delete(name);
  }
}

/** Markers kept in this process's memory (Node, tests). */
export function memoryMarker(name: string): WipeMarker {
  return {
    has: async () => memoryMarkers.has(name),
    set: async () => void memoryMarkers.add(name),
  };
}

/** Forgets memory journals and markers (tests). */
export function resetMemoryJournals(): void {
  memoryFiles.clear();
  memoryMarkers.clear();
}

/**
 * The marker for `dbName` in this environment: a small OPFS file where there
 * is OPFS (it survives Chromium deleting a corrupted IndexedDB), else
 * `localStorage`, else memory.
 */
export function defaultMarker(dbName: string): WipeMarker {
  const fileName = `langgraph-idb-${encodeURIComponent(dbName)}.marker`;
  const storage = (globalThis as { navigator?: { storage?: { getDirectory?: () => Promise<FileSystemDirectoryHandle> } } }).navigator?.storage;
  if (typeof storage?.getDirectory === "function") {
    return {
      async has() {
        try {
          await (await storage.getDirectory!()).getFileHandle(fileName);
          return true;
        } catch {
          return false;
        }
      },
      async set() {
        try {
          await (await storage.getDirectory!()).getFileHandle(fileName, { create: true });
        } catch {
          // No OPFS after all (some private modes): nothing to remember with.
        }
      },
    };
  }
  const local = (() => {
    try {
      return (globalThis as { localStorage?: Storage }).localStorage;
    } catch {
      return undefined;
    }
  })();
  if (local) {
    return {
      has: async () => local.getItem(fileName) !== null,
      set: async () => local.setItem(fileName, String(Date.now())),
    };
  }
  return memoryMarker(dbName);
}

// ---------------------------------------------------------------- records

/** One request of a committed transaction. */
type Op =
  | [store: string, code: 0 | 1, value: unknown] // 0 put, 1 add (insert if absent)
  | [store: string, code: 2, key: unknown] // delete one key
  | [store: string, code: 3, range: RangeSpec] // delete a key range
  | [store: string, code: 4]; // clear

/** An IDBKeyRange as plain data. */
interface RangeSpec {
  l?: unknown;
  u?: unknown;
  lo: boolean;
  uo: boolean;
}

/** A journal record's payload. */
type Payload = { h: number; db: string } | { o: Op[] } | { snap: Record<string, unknown[]> };

const STORES = ["checkpoints", "blobs", "writes", "threads", "meta"] as const;

// ---------------------------------------------------------------- the journal

/** Options of {@link JournaledDatabase}. */
export interface JournaledDatabaseOptions extends DatabaseOptions<SaverSchema> {
  /** The journal, or `"off"` (the default: only the wipe marker). */
  journal?: JournalOption;
  /** What to do when a wiped database cannot be restored. Default `"report"`. */
  onWipe?: "report" | "throw";
  /** Told once what the open found (see {@link RecoveryReport}). */
  onRecovery?: (report: RecoveryReport) => void;
  /** The marker; defaults to {@link defaultMarker}. */
  marker?: WipeMarker;
  /** Compact when the journal grows past this many bytes (and twice its last snapshot). Default 8 MiB. */
  compactBytes?: number;
  /** Records replayed before the newest one the database still reflects. Default 16. */
  replayMargin?: number;
}

/**
 * The saver's database with a journal: recovers before the first transaction,
 * and journals every committed write.
 */
export class JournaledDatabase extends Database<SaverSchema> {
  readonly #backend: JournalBackend | undefined;
  readonly #onWipe: "report" | "throw";
  readonly #onRecovery: ((report: RecoveryReport) => void) | undefined;
  readonly #marker: WipeMarker;
  readonly #compactBytes: number;
  readonly #replayMargin: number;
  /** Set by the first upgrade step when the database was created (opened from version 0). */
  #created = false;
  #ready: Promise<RecoveryReport> | undefined;
  #report: RecoveryReport | undefined;
  /** Journal writes run one after another, in commit order. */
  #queue: Promise<unknown> = Promise.resolve();
  /** The journal is usable (opened, not failed). */
  #active = false;
  #size = 0;
  #snapshotSize = 0;
  #markerSet = false;

  constructor(options: JournaledDatabaseOptions) {
    const upgrades = options.upgrades.map((step, i) =>
      i === 0
        ? (...args: Parameters<typeof step>) => {
            this.#created = true;
            step(...args);
          }
        : step,
    );
    super({ ...options, upgrades });
    const journal = options.journal ?? "off";
    this.#backend =
      journal === "off"
        ? undefined
        : journal === "memory"
          ? new MemoryJournalBackend(options.name)
          : journal === "opfs"
            ? new OpfsJournalBackend(options.name)
            : journal;
    this.#onWipe = options.onWipe ?? "report";
    this.#onRecovery = options.onRecovery;
    this.#marker = options.marker ?? defaultMarker(options.name);
    this.#compactBytes = options.compactBytes ?? 8 * 1024 * 1024;
    this.#replayMargin = options.replayMargin ?? 16;
  }

  /** What the open found; opens the database (and recovers) if needed. */
  recovery(): Promise<RecoveryReport> {
    this.#ready ??= this.#recover().then(
      (report) => {
        this.#report = report;
        try {
          this.#onRecovery?.(report);
        } catch (error) {
          queueMicrotask(() => {
            throw error;
          });
        }
        return report;
      },
      (error: unknown) => {
        this.#ready = undefined;
        throw error;
      },
    );
    return this.#ready;
  }

  override async connection(): Promise<IDBPDatabase<SaverSchema>> {
    const report = await this.recovery();
    if (report.kind === "wiped" && this.#onWipe === "throw") throw new DatabaseWipedError(report);
    return super.connection();
  }

  override write<R>(stores: StoreNames<SaverSchema>[], work: TxWork<SaverSchema, "readwrite", R>, action: string): Promise<R> {
    let ops: Op[] = [];
    const recorded = super.write(
      stores,
      (tx) => {
        ops = []; // a retried transaction starts over
        recordRequests(unwrap(tx) as IDBTransaction, ops);
        return work(tx);
      },
      action,
    );
    return recorded.then(async (result) => {
      if (ops.length > 0) await this.#committed(ops);
      return result;
    });
  }

  /** Journals a committed transaction (and sets the wipe marker once). */
  #committed(ops: Op[]): Promise<void> {
    if (!this.#markerSet) {
      this.#markerSet = true;
      void this.#marker.set().catch(() => (this.#markerSet = false));
    }
    if (!this.#active) return Promise.resolve();
    const bytes = frameRecord({ o: ops } satisfies Payload);
    return this.#enqueue(async () => {
      if (!this.#active) return;
      try {
        await this.#backend!.append(bytes);
        this.#size += bytes.length;
      } catch (error) {
        this.#fail(error);
        return;
      }
      if (this.#size > this.#compactBytes && this.#size > 2 * this.#snapshotSize) await this.#compactNow();
    });
  }

  /** Rewrites the journal as one snapshot of the database. */
  compact(): Promise<void> {
    return this.recovery().then(() => this.#enqueue(() => this.#compactNow()));
  }

  async #compactNow(): Promise<void> {
    if (!this.#active) return;
    try {
      const db = unwrap(await super.connection()) as IDBDatabase;
      const snap = await snapshot(db);
      const header = frameRecord({ h: Date.now(), db: this.name } satisfies Payload);
      const body = frameRecord({ snap } satisfies Payload);
      await this.#backend!.replace(concatBytes([header, body]));
      this.#size = header.length + body.length;
      this.#snapshotSize = this.#size;
    } catch (error) {
      this.#fail(error);
    }
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const next = this.#queue.then(task, task);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  #fail(error: unknown): void {
    this.#active = false;
    const report: RecoveryReport = {
      ...(this.#report ?? { fromEmpty: false, recoveredWrites: 0, journalRecords: 0, tornRecord: false, elapsedMs: 0 }),
      kind: "journal-unavailable",
      error,
    };
    this.#report = report;
    try {
      this.#onRecovery?.(report);
    } catch {
      // A listener's failure must not hide the journal's.
    }
  }

  async #recover(): Promise<RecoveryReport> {
    const started = now();
    const idb = await super.connection();
    const db = unwrap(idb) as IDBDatabase;
    const created = this.#created;
    const base = { recoveredWrites: 0, journalRecords: 0, tornRecord: false, fromEmpty: false };
    const done = (report: Omit<RecoveryReport, "elapsedMs">): RecoveryReport => ({ ...report, elapsedMs: now() - started });

    if (!this.#backend) {
      const wiped = created && (await this.#marker.has().catch(() => false));
      return done({ ...base, kind: wiped ? "wiped" : "ok", fromEmpty: wiped });
    }

    let bytes: Uint8Array;
    try {
      bytes = await this.#backend.open();
    } catch (error) {
      const wiped = created && (await this.#marker.has().catch(() => false));
      return done({ ...base, kind: wiped ? "wiped" : "journal-unavailable", fromEmpty: wiped, error });
    }
    const parsed = parseJournal(bytes);
    let records = parsed.records as Payload[];
    if (records.length > 0 && !("h" in records[0]!)) records = []; // not a journal of ours
    try {
      if (parsed.torn || (records.length === 0 && bytes.length > 0)) await this.#backend.truncate(records.length === 0 ? 0 : parsed.validLength);
    } catch (error) {
      return done({ ...base, kind: "journal-unavailable", error });
    }
    const body = records.slice(1);
    let size = records.length === 0 ? 0 : parsed.validLength;
    this.#snapshotSize = body[0] && "snap" in body[0] ? size : 0;

    // Where replay starts: after the newest record the database reflects, less a margin.
    const empty = created || (await isEmpty(db));
    const anchor = empty ? -1 : await newestReflected(db, body);
    const lost = body.length - 1 - anchor;
    const from = Math.max(0, anchor + 1 - this.#replayMargin);
    if (body.length > from) await replay(db, body.slice(from));
    // The other way round: transactions that committed but whose append the
    // crash cut off. They can only be the newest checkpoints of the threads
    // the journal's last records wrote: journal those rows again, as they are now.
    let resync: Uint8Array | undefined;
    if (!empty && records.length > 0) {
      const ops = await newestRows(db, body.slice(-this.#replayMargin), 4);
      if (ops.length > 0) resync = frameRecord({ o: ops } satisfies Payload);
    }

    // An empty journal: start it (with a snapshot when the database already holds data).
    if (records.length === 0) {
      const header = frameRecord({ h: Date.now(), db: this.name } satisfies Payload);
      const parts = [header];
      if (!empty) parts.push(frameRecord({ snap: await snapshot(db) } satisfies Payload));
      const fresh = concatBytes(parts);
      try {
        await this.#backend.replace(fresh);
      } catch (error) {
        return done({ ...base, kind: "journal-unavailable", error });
      }
      size = fresh.length;
      this.#snapshotSize = size;
    }
    if (resync) {
      try {
        await this.#backend.append(resync);
      } catch (error) {
        return done({ ...base, kind: "journal-unavailable", error });
      }
      size += resync.length;
    }
    this.#size = size;
    this.#active = true;
    const fromEmpty = empty && body.length > 0;
    // A database that had data, with neither it nor the journal holding any now.
    const wiped = created && body.length === 0 && (await this.#marker.has().catch(() => false));
    return done({
      kind: wiped ? "wiped" : lost > 0 ? "restored" : "ok",
      fromEmpty: fromEmpty || wiped,
      recoveredWrites: lost,
      journalRecords: body.length,
      tornRecord: parsed.torn,
    });
  }

  /** Closes the connection and releases the journal; the next use reopens (and re-checks) both. */
  override async close(): Promise<void> {
    const ready = this.#ready;
    this.#ready = undefined;
    await ready?.catch(() => undefined);
    await this.#queue;
    this.#active = false;
    this.#created = false;
    await this.#backend?.close().catch(() => undefined);
    await super.close();
  }
}

function now(): number {
  return typeof performance !== "undefined" ? performance.now() : Date.now();
}

// ---------------------------------------------------------------- recording

const patchedStores = new WeakSet<object>();
const sinks = new WeakMap<object, Op[]>();

/**
 * Makes every write request issued on `tx` (through idb's wrappers or the
 * raw object store, as `addIfAbsent` does) also land in `ops`. The patches
 * are own properties of this transaction's objects, which die with it.
 */
function recordRequests(tx: IDBTransaction, ops: Op[]): void {
  sinks.set(tx, ops);
  const objectStore = Object.getPrototypeOf(tx).objectStore as IDBTransaction["objectStore"];
  tx.objectStore = function (this: IDBTransaction, name: string) {
    const store = objectStore.call(tx, name);
    if (!patchedStores.has(store)) {
      patchedStores.add(store);
      const proto = Object.getPrototypeOf(store) as IDBObjectStore;
      store.put = function (value: unknown, key?: IDBValidKey) {
        const request = key === undefined ? proto.put.call(store, value) : proto.put.call(store, value, key);
        sinks.get(tx)!.push([name, 0, value]);
        return request;
      };
      store.add = function (value: unknown, key?: IDBValidKey) {
        const request = key === undefined ? proto.add.call(store, value) : proto.add.call(store, value, key);
        sinks.get(tx)!.push([name, 1, value]);
        return request;
      };
      store.delete = function (query: IDBValidKey | IDBKeyRange) {
        const request = proto.delete.call(store, query);
        sinks.get(tx)!.push(isKeyRange(query) ? [name, 3, rangeSpec(query)] : [name, 2, query]);
        return request;
      };
      store.clear = function () {
        const request = proto.clear.call(store);
        sinks.get(tx)!.push([name, 4]);
        return request;
      };
    }
    return store;
  };
}

function isKeyRange(value: unknown): value is IDBKeyRange {
  return value !== null && typeof value === "object" && "lowerOpen" in value && "upperOpen" in value && "includes" in value;
}

function rangeSpec(range: IDBKeyRange): RangeSpec {
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

// ---------------------------------------------------------------- raw IndexedDB helpers

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function completion(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("journal replay aborted"));
  });
}

function presentStores(db: IDBDatabase): string[] {
  return STORES.filter((store) => db.objectStoreNames.contains(store));
}

/** True when no store holds saver rows (meta's "format" record does not count). */
async function isEmpty(db: IDBDatabase): Promise<boolean> {
  const stores = presentStores(db).filter((store) => store !== "meta");
  if (stores.length === 0) return true;
  const tx = db.transaction(stores, "readonly");
  const counts = await Promise.all(stores.map((store) => request(tx.objectStore(store).count())));
  return counts.every((count) => count === 0);
}

/** Every row of every store, in one transaction. */
async function snapshot(db: IDBDatabase): Promise<Record<string, unknown[]>> {
  const stores = presentStores(db);
  const tx = db.transaction(stores, "readonly");
  const rows = await Promise.all(stores.map((store) => request(tx.objectStore(store).getAll())));
  return Object.fromEntries(stores.map((store, i) => [store, rows[i]!]));
}

function keyOf(store: IDBObjectStore, value: unknown): IDBValidKey {
  const path = store.keyPath;
  const row = value as Record<string, IDBValidKey>;
  return (Array.isArray(path) ? path.map((part) => row[part]!) : row[path as string]!) as IDBValidKey;
}

/**
 * Index of the newest record whose rows the database still holds exactly
 * (its last put or insert of each key it writes), or -1. Records that only
 * delete prove nothing and are skipped.
 */
async function newestReflected(db: IDBDatabase, records: Payload[]): Promise<number> {
  const stores = presentStores(db);
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i]!;
    if ("snap" in record) return i; // a snapshot: replaying from it is always right
    if (!("o" in record)) continue;
    const last = new Map<string, Op>();
    const tx = db.transaction(stores, "readonly");
    for (const op of record.o) {
      const store = tx.objectStore(op[0]);
      const key = op[1] === 0 || op[1] === 1 ? keyOf(store, op[2]) : undefined;
      last.set(key === undefined ? `${op[0]}\u0000#${last.size}` : `${op[0]}\u0000${JSON.stringify(key)}`, op);
    }
    const checks = [...last.values()].filter((op) => op[1] === 0 || op[1] === 1);
    if (checks.length === 0) continue;
    const found = await Promise.all(checks.map((op) => request(tx.objectStore(op[0]).get(keyOf(tx.objectStore(op[0]), op[2])))));
    const holds = checks.every((op, j) => (op[1] === 0 ? sameValue(found[j], op[2]) : found[j] !== undefined));
    if (holds) return i;
  }
  return -1;
}

/**
 * Put operations for the current rows of the `perNamespace` newest
 * checkpoints (with their channel values and pending writes, and the thread
 * summary) of every thread and namespace that `records` wrote to.
 */
async function newestRows(db: IDBDatabase, records: Payload[], perNamespace: number): Promise<Op[]> {
  const namespaces = new Map<string, [string, string]>();
  for (const record of records) {
    if (!("o" in record)) continue;
    for (const op of record.o) {
      if ((op[0] === "checkpoints" || op[0] === "writes") && (op[1] === 0 || op[1] === 1)) {
        const row = op[2] as { thread_id: string; checkpoint_ns: string };
        namespaces.set(JSON.stringify([row.thread_id, row.checkpoint_ns]), [row.thread_id, row.checkpoint_ns]);
      }
    }
  }
  if (namespaces.size === 0) return [];
  const KeyRange = (globalThis as { IDBKeyRange: typeof IDBKeyRange }).IDBKeyRange;
  const tx = db.transaction(presentStores(db), "readonly");
  const ops: Op[] = [];
  const threads = new Set<string>();
  for (const [threadId, ns] of namespaces.values()) {
    if (ns.startsWith("\u0000")) continue; // a tombstone copy, not a namespace
    threads.add(threadId);
    const range = KeyRange.bound([threadId, ns], [threadId, ns, []]);
    const rows: { checkpoint_id: string; channel_versions: Record<string, string | number> }[] = [];
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
      const blobs = await Promise.all(
        Object.entries(row.channel_versions).map(([channel, version]) => request(tx.objectStore("blobs").get([threadId, ns, channel, version]))),
      );
      for (const blob of blobs) if (blob !== undefined) ops.push(["blobs", 0, blob]);
      const writes = await request(tx.objectStore("writes").getAll(KeyRange.bound([threadId, ns, row.checkpoint_id], [threadId, ns, row.checkpoint_id, []])));
      for (const write of writes) ops.push(["writes", 0, write]);
    }
  }
  for (const threadId of threads) {
    const thread = await request(tx.objectStore("threads").get(threadId));
    if (thread !== undefined) ops.push(["threads", 0, thread]);
  }
  return ops;
}

/** Structural equality of stored rows (plain objects, arrays, byte arrays, primitives). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (ArrayBuffer.isView(a) && ArrayBuffer.isView(b)) {
    const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
    return true;
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  if (a && b && typeof a === "object" && typeof b === "object" && !Array.isArray(a) && !Array.isArray(b)) {
    const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
    const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return false;
}

/**
 * Re-applies `records` in order, several per transaction (each transaction
 * all or nothing, so a crash during recovery leaves a state the next
 * recovery replays again). Returns how many records carried operations.
 */
async function replay(db: IDBDatabase, records: Payload[]): Promise<number> {
  const stores = presentStores(db);
  let applied = 0;
  const BATCH = 256;
  for (let start = 0; start < records.length; start += BATCH) {
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
export async function replayFile(db: IDBDatabase, bytes: Uint8Array): Promise<number> {
  const records = parseJournal(bytes).records as Payload[];
  return replay(db, records.slice(1));
}

/**
 * What each part of a `put` costs (issue 13, goals 1 and 2): raw IndexedDB
 * transactions shaped like parts of the saver's put, each timed against a
 * raw put of the same bytes into one plain store, in interleaved rounds of
 * one run. A part's cost is the step between two neighbouring variants.
 * The same shapes also replace the floor's tiny commit in the graph loop, so
 * the loop's ratio can be split the same way.
 */
import { MemorySaver, uuid6, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { unwrap, type DBSchema } from "idb";
import { Database } from "../../src/idb/database.js";
import { issue, storePut } from "../../src/idb/requests.js";
import { WriteBatcher } from "../../src/idb/batch.js";
import { MsgpackSerializer } from "../../src/index.js";
import { SAVER_UPGRADES, type SaverSchema } from "../../src/saver/schema.js";
import { loadOnce } from "../../src/core/tasks.js";
import { deleteDatabase, ms, pairedRow, type BenchRow } from "../harness.js";

const SUITE = "saver";

/** The stores of the breakdown database, typed loosely for the package's runner. */
interface PartsSchema extends DBSchema {
  cp4: { key: IDBValidKey; value: object };
  blobs: { key: IDBValidKey; value: object };
  threads: { key: IDBValidKey; value: object };
  meta: { key: string; value: object };
}

/** An index of the saver's checkpoints store. */
export interface IndexSpec {
  name: string;
  keyPath: string | string[];
  multiEntry: boolean;
  unique: boolean;
}

/**
 * The indexes of the saver's checkpoints store, read off a scratch database
 * that its own schema steps build: a later step shows in the rows below
 * without an edit here. Read once per page: every breakdown database
 * (the pairing's, the runner's, the loop's) is made with them.
 */
export const saverCheckpointIndexes = loadOnce(async (): Promise<IndexSpec[]> => {
  const name = `bench-parts-schema-${Date.now()}`;
  const scratch = new Database<SaverSchema>({ name, upgrades: SAVER_UPGRADES });
  const specs = await scratch.read(
    ["checkpoints"],
    (tx) => {
      const store = unwrap(tx.objectStore("checkpoints")) as IDBObjectStore;
      return [...store.indexNames].map((index) => {
        const { keyPath, multiEntry, unique } = store.index(index);
        return { name: index, keyPath, multiEntry, unique };
      });
    },
    "read the schema",
  );
  await scratch.close();
  await deleteDatabase(name);
  return specs;
});

/** The saver's shapes, and one plain store; `today`: the saver's checkpoint indexes. */
function createPartsStores(db: IDBDatabase, today: IndexSpec[]): void {
  db.createObjectStore("plain");
  // The saver's checkpoints store, with its 4 indexes, and with the 2 of schema 1.
  const four = db.createObjectStore("cp4", { keyPath: ["thread_id", "checkpoint_ns", "checkpoint_id"] });
  const two = db.createObjectStore("cp2", { keyPath: ["thread_id", "checkpoint_ns", "checkpoint_id"] });
  db.createObjectStore("cp0", { keyPath: ["thread_id", "checkpoint_ns", "checkpoint_id"] });
  for (const store of [four, two]) {
    store.createIndex("by_run", "run_id");
    store.createIndex("by_parent", ["thread_id", "checkpoint_ns", "parent_checkpoint_id"]);
  }
  four.createIndex("by_thread_checkpoint", ["thread_id", "checkpoint_id"]);
  four.createIndex("by_checkpoint", "checkpoint_id");
  // Today's checkpoints store, with the indexes the saver's schema steps build (src/saver/schema.ts).
  const todays = db.createObjectStore("cpToday", { keyPath: ["thread_id", "checkpoint_ns", "checkpoint_id"] });
  for (const spec of today)
    todays.createIndex(spec.name, spec.keyPath, { multiEntry: spec.multiEntry, unique: spec.unique });
  db.createObjectStore("blobs", { keyPath: ["thread_id", "checkpoint_ns", "channel", "version"] });
  db.createObjectStore("threads", { keyPath: "thread_id" }).createIndex("by_updated", "updated_at");
  db.createObjectStore("threads0", { keyPath: "thread_id" });
  db.createObjectStore("meta", { keyPath: "name" });
  // A read-free guard (a design for issue 13, not the saver's layout): a
  // deleted thread leaves a marker row whose `guard` equals the live row's,
  // so the live row's put fails on the unique index instead of waiting for a
  // read; a retired key leaves a marker that the writer record collides with.
  const guarded = db.createObjectStore("threadsG", { keyPath: "thread_id" });
  guarded.createIndex("by_updated", "updated_at");
  guarded.createIndex("by_guard", "guard", { unique: true });
  db.createObjectStore("metaG", { keyPath: "name" }).createIndex("by_key", "key_id", { unique: true });
}

/** Opens the breakdown database. */
async function openParts(name: string): Promise<IDBDatabase> {
  const today = await saverCheckpointIndexes();
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name, 1);
    request.onupgradeneeded = () => createPartsStores(request.result, today);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** One transaction's plan: stores, the requests to issue, and what to await before committing. */
interface Shape {
  name: string;
  stores: string[];
  /** Issues the requests; a returned promise is awaited before `commit()` (a read the write depends on). */
  issue(tx: IDBTransaction, n: number): Promise<void> | void;
  /** Calls `tx.commit()` once the requests are out (the saver does). */
  commit: boolean;
}

/** Runs one transaction of `shape`; resolves on `complete`. */
function runShape(db: IDBDatabase, shape: Shape, n: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(shape.stores, "readwrite");
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(tx.error);
    const pending = shape.issue(tx, n);
    if (!shape.commit) return;
    if (pending) void pending.then(() => tx.commit());
    else tx.commit();
  });
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Thread of the breakdown rows. */
const THREAD = "t";

/**
 * The rows of put number `n`, `payload` split as the saver splits a
 * 3-channel checkpoint: checkpoint and metadata in the row, one blob per
 * channel; `inline` is the same row with every byte in it.
 */
function rowsOf(payload: Uint8Array, n: number) {
  const quarter = Math.floor(payload.byteLength / 4);
  const row = (bytes: Uint8Array) => ({
    thread_id: THREAD,
    checkpoint_ns: "",
    checkpoint_id: uuid6(n),
    parent_checkpoint_id: uuid6(n - 1),
    run_id: "run-1",
    checkpoint: ["msgpack", bytes],
    metadata: ["msgpack", new Uint8Array(40)],
    channel_versions: { c0: n, c1: n, c2: n },
    created_at: n,
  });
  return {
    inline: row(payload),
    checkpoint: row(payload.subarray(0, quarter)),
    blobs: [1, 2, 3].map((i) => ({
      thread_id: THREAD,
      checkpoint_ns: "",
      channel: `c${i - 1}`,
      version: n,
      value: ["msgpack", payload.subarray(quarter * i, i === 3 ? payload.byteLength : quarter * (i + 1))],
    })),
    thread: {
      thread_id: THREAD,
      updated_at: n,
      latest: { checkpoint_ns: "", checkpoint_id: uuid6(n), metadata: ["msgpack", new Uint8Array(40)] },
    },
  };
}

/** The shapes, each adding one part to one before it. */
function shapes(payload: Uint8Array): Shape[] {
  const thread = THREAD;
  const cpRow = (n: number, inline: boolean) => (inline ? rowsOf(payload, n).inline : rowsOf(payload, n).checkpoint);
  const threadRow = (tx: IDBTransaction, n: number) => tx.objectStore("threads").put(rowsOf(payload, n).thread);
  // The split layout: blobs and the row, plus the threads row unless `withThread` is false.
  const split = (tx: IDBTransaction, n: number, withThread = true) => {
    const rows = rowsOf(payload, n);
    const blobs = tx.objectStore("blobs");
    for (const blob of rows.blobs) blobs.put(blob);
    tx.objectStore("cp4").put(rows.checkpoint);
    if (withThread) tx.objectStore("threads").put(rows.thread);
  };
  const all = ["cp4", "blobs", "threads", "meta"];
  const tombstoneRead = (tx: IDBTransaction) => request(tx.objectStore("meta").get(`tombstone\u0000${thread}`));
  const guardedThreadRow = (tx: IDBTransaction, n: number) =>
    tx.objectStore("threadsG").put({ ...rowsOf(payload, n).thread, guard: [thread, "epoch-1"] });
  /**
   * The inline row after `extra`'s requests (reads first, as the saver
   * issues them); a promise `extra` returns is awaited before the commit.
   */
  const inlineAnd = (name: string, stores: string[], extra: (tx: IDBTransaction, n: number) => unknown): Shape => ({
    name,
    stores: ["cp4", ...stores],
    commit: true,
    issue: (tx, n) => {
      const pending = extra(tx, n);
      tx.objectStore("cp4").put(cpRow(n, true));
      return pending instanceof Promise ? pending.then(() => undefined) : undefined;
    },
  });
  // Today's row: the values inline, with their blob keys (`inline_keys`) and an empty `absent_keys`.
  const todaysRow = (n: number) => ({
    ...cpRow(n, true),
    inline_keys: ["c0", "c1", "c2"].map((channel) => [THREAD, "", channel, n]),
    absent_keys: [],
  });
  const todays = (name: string, store: string): Shape => ({
    name,
    stores: [store],
    commit: true,
    issue: (tx, n) => void tx.objectStore(store).put(todaysRow(n)),
  });
  return [
    todays("today's row, no index", "cp0"),
    todays("today's row + the saver's checkpoint indexes", "cpToday"),
    {
      name: "plain store, tx.commit()",
      stores: ["plain"],
      commit: true,
      issue: (tx, n) => void tx.objectStore("plain").put(payload, n),
    },
    {
      name: "row, no index, inline values",
      stores: ["cp0"],
      commit: true,
      issue: (tx, n) => void tx.objectStore("cp0").put(cpRow(n, true)),
    },
    {
      name: "row + 2 indexes (schema 1), inline",
      stores: ["cp2"],
      commit: true,
      issue: (tx, n) => void tx.objectStore("cp2").put(cpRow(n, true)),
    },
    {
      name: "row + 4 indexes (schema 2), inline",
      stores: ["cp4"],
      commit: true,
      issue: (tx, n) => void tx.objectStore("cp4").put(cpRow(n, true)),
    },
    inlineAnd("row + 4 indexes, inline, + threads row", ["threads"], threadRow),
    inlineAnd("row + 4 indexes, inline, + tombstone read awaited", ["meta"], tombstoneRead),
    inlineAnd("row + 4 indexes, inline, + threads row w/o index", ["threads0"], (tx, n) =>
      tx.objectStore("threads0").put(rowsOf(payload, n).thread),
    ),
    // The same overwrite with the index key unchanged: is it the index entry that moves?
    inlineAnd("row + 4 indexes, inline, + threads row, index key unchanged", ["threads"], (tx, n) =>
      tx.objectStore("threads").put({ ...rowsOf(payload, n).thread, updated_at: 0 }),
    ),
    inlineAnd("row + 4 indexes, inline, + 2nd small put, same store", [], (tx, n) =>
      tx
        .objectStore("cp4")
        .put({ ...cpRow(n, false), checkpoint_ns: "x", checkpoint: ["msgpack", new Uint8Array(40)] }),
    ),
    inlineAnd("row + 4 indexes, inline, + threads row + tombstone read awaited", ["threads", "meta"], (tx, n) => {
      const read = tombstoneRead(tx);
      threadRow(tx, n);
      return read;
    }),
    inlineAnd("row + 4 indexes, inline, + threads row with a unique guard", ["threadsG"], (tx, n) =>
      guardedThreadRow(tx, n),
    ),
    inlineAnd("… + writer record with a unique key guard (no read)", ["threadsG", "metaG"], (tx, n) => {
      guardedThreadRow(tx, n);
      tx.objectStore("metaG").put({ name: "writer", key_id: "key-1" });
    }),
    {
      name: "row + 4 indexes + 3 blob puts",
      stores: ["cp4", "blobs"],
      commit: true,
      issue: (tx, n) => split(tx, n, false),
    },
    { name: "… + threads row (4 stores in scope)", stores: all, commit: true, issue: (tx, n) => split(tx, n) },
    {
      name: "… + tombstone read awaited (today's tx)",
      stores: all,
      commit: true,
      issue: (tx, n) => {
        const read = tombstoneRead(tx);
        split(tx, n);
        return read.then(() => undefined);
      },
    },
    {
      name: "… + tombstone probe add+delete, no await",
      stores: all,
      commit: true,
      issue: (tx, n) => {
        const meta = tx.objectStore("meta");
        meta.add({ name: `tombstone\u0000${thread}`, value: null });
        meta.delete(`tombstone\u0000${thread}`);
        split(tx, n);
      },
    },
  ];
}

/** One round of `count` calls of `fn`: ms per call. */
async function round(count: number, fn: (n: number) => Promise<unknown>, start: { n: number }): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await fn(start.n++);
  return (performance.now() - t0) / count;
}

/**
 * The put breakdown: each shape vs a raw put of the same bytes (no explicit
 * commit, as the put row's baseline), and `ours` (the saver's put, passed in
 * as a function) in the same rounds.
 */
export async function putParts(
  payload: Uint8Array,
  ours: () => Promise<unknown>,
  checkpoint: Checkpoint,
): Promise<BenchRow[]> {
  const name = `bench-parts-${Date.now()}`;
  const db = await openParts(name);
  const raw: Shape = {
    name: "raw",
    stores: ["plain"],
    commit: false,
    issue: (tx, n) => void tx.objectStore("plain").put(payload, n),
  };
  const list = shapes(payload);
  // Today's transaction through the package's runner (idb's request
  // wrappers, the write helpers, the explicit commit; no journal).
  const runnerName = `${name}-runner`;
  const today = await saverCheckpointIndexes();
  const runner = new Database<PartsSchema>({
    name: runnerName,
    upgrades: [(wrapped) => createPartsStores(unwrap(wrapped) as IDBDatabase, today)],
  });
  const viaRunner = (n: number) =>
    runner.write(
      ["cp4", "blobs", "threads", "meta"],
      async (tx) => {
        const read = tx.objectStore("meta").get(`tombstone\u0000t`);
        const rows = rowsOf(payload, n);
        for (const blob of rows.blobs) issue(storePut(tx.objectStore("blobs"), blob));
        issue(storePut(tx.objectStore("cp4"), rows.checkpoint));
        issue(storePut(tx.objectStore("threads"), rows.thread));
        await read;
      },
      "bench",
    );
  // The layout the data points to, through the package's machinery: the
  // same 5 values serialized, then one row (values inline) in one store,
  // through the batcher, with no threads row and no tombstone wait.
  const serde = new MsgpackSerializer();
  const batcher = new WriteBatcher(runner);
  const { channel_values: values, ...withoutValues } = checkpoint;
  const candidate = async (n: number) => {
    const channels = Object.keys(values);
    const [checkpointBytes, metadataBytes, ...valueBytes] = await Promise.all(
      [withoutValues, { source: "loop", step: n, parents: {} }, ...channels.map((c) => values[c])].map((value) =>
        serde.dumpsTyped(value),
      ),
    );
    const row = {
      ...rowsOf(payload, n).inline,
      checkpoint: checkpointBytes,
      metadata: metadataBytes,
      values: Object.fromEntries(channels.map((c, i) => [c, valueBytes[i]])),
    };
    await batcher.write(["cp4"], (tx) => issue(storePut(tx.objectStore("cp4"), row)), "bench");
  };
  const counter = { n: 1 };
  const runners: ((n: number) => Promise<unknown>)[] = [
    (n) => runShape(db, raw, n),
    ...list.map((shape) => (n: number) => runShape(db, shape, n)),
    viaRunner,
    candidate,
    () => ours(),
  ];
  const times = runners.map(() => [] as number[]);
  for (const run of runners) await round(10, run, counter);
  for (let r = 0; r < 11; r++) {
    for (const [i, run] of runners.entries()) times[i]!.push(await round(25, run, counter));
  }
  db.close();
  await runner.close();
  await deleteDatabase(name);
  await deleteDatabase(runnerName);
  const names = [
    ...list.map((shape) => shape.name),
    "today's tx via the package's Database.write",
    "candidate: serialize + 1 inline row via the batcher",
    "IndexedDBSaver.put (today)",
  ];
  return names.map((label, i) => pairedRow(SUITE, `  put part: ${label}`, times[i + 1]!, times[0]!, "raw IDB put", ms));
}

/**
 * The graph loop's floor with a put-shaped transaction instead of the tiny
 * commit: MemorySaver plus one transaction of `shape` per put. What the
 * loop would cost if the saver's only overhead were that transaction.
 */
export class ShapedFloorSaver extends MemorySaver {
  readonly #db: Promise<IDBDatabase>;
  readonly #shape: Shape;
  #n = 1;

  constructor(
    readonly dbName: string,
    payload: Uint8Array,
    shapeName: string,
  ) {
    super();
    this.#db = openParts(dbName);
    this.#shape = shapes(payload).find((shape) => shape.name === shapeName)!;
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata) {
    const result = await super.put(config, checkpoint, metadata);
    await runShape(await this.#db, this.#shape, this.#n++);
    return result;
  }

  async done(): Promise<void> {
    (await this.#db).close();
    await deleteDatabase(this.dbName);
  }
}

/** Shape names the loop breakdown uses. */
export const LOOP_SHAPES = [
  "row + 4 indexes (schema 2), inline",
  "row + 4 indexes, inline, + tombstone read awaited",
  "row + 4 indexes, inline, + threads row + tombstone read awaited",
  "… + writer record with a unique key guard (no read)",
  "… + tombstone read awaited (today's tx)",
] as const;

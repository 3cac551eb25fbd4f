/**
 * What a checkpoint row's shape costs IndexedDB's put (issue 26: a put ≤ 1.5×
 * a raw put of the same bytes). Chromium structured-clones a value, then
 * reads the key path and every index's key path from a clone of it, so a row
 * of many small objects may pay per object. The saver's own row (read back
 * after a put of the bench's 2 KB checkpoint) is put again with raw IndexedDB,
 * each shape into a store of its own with the saver's checkpoint indexes, all
 * in one database: as stored; with its non-index fields packed into one
 * `Uint8Array` by msgpackr; and shapes between the two that isolate a field.
 * Then the same bytes as one `Uint8Array`: out-of-line keys with and without
 * the indexes, and a plain store. Puts alternate one by one, in a fresh random
 * order every cycle; per-put medians. Reads: the stored row's `get` against the
 * packed row's `get` plus unpack, one row and a page of 10. The saver's own
 * put of the same checkpoint is in the rotation, for scale.
 * No format changes here: `npm run bench -- row-shape` (docs/benchmarks.md,
 * "What a row's shape costs the put").
 */
import { uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Packr, RESET_BUFFER_MODE, Unpackr } from "msgpackr";
import { deleteDatabase, median, ms, pairedRow, tempSaver, type BenchRow, type Suite } from "../harness.js";
import { saverCheckpointIndexes } from "./put-parts.js";
import { newestRow, open } from "./put-indexes.js";
import { twoKbCheckpoint } from "./saver.js";

const SUITE = "row-shape";
const KEY_PATH = ["thread_id", "checkpoint_ns", "checkpoint_id"];
/** The fields the saver's checkpoint indexes and key path name: kept plain in the packed shape. */
const INDEX_FIELDS = [
  "thread_id",
  "checkpoint_ns",
  "checkpoint_id",
  "run_id",
  "created_at",
  "inline_keys",
  "absent_keys",
];
/** The label of issue 26's shape: index fields plain, the rest packed (its reads are timed too). */
const PACKED = "non-index fields packed (pack timed apart)";
/** Puts of each variant (and reads of each kind), after 20 of warm-up. */
const CYCLES = 300;

// The journal's options (src/journal/format.ts): plain maps and bins, no records, no extensions.
const options = { useRecords: false, moreTypes: false, structuredClone: false, mapsAsObjects: true } as const;
const packr = new Packr({ ...options, variableMapSize: true });
const unpackr = new Unpackr(options);
/** Packs `value` into bytes of its own: IndexedDB would store a view's whole shared buffer. */
const pack = (value: unknown): Uint8Array => packr.pack(value, RESET_BUFFER_MODE).slice();

type Row = Record<string, unknown>;
type TypedBytes = [string, Uint8Array];

/** `row` split: the fields an index or the key reads, and the rest. */
function split(row: Row): [plain: Row, rest: Row] {
  const plain: Row = {};
  const rest: Row = {};
  for (const [field, value] of Object.entries(row)) (INDEX_FIELDS.includes(field) ? plain : rest)[field] = value;
  return [plain, rest];
}

/** `row` with its non-index fields packed into one `packed` field (the shape of issue 26's question). */
function packRest(row: Row): Row {
  const [plain, rest] = split(row);
  return { ...plain, packed: pack(rest) };
}

/** A `[type, bytes]` pair as one `Uint8Array`: the tag's length, its UTF-8, the bytes. */
function oneArray([type, data]: TypedBytes): Uint8Array {
  const tag = new TextEncoder().encode(type);
  const out = new Uint8Array(1 + tag.length + data.length);
  out[0] = tag.length;
  out.set(tag, 1);
  out.set(data, 1 + tag.length);
  return out;
}

/** One put variant: its store, whether that store has the saver's indexes, and the value of put `n`. */
interface Variant {
  label: string;
  indexes: boolean;
  /** A store with out-of-line keys: `make` gives the key beside the value. */
  outOfLine?: boolean;
  /** The value to put, and its key in a store with out-of-line keys. */
  make: (n: number) => { value: unknown; key?: IDBValidKey };
  /** Commit on its own, as the goal row's raw put does (no `commit()`). */
  autoCommit?: boolean;
}

/** What one put took (ms): building its value, `transaction()`, the `put()` call alone, `transaction()` to `complete`. */
interface PutTime {
  make: number;
  open: number;
  call: number;
  total: number;
}

function timedPut(db: IDBDatabase, store: string, variant: Variant, n: number): Promise<PutTime> {
  const t0 = performance.now();
  const { value, key } = variant.make(n);
  const make = performance.now() - t0;
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const tx = db.transaction(store, "readwrite");
    const objects = tx.objectStore(store);
    const before = performance.now();
    objects.put(value, key);
    const call = performance.now() - before;
    if (!variant.autoCommit) tx.commit();
    tx.oncomplete = () => resolve({ make, open: before - start, call, total: performance.now() - start });
    tx.onerror = tx.onabort = () => reject(tx.error);
  });
}

/** A read's time (ms): `transaction()` to the answer decoded, and of that the row's structured-clone read and unpack. */
interface ReadTime {
  total: number;
  clone: number;
  unpack: number;
}

/** Reads the rows `query` names (`count` of them) from `store`; `unpack` rebuilds a packed row. */
function timedRead(db: IDBDatabase, store: string, query: IDBValidKey | IDBKeyRange, count: number, packed: boolean) {
  return new Promise<ReadTime>((resolve, reject) => {
    const start = performance.now();
    const tx = db.transaction(store, "readonly");
    const request = count === 1 ? tx.objectStore(store).get(query) : tx.objectStore(store).getAll(query, count);
    request.onerror = () => reject(request.error);
    request.onsuccess = () => {
      const t1 = performance.now();
      const result = request.result as Row | Row[];
      const t2 = performance.now();
      const rows = Array.isArray(result) ? result : [result];
      if (rows.length !== count) return reject(new Error(`${store}: ${rows.length} rows, not ${count}`));
      if (packed) {
        for (const row of rows) Object.assign(row, unpackr.unpack(row.packed as Uint8Array));
      }
      const t3 = performance.now();
      resolve({ total: t3 - start, clone: t2 - t1, unpack: t3 - t2 });
    };
  });
}

/** Whether two rows hold the same fields, bytes compared byte by byte. */
function sameRow(a: Row, b: Row): boolean {
  const text = (row: Row) =>
    JSON.stringify(row, (_key, value: unknown) => (value instanceof Uint8Array ? [...value] : value));
  const sorted = (row: Row) => Object.fromEntries(Object.entries(row).sort(([x], [y]) => (x < y ? -1 : 1)));
  return text(sorted(a)) === text(sorted(b));
}

/** Entries per row of each index of `store`: what its puts wrote. */
async function indexEntries(db: IDBDatabase, store: string): Promise<Record<string, number>> {
  const objects = db.transaction(store).objectStore(store);
  const count = (source: IDBObjectStore | IDBIndex) =>
    new Promise<number>((resolve, reject) => {
      const request = source.count();
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  const rows = await count(objects);
  const names = [...objects.indexNames];
  const counts = await Promise.all(names.map((index) => count(objects.index(index))));
  return Object.fromEntries(names.map((index, i) => [index, Math.round((counts[i]! / rows) * 100) / 100]));
}

/** Median and quartiles of `values` (ms), as `µs median (p25-p75)`. */
function spread(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.floor(q * (sorted.length - 1))]! * 1000).toFixed(0);
  return `${(median(values) * 1000).toFixed(0)} (${at(0.25)}-${at(0.75)}) µs`;
}

/**
 * A saver after two puts of the bench's 2 KB checkpoint (the second has a parent), with a run id: its newest
 * row, and its put of the next checkpoint (ms, the checkpoint made before the clock starts) for scale.
 */
async function saverAndRow() {
  const temp = tempSaver("row-shape");
  let config: RunnableConfig = { configurable: { thread_id: "row-shape", checkpoint_ns: "" } };
  let step = 0;
  const put = async (): Promise<PutTime> => {
    const { checkpoint, versions } = twoKbCheckpoint(uuid6(0));
    // A graph's puts carry a run id, and each writes a `by_run` entry.
    const metadata = { source: "loop", step: ++step, parents: {}, run_id: "run-1" } as CheckpointMetadata;
    const start = performance.now();
    config = await temp.saver.put(config, checkpoint, metadata, versions);
    const total = performance.now() - start;
    // What a put leaves to later tasks (its change notice, sent a task later) is not the next variant's:
    // it would slow whichever put follows by about 0.4 ms.
    await new Promise((resolve) => setTimeout(resolve, 0));
    return { make: 0, open: 0, call: 0, total };
  };
  await put();
  await put();
  return { row: await newestRow(temp.dbName), put, done: temp.done };
}

/** The put variants, `template` the saver's row. */
function variants(template: Row): Variant[] {
  const fresh = (n: number): Row => ({
    ...template,
    checkpoint_id: uuid6(n),
    parent_checkpoint_id: uuid6(n - 1),
    created_at: Date.now(),
  });
  const shaped = (label: string, edit: (row: Row) => Row): Variant => ({
    label,
    indexes: true,
    make: (n) => ({ value: edit(fresh(n)) }),
  });
  const inline = template.inline as Record<string, TypedBytes>;
  const oneArrays = {
    checkpoint: oneArray(template.checkpoint as TypedBytes),
    metadata: oneArray(template.metadata as TypedBytes),
    inline: Object.fromEntries(Object.entries(inline).map(([channel, value]) => [channel, oneArray(value)])),
  };
  const t = template.thread_id as string;
  // The same bytes the packed shape stores in all (its plain fields too), keyed as the row or by a number.
  const bytesAt = (n: number) => {
    const row = fresh(n);
    return { value: pack(row), key: KEY_PATH.map((field) => row[field] as string) };
  };
  const bytesNumbered = (n: number) => ({ value: pack(fresh(n)), key: n });
  return [
    shaped("row as stored", (row) => row),
    // The same row into a second store: its ratio is the method's own spread.
    shaped("row as stored, a second store (control)", (row) => row),
    shaped(PACKED, packRest),
    shaped("no inline_keys", ({ inline_keys: _, ...row }) => row),
    // Both: the shape a next format could write if it also dropped `by_value`'s entries (schema step 7).
    shaped("non-index fields packed, no inline_keys", ({ inline_keys: _, ...row }) => packRest(row)),
    { label: "row as stored, a store without indexes", indexes: false, make: (n) => ({ value: fresh(n) }) },
    // The bench's row lists no absent version; a chat graph's row lists one or two (`__start__`, a branch).
    shaped("+ 2 absent_keys, as a chat row lists", (row) => ({
      ...row,
      channel_versions: { ...(row.channel_versions as Row), __start__: 7, "branch:to:agent": 7 },
      absent_keys: [
        [t, "", "__start__", 7],
        [t, "", "branch:to:agent", 7],
      ],
    })),
    shaped("channel_versions packed", (row) => ({ ...row, channel_versions: pack(row.channel_versions) })),
    shaped("inline packed", (row) => ({ ...row, inline: pack(row.inline) })),
    shaped("[type, bytes] pairs as one Uint8Array each", (row) => ({ ...row, ...oneArrays })),
    { label: "the row's bytes, out-of-line key, saver's indexes", indexes: true, outOfLine: true, make: bytesAt },
    { label: "the row's bytes, out-of-line key, no index", indexes: false, outOfLine: true, make: bytesAt },
    { label: "the row's bytes, plain store (raw put)", indexes: false, outOfLine: true, make: bytesNumbered },
    {
      label: "the row's bytes, plain store, auto-commit (the goal's raw put)",
      indexes: false,
      outOfLine: true,
      autoCommit: true,
      make: bytesNumbered,
    },
  ];
}

async function rowShape(): Promise<BenchRow[]> {
  const saver = await saverAndRow();
  const template = saver.row;
  // The packed shape holds the row: unpacked and merged with its plain fields, it is the row again.
  const { packed: bytes, ...back } = packRest(template);
  if (!sameRow({ ...back, ...unpackr.unpack(bytes as Uint8Array) }, template)) {
    throw new Error("row-shape: the packed row does not unpack to the saver's row");
  }
  const indexes = await saverCheckpointIndexes();
  const list = variants(template);
  const name = `bench-row-shape-${Date.now()}`;
  const db = await open(name, 1, (db) => {
    for (const [i, variant] of list.entries()) {
      const store = db.createObjectStore(`v${i}`, variant.outOfLine ? {} : { keyPath: KEY_PATH });
      if (!variant.indexes) continue;
      for (const spec of indexes)
        store.createIndex(spec.name, spec.keyPath, { multiEntry: spec.multiEntry, unique: spec.unique });
    }
  });
  // Each variant, then the saver's own put (its row's transaction and everything else a put does), in turn.
  const runs = [...list.map((variant, i) => (n: number) => timedPut(db, `v${i}`, variant, n)), saver.put];
  const times = runs.map(() => [] as PutTime[]);
  let n = 1;
  // A fresh order each cycle: a put may slow the next one (its commit still on the backend's thread), so
  // each variant should follow every other about as often (a turning order keeps the same neighbours).
  const order = runs.map((_, i) => i);
  for (let cycle = -20; cycle < CYCLES; cycle++) {
    for (let k = order.length - 1; k > 0; k--) {
      const j = Math.floor(Math.random() * (k + 1));
      [order[k], order[j]] = [order[j]!, order[k]!];
    }
    for (const i of order) {
      const time = await runs[i]!(n++);
      if (cycle >= 0) times[i]!.push(time);
    }
  }
  const packedStore = `v${list.findIndex((variant) => variant.label === PACKED)}`;
  // The packed shape must write the index entries the row does, or its puts would be cheaper for that alone.
  const entries = { stored: await indexEntries(db, "v0"), packed: await indexEntries(db, packedStore) };
  console.log(`bench:   row-shape index entries per put, row as stored: ${JSON.stringify(entries.stored)}`);
  if (JSON.stringify(entries.packed) !== JSON.stringify(entries.stored)) {
    throw new Error(`row-shape: the packed rows' index entries ${JSON.stringify(entries.packed)} differ`);
  }
  const reads = await readBoth(db, template, packedStore);
  db.close();
  await deleteDatabase(name);
  await saver.done();
  const [plain] = split(template);
  console.log(
    `bench:   row-shape: the row ${pack(template).byteLength} B packed whole; index fields ${Object.keys(plain).join(", ")}; packed part ${pack(split(template)[1]).byteLength} B`,
  );
  for (const [i, label] of [...list.map((variant) => variant.label), "IndexedDBSaver.put"].entries()) {
    const of = (field: keyof PutTime) => spread(times[i]!.map((time) => time[field]));
    // The main thread's part, paired: the put() call's difference to the row's in the same cycle.
    const delta = median(times[i]!.map((time, j) => time.call - times[0]![j]!.call)) * 1000;
    console.log(
      `bench:   row-shape put, ${label}: tx ${of("total")}; transaction() ${of("open")}; put() call ${of("call")}, ${delta.toFixed(0)} µs vs the row's; value made ${of("make")}`,
    );
  }
  const total = (i: number) => times[i]!.map((time) => time.total);
  const raw = list.findIndex((variant) => variant.label.endsWith("(raw put)"));
  const goalRaw = list.findIndex((variant) => variant.label.endsWith("(the goal's raw put)"));
  const label = (text: string) => `  put: ${text}`;
  // Against the raw put: the row as stored, and the packed shapes with their pack (the put would pack first).
  const withMake = (i: number) => times[i]!.map((time) => time.total + time.make);
  const packed = list.flatMap((variant, i) => (variant.label.startsWith("non-index fields packed") ? [i] : []));
  return [
    pairedRow(SUITE, label("row as stored"), total(0), total(raw), "raw put, same bytes", ms),
    pairedRow(SUITE, label("row as stored"), total(0), total(goalRaw), "the goal's raw put", ms),
    pairedRow(SUITE, label("IndexedDBSaver.put"), total(list.length), total(goalRaw), "the goal's raw put", ms),
    ...packed.map((i) =>
      pairedRow(SUITE, label(`${list[i]!.label}, pack included`), withMake(i), total(raw), "raw put, same bytes", ms),
    ),
    ...list
      .slice(1)
      .map((variant, i) => pairedRow(SUITE, label(variant.label), total(i + 1), total(0), "row as stored", ms)),
    ...reads,
  ];
}

/**
 * Reads of the stored rows (store v0) against the packed rows (store `packedStore`), alternating: one row
 * by key, and a page of 10.
 */
async function readBoth(db: IDBDatabase, template: Row, packedStore: string): Promise<BenchRow[]> {
  const t = template.thread_id as string;
  const ns = template.checkpoint_ns as string;
  const keysOf = (store: string) =>
    new Promise<IDBValidKey[]>((resolve) => {
      const request = db.transaction(store).objectStore(store).getAllKeys();
      request.onsuccess = () => resolve(request.result);
    });
  // Each store's rows have ids of their own (every put took the next id): the k-th of each is read.
  const keys = { stored: await keysOf("v0"), packed: await keysOf(packedStore) };
  const page = IDBKeyRange.bound([t, ns, ""], [t, ns, "\uffff"]);
  const kinds = [
    {
      label: "get one row",
      query: (shape: "stored" | "packed", k: number) => keys[shape][k % keys[shape].length]!,
      count: 1,
    },
    { label: "a page of 10 rows (getAll)", query: () => page, count: 10 },
  ];
  const rows: BenchRow[] = [];
  for (const kind of kinds) {
    const stored: ReadTime[] = [];
    const packed: ReadTime[] = [];
    for (let k = -20; k < CYCLES; k++) {
      // Which goes first turns each cycle; the row read jumps about the store.
      const pair = k % 2 ? [false, true] : [true, false];
      for (const isPacked of pair) {
        const query = kind.query(isPacked ? "packed" : "stored", Math.abs(k) * 7);
        const time = await timedRead(db, isPacked ? packedStore : "v0", query, kind.count, isPacked);
        if (k >= 0) (isPacked ? packed : stored).push(time);
      }
    }
    for (const [what, list] of [
      ["stored", stored],
      ["packed", packed],
    ] as const) {
      const of = (field: keyof ReadTime) => spread(list.map((time) => time[field]));
      console.log(
        `bench:   row-shape read, ${kind.label}, ${what}: ${of("total")}; clone read ${of("clone")}; unpack ${of("unpack")}`,
      );
    }
    rows.push(
      pairedRow(
        SUITE,
        `  read: ${kind.label}, packed + unpack`,
        packed.map((time) => time.total),
        stored.map((time) => time.total),
        "row as stored",
        ms,
      ),
    );
  }
  return rows;
}

/** `npm run bench -- row-shape`. */
export const rowShapeSuite: Suite = { name: "row-shape", run: rowShape };

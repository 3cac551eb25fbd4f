/**
 * What each index of the saver's checkpoints store costs a put (issue 26:
 * a put ≤ 1.5× a raw put): the row the saver wrote, put again with raw
 * IndexedDB into a store with every index the saver's schema steps build,
 * into one store per index with that index left out, into one with none,
 * and with its `inline_keys` field left out (no `by_value` entries, what
 * the proposed schema step 7 would write). Puts alternate one by one,
 * each variant timed on its own, the order turning every cycle; a row's
 * ratio is the median of its per-cycle ratios to the row with every index.
 * On a shared machine only such paired, per-put medians hold still.
 */
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { deleteDatabase, ms, pairedRow, type BenchRow } from "../harness.js";
import { saverCheckpointIndexes, type IndexSpec } from "./put-parts.js";

const SUITE = "saver";
const KEY_PATH = ["thread_id", "checkpoint_ns", "checkpoint_id"];

/** Opens `name`; `upgrade` makes its stores when `version` is new to it. */
export function open(name: string, version?: number, upgrade?: (db: IDBDatabase) => void): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name, version);
    request.onupgradeneeded = () => upgrade?.(request.result);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** The newest checkpoint row of the saver's database `dbName`, as the saver stored it. */
export async function newestRow(dbName: string): Promise<Record<string, unknown>> {
  const db = await open(dbName);
  try {
    return await new Promise((resolve, reject) => {
      const request = db.transaction("checkpoints").objectStore("checkpoints").openCursor(null, "prev");
      request.onsuccess = () =>
        request.result ? resolve(request.result.value as Record<string, unknown>) : reject(new Error("no row"));
      request.onerror = () => reject(request.error);
    });
  } finally {
    db.close();
  }
}

/** One variant: the store it puts into and the row it puts. */
interface Variant {
  label: string;
  store: string;
  row: (n: number) => object;
}

/**
 * Puts `value` into `store` in one transaction; ms from `transaction()` to `complete`. A variant's row
 * (no `key`: the store has a key path) is committed with `commit()`, as the saver commits its writes; the
 * raw put (`key` given) commits on its own, as the put row's raw baseline does (bench/suites/saver.ts), so
 * the first row's ratio pairs the same two commit modes as the goal row.
 */
function timedPut(db: IDBDatabase, store: string, value: object, key?: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const tx = db.transaction(store, "readwrite");
    tx.oncomplete = () => resolve(performance.now() - start);
    tx.onerror = tx.onabort = () => reject(tx.error);
    tx.objectStore(store).put(value, key);
    if (key === undefined) tx.commit();
  });
}

/**
 * The index rows: `saverDb` is a database the saver has put the bench
 * checkpoint into (its newest row is the template), `payload` that
 * checkpoint's bytes for the raw put. `cycles` puts of each variant.
 */
export async function putIndexEntries(saverDb: string, payload: Uint8Array, cycles = 300): Promise<BenchRow[]> {
  const template = await newestRow(saverDb);
  // The bench's metadata has no run_id; a graph's puts do, and each writes a `by_run` entry.
  template.run_id ??= "run-1";
  const indexes = await saverCheckpointIndexes();
  const name = `bench-put-indexes-${Date.now()}`;
  const create = (db: IDBDatabase, store: string, specs: IndexSpec[]) => {
    const created = db.createObjectStore(store, { keyPath: KEY_PATH });
    for (const spec of specs) {
      created.createIndex(spec.name, spec.keyPath, { multiEntry: spec.multiEntry, unique: spec.unique });
    }
  };
  const db = await open(name, 1, (db) => {
    db.createObjectStore("plain");
    // Three stores with every index: each variant below has a store of its own, so every store holds
    // as many rows; the second, put the same row, is the control (its ratio shows the method's bias).
    for (const store of ["every", "every, control", "every, no inline_keys"]) create(db, store, indexes);
    create(db, "none", []);
    for (const left of indexes)
      create(
        db,
        `-${left.name}`,
        indexes.filter((spec) => spec !== left),
      );
  });
  // Each put a new id and stamp, as the saver's next put would have; the rest as the saver wrote it.
  const row = (n: number) => ({
    ...template,
    checkpoint_id: uuid6(n),
    parent_checkpoint_id: uuid6(n - 1),
    created_at: Date.now(),
  });
  const withoutInlineKeys = (n: number) => {
    const { inline_keys: _, ...rest }: Record<string, unknown> = row(n);
    return rest;
  };
  const variants: Variant[] = [
    { label: "every index", store: "every", row },
    ...indexes.map((left) => ({ label: `without ${left.name}`, store: `-${left.name}`, row })),
    { label: "no index", store: "none", row },
    { label: "every index, no inline_keys field", store: "every, no inline_keys", row: withoutInlineKeys },
    { label: "every index, a second store (control)", store: "every, control", row },
  ];
  const raw: number[] = [];
  const times = variants.map(() => [] as number[]);
  let n = 1;
  for (let cycle = -20; cycle < cycles; cycle++) {
    // The raw put first, then the variants from a place that turns each cycle.
    const rawTime = await timedPut(db, "plain", payload, n++);
    const cycleTimes: number[] = [];
    for (let k = 0; k < variants.length; k++) {
      const i = (k + Math.max(cycle, 0)) % variants.length;
      cycleTimes[i] = await timedPut(db, variants[i]!.store, variants[i]!.row(n++));
    }
    if (cycle < 0) continue; // warm-up
    raw.push(rawTime);
    for (const [i, time] of cycleTimes.entries()) times[i]!.push(time);
  }
  db.close();
  await deleteDatabase(name);
  const every = times[0]!;
  const label = (text: string) => `  put index entries: the saver's row, ${text}`;
  return [
    pairedRow(SUITE, label("every index (one store)"), every, raw, "raw IDB put, same bytes", ms),
    ...variants
      .slice(1)
      .map((variant, i) => pairedRow(SUITE, label(variant.label), times[i + 1]!, every, "its row, every index", ms)),
  ];
}

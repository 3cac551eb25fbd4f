/**
 * Up to what size a channel value belongs inline in its checkpoint's row
 * (row format 2) rather than in a blob row of its own: raw IndexedDB
 * transactions, in paired rounds, at each size. Inline saves the blob's
 * request and store at every put; it costs every read of the row that does
 * not want the value (a `list` page, a parent walk) the value's copy. The
 * threshold is the size where the write's gain stops paying for the reads'
 * loss.
 */
import { deleteDatabase, ms, pairedRow, type BenchRow } from "../harness.js";

const SUITE = "saver";
/** Value sizes tried: a chat turn's value is 1-10 KiB; a state with a document in it, more. */
const SIZES = [1 << 10, 2 << 10, 4 << 10, 8 << 10, 32 << 10, 128 << 10, 512 << 10];
/** What a checkpoint row holds beside its values (ids, versions, checkpoint and metadata bytes). */
const ROW_BYTES = 600;
/** Rows of a `list` page. */
const PAGE = 10;

/** Opens the threshold database: inline rows, rows without values, and blobs. */
function openThreshold(name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name, 1);
    request.onupgradeneeded = () => {
      for (const store of ["inline", "rows", "blobs"]) request.result.createObjectStore(store, { keyPath: "id" });
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** Random bytes (values are often encrypted: nothing to compress). */
function randomBytes(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let at = 0; at < size; at += 65536) crypto.getRandomValues(bytes.subarray(at, Math.min(size, at + 65536)));
  return bytes;
}

/** Runs `fill` in one read-write transaction and resolves once it commits. */
function commit(db: IDBDatabase, stores: string[], fill: (tx: IDBTransaction) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(stores, "readwrite");
    fill(tx);
    tx.commit();
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(tx.error);
  });
}

/** Reads `PAGE` rows of `store` from `from` on, in one request. */
function readPage(db: IDBDatabase, store: string, from: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = db.transaction(store, "readonly").objectStore(store).getAll(IDBKeyRange.lowerBound(from), PAGE);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
  });
}

/** Mean ms per call of `count` calls of `fn`. */
async function timed(count: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i++) await fn(i);
  return (performance.now() - start) / count;
}

/** Per size: a put inline vs row + blob, and a page of rows read inline vs without values. */
export async function inlineThreshold(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const name = `bench-inline-${Date.now()}`;
  const db = await openThreshold(name);
  const head = randomBytes(ROW_BYTES);
  let id = 0;
  try {
    for (const size of SIZES) {
      const value = randomBytes(size);
      const perRound = size >= 128 << 10 ? 8 : 20;
      const inlinePut = () => commit(db, ["inline"], (tx) => tx.objectStore("inline").put({ id: id++, head, value }));
      const splitPut = () =>
        commit(db, ["rows", "blobs"], (tx) => {
          tx.objectStore("blobs").put({ id, value });
          tx.objectStore("rows").put({ id: id++, head });
        });
      const writes = { inline: [] as number[], split: [] as number[] };
      const reads = { inline: [] as number[], split: [] as number[] };
      const first = id;
      await timed(4, inlinePut);
      await timed(4, splitPut);
      for (let round = 0; round < 5; round++) {
        writes.inline.push(await timed(perRound, inlinePut));
        writes.split.push(await timed(perRound, splitPut));
        reads.inline.push(await timed(perRound, (i) => readPage(db, "inline", first + i)));
        reads.split.push(await timed(perRound, (i) => readPage(db, "rows", first + i)));
      }
      const label = `${size >> 10} KiB`;
      rows.push(pairedRow(SUITE, `inline value ${label}: put, 1 row`, writes.inline, writes.split, "row + blob", ms));
      rows.push(
        pairedRow(
          SUITE,
          `inline value ${label}: page of ${PAGE} rows`,
          reads.inline,
          reads.split,
          "rows w/o values",
          ms,
        ),
      );
      // Keep the database small between sizes.
      await commit(db, ["inline", "rows", "blobs"], (tx) => {
        for (const store of ["inline", "rows", "blobs"]) tx.objectStore(store).clear();
      });
    }
  } finally {
    db.close();
    await deleteDatabase(name);
  }
  return rows;
}

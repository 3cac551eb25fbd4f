/** What every bench suite shares: timing, ratios, rows of the printed table, temporary savers. */
import { IndexedDBSaver } from "../src/index.js";

/** One line of the table `npm run bench` prints. */
export interface BenchRow {
  suite: string;
  name: string;
  ours: string;
  baseline: string;
  baselineName: string;
  ratio: string;
  goal?: string;
  ok?: boolean;
}

/** A suite: a name and a function that measures and returns rows. */
export interface Suite {
  name: string;
  run(): Promise<BenchRow[]>;
}

/** Median of a list of numbers. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Milliseconds per call of `fn`: `rounds` rounds of `perRound` calls each
 * after a warm-up, the median round's mean (robust to a GC pause or two).
 */
export async function msPerCall(
  fn: (i: number) => Promise<unknown> | unknown,
  { perRound = 50, rounds = 5, warmup = 10 }: { perRound?: number; rounds?: number; warmup?: number } = {},
): Promise<number> {
  let i = 0;
  for (let w = 0; w < warmup; w++) await fn(i++);
  const means: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    for (let n = 0; n < perRound; n++) await fn(i++);
    means.push((performance.now() - start) / perRound);
  }
  return median(means);
}

/**
 * Ms per call of `a` and of `b`, measured in alternating rounds, the median
 * round of each: the machine is shared, and alternating lets a quiet or a
 * busy spell touch both alike. (The fastest round, used before, swung by
 * ±20% between runs at the page's 100 µs timer; the page is now
 * cross-origin isolated, 5 µs.)
 */
export async function alternately(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  { perRound, rounds, warmup }: { perRound: number; rounds: number; warmup: number },
): Promise<[number, number]> {
  const timed = async (fn: () => Promise<unknown>, count: number) => {
    const start = performance.now();
    for (let i = 0; i < count; i++) await fn();
    return (performance.now() - start) / count;
  };
  await timed(a, warmup);
  await timed(b, warmup);
  const as: number[] = [];
  const bs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    as.push(await timed(a, perRound));
    bs.push(await timed(b, perRound));
  }
  return [median(as), median(bs)];
}

/** Formats milliseconds with sensible precision. */
export function ms(value: number): string {
  return value >= 100
    ? `${value.toFixed(0)} ms`
    : value >= 1
      ? `${value.toFixed(2)} ms`
      : `${(value * 1000).toFixed(0)} µs`;
}

/** Formats a byte count. */
export function bytes(value: number): string {
  if (value >= 1 << 20) return `${(value / (1 << 20)).toFixed(2)} MiB`;
  if (value >= 1 << 10) return `${(value / (1 << 10)).toFixed(1)} KiB`;
  return `${value} B`;
}

/**
 * A row comparing ours with a baseline. `ratio` is ours / baseline; `goal`
 * is checked as `ratio <= max` (or `>= min` for speed-ups).
 */
export function row(
  suite: string,
  name: string,
  ours: number,
  baseline: number,
  baselineName: string,
  format: (n: number) => string,
  goal?: { max?: number; min?: number },
): BenchRow {
  const ratio = ours / baseline;
  let ok: boolean | undefined;
  let goalText: string | undefined;
  if (goal?.max !== undefined) {
    ok = ratio <= goal.max;
    goalText = `≤ ${goal.max}×`;
  } else if (goal?.min !== undefined) {
    ok = ratio >= goal.min;
    goalText = `≥ ${goal.min}×`;
  }
  return {
    suite,
    name,
    ours: format(ours),
    baseline: format(baseline),
    baselineName,
    ratio: `${ratio.toFixed(2)}×`,
    goal: goalText,
    ok,
  };
}

/** Deletes a database, waiting for it. */
export function deleteDatabase(name: string): Promise<void> {
  return new Promise((resolve) => {
    const request = indexedDB.deleteDatabase(name);
    request.onsuccess = request.onerror = request.onblocked = () => resolve();
  });
}

/**
 * A saver on a fresh database (`make` builds it, a plain IndexedDBSaver by
 * default); `done()` closes it and deletes its database.
 */
export function tempSaver<S extends IndexedDBSaver = IndexedDBSaver>(
  label: string,
  make: (dbName: string) => S = (dbName) => new IndexedDBSaver({ dbName }) as S,
) {
  const dbName = `bench-${label}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const saver = make(dbName);
  return { saver, dbName, done: async () => (await saver.close(), await deleteDatabase(dbName)) };
}

/** Sum of every serialized byte (Uint8Array) in every row of every store of a database. */
export async function storedBytes(dbName: string): Promise<number> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  const names = [...db.objectStoreNames];
  const tx = db.transaction(names, "readonly");
  const all = await Promise.all(
    names.map(
      (name) =>
        new Promise<unknown[]>((resolve, reject) => {
          const request = tx.objectStore(name).getAll();
          request.onsuccess = () => resolve(request.result);
          request.onerror = () => reject(request.error);
        }),
    ),
  );
  db.close();
  let total = 0;
  const visit = (value: unknown): void => {
    if (value instanceof Uint8Array) total += value.byteLength;
    else if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === "object") Object.values(value).forEach(visit);
  };
  all.forEach(visit);
  return total;
}

/**
 * A row from paired rounds (`ours[i]` and `baseline[i]` measured back to
 * back): the times shown are the medians, the ratio is the median of the
 * per-round ratios, which drift of a shared machine between rounds moves
 * less than the ratio of the medians. Its baseline name ends in ", paired".
 */
export function pairedRow(
  suite: string,
  name: string,
  ours: number[],
  baseline: number[],
  baselineName: string,
  format: (n: number) => string,
  goal?: { max: number },
): BenchRow {
  const ratio = median(ours.map((value, i) => value / baseline[i]!));
  return {
    ...row(suite, name, median(ours), median(baseline), `${baselineName}, paired`, format),
    ratio: `${ratio.toFixed(2)}×`,
    ...(goal && { goal: `≤ ${goal.max}×`, ok: ratio <= goal.max }),
  };
}

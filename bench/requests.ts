/**
 * Counts the IndexedDB requests a piece of code issues, by kind: the
 * profile of the write path is main-thread work per request, so the count
 * per invoke is the figure a layout change moves. Counting wraps the
 * prototypes' methods for the duration of one call only (timed rounds never
 * run wrapped).
 */

/** Requests counted per kind (`put`, `get`, `openCursor`, `continue`, `transaction`...). */
export type RequestCounts = Record<string, number>;

const COUNTED: [object, string[]][] = [
  [
    IDBObjectStore.prototype,
    ["add", "put", "get", "getKey", "getAll", "getAllKeys", "delete", "clear", "count", "openCursor", "openKeyCursor"],
  ],
  [IDBIndex.prototype, ["get", "getKey", "getAll", "getAllKeys", "count", "openCursor", "openKeyCursor"]],
  [IDBCursor.prototype, ["continue", "advance", "continuePrimaryKey"]],
  [IDBDatabase.prototype, ["transaction"]],
];

/** Runs `fn` with every IndexedDB request counted; returns the counts once it settles. */
export async function countRequests(fn: () => Promise<unknown>): Promise<RequestCounts> {
  const counts: RequestCounts = {};
  const restore: (() => void)[] = [];
  for (const [proto, names] of COUNTED) {
    const target = proto as Record<string, unknown>;
    for (const name of names) {
      const original = target[name] as (...args: unknown[]) => unknown;
      target[name] = function (this: unknown, ...args: unknown[]) {
        const kind = proto === IDBIndex.prototype ? `index.${name}` : name;
        counts[kind] = (counts[kind] ?? 0) + 1;
        return original.apply(this, args);
      };
      restore.push(() => (target[name] = original));
    }
  }
  try {
    await fn();
  } finally {
    for (const undo of restore) undo();
  }
  return counts;
}

/** The requests in `counts` (every kind but `transaction`). */
export function requestTotal(counts: RequestCounts): number {
  return Object.entries(counts).reduce((sum, [kind, n]) => (kind === "transaction" ? sum : sum + n), 0);
}

/** `counts` divided by `per`, as "kind n.n" pairs, largest first. */
export function describeCounts(counts: RequestCounts, per: number): string {
  return Object.entries(counts)
    .sort(([, a], [, b]) => b - a)
    .map(([kind, n]) => `${kind} ${(n / per).toFixed(1)}`)
    .join(", ");
}

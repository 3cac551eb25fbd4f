/**
 * Counts the IndexedDB requests a piece of code issues, by kind: the
 * profile of the write path is main-thread work per request, so the count
 * per invoke is the figure a layout change moves. Counting wraps the
 * prototypes' methods for the duration of one call only (timed rounds never
 * run wrapped).
 */

/** Requests counted per kind (`put`, `get`, `openCursor`, `continue`, `transaction`...). */
export type RequestCounts = Record<string, number>;

/**
 * The methods counted. Cursor steps (`continue`, `advance`) are not: `idb`
 * tells a cursor's step from other calls by the native function itself, and
 * a wrapped one broke its cursor iteration. Each `openCursor` counts once.
 */
const COUNTED: [object, string[]][] = [
  [
    IDBObjectStore.prototype,
    ["add", "put", "get", "getKey", "getAll", "getAllKeys", "delete", "clear", "count", "openCursor", "openKeyCursor"],
  ],
  [IDBIndex.prototype, ["get", "getKey", "getAll", "getAllKeys", "count", "openCursor", "openKeyCursor"]],
  [IDBDatabase.prototype, ["transaction"]],
];

/** The counts of the calls in progress: each counts every request made while it runs. */
const active = new Set<RequestCounts>();
/** Puts the prototypes back; set while they are wrapped (once, however many calls count at a time). */
let unwrap: (() => void) | undefined;

function wrap(): () => void {
  const restore: (() => void)[] = [];
  for (const [proto, names] of COUNTED) {
    const target = proto as Record<string, unknown>;
    for (const name of names) {
      const original = target[name] as (...args: unknown[]) => unknown;
      const kind = proto === IDBIndex.prototype ? `index.${name}` : name;
      target[name] = function (this: unknown, ...args: unknown[]) {
        for (const counts of active) counts[kind] = (counts[kind] ?? 0) + 1;
        return original.apply(this, args);
      };
      restore.push(() => (target[name] = original));
    }
  }
  return () => restore.forEach((undo) => undo());
}

/**
 * Runs `fn` with every IndexedDB request counted; returns the counts once it
 * settles. Calls that overlap each count every request made while they run
 * (theirs and the other's), and the prototypes are put back when the last
 * one ends.
 */
export async function countRequests(fn: () => Promise<unknown>): Promise<RequestCounts> {
  const counts: RequestCounts = {};
  unwrap ??= wrap();
  active.add(counts);
  try {
    await fn();
  } finally {
    active.delete(counts);
    if (active.size === 0) {
      unwrap();
      unwrap = undefined;
    }
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

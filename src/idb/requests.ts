/**
 * Requests inside a transaction: fire-and-forget issuing, first-wins
 * inserts, and the write helpers through which every write of an observed
 * transaction is reported to its {@link WriteObserver} (the journal's seam),
 * declared here instead of patching IndexedDB's objects.
 */
import {
  unwrap,
  wrap,
  type DBSchema,
  type IDBPObjectStore,
  type StoreKey,
  type StoreNames,
  type StoreValue,
} from "idb";

/** One write request of a read-write transaction, as a seam observes it. */
export type WriteOp =
  | { kind: "put" | "add"; store: string; value: unknown }
  | { kind: "delete"; store: string; query: IDBValidKey | IDBKeyRange }
  | { kind: "clear"; store: string };

/** Told every write request of one transaction, then that it committed. */
export interface WriteObserver {
  /** One write request, as issued (values are the stored rows, already serialized). */
  record(op: WriteOp): void;
  /** The transaction committed; the write's promise resolves once this does. */
  committed(): Promise<void>;
}

/** The observer of each observed transaction (raw `IDBTransaction` → observer). */
const observers = new WeakMap<IDBTransaction, WriteObserver>();

/** Makes `observer` see the writes issued through this module's helpers on `tx`. @internal */
export function observeTransaction(tx: IDBTransaction, observer: WriteObserver): void {
  observers.set(tx, observer);
}

/** A read-write object store of some schema. */
type WritableStore<Schema extends DBSchema, Name extends StoreNames<Schema>> = IDBPObjectStore<
  Schema,
  StoreNames<Schema>[],
  Name,
  "readwrite"
>;

function observerOf(store: object): WriteObserver | undefined {
  return observers.get((unwrap(store as never) as unknown as IDBObjectStore).transaction);
}

/** `store.put(value)`, seen by the transaction's observer. */
export function storePut<Schema extends DBSchema, Name extends StoreNames<Schema>>(
  store: WritableStore<Schema, Name>,
  value: StoreValue<Schema, Name>,
): Promise<StoreKey<Schema, Name>> {
  observerOf(store)?.record({ kind: "put", store: store.name, value });
  return store.put(value);
}

/**
 * `store.put(value)`, seen by the transaction's observer, issued without a
 * promise: for a write nothing awaits, whose failure is the transaction's
 * (it aborts it, as {@link issue}'s request would). idb's promise of a
 * request adds and removes two listeners and runs one on success, about
 * 10-20 µs of a 2 KB put's main thread in Chromium (docs/benchmarks.md,
 * "The put's own work, again").
 */
export function putQuietly<Schema extends DBSchema, Name extends StoreNames<Schema>>(
  store: WritableStore<Schema, Name>,
  value: StoreValue<Schema, Name>,
): void {
  const raw = unwrap(store) as unknown as IDBObjectStore;
  observers.get(raw.transaction)?.record({ kind: "put", store: raw.name, value });
  raw.put(value);
}

/** `store.delete(query)`, seen by the transaction's observer. */
export function storeDelete<Schema extends DBSchema, Name extends StoreNames<Schema>>(
  store: WritableStore<Schema, Name>,
  query: StoreKey<Schema, Name> | IDBKeyRange,
): Promise<void> {
  observerOf(store)?.record({ kind: "delete", store: store.name, query: query as IDBValidKey | IDBKeyRange });
  return store.delete(query);
}

/**
 * Sends a request without waiting for it. Its own failure is the
 * transaction's failure (the transaction aborts and `read`/`write` reject
 * with the cause), so the request's promise is quietened here: an abort
 * must not also surface as one unhandled rejection per pending request.
 */
export function issue(request: Promise<unknown>): void {
  request.catch(() => undefined);
}

/**
 * Adds `value` unless its key is taken, resolving whether it was added: the
 * insert-if-absent of "the first write wins". A failed `add` would abort the
 * whole transaction; preventing its error event's default keeps the
 * transaction going, so no read round trip has to come first.
 */
export function addIfAbsent<Schema extends DBSchema, Name extends StoreNames<Schema>>(
  store: WritableStore<Schema, Name>,
  value: StoreValue<Schema, Name>,
): Promise<boolean> {
  return storeAll(store, [value], () => false).then(([added]) => added!);
}

/**
 * Issues one request per value, `put` where `replaces(value)` and
 * insert-if-absent (see {@link addIfAbsent}) elsewhere; resolves, once the
 * last of them has its answer, to one result per value: `false` for an
 * insert its key kept out, else `true`. No promise or listener per request:
 * requests of a transaction are answered in order, so the last one's answer
 * settles them all, and one capture listener on the transaction keeps a
 * refused insert from aborting it. Chromium dispatches each request's
 * success event to JavaScript only when a listener waits for it (a task's
 * pending writes are 13 adds per tool-loop invoke; docs/benchmarks.md, "The
 * write path's per-request JavaScript").
 */
export function storeAll<Schema extends DBSchema, Name extends StoreNames<Schema>>(
  store: WritableStore<Schema, Name>,
  values: readonly StoreValue<Schema, Name>[],
  replaces: (value: StoreValue<Schema, Name>) => boolean,
): Promise<boolean[]> {
  const raw = unwrap(store) as unknown as IDBObjectStore;
  const tx = raw.transaction;
  const observer = observers.get(tx);
  const inserts = insertsOf(tx);
  const requests: IDBRequest[] = [];
  for (const value of values) {
    const replace = replaces(value);
    observer?.record({ kind: replace ? "put" : "add", store: raw.name, value });
    const request = replace ? raw.put(value) : raw.add(value);
    if (!replace) inserts.refusable.add(request);
    requests.push(request);
  }
  const last = requests.at(-1);
  if (!last) return Promise.resolve([]);
  return new Promise((resolve, reject) => {
    const settle = () => resolve(requests.map((request) => !request.error));
    last.onsuccess = settle;
    last.onerror = () => reject(last.error);
    // A refused insert's error event stops at the transaction (see insertsOf): it never reaches `last`.
    if (inserts.refusable.has(last)) inserts.lastOf.set(last, settle);
  });
}

/** Per transaction: the inserts a taken key may refuse, and the groups they end (see {@link storeAll}). */
interface Inserts {
  refusable: WeakSet<IDBRequest>;
  lastOf: WeakMap<IDBRequest, () => void>;
}
const insertsByTx = new WeakMap<IDBTransaction, Inserts>();

/**
 * The transaction's {@link Inserts}, with its one capture listener: an
 * insert refused for its key (ConstraintError) has its error event's default
 * prevented, so the transaction goes on, and its propagation stopped before
 * the transaction's and the connection's own listeners.
 */
function insertsOf(tx: IDBTransaction): Inserts {
  const known = insertsByTx.get(tx);
  if (known) return known;
  const made: Inserts = { refusable: new WeakSet(), lastOf: new WeakMap() };
  tx.addEventListener(
    "error",
    (event) => {
      const request = event.target as IDBRequest;
      if (!made.refusable.has(request) || request.error?.name !== "ConstraintError") return;
      event.preventDefault();
      event.stopPropagation();
      made.lastOf.get(request)?.();
    },
    { capture: true },
  );
  insertsByTx.set(tx, made);
  return made;
}

/** True for DOMExceptions and their look-alikes from fake-indexeddb. @internal */
export function isDomError(error: unknown): boolean {
  if (typeof DOMException !== "undefined" && error instanceof DOMException) return true;
  return (error as { constructor?: { name?: string } } | null)?.constructor?.name === "DOMException";
}

/**
 * Resolves once `tx` commits, rejects once it aborts (with its error). One
 * handler of each event, set as the transaction's own: an error event left
 * unprevented aborts the transaction, so `abort` covers it, and one whose
 * default a request's helper prevented (a refused insert) fails nothing.
 * idb's `done` listened to all three, added and removed. @internal
 */
export function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(transactionError(tx) ?? new DOMException("AbortError", "AbortError"));
  });
}

/**
 * Runs `work` now on what it may see of `tx`: its stores, through idb's
 * promise-returning wrappers, not the transaction itself, whose events are
 * the runner's ({@link committed}). A synchronous throw becomes a rejection.
 * @internal
 */
export function startWork<View, R>(tx: IDBTransaction, work: (view: View) => Promise<R> | R): Promise<R> {
  const view = { objectStore: (name: string) => wrap(tx.objectStore(name)) } as View;
  try {
    return Promise.resolve(work(view));
  } catch (error) {
    return Promise.reject(error as Error);
  }
}

/** The transaction's own error, which carries the real cause of an abort. @internal */
export function transactionError(tx: { error?: DOMException | null }): DOMException | undefined {
  try {
    return tx.error ?? undefined;
  } catch {
    return undefined;
  }
}

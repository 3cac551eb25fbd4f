/**
 * Requests inside a transaction: fire-and-forget issuing, first-wins
 * inserts, and the write helpers through which every write of an observed
 * transaction is reported to its {@link WriteObserver} (the journal's seam),
 * declared here instead of patching IndexedDB's objects.
 */
import { unwrap, type DBSchema, type IDBPObjectStore, type StoreKey, type StoreNames, type StoreValue } from "idb";

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
  store: IDBPObjectStore<Schema, StoreNames<Schema>[], Name, "readwrite">,
  value: StoreValue<Schema, Name>,
): Promise<boolean> {
  observerOf(store)?.record({ kind: "add", store: store.name, value });
  const request = (unwrap(store) as IDBObjectStore).add(value);
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(true);
    request.onerror = (event) => {
      if (request.error?.name !== "ConstraintError") return reject(request.error);
      event.preventDefault();
      event.stopPropagation();
      resolve(false);
    };
  });
}

/** True for DOMExceptions and their look-alikes from fake-indexeddb. @internal */
export function isDomError(error: unknown): boolean {
  if (typeof DOMException !== "undefined" && error instanceof DOMException) return true;
  return (error as { constructor?: { name?: string } } | null)?.constructor?.name === "DOMException";
}

/** The transaction's own error, which carries the real cause of an abort. @internal */
export function transactionError(tx: { error?: DOMException | null }): DOMException | undefined {
  try {
    return tx.error ?? undefined;
  } catch {
    return undefined;
  }
}

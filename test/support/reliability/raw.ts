/**
 * Raw IndexedDB access for the reliability tests: open a saver's database
 * without the saver, scan or write its object stores directly, and catch the
 * unhandled promise rejections an operation leaves behind. Works on the real
 * IndexedDB (Chromium) and on fake-indexeddb's globals (Node).
 */

/** The saver's object stores. */
export const SAVER_STORES = ["checkpoints", "blobs", "writes", "threads", "meta"] as const;
export type SaverStore = (typeof SAVER_STORES)[number];

/** Opens `name` directly (its current version when `version` is omitted). */
export function openRaw(
  name: string,
  version?: number,
  onUpgrade?: (db: IDBDatabase, tx: IDBTransaction, oldVersion: number) => void,
  factory: IDBFactory = indexedDB,
  onBlocked?: () => void,
): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = version === undefined ? factory.open(name) : factory.open(name, version);
    request.onupgradeneeded = (event) => onUpgrade?.(request.result, request.transaction!, event.oldVersion);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
    request.onblocked = () => onBlocked?.();
  });
}

/** Resolves with a request's result. */
export function done<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** Resolves when `tx` commits. */
export function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  });
}

/** Every row of one store of the database `name`. */
export async function readStore<T>(name: string, store: SaverStore, factory: IDBFactory = indexedDB): Promise<T[]> {
  const db = await openRaw(name, undefined, undefined, factory);
  try {
    return (await done(db.transaction([store], "readonly").objectStore(store).getAll())) as T[];
  } finally {
    db.close();
  }
}

/** Every row of every store of the saver's database `name`. */
export async function scanAll(name: string, factory: IDBFactory = indexedDB): Promise<Record<SaverStore, unknown[]>> {
  const db = await openRaw(name, undefined, undefined, factory);
  try {
    const stores = SAVER_STORES.filter((store) => db.objectStoreNames.contains(store));
    const tx = db.transaction(stores, "readonly");
    const rows = await Promise.all(stores.map((store) => done(tx.objectStore(store).getAll())));
    const out = Object.fromEntries(SAVER_STORES.map((store) => [store, [] as unknown[]])) as Record<
      SaverStore,
      unknown[]
    >;
    stores.forEach((store, i) => (out[store] = rows[i]!));
    return out;
  } finally {
    db.close();
  }
}

/** The rows of `scan` that belong to `threadId`, per store (meta: by name). */
export function rowsOfThread(
  scan: Record<SaverStore, unknown[]>,
  threadId: string,
): Record<SaverStore, Record<string, unknown>[]> {
  const out = {} as Record<SaverStore, Record<string, unknown>[]>;
  for (const store of SAVER_STORES) {
    out[store] = (scan[store] as Record<string, unknown>[]).filter((row) =>
      store === "meta" ? String(row.name).includes(threadId) : row.thread_id === threadId,
    );
  }
  return out;
}

/** Puts `rows` into `store` of `name` directly (the saver must be closed or it blocks nothing: same version). */
export async function putRaw(
  name: string,
  store: SaverStore,
  rows: unknown[],
  factory: IDBFactory = indexedDB,
): Promise<void> {
  const db = await openRaw(name, undefined, undefined, factory);
  try {
    const tx = db.transaction([store], "readwrite");
    for (const row of rows) tx.objectStore(store).put(row);
    await committed(tx);
  } finally {
    db.close();
  }
}

/** Collects unhandled promise rejections (page or Node process) until `stop()`. */
export function captureUnhandledRejections(): { readonly reasons: unknown[]; stop(): Promise<unknown[]> } {
  const reasons: unknown[] = [];
  const win = (globalThis as { window?: Window }).window;
  let detach: () => void;
  if (win && typeof win.addEventListener === "function") {
    const listener = (event: PromiseRejectionEvent) => reasons.push(event.reason);
    win.addEventListener("unhandledrejection", listener);
    detach = () => win.removeEventListener("unhandledrejection", listener);
  } else {
    const proc = (globalThis as unknown as { process: NodeJS.Process }).process;
    const listener = (reason: unknown) => reasons.push(reason);
    proc.on("unhandledRejection", listener);
    detach = () => proc.off("unhandledRejection", listener);
  }
  return {
    reasons,
    async stop() {
      // Rejections are reported once the microtask queue drains: give them a few turns.
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      detach();
      return reasons;
    },
  };
}

/** A short description of rejection reasons, for assertion messages. */
export function describeReasons(reasons: unknown[]): string[] {
  return reasons.map(
    (reason) => `${(reason as Error)?.name ?? typeof reason}: ${(reason as Error)?.message ?? String(reason)}`,
  );
}

/**
 * The channel values a thread's rows store, as `channel@version`: blob rows
 * and, in row format 2, the values checkpoint rows hold inline.
 */
export function storedValues(rows: Record<SaverStore, Record<string, unknown>[]>): string[] {
  const versions = (row: Record<string, unknown>) => row.channel_versions as Record<string, unknown>;
  return [
    ...rows.blobs.map((row) => `${String(row.channel)}@${String(row.version)}`),
    ...rows.checkpoints.flatMap((row) =>
      Object.keys((row.inline ?? {}) as object).map((channel) => `${channel}@${String(versions(row)[channel])}`),
    ),
  ].sort();
}

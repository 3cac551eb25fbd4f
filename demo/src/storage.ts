/**
 * The storage view's numbers: bytes per thread in the saver's database (a
 * read-only pass over its rows, keyed by thread id first), bytes of a whole
 * database, and the origin's usage from `navigator.storage.estimate()`.
 * Sizes are the stored values' lengths (bytes, strings, numbers), close to
 * what IndexedDB keeps before its own compression.
 */

/** Roughly how many bytes a stored value takes. */
export function sizeOf(value: unknown): number {
  if (value === null || value === undefined) return 1;
  switch (typeof value) {
    case "string":
      return value.length;
    case "number":
    case "bigint":
      return 8;
    case "boolean":
      return 1;
    case "object":
      if (ArrayBuffer.isView(value)) return value.byteLength;
      if (value instanceof ArrayBuffer) return value.byteLength;
      if (value instanceof Date) return 8;
      if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + sizeOf(item), 0);
      return Object.entries(value).reduce((sum, [key, item]) => sum + key.length + sizeOf(item), 0);
    default:
      return 0;
  }
}

/** Opens a database read-only by name, only if it exists (opening creates it otherwise). */
async function openExisting(name: string): Promise<IDBDatabase | undefined> {
  const names = (await indexedDB.databases()).map((info) => info.name);
  if (!names.includes(name)) return undefined;
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name);
    request.onsuccess = () => {
      const db = request.result;
      // Never hold up another tab's upgrade.
      db.onversionchange = () => db.close();
      resolve(db);
    };
    request.onerror = () => reject(request.error);
  });
}

/** Every row of every store, with the store's name. */
async function eachRow(name: string, visit: (store: string, key: IDBValidKey, value: unknown) => void): Promise<void> {
  const db = await openExisting(name);
  if (!db) return;
  try {
    const stores = [...db.objectStoreNames];
    if (stores.length === 0) return;
    const tx = db.transaction(stores, "readonly");
    await Promise.all(
      stores.map(
        (store) =>
          new Promise<void>((resolve, reject) => {
            const request = tx.objectStore(store).openCursor();
            request.onsuccess = () => {
              const cursor = request.result;
              if (!cursor) return resolve();
              visit(store, cursor.primaryKey, cursor.value);
              cursor.continue();
            };
            request.onerror = () => reject(request.error);
          }),
      ),
    );
  } finally {
    db.close();
  }
}

/**
 * The store where a database keeps its own records (format version, key check, deleted threads' marks),
 * not the user's data: an app that saved nothing yet still has its format mark there (29 B for the saver).
 */
const OWN_STORE = "meta";

/** A database's bytes: `total`, of which `own` are its own records (`meta`), not data. */
export interface DatabaseBytes {
  total: number;
  own: number;
}

/** Bytes per thread id in a saver database, and the database's total. */
export async function saverBytes(name: string): Promise<DatabaseBytes & { perThread: Map<string, number> }> {
  const perThread = new Map<string, number>();
  const bytes = { total: 0, own: 0 };
  await eachRow(name, (store, key, value) => {
    const size = count(bytes, store, key, value);
    const threadId = Array.isArray(key) ? key[0] : key;
    if (store !== OWN_STORE && typeof threadId === "string")
      perThread.set(threadId, (perThread.get(threadId) ?? 0) + size);
  });
  return { ...bytes, perThread };
}

/** A whole database's bytes. */
export async function databaseBytes(name: string): Promise<DatabaseBytes> {
  const bytes = { total: 0, own: 0 };
  await eachRow(name, (store, key, value) => count(bytes, store, key, value));
  return bytes;
}

/** Adds a row's size to `bytes` (to `own` too for the database's own records); returns the size. */
function count(bytes: DatabaseBytes, store: string, key: IDBValidKey, value: unknown): number {
  const size = sizeOf(key) + sizeOf(value);
  bytes.total += size;
  if (store === OWN_STORE) bytes.own += size;
  return size;
}

export interface OriginUsage {
  usage?: number;
  quota?: number;
  persisted?: boolean;
}

export async function originUsage(): Promise<OriginUsage> {
  const storage = navigator.storage;
  if (!storage) return {};
  const [estimate, persisted] = await Promise.all([
    storage.estimate?.().catch(() => undefined),
    storage.persisted?.().catch(() => undefined),
  ]);
  return { usage: estimate?.usage, quota: estimate?.quota, persisted };
}

/** Raw IndexedDB access for tests that read or tamper with rows as an attacker holding the files would. */

/** A request's result as a promise. */
export function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Opens the database at its current version, runs `work` on it, closes it. */
export async function withRaw<T>(name: string, work: (db: IDBDatabase) => Promise<T>): Promise<T> {
  const db = await request(indexedDB.open(name));
  try {
    return await work(db);
  } finally {
    db.close();
  }
}

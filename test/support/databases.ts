/** Test helpers for databases: unique names, and deleting them afterwards. */
import { afterEach } from "vitest";

let counter = 0;

/** A database name no other test uses, in this run or a previous one. */
export function freshDbName(prefix: string): string {
  counter += 1;
  return `${prefix}-${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** Deletes a database by name, waiting for the delete to finish. */
export function deleteDatabase(name: string, factory: IDBFactory = indexedDB): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = factory.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
    request.onblocked = () => resolve();
  });
}

/** What `trackSavers` needs of a saver: its database name and a way to close it. */
interface Closable {
  readonly dbName: string;
  close(): Promise<void>;
}

/**
 * Registers an `afterEach` that closes every saver `track` was given during
 * the test and deletes their databases; returns `track`.
 */
export function trackSavers<T extends Closable>(): (saver: T) => T {
  const open: T[] = [];
  afterEach(async () => {
    const names = new Set(open.map((saver) => saver.dbName));
    await Promise.all(open.splice(0).map((saver) => saver.close()));
    await Promise.all([...names].map((name) => deleteDatabase(name)));
  });
  return (saver) => {
    open.push(saver);
    return saver;
  };
}

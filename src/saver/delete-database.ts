/**
 * Deleting a saver's database together with what it keeps outside
 * IndexedDB (the wipe marker and the OPFS journal), so that the next saver on
 * that name starts as on a new database: no "wiped" report, nothing restored.
 */
import { DatabaseBlockedError } from "../core/errors.js";
import { forgetDatabaseTraces, type ForgottenTraces } from "../journal/index.js";

/** Options of {@link deleteSaverDatabase}. */
export interface DeleteSaverDatabaseOptions {
  /** The IDBFactory; default `globalThis.indexedDB`. */
  indexedDB?: IDBFactory;
  /** Give up when other connections keep the delete blocked this long (ms). Default 10,000. */
  blockedTimeoutMs?: number;
}

/**
 * Deletes database `dbName` and then its wipe marker and journal. Open
 * connections must close on `versionchange` (IndexedDBSaver's do); one that
 * does not keeps the delete blocked, which is a `DatabaseBlockedError` after
 * `blockedTimeoutMs`.
 */
export async function deleteSaverDatabase(
  dbName: string,
  options: DeleteSaverDatabaseOptions = {},
): Promise<ForgottenTraces> {
  const factory = options.indexedDB ?? globalThis.indexedDB;
  await new Promise<void>((resolve, reject) => {
    const request = factory.deleteDatabase(dbName);
    const timer = setTimeout(
      () =>
        reject(
          new DatabaseBlockedError(
            `Deleting database "${dbName}" is blocked by an open connection that does not close on versionchange.`,
          ),
        ),
      options.blockedTimeoutMs ?? 10_000,
    );
    request.onsuccess = () => {
      clearTimeout(timer);
      resolve();
    };
    request.onerror = () => {
      clearTimeout(timer);
      reject(request.error ?? new Error(`Deleting database "${dbName}" failed.`));
    };
  });
  return forgetDatabaseTraces(dbName);
}

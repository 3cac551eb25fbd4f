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
 * `blockedTimeoutMs`. IndexedDB cannot take a delete back: it stays queued
 * and happens when that connection closes, and the marker and journal are
 * removed then (by this document, while it lives), or the app's next open
 * would report the database wiped and restore what was deleted from its journal.
 */
export async function deleteSaverDatabase(
  dbName: string,
  options: DeleteSaverDatabaseOptions = {},
): Promise<ForgottenTraces> {
  const factory = options.indexedDB ?? globalThis.indexedDB;
  await new Promise<void>((resolve, reject) => {
    const request = factory.deleteDatabase(dbName);
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      reject(
        new DatabaseBlockedError(
          `Deleting database "${dbName}" is blocked by an open connection that does not close on versionchange (another tab or worker of this origin, or code that opens the database without IndexedDBSaver). The delete stays queued: it happens when that connection closes (close or reload what holds it), and until then every open of the database waits.`,
        ),
      );
    }, options.blockedTimeoutMs ?? 10_000);
    request.onsuccess = () => {
      clearTimeout(timer);
      if (late) void forgetDatabaseTraces(dbName).catch(() => undefined);
      resolve();
    };
    request.onerror = () => {
      clearTimeout(timer);
      reject(request.error ?? new Error(`Deleting database "${dbName}" failed.`));
    };
  });
  return forgetDatabaseTraces(dbName);
}

/**
 * Opening a connection: the schema upgrade, the wait for another tab that
 * blocks it (bounded), and the errors an open can end in, each named. The
 * {@link Database} owns the connection it returns and hears of its life
 * through {@link OpenHooks}.
 */
import { wrap, type DBSchema, type IDBPDatabase, type IDBPTransaction, type StoreNames } from "idb";
import {
  DatabaseBlockedError,
  IndexedDBCheckpointError,
  IndexedDBUnavailableError,
  toPackageError,
} from "../core/errors.js";
import type { Upgrade } from "./types.js";

/** What the owner of a connection is told while one opens and lives. */
export interface OpenHooks<Schema extends DBSchema> {
  /** The open creates the database (it had no version before). */
  created?(): void;
  /** The connection is open and about to be handed out. */
  opened(): void;
  /** The open failed or timed out: whatever the owner cached for it is void. */
  failed(): void;
  /**
   * Another tab asks this connection to close for its upgrade, or (`deleting`:
   * a version change to no version) to delete the database.
   */
  versionChange(db: IDBPDatabase<Schema>, deleting: boolean): void;
  /** The browser closed the connection (storage cleared, a crash of its backend). */
  closed(db: IDBPDatabase<Schema>): void;
}

/** Options of {@link openDatabase}. */
export interface OpenOptions<Schema extends DBSchema> {
  name: string;
  /** The schema steps; their count is the version opened. */
  upgrades: readonly Upgrade<Schema>[];
  indexedDB: IDBFactory | undefined;
  blockedTimeoutMs: number;
  hooks: OpenHooks<Schema>;
}

/**
 * The factory given, else the global one, with a clear error where there is
 * none, or where IndexedDB's classes are not globals: idb tells requests apart
 * with `instanceof IDBRequest`, so a factory passed without them (Node with
 * fake-indexeddb's `IDBFactory` but not its `auto` entry) failed with a bare
 * ReferenceError, after starting the open.
 */
function factoryOf(given: IDBFactory | undefined): IDBFactory {
  const factory = given ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
  if (!factory || typeof IDBRequest === "undefined") {
    throw new IndexedDBUnavailableError(
      'IndexedDB is not available in this environment (in a browser: some private modes, sandboxed frames). In Node, import "fake-indexeddb/auto" first: an `indexedDB` option still needs its IDBRequest… globals.',
    );
  }
  return factory;
}

/**
 * The object stores of database `name` as it is: opened at whatever version
 * it has, never upgraded (nor created: a database that does not exist gives
 * `[]` and is not made), and closed again. For saying whose database it is
 * when an open at our version fails with a `VersionError`.
 */
export function peekObjectStores(name: string, indexedDB: IDBFactory | undefined): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let request: IDBOpenDBRequest;
    try {
      request = factoryOf(indexedDB).open(name);
    } catch (error) {
      reject(error);
      return;
    }
    request.onupgradeneeded = () => request.transaction!.abort();
    request.onsuccess = () => {
      const names = [...request.result.objectStoreNames];
      request.result.close();
      resolve(names);
    };
    request.onerror = (event) => {
      event.preventDefault();
      if (request.error?.name === "AbortError") resolve([]);
      else reject(request.error);
    };
  });
}

/**
 * Opens `name` at the version of `upgrades`, running the steps it lacks in
 * the `versionchange` transaction. Fails with `DatabaseBlockedError` after
 * `blockedTimeoutMs` while another connection keeps an older version open.
 */
export function openDatabase<Schema extends DBSchema>(options: OpenOptions<Schema>): Promise<IDBPDatabase<Schema>> {
  const { name, upgrades, blockedTimeoutMs, hooks } = options;
  const version = upgrades.length;
  let factory: IDBFactory;
  try {
    factory = factoryOf(options.indexedDB);
  } catch (error) {
    return Promise.reject(error);
  }
  let request: IDBOpenDBRequest;
  try {
    request = factory.open(name, version);
  } catch (error) {
    return Promise.reject(
      new IndexedDBUnavailableError(`IndexedDB refused to open "${name}": ${String(error)}`, {
        cause: error,
      }),
    );
  }
  // A step that throws (a database some other code made under this name
  // lacks the stores a later step changes) aborts the whole upgrade: the
  // database stays as it was, and the open fails naming the cause.
  let failedUpgrade: { error: unknown; from: number } | undefined;
  request.addEventListener("upgradeneeded", (event) => {
    if (event.oldVersion === 0) hooks.created?.();
    const db = wrap(request.result) as unknown as IDBPDatabase<Schema>;
    const tx = wrap(request.transaction!) as unknown as IDBPTransaction<Schema, StoreNames<Schema>[], "versionchange">;
    tx.done.catch(() => undefined); // its outcome is the open request's
    try {
      for (let step = event.oldVersion; step < upgrades.length; step++) upgrades[step]!(db, tx);
    } catch (error) {
      failedUpgrade = { error, from: event.oldVersion };
      request.transaction!.abort();
    }
  });
  const opened = wrap(request) as unknown as Promise<IDBPDatabase<Schema>>;
  return new Promise<IDBPDatabase<Schema>>((resolve, reject) => {
    let gaveUp = false;
    // Armed now, not on `blocked`: an open queued behind another pending
    // open or delete (say our own earlier attempt, still blocked) never gets
    // a `blocked` event of its own, and would wait forever. An upgrade that
    // starts, a success or an error disarms it.
    const timer = setTimeout(() => {
      gaveUp = true;
      hooks.failed();
      reject(
        new DatabaseBlockedError(
          `Opening IndexedDB "${name}" (version ${version}) was blocked for ${blockedTimeoutMs} ms by another tab or connection that keeps an older version open. Close the other tabs of this app, or reload them.`,
        ),
      );
    }, blockedTimeoutMs);
    request.addEventListener("upgradeneeded", () => clearTimeout(timer));
    opened.then(
      (db) => {
        clearTimeout(timer);
        if (gaveUp) {
          // We already told the caller it failed; don't leak the connection.
          db.close();
          return;
        }
        db.addEventListener("versionchange", (event) => hooks.versionChange(db, event.newVersion === null));
        db.addEventListener("close", () => hooks.closed(db));
        hooks.opened();
        resolve(db);
      },
      (error: unknown) => {
        clearTimeout(timer);
        hooks.failed();
        if (gaveUp) return;
        const errorName = (error as { name?: string } | null)?.name;
        reject(
          errorName === "VersionError"
            ? toPackageError(error, `open "${name}": it was written by a newer version of this package`)
            : failedUpgrade !== undefined
              ? new IndexedDBCheckpointError(
                  (failedUpgrade.error as { name?: string } | null)?.name === "NotFoundError"
                    ? `IndexedDB database "${name}" (version ${failedUpgrade.from}) has no object store the upgrade to version ${version} needs: it was created by other code under the same name (for example indexedDB.open("${name}") without a version). Delete it, or choose another dbName. The database was left as it was.`
                    : `Upgrading IndexedDB database "${name}" from version ${failedUpgrade.from} to ${version} failed; the database was left as it was: ${String(failedUpgrade.error)}`,
                  { cause: failedUpgrade.error },
                )
              : new IndexedDBUnavailableError(
                  `IndexedDB could not open "${name}": ${errorName ?? "Error"}: ${(error as Error | null)?.message ?? String(error)}`,
                  { cause: error },
                ),
        );
      },
    );
  });
}

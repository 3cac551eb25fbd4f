/**
 * The IndexedDB layer: the only module that opens connections, creates
 * transactions and sees raw IndexedDB errors. Everything above it hands in
 * already-serialized rows and a synchronous plan of requests.
 *
 * Policy, learned from idb-keyval and Dexie:
 * - the connection opens lazily on first use and the open promise is cached;
 * - on `versionchange` (another tab upgrades) and on an abnormal close we drop
 *   the connection, and the next call reopens it transparently;
 * - an open blocked by another tab fails with `DatabaseBlockedError` after a
 *   timeout instead of hanging forever;
 * - a write resolves when its transaction completes, never when a request
 *   succeeds, so a resolved promise means the data is committed;
 * - a declared {@link DatabaseSeam} lets a layer above (the crash journal)
 *   run before the first transaction and observe read-write transactions,
 *   without subclassing or patching IndexedDB's objects.
 *
 * What lives in idb/: this runner, opening a connection (open.ts), the
 * shared types (types.ts), the request helpers (requests.ts) and the
 * group-commit batcher (batch.ts). It imports only core/.
 */
import { unwrap, type DBSchema, type IDBPDatabase, type StoreNames } from "idb";
import {
  DatabaseClosedError,
  IndexedDBCheckpointError,
  IndexedDBUnavailableError,
  toPackageError,
} from "../core/errors.js";
import {
  committed,
  isDomError,
  observeTransaction,
  startWork,
  transactionError,
  type WriteObserver,
} from "./requests.js";
import { openDatabase } from "./open.js";
import type { Tx, Upgrade } from "./types.js";

export type { Tx, Upgrade } from "./types.js";

/** IndexedDB's durability hint for readwrite transactions. */
export type Durability = "default" | "relaxed" | "strict";

/**
 * A declared extension point around the connection and read-write
 * transactions. The crash journal is one: it restores the database before
 * its first use and appends every committed write.
 */
export interface DatabaseSeam {
  /** This open created the database (it had no version before). */
  created?(): void;
  /**
   * Awaited once per opened connection before it serves any transaction,
   * with the raw connection (recovery runs here). A rejection fails the
   * call, and the next call tries again.
   */
  beforeUse?(db: IDBDatabase): Promise<void>;
  /** A read-write transaction starts: the observer of its writes, or nothing to observe. */
  observeWrites?(): WriteObserver | undefined;
  /**
   * Another connection deletes the database (`deleteDatabase`): it is gone
   * once this one has closed, which it does at once, and the next call opens
   * a new one. IndexedDB cannot take a delete back.
   */
  deleting?(): void;
  /** The database is closing: release what the seam holds. */
  close?(): Promise<void>;
}

/** Options of {@link Database}. */
export interface DatabaseOptions<Schema extends DBSchema> {
  /** The IndexedDB database name. */
  name: string;
  /** The schema steps; `upgrades.length` is the database version. */
  upgrades: readonly Upgrade<Schema>[];
  /** An `IDBFactory`; defaults to `globalThis.indexedDB`. */
  indexedDB?: IDBFactory;
  /** Durability hint of readwrite transactions. */
  durability?: Durability;
  /** How long an open may stay blocked by another tab before it fails. */
  blockedTimeoutMs?: number;
  /** Hooks around the connection and read-write transactions (see {@link DatabaseSeam}). */
  seam?: DatabaseSeam;
  /**
   * Asked right before each read-write transaction is created: `undefined`
   * to create it now, or a promise to wait for, after which it is asked
   * again (a write lease, see saver/write-lease.ts).
   */
  beforeWrite?: () => Promise<void> | undefined;
}

/**
 * Work to do inside one transaction. It must only issue requests on `tx`
 * (awaiting them is fine) and never await anything else: a WebCrypto call, a
 * timer or a fetch lets the transaction auto-commit half-way.
 */
export type TxWork<Schema extends DBSchema, Mode extends IDBTransactionMode, R> = (
  tx: Tx<Schema, Mode>,
) => Promise<R> | R;

/** Builds key ranges from plain bounds (the factory's realm, not the page's). */
export interface KeyRanges {
  /** All keys between `lower` and `upper`, each end open or closed. */
  bound(lower: IDBValidKey, upper: IDBValidKey, lowerOpen?: boolean, upperOpen?: boolean): IDBKeyRange;
  /** The single key `key`. */
  only(key: IDBValidKey): IDBKeyRange;
}

const DEFAULT_BLOCKED_TIMEOUT_MS = 10_000;

/**
 * A lazily opened, self-healing IndexedDB connection with a transaction runner.
 *
 * @example
 * const db = new Database<MySchema>({ name: "app", upgrades: [createStores] });
 * await db.write(["items"], (tx) => { tx.objectStore("items").put(row); });
 */
export class Database<Schema extends DBSchema> {
  readonly name: string;
  readonly #upgrades: readonly Upgrade<Schema>[];
  readonly #factory: IDBFactory | undefined;
  readonly #durability: Durability;
  readonly #blockedTimeoutMs: number;
  readonly #seam: DatabaseSeam | undefined;
  readonly #beforeWrite: (() => Promise<void> | undefined) | undefined;
  #connection: Promise<IDBPDatabase<Schema>> | undefined;
  /** The connection whose `beforeUse` has completed (so later calls skip it). */
  #seamPassed: Promise<IDBPDatabase<Schema>> | undefined;
  /** Writes started, and writes not yet settled: see {@link Database.writeMark}. */
  #writesStarted = 0;
  #writesInFlight = 0;
  /** Writes not flagged additive settled, and those not yet settled: see {@link Database.exclusiveMark}. */
  #exclusiveSettled = 0;
  #exclusiveOpen = 0;
  /** Connections opened and dropped: see {@link Database.connectionMark}. */
  #connections = 0;
  /** Listeners told when the connection is dropped: another tab's upgrade, or the browser closed it. */
  readonly #droppedListeners = new Set<() => void>();

  constructor(options: DatabaseOptions<Schema>) {
    if (typeof options.name !== "string" || options.name === "") {
      throw new Error(`dbName must be a non-empty string (got ${JSON.stringify(options.name)}).`);
    }
    this.name = options.name;
    this.#upgrades = options.upgrades;
    this.#factory = options.indexedDB;
    this.#durability = options.durability ?? "default";
    this.#blockedTimeoutMs = options.blockedTimeoutMs ?? DEFAULT_BLOCKED_TIMEOUT_MS;
    this.#seam = options.seam;
    this.#beforeWrite = options.beforeWrite;
  }

  /** The schema version this code writes: the number of upgrade steps. */
  get version(): number {
    return this.#upgrades.length;
  }

  /** Key range builder for this database's factory. */
  get ranges(): KeyRanges {
    const KeyRange = (globalThis as { IDBKeyRange?: typeof IDBKeyRange }).IDBKeyRange;
    if (!KeyRange) {
      throw new IndexedDBUnavailableError(
        'IDBKeyRange is not defined. In Node, import "fake-indexeddb/auto" before using the saver.',
      );
    }
    return {
      bound: (lower, upper, lowerOpen = false, upperOpen = false) => KeyRange.bound(lower, upper, lowerOpen, upperOpen),
      only: (key) => KeyRange.only(key),
    };
  }

  /**
   * Call `listener` when the connection is dropped under us: another tab's
   * upgrade (`versionchange`), or the browser closing it (site data cleared,
   * storage evicted). Either way the database may be deleted or made again
   * before the next call: what was read from it is suspect.
   */
  onDropped(listener: () => void): () => void {
    this.#droppedListeners.add(listener);
    return () => this.#droppedListeners.delete(listener);
  }

  /** The raw connection, opened if needed, without waiting for the seam (the seam's own recovery uses it). @internal */
  rawConnection(): Promise<IDBDatabase> {
    this.#connection ??= this.#open();
    return this.#connection.then((db) => unwrap(db) as IDBDatabase);
  }

  /** The open connection, opening (or reopening) it if needed, past the seam's `beforeUse`. */
  connection(): Promise<IDBPDatabase<Schema>> {
    const opened = (this.#connection ??= this.#open());
    const beforeUse = this.#seam?.beforeUse;
    if (!beforeUse || this.#seamPassed === opened) return opened;
    return opened.then(async (db) => {
      await beforeUse.call(this.#seam, unwrap(db) as IDBDatabase);
      this.#seamPassed = opened;
      return db;
    });
  }

  #open(): Promise<IDBPDatabase<Schema>> {
    return openDatabase<Schema>({
      name: this.name,
      upgrades: this.#upgrades,
      indexedDB: this.#factory,
      blockedTimeoutMs: this.#blockedTimeoutMs,
      hooks: {
        created: () => this.#seam?.created?.(),
        // A new connection may follow another tab's upgrade or a restore: what was read before is suspect.
        opened: () => {
          this.#writesStarted++;
          this.#connections++;
        },
        failed: () => void (this.#connection = undefined),
        versionChange: (db, deleting) => {
          // Another tab wants to upgrade or delete: step aside, reopen on next use.
          this.#drop(db);
          if (deleting) this.#seam?.deleting?.();
          for (const listener of this.#droppedListeners) listener();
        },
        closed: (db) => {
          this.#drop(db);
          for (const listener of this.#droppedListeners) listener();
        },
      },
    });
  }

  /** Forget `db` if it is the cached connection, and close it. */
  #drop(db: IDBPDatabase<Schema>): void {
    this.#writesStarted++;
    this.#connections++;
    const cached = this.#connection;
    if (cached) {
      void cached.then(
        (current) => {
          if (current === db) this.#connection = undefined;
        },
        () => undefined,
      );
    }
    db.close();
  }

  /** Runs `work` in a read-only transaction over `stores`. */
  read<R>(stores: StoreNames<Schema>[], work: TxWork<Schema, "readonly", R>, action: string): Promise<R> {
    return this.#run(stores, "readonly", work, action);
  }

  /**
   * Runs `work` in a read-write transaction and resolves once it commits.
   * `additive`: the caller vouches that the write removes and changes
   * nothing another write relies on being there (see {@link exclusiveMark}).
   */
  write<R>(
    stores: StoreNames<Schema>[],
    work: TxWork<Schema, "readwrite", R>,
    action: string,
    additive = false,
  ): Promise<R> {
    this.#writesStarted++;
    this.#writesInFlight++;
    if (!additive) this.#exclusiveOpen++;
    const done = this.#run(stores, "readwrite", work, action);
    const settle = () => {
      this.#writesInFlight--;
      if (additive) return;
      this.#exclusiveOpen--;
      this.#exclusiveSettled++;
    };
    done.then(settle, settle);
    return done;
  }

  /**
   * A mark that changes whenever a write not flagged additive (a delete, a
   * prune, a key change, rows replaced) settles, or undefined while one is
   * pending: from its call to its settling, so one that waits for the
   * connection or the lease counts too. A fact proven about the database
   * under a mark (a row exists, a record is unchanged) still holds for a
   * transaction created while the mark is unchanged, as far as this
   * connection's writes go (saver/fresh-cache.ts: puts that skip their
   * guard reads).
   */
  get exclusiveMark(): number | undefined {
    return this.#exclusiveOpen === 0 ? this.#exclusiveSettled : undefined;
  }

  /**
   * A mark that changes whenever a write of this connection starts or the
   * connection closes or opens, or undefined while a write is in flight: a
   * value read under a mark is still what the database holds (for this tab)
   * while the mark is unchanged.
   */
  get writeMark(): number | undefined {
    return this.#writesInFlight === 0 ? this.#writesStarted : undefined;
  }

  /**
   * A mark that changes whenever a connection opens or closes (another
   * tab's upgrade, a restore, `close()`): what was read before is suspect.
   */
  get connectionMark(): number {
    return this.#connections;
  }

  async #run<Mode extends IDBTransactionMode, R>(
    stores: StoreNames<Schema>[],
    mode: Mode,
    work: TxWork<Schema, Mode, R>,
    action: string,
  ): Promise<R> {
    // One retry: a connection that another tab just closed for its upgrade
    // fails synchronously in transaction(); a fresh one serves the call.
    for (let attempt = 0; ; attempt++) {
      const pending = this.connection();
      const db = await pending;
      if (mode === "readwrite" && this.#beforeWrite) {
        // Asked again after each wait, so the transaction is created in the same tick as the last yes.
        for (let wait = this.#beforeWrite(); wait; wait = this.#beforeWrite()) await wait;
      }
      let raw: IDBTransaction;
      try {
        raw = (unwrap(db) as IDBDatabase).transaction(stores as string[], mode, { durability: this.#durability });
      } catch (error) {
        // Forget it now, not a microtask later (#drop), or the retry gets it back.
        if (this.#connection === pending) this.#connection = undefined;
        this.#drop(db);
        if ((error as { name?: unknown } | null)?.name === "NotFoundError") {
          const missing = stores.filter((store) => !db.objectStoreNames.contains(store));
          throw new IndexedDBCheckpointError(
            `IndexedDB database "${this.name}" (version ${db.version}) has no object store ${missing.map((store) => `"${String(store)}"`).join(", ")}: it was created by other code under the same name (for example indexedDB.open("${this.name}") without a version). Delete it, or choose another dbName; could not ${action}.`,
            { cause: error },
          );
        }
        if (attempt === 0) continue;
        throw new DatabaseClosedError(`The IndexedDB connection to "${this.name}" is closed; could not ${action}.`, {
          cause: error,
        });
      }
      const observer = mode === "readwrite" ? this.#seam?.observeWrites?.() : undefined;
      if (observer) observeTransaction(raw, observer);
      // A read's results are final once `work` has them (a later abort of a read undoes nothing). A write's
      // outcome is its transaction's: a request error aborts it, and its `error` (a QuotaExceededError) tells.
      const done = mode === "readonly" ? undefined : committed(raw);
      done?.catch(() => undefined); // awaited below, unless `work` fails first
      let result: R;
      let workError: { error: unknown } | undefined;
      try {
        // Called synchronously, so its first requests go out while `raw` is active.
        result = await startWork(raw, work).then(
          (value) => {
            // Every request is out: commit now rather than when IndexedDB notices none follows (one round
            // trip to the main thread less, which a busy graph run keeps waiting).
            if (done) {
              try {
                raw.commit?.();
              } catch {
                // Already committing, finished or aborted: its outcome is in `done`.
              }
            }
            return value;
          },
          (error: unknown) => {
            workError = { error };
            try {
              raw.abort();
            } catch {
              // Already finished or aborted: nothing to undo.
            }
            throw error;
          },
        );
        await done;
      } catch (error) {
        // A bug or a deliberate error in `work` (not from IndexedDB) keeps its identity.
        if (workError && !isDomError(workError.error)) throw workError.error;
        throw toPackageError(transactionError(raw) ?? error, action);
      }
      if (observer) await observer.committed();
      return result;
    }
  }

  /** Closes the connection (and releases the seam); a later call opens a new one. */
  async close(): Promise<void> {
    // Between this close and the next open, other code may edit the rows: what was read before is suspect.
    this.#writesStarted++;
    await this.#seam?.close?.();
    const cached = this.#connection;
    this.#connection = undefined;
    if (!cached) return;
    try {
      (await cached).close();
    } catch {
      // It never opened: nothing to close.
    }
  }
}

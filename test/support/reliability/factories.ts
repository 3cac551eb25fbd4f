/**
 * IDBFactory stand-ins for the reliability tests: one that opens every
 * database one version higher (the saver of a newer release, whose schema
 * has one more step), one whose connections can be "lost" without a close
 * event (WebKit's "Connection to Indexed Database server lost"), one whose
 * connections the browser closes with a close event (site data cleared), and
 * ones that refuse to open (private modes, sandboxed frames).
 */
import { IDBDatabase as FakeDatabase, forceCloseDatabase } from "fake-indexeddb";

/** A factory that opens `version + bump`: a newer build of the app in another tab. */
export function newerSchemaFactory(base: IDBFactory = indexedDB, bump = 1): IDBFactory {
  return withOpen(base, (name, version) => base.open(name, (version ?? 1) + bump));
}

/** `base` with its `open` replaced; the other calls go to `base` as they are. */
function withOpen(base: IDBFactory, open: (name: string, version?: number) => IDBOpenDBRequest): IDBFactory {
  return {
    open,
    deleteDatabase: (name: string) => base.deleteDatabase(name),
    cmp: (a: unknown, b: unknown) => base.cmp(a, b),
    databases: () => base.databases(),
  } as IDBFactory;
}

/** `base`, handing each connection it opens to `opened`. */
function watchedFactory(base: IDBFactory, opened: (db: IDBDatabase) => void): IDBFactory {
  return withOpen(base, (name, version) => {
    const request = version === undefined ? base.open(name) : base.open(name, version);
    request.addEventListener("success", () => opened(request.result));
    return request;
  });
}

/**
 * A factory whose connections can be broken on demand: after `breakAll()`,
 * `transaction()` on every connection opened so far throws the
 * InvalidStateError a closed connection throws, and no `close` event fires.
 */
export function losableFactory(base: IDBFactory = indexedDB) {
  const opened: IDBDatabase[] = [];
  const broken = new WeakSet<IDBDatabase>();
  const factory = watchedFactory(base, (db) => {
    const transaction = db.transaction;
    db.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase["transaction"]>) {
      if (broken.has(db)) throw new DOMException("The database connection is closing.", "InvalidStateError");
      return transaction.apply(db, args);
    } as IDBDatabase["transaction"];
    opened.push(db);
  });
  return {
    factory,
    /** How many connections were opened through it. */
    get opens() {
      return opened.length;
    },
    /** Breaks every connection opened so far. */
    breakAll() {
      for (const db of opened) broken.add(db);
    },
  };
}

/**
 * A factory whose connections the browser can close on demand, as when the
 * user clears site data or storage is evicted: after `closeAll()`, each
 * connection opened so far gets a `close` event (fake-indexeddb's forced
 * close in Node; the event itself in a browser, which page script cannot
 * force).
 */
export function closingFactory(base: IDBFactory = indexedDB) {
  const opened: IDBDatabase[] = [];
  const factory = watchedFactory(base, (db) => opened.push(db));
  return {
    factory,
    /** Closes every connection opened so far, with a `close` event. */
    closeAll() {
      for (const db of opened.splice(0)) {
        const fake: boolean = db instanceof FakeDatabase;
        if (fake) forceCloseDatabase(db as unknown as Parameters<typeof forceCloseDatabase>[0]);
        else db.dispatchEvent(new Event("close"));
      }
    },
  };
}

/**
 * `base`, handing each transaction its connections create to `made` as it
 * is created (to count transactions, or to wrap a store's requests).
 */
export function transactionsFactory(made: (tx: IDBTransaction) => void, base: IDBFactory = indexedDB): IDBFactory {
  return watchedFactory(base, (db) => {
    const transaction = db.transaction.bind(db);
    db.transaction = ((...args: Parameters<IDBDatabase["transaction"]>) => {
      const tx = transaction(...args);
      made(tx);
      return tx;
    }) as IDBDatabase["transaction"];
  });
}

/** A factory whose `open` throws synchronously (Firefox private mode before 115 did, as InvalidStateError). */
export function throwingFactory(
  error: unknown = new DOMException(
    "A mutation operation was attempted on a database that did not allow mutations.",
    "InvalidStateError",
  ),
): IDBFactory {
  return {
    open: () => {
      throw error;
    },
    deleteDatabase: () => {
      throw error;
    },
    cmp: () => 0,
    databases: async () => [],
  } as unknown as IDBFactory;
}

/**
 * A factory whose open request fails asynchronously with a DOMException
 * called `name` (its `error` event), as Firefox's private mode did before
 * version 115. The request passes for an IDBOpenDBRequest (its prototype),
 * with its events on a private EventTarget.
 */
export function failingFactory(
  name = "InvalidStateError",
  message = "A mutation operation was attempted on a database that did not allow mutations.",
): IDBFactory {
  return {
    open: () => {
      const events = new EventTarget();
      const request = Object.create(IDBOpenDBRequest.prototype) as IDBOpenDBRequest;
      const define = (key: string, value: unknown) =>
        Object.defineProperty(request, key, { value, configurable: true, writable: true });
      define("addEventListener", events.addEventListener.bind(events));
      define("removeEventListener", events.removeEventListener.bind(events));
      define("dispatchEvent", events.dispatchEvent.bind(events));
      for (const [key, value] of Object.entries({
        error: null,
        result: undefined,
        readyState: "pending",
        transaction: null,
        source: null,
      }))
        define(key, value);
      for (const handler of ["onerror", "onsuccess", "onblocked", "onupgradeneeded"]) define(handler, null);
      setTimeout(() => {
        define("error", new DOMException(message, name));
        define("readyState", "done");
        const event = new Event("error", { cancelable: true });
        events.dispatchEvent(event);
        (request as unknown as { onerror: ((e: Event) => void) | null }).onerror?.(event);
      }, 0);
      return request;
    },
    deleteDatabase: () => {
      throw new DOMException(message, name);
    },
    cmp: () => 0,
    databases: async () => [],
  } as unknown as IDBFactory;
}

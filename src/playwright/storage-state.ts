/**
 * `toStorageState`: a Playwright storage state holding a saver database
 * seeded from thread exports, built in Node without a browser. The threads
 * are imported by the real saver into fake-indexeddb (so the rows are the
 * ones a page would write), then every store is written out in the shape
 * `context.storageState({ indexedDB: true })` gives, values encoded as
 * Playwright encodes what JSON cannot carry (typed arrays, `undefined`…).
 */
import { fileBytes, type PageDatabaseOptions, type ThreadFileInput, DEFAULT_PAGE_DB_NAME } from "./threads.js";
import { toBase64 } from "../core/bytes.js";
import { toPageEncryption, type AppEncryption } from "./encryption.js";

/** Options of {@link toStorageState}. */
export interface ToStorageStateOptions extends PageDatabaseOptions {
  /** The app's origin, as the browser writes it: `"http://127.0.0.1:5173"` (no path). */
  origin: string;
  /** Seed the files under these thread ids (by position; `undefined` keeps the file's). */
  threadIds?: (string | undefined)[];
  /** The app's encryption, when its saver uses `EncryptedSerializer`. */
  encryption?: AppEncryption;
  /** `localStorage` entries of the origin to include (an app's settings, a signed-in user). */
  localStorage?: { name: string; value: string }[];
}

/** An IndexedDB database in a storage state, as Playwright writes and reads it. */
export interface StorageStateDatabase {
  name: string;
  version: number;
  stores: {
    name: string;
    autoIncrement: boolean;
    keyPath?: string;
    keyPathArray?: string[];
    records: { key?: unknown; keyEncoded?: unknown; value?: unknown; valueEncoded?: unknown }[];
    indexes: { name: string; keyPath?: string; keyPathArray?: string[]; multiEntry: boolean; unique: boolean }[];
  }[];
}

/** A storage state for `test.use({ storageState })` or `browser.newContext({ storageState })`. */
export interface LanggraphStorageState {
  cookies: [];
  origins: {
    origin: string;
    localStorage: { name: string; value: string }[];
    indexedDB: StorageStateDatabase[];
  }[];
}

/** The part of fake-indexeddb used here: its factory and its `IDB*` classes. */
type FakeIndexedDB = { IDBFactory: new () => IDBFactory } & Record<string, unknown>;

async function loadFakeIndexedDB(): Promise<FakeIndexedDB> {
  let fake: FakeIndexedDB;
  try {
    fake = (await import("fake-indexeddb" as string)) as FakeIndexedDB;
  } catch (error) {
    throw new Error(
      "langgraph-checkpoint-indexeddb/playwright: toStorageState imports the threads with the saver itself, in Node, on fake-indexeddb, which is not installed. Install it as a dev dependency: npm install -D fake-indexeddb",
      { cause: error },
    );
  }
  // The saver (and idb under it) use the IDB* classes as globals, as in a
  // browser: key ranges, and `instanceof IDBRequest`. Node has none, so
  // fake-indexeddb's fill the gaps (as `fake-indexeddb/auto` does, but
  // without a global `indexedDB`); classes already there are left alone.
  const globals = globalThis as Record<string, unknown>;
  for (const [name, value] of Object.entries(fake)) {
    if (/^IDB[A-Za-z]+$/.test(name) && typeof value === "function") globals[name] ??= value;
  }
  return fake;
}

/**
 * A storage state whose origin holds the app's saver database with the
 * given threads, as `context.storageState({ indexedDB: true })` would save
 * it after seeding them in a page: a context started from it reads them
 * with `readThreadState` and the app as if seeded there. No browser runs,
 * so seeds can live in git as `.lgthread` files and become storage states
 * in a setup project. Write the result with `JSON.stringify` to a file, or
 * pass it as `storageState` directly.
 *
 * It holds no OPFS crash journal and no wipe marker (storage state carries
 * neither unless `opfs: true`): the saver opens such a database as an
 * existing one, reports `"ok"`, and starts its journal from it.
 *
 * Needs fake-indexeddb (an optional peer dependency), whose `IDB*` classes
 * it defines as globals where Node has none (not `indexedDB` itself).
 *
 * @param files Exports (`.lgthread` bytes or file paths).
 * @param options The origin, and the app's `dbName` and encryption.
 */
export async function toStorageState(
  files: ThreadFileInput[],
  options: ToStorageStateOptions,
): Promise<LanggraphStorageState> {
  const origin = checkOrigin(options.origin);
  const dbName = options.dbName ?? DEFAULT_PAGE_DB_NAME;
  const fake = await loadFakeIndexedDB();
  const factory = new fake.IDBFactory();
  const [{ IndexedDBSaver }, { importThread }, { serializerFor, importSerde }] = await Promise.all([
    import("../saver/index.js"),
    import("../portable/index.js"),
    import("./page-serde.js"),
  ]);
  const serde = await serializerFor(toPageEncryption(options.encryption));
  const saver = new IndexedDBSaver({ dbName, indexedDB: factory, ...(serde ? { serde } : {}) });
  try {
    for (const [i, file] of files.entries()) {
      // An encrypted app's own exports are sealed with its key: they are read with its serializer.
      const bytes = await fileBytes(file);
      await importThread(saver, bytes, {
        targetThreadId: options.threadIds?.[i],
        serde: await importSerde(bytes, serde, "toStorageState"),
      });
    }
  } finally {
    await saver.close();
  }
  return {
    cookies: [],
    origins: [{ origin, localStorage: options.localStorage ?? [], indexedDB: [await dumpDatabase(factory, dbName)] }],
  };
}

/** `origin` as the browser spells it; a URL with a path is refused (storage state would never match it). */
function checkOrigin(origin: string): string {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new TypeError(
      `toStorageState: origin must be a URL like "http://127.0.0.1:5173", got ${JSON.stringify(origin)}.`,
    );
  }
  if (url.origin === "null" || `${url.origin}/` !== url.href.replace(/\/?$/, "/")) {
    throw new TypeError(
      `toStorageState: origin must be scheme, host and port only (${JSON.stringify(url.origin)}), got ${JSON.stringify(origin)}.`,
    );
  }
  return url.origin;
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Every store of the database, with its schema and rows, in storage-state form. */
async function dumpDatabase(factory: IDBFactory, name: string): Promise<StorageStateDatabase> {
  const db = await request(factory.open(name));
  try {
    const storeNames = [...db.objectStoreNames];
    const tx = db.transaction(storeNames, "readonly");
    const stores = await Promise.all(
      storeNames.map(async (storeName) => {
        const store = tx.objectStore(storeName);
        const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
        return {
          name: storeName,
          autoIncrement: store.autoIncrement,
          ...keyPathOf(store.keyPath),
          records: values.map((value, i) => ({
            ...(store.keyPath === null ? encodeField("key", keys[i]) : {}),
            ...encodeField("value", value),
          })),
          indexes: [...store.indexNames].map((indexName) => {
            const index = store.index(indexName);
            return { name: indexName, ...keyPathOf(index.keyPath), multiEntry: index.multiEntry, unique: index.unique };
          }),
        };
      }),
    );
    return { name, version: db.version, stores };
  } finally {
    db.close();
  }
}

function keyPathOf(keyPath: string | string[] | null): { keyPath?: string; keyPathArray?: string[] } {
  if (keyPath === null) return {};
  return typeof keyPath === "string" ? { keyPath } : { keyPathArray: [...keyPath] };
}

/** `{ value }` when JSON carries it as is, else `{ valueEncoded }` (Playwright's rule, also for keys). */
function encodeField(field: "key" | "value", value: unknown): Record<string, unknown> {
  return isTrivial(value) ? { [field]: value } : { [`${field}Encoded`]: encode(value, { next: 0 }) };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isTrivial(value: unknown): boolean {
  if (typeof value === "string" || typeof value === "boolean" || value === null) return true;
  if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0);
  if (Array.isArray(value)) return value.every(isTrivial);
  return isPlainObject(value) && Object.values(value).every(isTrivial);
}

/** Playwright's names for typed arrays in its serialized values. */
const TYPED_ARRAYS: [string, new (...args: never[]) => ArrayBufferView][] = [
  ["i8", Int8Array],
  ["ui8", Uint8Array],
  ["ui8c", Uint8ClampedArray],
  ["i16", Int16Array],
  ["ui16", Uint16Array],
  ["i32", Int32Array],
  ["ui32", Uint32Array],
  ["f32", Float32Array],
  ["f64", Float64Array],
  ["bi64", BigInt64Array],
  ["bui64", BigUint64Array],
];

function base64Of(view: ArrayBufferView): string {
  return toBase64(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
}

/**
 * A structured-clone value in Playwright's serialized form, the one its
 * storage-state restore parses (`parseEvaluationResultValue`).
 */
function encode(value: unknown, ids: { next: number }): unknown {
  if (value === undefined) return { v: "undefined" };
  if (value === null) return { v: "null" };
  if (typeof value === "number") {
    if (Number.isNaN(value)) return { v: "NaN" };
    if (value === Infinity) return { v: "Infinity" };
    if (value === -Infinity) return { v: "-Infinity" };
    if (Object.is(value, -0)) return { v: "-0" };
    return value;
  }
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "bigint") return { bi: value.toString() };
  if (value instanceof Date) return { d: value.toJSON() };
  if (value instanceof RegExp) return { r: { p: value.source, f: value.flags } };
  for (const [kind, ctor] of TYPED_ARRAYS) if (value instanceof ctor) return { ta: { b: base64Of(value), k: kind } };
  if (value instanceof ArrayBuffer) return { ab: { b: base64Of(new Uint8Array(value)) } };
  if (value instanceof Map) {
    const id = ++ids.next;
    return { m: [...value].map(([k, v]) => ({ k: encode(k, ids), v: encode(v, ids) })), id };
  }
  if (value instanceof Set) {
    const id = ++ids.next;
    return { s: [...value].map((item) => encode(item, ids)), id };
  }
  if (Array.isArray(value)) {
    const id = ++ids.next;
    return { a: value.map((item) => encode(item, ids)), id };
  }
  if (isPlainObject(value)) {
    const id = ++ids.next;
    return { o: Object.entries(value).map(([k, v]) => ({ k, v: encode(v, ids) })), id };
  }
  throw new TypeError(
    `toStorageState: a stored value of type ${Object.prototype.toString.call(value)} has no storage-state encoding.`,
  );
}

/**
 * IndexedDBStore's search cache against writes that race a search: the
 * search's transaction ends before the write commits, but the search keeps
 * what it read only after (it decodes first). Whatever it keeps must never
 * be served once the write is visible, from this instance or another one
 * (another tab), nor after the database was dropped and made again.
 * Runs in Node (fake-indexeddb) and Chromium (real IndexedDB).
 */
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { cleanupStores, freshStore, reopen } from "../../test/support/store-fixtures.js";
import { deleteDatabase } from "../../test/support/databases.js";
import { closingFactory, transactionsFactory } from "../../test/support/reliability/factories.js";
import type { IndexedDBStore } from "./index.js";

afterEach(cleanupStores);

/** JsonPlusSerializer whose decodes wait, once armed, until released: a search held between its read and its caching. */
class GatedSerializer extends JsonPlusSerializer {
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;
  /** Resolves when a decode reached the gate. */
  reached: Promise<void> = Promise.resolve();
  #reached: (() => void) | undefined;

  /** Holds every later decode until {@link release}. */
  arm(): void {
    this.#gate = new Promise((resolve) => (this.#open = resolve));
    this.reached = new Promise((resolve) => (this.#reached = resolve));
  }

  release(): void {
    this.#open?.();
    this.#gate = undefined;
  }

  override async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    if (this.#gate) {
      this.#reached?.();
      await this.#gate;
    }
    return super.loadsTyped(type, data);
  }
}

const keysOf = async (store: IndexedDBStore, options: { limit?: number; filter?: Record<string, unknown> } = {}) =>
  (await store.search(["ns"], { limit: 100, ...options })).map((item) => `${item.key}=${String(item.value.v)}`);

/**
 * Starts `search` with decodes held, lets `write` commit while it waits,
 * then lets the search finish: it must answer as of before the write.
 */
async function raceWrite(
  serde: GatedSerializer,
  search: () => Promise<string[]>,
  write: () => Promise<void>,
): Promise<string[]> {
  serde.arm();
  const pending = search();
  await serde.reached; // its transaction is over: it decodes what it read
  await write();
  serde.release();
  return pending;
}

describe("search cache and a racing write", () => {
  for (const where of ["this instance", "another instance (another tab)"] as const) {
    for (const kind of ["a whole namespace", "a page"] as const) {
      it(`never serves ${kind} read before a put and a delete by ${where} commit`, async () => {
        const serde = new GatedSerializer();
        const store = freshStore({ serde });
        const writer = where === "this instance" ? store : reopen(store, { serde: new JsonPlusSerializer() });
        for (let i = 0; i < 4; i++) await store.put(["ns"], `k${i}`, { v: i });
        const search = () => keysOf(store, kind === "a page" ? { limit: 2 } : { filter: { v: { $gte: 0 } } });
        const before = await raceWrite(serde, search, async () => {
          await writer.put(["ns"], "k0", { v: 10 });
          await writer.delete(["ns"], "k1");
        });
        expect(before).toEqual(kind === "a page" ? ["k0=0", "k1=1"] : ["k0=0", "k1=1", "k2=2", "k3=3"]);
        expect(await search()).toEqual(kind === "a page" ? ["k0=10", "k2=2"] : ["k0=10", "k2=2", "k3=3"]);
      });
    }
  }

  it("never serves a search read before close, once the database is deleted and made again", async () => {
    const serde = new GatedSerializer();
    const store = freshStore({ serde });
    await store.put(["ns"], "old", { v: 1 });
    const before = await raceWrite(
      serde,
      () => keysOf(store),
      async () => {
        await store.close();
        await deleteDatabase(store.dbName);
        // The new database's write generations start over: the same as the old one's.
        await reopen(store, { serde: new JsonPlusSerializer() }).put(["ns"], "new", { v: 2 });
      },
    );
    expect(before).toEqual(["old=1"]);
    expect(await keysOf(store)).toEqual(["new=2"]);
  });

  it("never serves a search read before the browser closed the connection, once another tab made the database again", async () => {
    const serde = new GatedSerializer();
    const closing = closingFactory();
    const store = freshStore({ serde, indexedDB: closing.factory });
    const writer = reopen(store, { serde: new JsonPlusSerializer() });
    await store.put(["ns"], "old", { v: 1 });
    const before = await raceWrite(
      serde,
      () => keysOf(store),
      async () => {
        // Site data cleared: the browser closes every connection, the database is gone.
        closing.closeAll();
        await writer.close();
        await deleteDatabase(store.dbName);
        await writer.put(["ns"], "new", { v: 2 });
      },
    );
    expect(before).toEqual(["old=1"]);
    expect(await keysOf(store)).toEqual(["new=2"]);
  });
});

/**
 * `base` whose connections call `hook` (once armed) just before a read of
 * the `namespaces` store goes out: a search between its read of the write
 * generation and its read of the namespace list, in one transaction.
 */
function namespaceReadHook() {
  let hook: (() => void) | undefined;
  const factory = transactionsFactory((tx) => {
    const objectStore = tx.objectStore.bind(tx);
    tx.objectStore = (storeName: string) => {
      const store = objectStore(storeName);
      if (storeName !== "namespaces") return store;
      const getAll = store.getAll.bind(store);
      store.getAll = (...query: Parameters<IDBObjectStore["getAll"]>) => {
        const run = hook;
        hook = undefined;
        run?.();
        return getAll(...query);
      };
      return store;
    };
  });
  return { factory, arm: (run: () => void) => (hook = run) };
}

describe("search cache and a drop inside the search's transaction", () => {
  it("keeps no namespace list read across a close, once the database is deleted and made again", async () => {
    const hooked = namespaceReadHook();
    const store = freshStore({ indexedDB: hooked.factory });
    await store.put(["old"], "k", { v: 1 });
    // The close lands between the search's read of the generation and of the namespace list.
    let closed: Promise<void> | undefined;
    hooked.arm(() => (closed = store.close()));
    expect((await store.search([], { limit: 10 })).map((item) => item.namespace.join("/"))).toEqual(["old"]);
    await closed;
    await deleteDatabase(store.dbName);
    // The new database's write generation is the old one's: one put each.
    await reopen(store).put(["new"], "k", { v: 2 });
    expect((await store.search([], { limit: 10 })).map((item) => item.namespace.join("/"))).toEqual(["new"]);
  });
});

/**
 * IndexedDBStore: behaviour, compared with InMemoryStore wherever both
 * should answer alike, plus what only a persistent store has (reloads,
 * serializers, transactions). Runs in Node (fake-indexeddb) and Chromium.
 */
import {
  InMemoryStore,
  JsonPlusSerializer,
  type BaseStore,
  type Operation,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { Annotation, END, MemorySaver, START, StateGraph, type BaseCheckpointSaver } from "@langchain/langgraph/web";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { DatabaseBinding, KeyRecord, RowRef } from "../serde/protocol.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { DecryptionError, SerializationError } from "../core/errors.js";
import { MsgpackSerializer } from "../serde/msgpack/index.js";
import { IndexedDBSaver } from "../saver/index.js";
import { DEFAULT_STORE_DB_NAME, IndexedDBStore } from "./index.js";
import {
  HashEmbeddings,
  cleanupStores,
  comparable,
  freshStore,
  reopen,
  withoutTimes,
} from "../../test/support/store-fixtures.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";
import { closingFactory, newerSchemaFactory } from "../../test/support/reliability/factories.js";

afterEach(cleanupStores);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `fn` on both stores; both must succeed alike or fail with the same error. */
async function both<T>(
  idb: BaseStore,
  memory: BaseStore,
  fn: (store: BaseStore) => Promise<T>,
): Promise<{ idb: unknown; memory: unknown }> {
  const run = async (store: BaseStore) => {
    try {
      return { ok: comparable(await fn(store)) };
    } catch (error) {
      return { error: `${(error as Error).name}: ${(error as Error).message}` };
    }
  };
  return { idb: await run(idb), memory: await run(memory) };
}

describe("items", () => {
  it("puts, gets, updates (createdAt kept, updatedAt refreshed) and deletes", async () => {
    const store = freshStore();
    expect(await store.get(["user-1", "memories"], "m1")).toBeNull();
    await store.put(["user-1", "memories"], "m1", {
      text: "likes tea",
      at: new Date(5),
      nested: { list: [1, "two", null] },
    });
    const first = await store.get(["user-1", "memories"], "m1");
    expect(first).toMatchObject({
      key: "m1",
      namespace: ["user-1", "memories"],
      value: { text: "likes tea", at: new Date(5), nested: { list: [1, "two", null] } },
    });
    expect(first!.createdAt).toBeInstanceOf(Date);
    expect(first!.updatedAt.getTime()).toBe(first!.createdAt.getTime());

    await sleep(5);
    await store.put(["user-1", "memories"], "m1", { text: "likes coffee" });
    const second = await store.get(["user-1", "memories"], "m1");
    expect(second!.value).toEqual({ text: "likes coffee" });
    expect(second!.createdAt.getTime()).toBe(first!.createdAt.getTime());
    expect(second!.updatedAt.getTime()).toBeGreaterThan(first!.updatedAt.getTime());

    await store.delete(["user-1", "memories"], "m1");
    expect(await store.get(["user-1", "memories"], "m1")).toBeNull();

    // A put of `null` through batch is a delete, as in InMemoryStore.
    await store.put(["user-1", "memories"], "m2", { text: "x" });
    await store.batch([{ namespace: ["user-1", "memories"], key: "m2", value: null }]);
    expect(await store.get(["user-1", "memories"], "m2")).toBeNull();
  });

  it("keeps keys that look like prototype names or contain dots apart", async () => {
    const store = freshStore();
    for (const key of ["__proto__", "constructor", "prototype", "a.b", "a", ""]) {
      await store.put(["ns"], key, { key });
    }
    for (const key of ["__proto__", "constructor", "prototype", "a.b", "a", ""]) {
      expect((await store.get(["ns"], key))?.value).toEqual({ key });
    }
    expect(await store.search(["ns"], { limit: 100 })).toHaveLength(6);
  });

  it("rejects invalid namespaces with InMemoryStore's errors", async () => {
    const store = freshStore();
    const memory = new InMemoryStore();
    const calls: ((s: BaseStore) => Promise<unknown>)[] = [
      (s) => s.put([], "k", { v: 1 }),
      (s) => s.put(["a.b"], "k", { v: 1 }),
      (s) => s.put(["a:b"], "k", { v: 1 }),
      (s) => s.put(["a", ""], "k", { v: 1 }),
      (s) => s.put(["a\0"], "k", { v: 1 }),
      (s) => s.put(["langgraph", "x"], "k", { v: 1 }),
      (s) => s.put([7 as unknown as string], "k", { v: 1 }),
      (s) => s.get([], "k"),
      (s) => s.get(["x.y"], "k"),
      (s) => s.delete(["x.y"], "k"),
      (s) => s.search(["a.b"]),
      (s) => s.search(["ok", "a:b"]),
      (s) => s.listNamespaces({ prefix: ["a.b"] }),
      (s) => s.listNamespaces({ suffix: ["a:b"] }),
      // batch() skips put's root check, as upstream: "langgraph" is allowed there.
      (s) => s.batch([{ namespace: ["langgraph", "x"], key: "k", value: { v: 1 } }]),
      (s) =>
        s.batch([
          { namespace: ["ok"], key: "k" },
          { namespace: [], key: "k", value: { v: 1 } },
        ]),
    ];
    for (const call of calls) {
      const outcome = await both(store, memory, call);
      expect(outcome.idb, String(call)).toEqual(outcome.memory);
    }
    // The failed batch wrote nothing.
    expect(await store.listNamespaces()).toEqual([["langgraph", "x"]]);
  });

  it("refuses a key IndexedDB cannot store with a TypeError naming it, before any I/O", async () => {
    const store = freshStore();
    await store.put(["ns"], "kept", { v: 1 });
    for (const key of [undefined, null, {}, NaN, true]) {
      const bad = key as unknown as string;
      for (const call of [
        () => store.put(["ns"], bad, { v: 2 }),
        () => store.get(["ns"], bad),
        () => store.delete(["ns"], bad),
        () =>
          store.batch([
            { namespace: ["other"], key: "k", value: { v: 3 } },
            { namespace: ["ns"], key: bad, value: { v: 2 } },
          ]),
      ]) {
        const error = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error, `key ${String(key)}: ${String(call)}`).toBeInstanceOf(TypeError);
        expect((error as Error).message).toMatch(
          /IndexedDBStore: the item key .* in namespace \[ns\] is not a valid key/,
        );
      }
    }
    // Nothing of the failed batches was written, and the store still works.
    expect(await store.listNamespaces()).toEqual([["ns"]]);
    expect((await store.search(["ns"])).map((item) => item.key)).toEqual(["kept"]);
    // Keys IndexedDB accepts, strings and numbers, still work.
    await store.put(["ns"], 7 as unknown as string, { v: 7 });
    expect((await store.get(["ns"], 7 as unknown as string))?.value).toEqual({ v: 7 });
  });

  it("refuses a value nested too deeply for structured clone with a SerializationError naming the item", async () => {
    const store = freshStore();
    const root: Record<string, unknown> = {};
    let node = root;
    for (let i = 0; i < 20_000; i++) node = node.n = {};
    // Before: a bare RangeError "Maximum call stack size exceeded".
    const error = await store.put(["ns"], "deep", root).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SerializationError);
    expect((error as Error).message).toMatch(/store item "deep" in namespace \[ns\] is nested too deeply/);
    expect(await store.get(["ns"], "deep")).toBeNull();
  });

  it("refuses a value structured clone cannot store, and writes nothing of that batch", async () => {
    const store = freshStore();
    await expect(store.put(["ns"], "k", { f: () => 1 })).rejects.toBeInstanceOf(SerializationError);
    await expect(
      store.batch([
        { namespace: ["ns"], key: "good", value: { ok: true } },
        { namespace: ["ns"], key: "bad", value: { f: () => 1 } },
      ]),
    ).rejects.toThrow(/structured clone/);
    expect(await store.get(["ns"], "good")).toBeNull();
    expect(await store.listNamespaces()).toEqual([]);
  });
});

describe("search", () => {
  it("lists items as InMemoryStore does: namespaces by first use, items by creation", async () => {
    const store = freshStore();
    const memory = new InMemoryStore();
    for (const s of [store, memory] as BaseStore[]) {
      await s.put(["b"], "z", { n: 1 });
      await s.put(["a", "x"], "y", { n: 2 });
      await s.put(["a"], "m", { n: 3 });
      await s.put(["b"], "a", { n: 4 });
      await s.put(["a", "x"], "b", { n: 5 });
      await s.put(["b"], "z", { n: 6 }); // an update keeps its place
      await s.delete(["a", "x"], "y");
      await s.put(["a", "x"], "y", { n: 7 }); // a re-put after a delete goes last
      await s.delete(["c"], "never"); // InMemoryStore registers the namespace anyway
    }
    const keys = (items: { key: string }[]) => items.map((item) => item.key);
    expect(keys(await store.search([]))).toEqual(["z", "a", "b", "y", "m"]);
    for (const prefix of [[], ["a"], ["a", "x"], ["b"], ["c"], ["nope"]]) {
      for (const page of [{}, { limit: 2 }, { limit: 2, offset: 1 }, { offset: 4 }, { limit: 0 }]) {
        const outcome = await both(store, memory, (s) => s.search(prefix, page));
        expect(outcome.idb, JSON.stringify([prefix, page])).toEqual(outcome.memory);
      }
    }
    expect(await store.listNamespaces()).toEqual(await memory.listNamespaces());
  });

  it("limit defaults to 10 and offset to 0; results carry score: undefined without a query", async () => {
    const store = freshStore();
    for (let i = 0; i < 15; i++) await store.put(["ns"], `k${i}`, { i });
    const page = await store.search(["ns"]);
    expect(page.map((item) => item.key)).toEqual(Array.from({ length: 10 }, (_, i) => `k${i}`));
    expect(page.every((item) => "score" in item && item.score === undefined)).toBe(true);
    expect((await store.search(["ns"], { offset: 10 })).map((item) => item.key)).toEqual([
      "k10",
      "k11",
      "k12",
      "k13",
      "k14",
    ]);
  });

  it("takes a limit or offset past IndexedDB's count range (Number.MAX_SAFE_INTEGER: everything), as InMemoryStore", async () => {
    const store = freshStore();
    const memory = new InMemoryStore();
    for (const s of [store, memory] as BaseStore[]) for (let i = 0; i < 3; i++) await s.put(["ns"], `k${i}`, { i });
    for (const options of [
      { limit: Number.MAX_SAFE_INTEGER },
      { limit: 2 ** 32 },
      { offset: 1, limit: 2 ** 32 - 1 },
      { offset: 2 ** 32, limit: 1 },
    ]) {
      // Before: TypeError "Value is outside the 'unsigned long' value range" from getAll's count.
      const outcome = await both(store, memory, (s) => s.search(["ns"], options));
      expect(outcome.idb, JSON.stringify(options)).toEqual(outcome.memory);
    }
    expect(await store.search(["ns"], { limit: Number.MAX_SAFE_INTEGER })).toHaveLength(3);
  });

  it("applies filters with InMemoryStore's semantics", async () => {
    const store = freshStore();
    const memory = new InMemoryStore();
    const values = [
      { color: "red", n: 1, tag: "x" },
      { color: "blue", n: 5, flag: true },
      { color: "red", n: "5", flag: false },
      { color: "green", n: 10.5, obj: { a: 1 } },
      { n: null },
      { color: "red", n: -3, list: [1, 2] },
    ];
    for (const s of [store, memory] as BaseStore[]) {
      for (const [i, value] of values.entries()) await s.put(["f", i % 2 ? "odd" : "even"], `k${i}`, value);
    }
    const filters: Record<string, unknown>[] = [
      { color: "red" },
      { color: "red", n: 1 },
      { n: 5 },
      { n: "5" },
      { n: { $eq: 5 } },
      { n: { $ne: 5 } },
      { n: { $gt: 1 } },
      { n: { $gte: 5 } },
      { n: { $lt: 5 } },
      { n: { $lte: "5" } },
      { n: { $gt: 0, $lt: 10 } },
      { color: { $in: ["red", "green"] } },
      { color: { $nin: ["red"] } },
      { color: { $in: "red" } },
      { color: { $nin: "red" } },
      { missing: { $ne: 1 } },
      { missing: undefined },
      { n: {} },
      { obj: { a: 1 } },
      { flag: false },
      { n: null },
      { color: { $eq: "red", $ne: "blue" } },
    ];
    for (const filter of filters) {
      for (const page of [{}, { limit: 1, offset: 1 }]) {
        const outcome = await both(store, memory, (s) => s.search(["f"], { filter, ...page }));
        expect(outcome.idb, JSON.stringify(filter)).toEqual(outcome.memory);
      }
    }
  });

  it("pages through large namespaces in growing chunks, with and without the cache", async () => {
    const memory = new InMemoryStore();
    const stores = [
      freshStore({ cacheSize: 0 }),
      freshStore({ cacheSize: 0, serde: new JsonPlusSerializer() }),
      freshStore(),
    ];
    const ops: Operation[] = [];
    for (let i = 0; i < 700; i++) {
      ops.push({
        namespace: ["big", i % 3 ? "a" : "b"],
        key: `k${(i * 7919) % 700}`,
        value: { i, even: i % 2 === 0, rare: i % 150 === 3 },
      });
    }
    for (const s of [memory, ...stores] as BaseStore[]) await s.batch(ops);
    const searches: [string[], Record<string, unknown>][] = [
      [["big"], { filter: { rare: true } }],
      [["big"], { filter: { rare: true }, offset: 2, limit: 2 }],
      [["big"], { filter: { even: true }, offset: 300, limit: 50 }],
      [["big"], { filter: { i: { $gte: 690 } }, limit: 20 }],
      [["big"], { offset: 460, limit: 30 }],
      [["big", "a"], { offset: 100, limit: 400 }],
      [["big"], { filter: { i: -1 } }],
    ];
    for (const [prefix, options] of searches) {
      const expected = comparable(await memory.search(prefix, options));
      for (const store of stores) {
        expect(comparable(await store.search(prefix, options)), JSON.stringify([prefix, options])).toEqual(expected);
      }
    }
  });

  it("answers alike over many namespaces (one range read instead of one per namespace)", async () => {
    const embeddings = new HashEmbeddings(16);
    const index = { dims: 16, embeddings, fields: ["text"] };
    const memory = new InMemoryStore({ index });
    const stores = [
      freshStore({ index, cacheSize: 0 }),
      freshStore({ index, cacheSize: 0, serde: new JsonPlusSerializer() }),
      freshStore({ index }),
      freshStore({ index, cacheSize: 30 }),
    ];
    const ops: Operation[] = [];
    for (let i = 0; i < 240; i++) {
      const user = `u${(i * 13) % 40}`;
      ops.push({
        namespace: i % 5 ? ["users", user, "memories"] : ["users", user],
        key: `k${i % 17}`,
        value: { i, text: `memory ${i % 7} of ${i % 3 ? "sea" : "mountain"}`, rare: i % 60 === 11 },
        ...(i % 9 === 0 ? { index: false as const } : {}),
      });
    }
    for (const s of [memory, ...stores] as BaseStore[]) await s.batch(ops);
    const searches: [string[], Record<string, unknown>][] = [
      [[], { filter: { rare: true } }],
      [["users"], { filter: { i: { $lt: 30 } }, limit: 7, offset: 3 }],
      [["users"], { limit: 25, offset: 10 }],
      [[], { query: "mountain memory 3", limit: 12 }],
      [["users"], { query: "sea", filter: { rare: false }, offset: 5, limit: 5 }],
      [[], { query: "nothing", offset: 200, limit: 30 }],
    ];
    for (let round = 0; round < 2; round++) {
      for (const [prefix, options] of searches) {
        const expected = comparable(await memory.search(prefix, options));
        for (const [n, store] of stores.entries()) {
          expect(comparable(await store.search(prefix, options)), JSON.stringify([n, round, prefix, options])).toEqual(
            expected,
          );
        }
      }
      // Between rounds, writes to some namespaces: the caches must notice.
      for (const s of [memory, ...stores] as BaseStore[]) {
        await s.put(["users", "u3", "memories"], "k1", { i: 1000, text: "mountain", rare: true });
        await s.delete(["users", "u7"], "k0");
      }
    }
  });

  it("reads only the rows under the searched prefix", async () => {
    const serde = new CountingSerializer();
    const store = freshStore({ serde, cacheSize: 0 });
    for (const namespace of [["a"], ["a", "b"], ["a", "b", "c"], ["ab"], ["b"], ["b", "a"]]) {
      for (let i = 0; i < 3; i++) await store.put(namespace, `k${i}`, { i });
    }
    serde.loads = 0;
    const found = await store.search(["a"], { filter: { i: { $gte: 0 } }, limit: 100 });
    expect(found).toHaveLength(9);
    expect(serde.loads).toBe(9); // never the 9 rows of ["ab"], ["b"], ["b", "a"]
    serde.loads = 0;
    expect(await store.search(["a", "b"], { limit: 2 })).toHaveLength(2);
    expect(serde.loads).toBe(2); // a page without a filter decodes the page only
  });
});

describe("search cache", () => {
  it("serves a namespace from memory once read whole, and copies what it returns", async () => {
    const serde = new CountingSerializer();
    const store = freshStore({ serde });
    for (let i = 0; i < 20; i++) await store.put(["ns"], `k${i}`, { i, tags: ["t"] });
    serde.loads = 0;
    const first = await store.search(["ns"], { filter: { i: { $gte: 15 } } });
    expect(first.map((item) => item.key)).toEqual(["k15", "k16", "k17", "k18", "k19"]);
    expect(serde.loads).toBe(20 + 5); // every row for the filter, then fresh copies of the page
    serde.loads = 0;
    const second = await store.search(["ns"], { filter: { i: { $lt: 2 } } });
    expect(second.map((item) => item.key)).toEqual(["k0", "k1"]);
    expect(serde.loads).toBe(2); // the page only: the filter ran on the cached values

    // Mutating a result never reaches the cache.
    (second[0]!.value.tags as string[]).push("mutated");
    second[0]!.namespace.push("mutated");
    const third = await store.search(["ns"], { filter: { i: 0 } });
    expect(third[0]!.value).toEqual({ i: 0, tags: ["t"] });
    expect(third[0]!.namespace).toEqual(["ns"]);
  });

  it("keeps the head a page read, serves later pages from it and reads on only after it", async () => {
    const serde = new CountingSerializer();
    const store = freshStore({ serde });
    await store.batch(Array.from({ length: 40 }, (_, i) => ({ namespace: ["ns"], key: `k${i}`, value: { i } })));
    const keys = (items: { key: string }[]) => items.map((item) => item.key);
    serde.loads = 0;
    expect(keys(await store.search(["ns"], { offset: 10, limit: 5 }))).toEqual(["k10", "k11", "k12", "k13", "k14"]);
    expect(serde.loads).toBe(15 + 5); // the first 15 rows read, then fresh copies of the page
    serde.loads = 0;
    expect(keys(await store.search(["ns"], { offset: 5, limit: 5 }))).toEqual(["k5", "k6", "k7", "k8", "k9"]);
    expect(serde.loads).toBe(5); // within the cached head: the page only
    serde.loads = 0;
    expect(keys(await store.search(["ns"], { offset: 20, limit: 5 }))).toEqual(["k20", "k21", "k22", "k23", "k24"]);
    expect(serde.loads).toBe(10 + 5); // only the 10 rows after the head
    serde.loads = 0;
    expect(await store.search(["ns"], { filter: { i: { $gte: 38 } } })).toHaveLength(2);
    expect(serde.loads).toBe(15 + 2); // the rest of the namespace, once
    serde.loads = 0;
    expect(await store.search(["ns"], { filter: { i: { $lt: 3 } } })).toHaveLength(3);
    expect(serde.loads).toBe(3); // whole now
    // Another instance's write makes the head stale.
    await reopen(store, { serde }).put(["ns"], "k0", { i: -1 });
    serde.loads = 0;
    expect((await store.search(["ns"], { limit: 2 })).map((item) => item.value)).toEqual([{ i: -1 }, { i: 1 }]);
    expect(serde.loads).toBe(2 + 2);
  });

  it("answers filtered pages alike from cached heads, as they grow and after writes", async () => {
    const memory = new InMemoryStore();
    const a = freshStore({ cacheSize: 500 });
    const b = reopen(a);
    const ops: Operation[] = [];
    for (let i = 0; i < 600; i++) {
      ops.push({
        namespace: ["big", i % 4 ? "x" : "y"],
        key: `k${(i * 7919) % 600}`,
        value: { i, rare: i % 37 === 5, tier: i % 3 },
      });
    }
    for (const s of [memory, a] as BaseStore[]) await s.batch(ops);
    const searches: [string[], Record<string, unknown>][] = [
      [["big", "x"], { filter: { rare: true }, limit: 2 }],
      [["big", "x"], { filter: { rare: true }, limit: 4 }],
      [["big", "x"], { filter: { rare: true }, limit: 3, offset: 1 }],
      [["big"], { filter: { rare: true }, limit: 12 }],
      [["big"], { filter: { tier: 2 }, limit: 5, offset: 150 }],
      [["big"], { limit: 3, offset: 420 }],
      [["big", "y"], { filter: { rare: true } }],
      [["big"], { filter: { tier: 1, rare: true }, limit: 100 }],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [prefix, options] of searches) {
        const expected = comparable(await memory.search(prefix, options));
        expect(comparable(await a.search(prefix, options)), JSON.stringify([round, prefix, options])).toEqual(expected);
      }
      // Between rounds, another instance writes inside and after the heads.
      for (const s of [memory, b] as BaseStore[]) {
        await s.put(["big", "x"], `k${round * 5 + 1}`, { i: -round, rare: true, tier: 1 });
        await s.delete(["big", "x"], `k${round * 11 + 7}`);
        await s.put(["big", "y"], `new${round}`, { i: 1000 + round, rare: true, tier: 2 });
      }
    }
  });

  it("sees at once what another instance (another tab) wrote", async () => {
    const a = freshStore();
    const b = reopen(a);
    for (let i = 0; i < 6; i++) await a.put(["ns"], `k${i}`, { i });
    await a.put(["other"], "x", { i: 100 });
    const keys = async () => (await a.search([], { filter: { i: { $gte: 0 } }, limit: 100 })).map((item) => item.key);
    expect(await keys()).toEqual(["k0", "k1", "k2", "k3", "k4", "k5", "x"]);
    await b.put(["ns"], "k2", { i: -1 });
    await b.delete(["ns"], "k4");
    await b.put(["ns"], "k9", { i: 9 });
    expect(await keys()).toEqual(["k0", "k1", "k3", "k5", "k9", "x"]);
    await b.put(["other"], "x", { i: -5 });
    expect(await keys()).toEqual(["k0", "k1", "k3", "k5", "k9"]);
    await a.put(["ns"], "k0", { i: -2 });
    expect(await keys()).toEqual(["k1", "k3", "k5", "k9"]);
  });

  it("caches vectors with their namespace and sees re-embedded items", async () => {
    const embeddings = new HashEmbeddings(16);
    const index = { dims: 16, embeddings, fields: ["text"] };
    const a = freshStore({ index });
    const b = reopen(a, { index });
    const memory = new InMemoryStore({ index });
    for (const s of [a, memory] as BaseStore[]) {
      await s.put(["ns"], "1", { text: "violin lessons" });
      await s.put(["ns"], "2", { text: "piano lessons" });
    }
    expect(comparable(await a.search(["ns"], { query: "piano" }))).toEqual(
      comparable(await memory.search(["ns"], { query: "piano" })),
    );
    for (const s of [b, memory] as BaseStore[]) await s.put(["ns"], "1", { text: "piano tuning" });
    expect(comparable(await a.search(["ns"], { query: "piano" }))).toEqual(
      comparable(await memory.search(["ns"], { query: "piano" })),
    );
  });

  it("keeps nothing with cacheSize 0 or for a namespace larger than the budget", async () => {
    for (const cacheSize of [0, 5]) {
      const serde = new CountingSerializer();
      const store = freshStore({ serde, cacheSize });
      for (let i = 0; i < 8; i++) await store.put(["ns"], `k${i}`, { i });
      for (let round = 0; round < 2; round++) {
        serde.loads = 0;
        expect(await store.search(["ns"], { filter: { i: 7 } })).toHaveLength(1);
        expect(serde.loads).toBe(8); // read and decoded in full both times
      }
    }
    expect(() => new IndexedDBStore({ cacheSize: -1 })).toThrow(/cacheSize/);
  });

  it("forgets everything on close, so a database made again from scratch is read afresh", async () => {
    const store = freshStore();
    for (let i = 0; i < 3; i++) await store.put(["ns"], `k${i}`, { i });
    expect(await store.search(["ns"], { filter: { i: { $gte: 0 } } })).toHaveLength(3);
    await store.close();
    await deleteDatabase(store.dbName);
    await store.put(["ns"], "fresh", { i: 1 });
    expect((await store.search(["ns"], { filter: { i: { $gte: 0 } } })).map((item) => item.key)).toEqual(["fresh"]);
  });

  it("forgets everything when the browser closes the connection (site data cleared), so another tab's new rows are seen", async () => {
    const closing = closingFactory();
    const reader = freshStore({ indexedDB: closing.factory });
    const writer = reopen(reader);
    await writer.put(["ns"], "old", { v: "old" });
    expect((await reader.search(["ns"])).map((item) => item.key)).toEqual(["old"]);
    // Site data cleared: the browser closes every connection, the database is gone.
    closing.closeAll();
    await writer.close();
    await deleteDatabase(reader.dbName);
    // Another tab starts over: the new database's write generations start over too.
    await writer.put(["ns"], "new", { v: "new" });
    expect(await reader.get(["ns"], "old")).toBeNull();
    expect((await reader.search(["ns"])).map((item) => item.key)).toEqual(["new"]);
  });
});

describe("listNamespaces", () => {
  it("answers as InMemoryStore for prefixes, suffixes, wildcards, depth and pages", async () => {
    const store = freshStore();
    const memory = new InMemoryStore();
    const namespaces = [
      ["a"],
      ["a", "b"],
      ["a", "b", "c"],
      ["a", "c", "c"],
      ["B", "b"],
      ["é", "x"],
      ["10"],
      ["2", "b", "c"],
      ["users", "u1", "memories"],
      ["users", "u2", "memories"],
      ["users", "u2", "prefs"],
    ];
    for (const s of [store, memory] as BaseStore[]) {
      for (const namespace of namespaces) await s.put(namespace, "k", { v: 1 });
      await s.delete(["deleted", "only"], "k");
    }
    const queries = [
      {},
      { prefix: ["a"] },
      { prefix: ["a", "b"] },
      { prefix: ["users", "*", "memories"] },
      { prefix: ["*", "b"] },
      { suffix: ["c"] },
      { suffix: ["*", "c"] },
      { suffix: ["memories"], prefix: ["users"] },
      { maxDepth: 1 },
      { maxDepth: 2, prefix: ["users"] },
      { maxDepth: 0 },
      { limit: 3 },
      { limit: 3, offset: 2 },
      { offset: 100 },
      { prefix: ["zzz"] },
      { prefix: [] },
    ];
    for (const query of queries) {
      const outcome = await both(store, memory, (s) => s.listNamespaces(query));
      expect(outcome.idb, JSON.stringify(query)).toEqual(outcome.memory);
    }
  });
});

describe("semantic search", () => {
  const config = (embeddings: HashEmbeddings, fields?: string[]) => ({ dims: embeddings.dims, embeddings, fields });

  it("embeds the configured field paths as InMemoryStore does, with the same scores", async () => {
    const value = {
      title: "Tea notes",
      body: { text: "green tea in the morning", lang: "en" },
      tags: ["drinks", "morning routine", "tea"],
      chapters: [{ content: "first steeping" }, { content: "second steeping with honey" }],
      n: 3,
    };
    const other = {
      title: "Coffee",
      body: { text: "espresso after lunch", lang: "it" },
      tags: ["drinks"],
      chapters: [{ content: "grind" }],
      n: 1,
    };
    const fieldSets = [
      undefined,
      ["$"],
      ["title"],
      ["body.text"],
      ["tags[*]"],
      ["tags[0]", "tags[-1]"],
      ["chapters[*].content"],
      ["chapters[-1].content", "title"],
      ["{title,body.lang}"],
      ["n", "missing.field"],
    ];
    for (const fields of fieldSets) {
      const embeddings = new HashEmbeddings(12);
      const store = freshStore({ index: config(embeddings, fields) });
      const memory = new InMemoryStore({ index: config(embeddings, fields) });
      for (const s of [store, memory] as BaseStore[]) {
        await s.put(["docs"], "tea", value);
        await s.put(["docs"], "coffee", other);
        await s.put(["docs", "sub"], "plain", { unrelated: true });
      }
      for (const query of ["morning tea", "espresso", "honey steeping", "drinks", "nothing matches"]) {
        const outcome = await both(store, memory, (s) => s.search(["docs"], { query }));
        expect(outcome.idb, JSON.stringify([fields, query])).toEqual(outcome.memory);
      }
    }
  });

  it("honours put(..., index) overrides and index: false; unembedded items come last without a score", async () => {
    const embeddings = new HashEmbeddings(16);
    const store = freshStore({ index: config(embeddings, ["text"]) });
    const memory = new InMemoryStore({ index: config(embeddings, ["text"]) });
    for (const s of [store, memory] as BaseStore[]) {
      await s.put(["m"], "default", { text: "pizza with olives", title: "dinner" });
      await s.put(["m"], "override", { text: "nothing here", title: "pizza night" }, ["title"]);
      await s.put(["m"], "off", { text: "pizza pizza pizza" }, false);
      await s.put(["m"], "no-text", { other: "pizza" });
    }
    for (const page of [{}, { limit: 2 }, { limit: 3, offset: 1 }, { offset: 2 }, { offset: 5 }]) {
      const outcome = await both(store, memory, (s) => s.search(["m"], { query: "pizza", ...page }));
      expect(outcome.idb, JSON.stringify(page)).toEqual(outcome.memory);
    }
    const ranked = await store.search(["m"], { query: "pizza" });
    expect(ranked.map((item) => [item.key, typeof item.score])).toEqual([
      ["override", "number"],
      ["default", "number"],
      ["off", "undefined"],
      ["no-text", "undefined"],
    ]);
  });

  it("combines filters with ranking", async () => {
    const embeddings = new HashEmbeddings(16);
    const store = freshStore({ index: config(embeddings, ["text"]) });
    const memory = new InMemoryStore({ index: config(embeddings, ["text"]) });
    for (const s of [store, memory] as BaseStore[]) {
      for (let i = 0; i < 12; i++) {
        await s.put(["u", i % 3 ? "a" : "b"], `k${i}`, { text: `note ${i % 4} about ${i % 2 ? "cats" : "dogs"}`, i });
      }
    }
    for (const filter of [undefined, { i: { $gt: 4 } }, { i: { $in: [1, 2, 3] } }]) {
      for (const page of [{}, { limit: 3 }, { limit: 4, offset: 2 }]) {
        const outcome = await both(store, memory, (s) => s.search(["u"], { query: "cats note 1", filter, ...page }));
        expect(outcome.idb, JSON.stringify([filter, page])).toEqual(outcome.memory);
      }
    }
  });

  it("replaces an item's vectors on every put and drops them on delete (InMemoryStore keeps stale ones)", async () => {
    const embeddings = new HashEmbeddings(16);
    const store = freshStore({ index: config(embeddings, ["text"]) });
    await store.put(["m"], "k", { text: "sailing boats" });
    expect((await store.search(["m"], { query: "sailing" }))[0]!.score).toBeGreaterThan(0);
    // Not indexed any more: its old vector must not keep ranking it.
    await store.put(["m"], "k", { text: "sailing boats" }, false);
    expect((await store.search(["m"], { query: "sailing" }))[0]!.score).toBeUndefined();
    await store.put(["m"], "k", { text: "sailing boats" });
    await store.delete(["m"], "k");
    await store.put(["m"], "k", { text: "sailing boats" }, false);
    expect((await store.search(["m"], { query: "sailing" }))[0]!.score).toBeUndefined();
  });

  it("ignores a query when no index is configured, like InMemoryStore", async () => {
    const store = freshStore();
    const memory = new InMemoryStore();
    for (const s of [store, memory] as BaseStore[]) {
      await s.put(["m"], "a", { text: "x" });
      await s.put(["m"], "b", { text: "y" });
    }
    const outcome = await both(store, memory, (s) => s.search(["m"], { query: "x" }));
    expect(outcome.idb).toEqual(outcome.memory);
  });

  it("reports embeddings whose vectors do not match index.dims", async () => {
    const store = freshStore({ index: { dims: 8, embeddings: new HashEmbeddings(16) } });
    await expect(store.put(["m"], "k", { text: "x" })).rejects.toThrow(/16 dimensions, but `index.dims` is 8/);
    expect(await store.get(["m"], "k")).toBeNull();
    expect(() => new IndexedDBStore({ index: { dims: 0, embeddings: new HashEmbeddings(4) } })).toThrow(/index.dims/);
  });

  it("refuses at construction an index whose embeddings cannot embed queries, or an embed function", () => {
    const documentsOnly = { embedDocuments: async (texts: string[]) => texts.map(() => [1, 0]) };
    for (const index of [
      { dims: 2, embeddings: documentsOnly },
      { dims: 2, embed: async (texts: string[]) => texts.map(() => [1, 0]) },
    ]) {
      expect(() => new IndexedDBStore({ index: index as never }), JSON.stringify(index)).toThrow(
        /`index.embeddings` must be a LangChain Embeddings instance \(with embedDocuments and embedQuery\)/,
      );
    }
  });

  it("blames the embeddings, not the stored vectors, for a missing vector or a query vector of the wrong size", async () => {
    const embeddings = new HashEmbeddings(8);
    const store = freshStore({ index: { dims: 8, embeddings, fields: ["text"] } });
    await store.put(["m"], "a", { text: "green tea" });
    vi.spyOn(embeddings, "embedQuery").mockResolvedValueOnce([1, 2]);
    await expect(store.search(["m"], { query: "tea" })).rejects.toThrow(
      /embeddings returned a query vector of 2 dimensions, but `index.dims` is 8/,
    );
    vi.spyOn(embeddings, "embedDocuments").mockResolvedValueOnce([undefined as unknown as number[]]);
    await expect(store.put(["m"], "b", { text: "black coffee" })).rejects.toThrow(
      /embeddings returned no vector for the text "black coffee"/,
    );
    expect(await store.get(["m"], "b")).toBeNull();
    // Stored vectors were never at fault: the next search ranks as before.
    expect((await store.search(["m"], { query: "tea" }))[0]?.score).toBeGreaterThan(0);
  });
});

describe("persistence", () => {
  it("a second instance on the same database sees items, namespaces and vectors without re-embedding", async () => {
    const first = new HashEmbeddings(16);
    const store = freshStore({ index: { dims: 16, embeddings: first, fields: ["text", "tags[*]"] } });
    await store.put(["user-1", "memories"], "m1", { text: "allergic to peanuts", tags: ["health", "food"] });
    await store.put(["user-1", "memories"], "m2", { text: "plays the cello", tags: ["music"] });
    await store.put(["user-2", "memories"], "m1", { text: "likes hiking" });
    await store.put(["user-1", "prefs"], "theme", { text: "dark mode" }, false);
    const before = {
      list: await store.listNamespaces(),
      all: await store.search([], { limit: 100 }),
      ranked: await store.search(["user-1"], { query: "food allergy peanuts" }),
    };
    await store.close();

    const second = new HashEmbeddings(16);
    const again = reopen(store, { index: { dims: 16, embeddings: second, fields: ["text", "tags[*]"] } });
    expect(await again.listNamespaces()).toEqual(before.list);
    expect(await again.search([], { limit: 100 })).toEqual(before.all);
    expect(await again.search(["user-1"], { query: "food allergy peanuts" })).toEqual(before.ranked);
    expect(before.ranked[0]!.key).toBe("m1");
    expect(second.documentCalls).toBe(0);
    expect(second.queryCalls).toBe(1);
    expect(await again.get(["user-2", "memories"], "m1")).toEqual(
      before.all.map(({ score: _, ...item }) => item).find((item) => item.namespace[0] === "user-2"),
    );
  });

  it("two open instances see each other's writes at once", async () => {
    const a = freshStore();
    const b = reopen(a);
    await a.put(["ns"], "k", { v: 1 });
    expect((await b.get(["ns"], "k"))?.value).toEqual({ v: 1 });
    await b.put(["ns"], "k", { v: 2 });
    await b.put(["ns"], "k2", { v: 3 });
    expect((await a.search(["ns"])).map((item) => item.value)).toEqual([{ v: 2 }, { v: 3 }]);
    await a.delete(["ns"], "k");
    expect(await b.get(["ns"], "k")).toBeNull();
  });

  it("closes and reopens on the next call; default dbName is langgraph-store", async () => {
    const store = freshStore();
    await store.put(["ns"], "k", { v: 1 });
    await store.close();
    expect((await store.get(["ns"], "k"))?.value).toEqual({ v: 1 });
    expect(new IndexedDBStore().dbName).toBe(DEFAULT_STORE_DB_NAME);
    expect(DEFAULT_STORE_DB_NAME).toBe("langgraph-store");
  });

  it("refuses a database that is not a store's, with a message that says what to do", async () => {
    const dbName = freshDbName("not-a-store");
    await new Promise<void>((resolve, reject) => {
      const request = indexedDB.open(dbName, 1);
      request.onupgradeneeded = () => request.result.createObjectStore("checkpoints");
      request.onsuccess = () => {
        request.result.close();
        resolve();
      };
      request.onerror = () => reject(request.error);
    });
    const store = new IndexedDBStore({ dbName });
    await expect(store.get(["ns"], "k")).rejects.toThrow(/not an IndexedDBStore database.*own dbName/);
    await store.close();
    await deleteDatabase(dbName);
  });

  it("refuses an IndexedDBSaver's database (at a higher version) as a saver's, not as a newer store's", async () => {
    const dbName = freshDbName("saver-not-store");
    const saver = new IndexedDBSaver({ dbName });
    await saver.getTuple({ configurable: { thread_id: "t" } });
    await saver.close();
    const store = new IndexedDBStore({ dbName });
    try {
      // Before: "it was written by a newer version of this package", which
      // sends the user to upgrade instead of giving the store its own dbName.
      const error = await store.get(["ns"], "k").then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error?.message).toMatch(
        /not an IndexedDBStore database \(it has no items, vectors, namespaces object store.*own dbName/,
      );
      expect(error?.message).not.toMatch(/newer version/);
      // A store database written by a newer release is still reported as such.
      const newer = freshStore();
      await newer.put(["ns"], "k", { v: 1 });
      await newer.close();
      const again = new IndexedDBStore({ dbName: newer.dbName, indexedDB: newerSchemaFactory() });
      await again.get(["ns"], "k");
      await again.close();
      await expect(reopen(newer).get(["ns"], "k")).rejects.toThrow(/newer version of this package/);
    } finally {
      await store.close();
      await deleteDatabase(dbName);
    }
  });
});

describe("transactions", () => {
  it("runs a whole batch in one transaction, opened after every embedding", async () => {
    const embeddings = new HashEmbeddings(8);
    const store = freshStore({ index: { dims: 8, embeddings, fields: ["text"] } });
    await store.put(["ns"], "old", { text: "existing memory" });
    const original = IDBDatabase.prototype.transaction;
    const spy = vi.spyOn(IDBDatabase.prototype, "transaction");
    embeddings.log.length = 0;
    spy.mockImplementation(function (this: IDBDatabase, ...args: Parameters<IDBDatabase["transaction"]>) {
      embeddings.log.push("transaction");
      return original.apply(this, args);
    });
    try {
      const ops: Operation[] = [
        { namespace: ["ns"], key: "old" },
        { namespacePrefix: ["ns"], query: "memory", limit: 5, offset: 0 },
        { namespace: ["ns"], key: "new", value: { text: "a new memory" } },
        { matchConditions: undefined, limit: 10, offset: 0 },
        { namespace: ["other"], key: "x", value: { text: "elsewhere" } },
        { namespace: ["ns"], key: "old", value: null },
      ];
      await store.batch(ops);
    } finally {
      spy.mockRestore();
    }
    expect(embeddings.log).toEqual(["embedQuery", "embedDocuments", "transaction"]);
  });

  it("reads see the state before the batch's writes; the last put of an item wins", async () => {
    const store = freshStore();
    const memory = new InMemoryStore();
    const batches: Operation[][] = [
      [
        { namespace: ["ns"], key: "a", value: { v: 1 } },
        { namespace: ["ns"], key: "a" },
        { namespacePrefix: ["ns"], limit: 10, offset: 0 },
        { matchConditions: undefined, limit: 10, offset: 0 },
      ],
      [
        { namespace: ["ns"], key: "b", value: { v: 2 } },
        { namespace: ["ns"], key: "b" },
        { namespace: ["ns"], key: "a", value: null },
        { namespace: ["ns"], key: "c", value: { v: 3 } },
        { namespace: ["ns"], key: "a", value: { v: 4 } }, // de-duplicated to the first position
      ],
      [{ namespacePrefix: ["ns"], limit: 10, offset: 0 }],
    ];
    for (const batch of batches) {
      const outcome = await both(store, memory, (s) => s.batch(batch));
      expect(outcome.idb).toEqual(outcome.memory);
    }
    expect((await store.search(["ns"])).map((item) => item.key)).toEqual(["a", "b", "c"]);
    // InMemoryStore returns its live item from a get, so a put later in the
    // same batch shows through; here a get is a snapshot from before the batch.
    const [got] = await store.batch([
      { namespace: ["ns"], key: "a" },
      { namespace: ["ns"], key: "a", value: { v: 5 } },
    ]);
    expect(got?.value).toEqual({ v: 4 });
  });

  it("writes nothing when embedding fails", async () => {
    const embeddings = new HashEmbeddings(8);
    const store = freshStore({ index: { dims: 8, embeddings, fields: ["text"] } });
    vi.spyOn(embeddings, "embedDocuments").mockRejectedValueOnce(new Error("model offline"));
    await expect(store.put(["ns"], "k", { text: "x" })).rejects.toThrow("model offline");
    expect(await store.get(["ns"], "k")).toBeNull();
    expect(await store.listNamespaces()).toEqual([]);
  });
});

/** JsonPlusSerializer that counts decodes. */
class CountingSerializer extends JsonPlusSerializer {
  loads = 0;
  override async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    this.loads += 1;
    return super.loadsTyped(type, data);
  }
}

/**
 * A stand-in for EncryptedSerializer: binds every value to its row (the row
 * is written into the bytes and checked on load) and keeps a per-database
 * record in meta.
 */
class BindingSerializer implements SerializerProtocol {
  readonly inner = new JsonPlusSerializer();
  readonly rows: RowRef[] = [];
  readonly seen: (KeyRecord | undefined)[] = [];

  async dumpsTyped(): Promise<[string, Uint8Array]> {
    throw new Error("dumpsTyped must not be used: the store binds rows");
  }

  async loadsTyped(): Promise<unknown> {
    throw new Error("loadsTyped must not be used: the store binds rows");
  }

  async dumpsTypedForRow(value: unknown, row: RowRef): Promise<[string, Uint8Array]> {
    this.rows.push(row);
    const [type, bytes] = await this.inner.dumpsTyped(value);
    const header = new TextEncoder().encode(`${JSON.stringify(row)}\n${type}\n`);
    const out = new Uint8Array(header.length + bytes.length);
    out.set(header);
    out.set(bytes, header.length);
    return ["bound", out];
  }

  async loadsTypedForRow(type: string, data: Uint8Array | string, row: RowRef): Promise<unknown> {
    if (type !== "bound" || typeof data === "string") throw new DecryptionError("not a bound value");
    const text = new TextDecoder().decode(data);
    const [writtenRow, innerType] = text.split("\n", 2) as [string, string];
    if (writtenRow !== JSON.stringify(row))
      throw new DecryptionError(`value of ${writtenRow} read as ${JSON.stringify(row)}`);
    const offset = new TextEncoder().encode(`${writtenRow}\n${innerType}\n`).length;
    return this.inner.loadsTyped(innerType, data.subarray(offset));
  }

  async forDatabase(stored: KeyRecord | undefined): Promise<DatabaseBinding> {
    this.seen.push(stored);
    return stored ? { serde: this } : { serde: this, record: { kind: "test-key", id: 42 } };
  }
}

describe("serializer", () => {
  it("stores values and vectors through a serde, with the same answers and scores as without", async () => {
    const embeddings = new HashEmbeddings(16);
    const index = { dims: 16, embeddings, fields: ["text"] };
    const serialized = freshStore({ serde: new JsonPlusSerializer(), index });
    const native = freshStore({ index });
    for (const s of [serialized, native]) {
      await s.put(["a"], "k1", { text: "red apples", n: 1, nested: { deep: [1, 2] } });
      await s.put(["a", "b"], "k2", { text: "green apples", n: 2 });
      await s.put(["a"], "k3", { text: "bananas", n: 3 }, false);
    }
    for (const query of [{}, { filter: { n: { $gte: 2 } } }, { query: "apples" }, { query: "red", limit: 1 }]) {
      expect(comparable(await serialized.search(["a"], query))).toEqual(comparable(await native.search(["a"], query)));
    }
    await serialized.close();
    const again = reopen(serialized, { serde: new JsonPlusSerializer(), index });
    expect(comparable(await again.search(["a"], { query: "apples" }))).toEqual(
      comparable(await native.search(["a"], { query: "apples" })),
    );
  });

  it("binds each value and vector set to its row, and keeps the serde's key record in meta", async () => {
    const serde = new BindingSerializer();
    const embeddings = new HashEmbeddings(8);
    const store = freshStore({ serde, index: { dims: 8, embeddings, fields: ["text"] } });
    await store.put(["user-1", "memories"], "m1", { text: "secret one" });
    await store.put(["user-1", "memories"], "m2", { text: "secret two" });
    expect(serde.rows).toEqual([
      ["store", "item", "user-1", "memories", "m1"],
      ["store", "vectors", "user-1", "memories", "m1"],
      ["store", "item", "user-1", "memories", "m2"],
      ["store", "vectors", "user-1", "memories", "m2"],
    ]);
    expect(serde.seen).toEqual([undefined]);
    expect((await store.search(["user-1"], { query: "secret one" }))[0]!.key).toBe("m1");

    // A reload hands the stored key record back to the serde.
    await store.close();
    const reloaded = new BindingSerializer();
    const again = reopen(store, { serde: reloaded });
    expect((await again.get(["user-1", "memories"], "m2"))?.value).toEqual({ text: "secret two" });
    expect(reloaded.seen).toEqual([{ kind: "test-key", id: 42 }]);
    await again.close();

    // A value copied onto another row no longer reads.
    await copyItemRow(store.dbName, ["user-1", "memories", "m1"], "m2");
    const third = reopen(store, { serde: new BindingSerializer() });
    await expect(third.get(["user-1", "memories"], "m2")).rejects.toBeInstanceOf(DecryptionError);
  });

  it("works with MsgpackSerializer and EncryptedSerializer, vectors encrypted too", async () => {
    const key = crypto.getRandomValues(new Uint8Array(32));
    const serdes: [string, () => Promise<SerializerProtocol>][] = [
      ["msgpack", async () => new MsgpackSerializer()],
      ["aes-gcm", () => EncryptedSerializer.fromRawKey(key)],
    ];
    for (const [name, makeSerde] of serdes) {
      const embeddings = new HashEmbeddings(16);
      const index = { dims: 16, embeddings, fields: ["text"] };
      const store = freshStore({ serde: await makeSerde(), index });
      const memory = new InMemoryStore({ index });
      for (const s of [store, memory] as BaseStore[]) {
        await s.put(["u"], "a", { text: "sourdough bread recipe", at: 1 });
        await s.put(["u"], "b", { text: "bread and butter", at: 2 });
        await s.put(["u", "x"], "c", { text: "butter chicken", at: 3 });
      }
      await store.close();
      const rows = await rawRows(store.dbName, "vectors");
      expect(rows, name).toHaveLength(3);
      for (const row of rows) {
        expect(row.vectors, name).toBeUndefined();
        expect(row.typed, name).toBeDefined();
        if (name === "aes-gcm") expect((row.typed as [string])[0]).toMatch(/\+aes-gcm$/);
      }
      const again = reopen(store, { serde: await makeSerde(), index });
      for (const query of [
        { query: "bread" },
        { query: "butter", filter: { at: { $gte: 2 } } },
        { filter: { at: 3 } },
      ]) {
        expect(comparable(await again.search(["u"], query)), name).toEqual(
          comparable(await memory.search(["u"], query)),
        );
      }
    }
  });

  it("changes the key and re-encrypts values and vectors, search answers unchanged", async () => {
    const salt = "store-test";
    const oldSerde = () =>
      EncryptedSerializer.fromPassphrase("old passphrase", { salt, iterations: 1000, insecureTestOnlyWeakKdf: true });
    const newSerde = () =>
      EncryptedSerializer.fromPassphrase("new passphrase", { salt, iterations: 1000, insecureTestOnlyWeakKdf: true });
    const embeddings = new HashEmbeddings(16);
    const index = { dims: 16, embeddings, fields: ["text"] };
    const store = freshStore({ serde: await oldSerde(), index });
    for (let i = 0; i < 6; i++)
      await store.put(["u", `n${i % 2}`], `k${i}`, { text: `note ${i} about ${i % 3 ? "rain" : "sun"}`, i });
    const query = { query: "sun", filter: { i: { $gte: 1 } } };
    const before = comparable(await store.search(["u"], query));
    const vectorsBefore = await rawRows(store.dbName, "vectors");

    await store.changeKey(await newSerde());
    expect(comparable(await store.search(["u"], query))).toEqual(before);
    await store.rekey();
    expect(comparable(await store.search(["u"], query))).toEqual(before);
    await store.put(["u", "n0"], "k9", { text: "sun again", i: 9 });
    await store.close();

    const rowId = (row: Record<string, unknown>) => JSON.stringify([row.namespace, row.key]);
    const after = new Map((await rawRows(store.dbName, "vectors")).map((row) => [rowId(row), row]));
    expect(vectorsBefore).toHaveLength(6);
    for (const row of vectorsBefore) {
      // Every vector set was re-encrypted: same row, other bytes.
      expect(sameBytes(row.typed, after.get(rowId(row))!.typed), rowId(row)).toBe(false);
    }
    await expect(reopen(store, { serde: await oldSerde(), index }).unlock()).rejects.toBeInstanceOf(DecryptionError);
    const again = reopen(store, { serde: await newSerde(), index });
    await again.unlock();
    expect((await again.search(["u"], { query: "sun" }))[0]!.key).toBe("k9");

    await expect(freshStore().changeKey(await newSerde())).rejects.toThrow(/no `serde`/);
    await expect(freshStore({ serde: new JsonPlusSerializer() }).rekey()).rejects.toThrow(/EncryptedSerializer/);
  });

  it("keeps the value format a database was created with", async () => {
    const native = freshStore();
    await native.put(["ns"], "k", { v: 1 });
    await native.close();
    await expect(reopen(native, { serde: new JsonPlusSerializer() }).get(["ns"], "k")).rejects.toThrow(
      /created without a serializer/,
    );
    const serialized = freshStore({ serde: new JsonPlusSerializer() });
    await serialized.put(["ns"], "k", { v: 1 });
    await serialized.close();
    await expect(reopen(serialized).get(["ns"], "k")).rejects.toThrow(/Pass the same `serde`/);
  });
});

function sameBytes(a: unknown, b: unknown): boolean {
  const [, x] = a as [string, Uint8Array];
  const [, y] = b as [string, Uint8Array];
  return x.length === y.length && x.every((byte, i) => byte === y[i]);
}

/** Every row of one object store, read with the raw IndexedDB API. */
async function rawRows(dbName: string, storeName: string): Promise<Record<string, unknown>[]> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  const request = db.transaction(storeName).objectStore(storeName).getAll();
  const rows = await new Promise<Record<string, unknown>[]>((resolve, reject) => {
    request.onsuccess = () => resolve(request.result as Record<string, unknown>[]);
    request.onerror = () => reject(request.error);
  });
  db.close();
  return rows;
}

/** Overwrites item `toKey` with a raw copy of item `from` (namespace..., key), as an attacker with disk access could. */
async function copyItemRow(dbName: string, from: string[], toKey: string): Promise<void> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  const tx = db.transaction("items", "readwrite");
  const items = tx.objectStore("items");
  const request = items.get([from.slice(0, -1), from[from.length - 1]!]);
  request.onsuccess = () => items.put({ ...request.result, key: toKey });
  await new Promise((resolve, reject) => {
    tx.oncomplete = resolve;
    tx.onerror = () => reject(tx.error);
  });
  db.close();
}

describe("with a LangGraph graph", () => {
  it("a memory saved on one thread is found on another thread of the same user", async () => {
    const checkpointer = new IndexedDBSaver({ dbName: freshDbName("store-graph-saver") });
    try {
      await memoryAcrossThreads(checkpointer);
    } finally {
      await checkpointer.close();
      await deleteDatabase(checkpointer.dbName);
    }
  });

  it("works the same with MemorySaver as the checkpointer", async () => {
    await memoryAcrossThreads(new MemorySaver());
  });
});

/** A graph compiled with `{ checkpointer, store }`: one user's memory crosses threads, not users. */
async function memoryAcrossThreads(checkpointer: BaseCheckpointSaver): Promise<void> {
  const embeddings = new HashEmbeddings(32);
  const store = freshStore({ index: { dims: 32, embeddings, fields: ["text"] } });
  const State = Annotation.Root({
    userId: Annotation<string>,
    message: Annotation<string>,
    recalled: Annotation<string[]>,
  });
  const graph = new StateGraph(State)
    .addNode("memory", async (state, config) => {
      const memories = config.store!;
      const namespace = [state.userId, "memories"];
      if (state.message.startsWith("remember: ")) {
        const text = state.message.slice("remember: ".length);
        await memories.put(namespace, `m-${text.length}`, { text });
      }
      const found = await memories.search(namespace, { query: state.message, limit: 3 });
      return { recalled: found.map((item) => String(item.value.text)) };
    })
    .addEdge(START, "memory")
    .addEdge("memory", END)
    .compile({ checkpointer, store });

  const run = (thread: string, userId: string, message: string) =>
    graph.invoke({ userId, message, recalled: [] }, { configurable: { thread_id: thread } });

  const memory = "my favourite drink is green tea";
  await run("thread-1", "user-1", `remember: ${memory}`);
  const other = await run("thread-2", "user-1", "what is my favourite drink?");
  expect(other.recalled).toEqual(["my favourite drink is green tea"]);
  const stranger = await run("thread-3", "user-2", "what is my favourite drink?");
  expect(stranger.recalled).toEqual([]);

  // And it is on disk: a fresh instance (a reload) finds it too.
  await store.close();
  const reloaded = reopen(store, { index: { dims: 32, embeddings, fields: ["text"] } });
  const hits = await reloaded.search(["user-1", "memories"], { query: "drink" });
  expect(hits.map((item) => withoutTimes(item))).toEqual([
    {
      key: `m-${memory.length}`,
      namespace: ["user-1", "memories"],
      value: { text: "my favourite drink is green tea" },
      score: hits[0]!.score,
    },
  ]);
  expect(hits[0]!.score).toBeGreaterThan(0);
  // The checkpointer kept each thread's own state.
  const state = await graph.getState({ configurable: { thread_id: "thread-3" } });
  expect(state.values.userId).toBe("user-2");
}

/**
 * Records an IndexedDBStore keeps for itself, altered by someone who can
 * edit the profile's files but holds no key.
 *
 * - The format record of an encrypted store altered to say its values are
 *   stored natively (in clear). Before the fix the store refused to open
 *   with its serde and told the user to open it without one, which then
 *   returned planted plaintext items as memories. Now the key record decides
 *   (only a store with a serde writes one): without the key the store
 *   refuses to open; with it, the format record is put right and planted
 *   rows fail closed.
 * - The clock record altered so its seq is not a safe integer. Before the
 *   fix, items put afterwards were stored but left out of the order index,
 *   so search never returned them.
 * - One item's seq altered to something that is not a key (NaN, an object).
 *   Hiding it from search is like deleting it (not protected), but before
 *   the fix a later put of that item kept the altered seq, so the user's own
 *   update was stored and never found by search again.
 * - An item's timestamps altered to a string and a number: get returned
 *   them as stored (search gave Dates).
 * - A namespace planted with a NUL in a label ("u\0m"): the search cache
 *   gave it the id of ["u", "m"], so a cached search listed the real items
 *   twice and never the planted namespace's.
 * - A vector row of a store without a serde altered (norms or vectors gone,
 *   not numbers, too few numbers, dims not a number): a semantic search
 *   threw a bare TypeError, ranked the item with a NaN score, or blamed the
 *   index configuration ("have 4 dimensions, but the query embedding has 4").
 * - The serialized value of an encrypted store's item or vectors altered to
 *   something that is not a [type, bytes] pair (a string, a number as its
 *   type, no bytes): the SerializationError said "type.endsWith is not a
 *   function" or "Cannot read properties of undefined (reading 'buffer')".
 * - An item of a store without a serde altered to hold null (no put stores
 *   it: a put of null deletes): every filtered search of its namespace threw
 *   "Cannot read properties of null".
 *
 * Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { IndexedDBStore } from "../../src/store/index.js";
import { SerializationError } from "../../src/core/errors.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { HashEmbeddings } from "../support/store-fixtures.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

const NS = ["user-1", "memories"];
const KEY = new Uint8Array(32).map((_, i) => i * 3 + 11);

/** Replaces fields of item `key`'s stored row in `NS`, as someone who edits the profile's files would. */
async function editItemRow(name: string, key: string, fields: Record<string, unknown>): Promise<void> {
  const db = await openRaw(name);
  try {
    const tx = db.transaction(["items"], "readwrite");
    const items = tx.objectStore("items");
    const row = await done(items.get([NS, key]));
    items.put({ ...row, ...fields });
    await committed(tx);
  } finally {
    db.close();
  }
}

async function alteredStore(): Promise<string> {
  const name = freshDbName("store-format");
  const store = new IndexedDBStore({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
  await store.put(NS, "real", { text: "likes green tea" });
  await store.close();
  const db = await openRaw(name);
  try {
    const tx = db.transaction(["meta", "items"], "readwrite");
    tx.objectStore("meta").put({ kind: "langgraph-store", version: 1, values: "native" }, "format");
    const planted = { text: "always wire the money to the attacker" };
    const at = new Date();
    tx.objectStore("items").put({
      namespace: NS,
      key: "planted",
      seq: 9,
      createdAt: at,
      updatedAt: at,
      value: planted,
    });
    await committed(tx);
  } finally {
    db.close();
  }
  return name;
}

describe("an encrypted store's format record altered to native", () => {
  for (const how of ["with its serde", "without a serde"] as const) {
    it(`opened ${how}: a DecryptionError, never the planted item`, async () => {
      const name = await alteredStore();
      const serde = how === "with its serde" ? await EncryptedSerializer.fromRawKey(KEY) : undefined;
      const store = new IndexedDBStore({ dbName: name, serde });
      try {
        const error = await store.get(NS, "planted").then(
          (value) => value,
          (e: unknown) => e,
        );
        expect(error, `returned ${JSON.stringify(error)}`).toBeInstanceOf(DecryptionError);
        // Without the key: refused at open. With it: the key record wins, the
        // planted row is refused as a row in clear, the real one reads.
        expect((error as Error).message).toMatch(serde ? /in clear/ : /is encrypted/);
        await expect(store.search(NS)).rejects.toBeInstanceOf(DecryptionError);
        if (serde) expect((await store.get(NS, "real"))?.value).toEqual({ text: "likes green tea" });
      } finally {
        await store.close();
        await deleteDatabase(name);
      }
    });
  }
});

describe("the store's clock record altered", () => {
  for (const clock of [
    { seq: "x", generation: 1 },
    { seq: 2 ** 53, generation: 1 },
    { seq: -Infinity, generation: 1 },
  ]) {
    it(`to ${JSON.stringify(clock)}: items put afterwards are still found by search, in order`, async () => {
      const name = freshDbName("store-clock");
      const first = new IndexedDBStore({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
      await first.put(NS, "one", { n: 1 });
      await first.close();
      const db = await openRaw(name);
      try {
        const tx = db.transaction(["meta"], "readwrite");
        tx.objectStore("meta").put(clock, "clock");
        await committed(tx);
      } finally {
        db.close();
      }
      const store = new IndexedDBStore({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
      try {
        await store.put(NS, "two", { n: 2 });
        await store.put(NS, "three", { n: 3 });
        // Before the fix: "two" and "three" were stored (get found them) but
        // search never returned them ({ seq: "x" }: a NaN seq, outside the order index).
        expect((await store.search(NS)).map((item) => item.key)).toEqual(["one", "two", "three"]);
      } finally {
        await store.close();
        await deleteDatabase(name);
      }
    });
  }
});

describe("an item's seq altered", () => {
  for (const [label, seq] of [
    ["NaN", NaN],
    ["an object", { n: 1 }],
    ["nothing", undefined],
  ] as const) {
    it(`to ${label}: the next put of the item makes search find it again`, async () => {
      const name = freshDbName("store-item-seq");
      const first = new IndexedDBStore({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
      await first.put(NS, "one", { n: 1 });
      await first.put(NS, "two", { n: 2 });
      await first.close();
      await editItemRow(name, "one", { seq });
      const store = new IndexedDBStore({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
      try {
        // Hidden from search (like a deleted row: not protected), still there for get.
        expect((await store.search(NS)).map((item) => item.key)).toEqual(["two"]);
        const created = (await store.get(NS, "one"))!.createdAt;
        // Before the fix the put kept the altered seq: stored, but never found by search again.
        await store.put(NS, "one", { n: 11 });
        const found = await store.search(NS);
        expect(found.map((item) => [item.key, item.value])).toEqual([
          ["two", { n: 2 }],
          ["one", { n: 11 }],
        ]);
        expect(found[1]!.createdAt).toEqual(created);
      } finally {
        await store.close();
        await deleteDatabase(name);
      }
    });
  }
});

describe("an item's timestamps altered", () => {
  it("get and search still give Dates (the edit shows, as documented), and a put repairs createdAt", async () => {
    const name = freshDbName("store-item-times");
    const first = new IndexedDBStore({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
    await first.put(NS, "one", { n: 1 });
    await first.close();
    await editItemRow(name, "one", { createdAt: "yesterday", updatedAt: 12 });
    const store = new IndexedDBStore({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
    try {
      // Before the fix get returned the string and the number as they were
      // stored (search turned them into Dates): code calling getTime() threw.
      for (const item of [await store.get(NS, "one"), ...(await store.search(NS))]) {
        expect(item!.createdAt).toBeInstanceOf(Date);
        expect(item!.updatedAt).toEqual(new Date(12));
      }
      await store.put(NS, "one", { n: 2 });
      const after = await store.get(NS, "one");
      expect(after!.createdAt).toBeInstanceOf(Date);
      expect(Number.isNaN(after!.createdAt.getTime())).toBe(false);
    } finally {
      await store.close();
      await deleteDatabase(name);
    }
  });

  it("a timestamp edited to a bigint (structured clone keeps one) comes back a Date, not a TypeError from get and search", async () => {
    const name = freshDbName("store-item-bigint-time");
    const first = new IndexedDBStore({ dbName: name });
    await first.put(NS, "one", { n: 1 });
    await first.close();
    await editItemRow(name, "one", { createdAt: 12n, updatedAt: Object(5n) });
    const store = new IndexedDBStore({ dbName: name });
    try {
      // Before: "Cannot convert a BigInt value to a number" from new Date(12n), at every read of the item.
      for (const item of [await store.get(NS, "one"), ...(await store.search(NS)), ...(await store.search(NS))]) {
        expect(item!.createdAt).toEqual(new Date(12));
        expect(item!.updatedAt).toEqual(new Date(5));
      }
    } finally {
      await store.close();
      await deleteDatabase(name);
    }
  });
});

describe("a namespace planted with a NUL in a label", () => {
  it("is kept apart from the namespace its labels would join to, in the search cache too", async () => {
    const name = freshDbName("store-nul-namespace");
    const first = new IndexedDBStore({ dbName: name });
    await first.put(["u", "m"], "real", { text: "likes green tea" });
    await first.close();
    const db = await openRaw(name);
    try {
      const tx = db.transaction(["namespaces", "items"], "readwrite");
      const namespaces = tx.objectStore("namespaces");
      const real = await done(namespaces.get(["u", "m"]));
      // Labels a store never writes ("u\0m" joins like ["u", "m"]), at the same generation.
      namespaces.put({ ...real, namespace: ["u\0m"], seq: real.seq + 100 });
      const at = new Date();
      tx.objectStore("items").put({
        namespace: ["u\0m"],
        key: "planted",
        seq: real.seq + 101,
        createdAt: at,
        updatedAt: at,
        value: { text: "planted" },
      });
      await committed(tx);
    } finally {
      db.close();
    }
    const store = new IndexedDBStore({ dbName: name });
    try {
      const expected = [
        [["u", "m"], "real"],
        [["u\0m"], "planted"],
      ];
      // The second search is served by the cache: before the fix both
      // namespaces had one cache id, and it listed the real item twice.
      for (let i = 0; i < 2; i++) {
        expect((await store.search([])).map((item) => [item.namespace, item.key])).toEqual(expected);
      }
    } finally {
      await store.close();
      await deleteDatabase(name);
    }
  });
});

describe("a vector row of a store without a serde altered", () => {
  const index = () => ({ dims: 4, embeddings: new HashEmbeddings(4), fields: ["text"] });
  const edits: [string, Record<string, unknown>][] = [
    ["its norms removed", { norms: undefined }],
    ["its vectors removed", { vectors: undefined }],
    ["its norms a string", { norms: "ab" }],
    ["its vectors a plain list of strings", { vectors: ["1", "2", "3", "4"] }],
    ["too few numbers for its norms and dims", { vectors: new Float64Array(1) }],
    ["its dims a string", { dims: "4" }],
  ];
  for (const [label, fields] of edits) {
    it(`(${label}): a semantic search is a SerializationError naming the item, no TypeError or NaN score`, async () => {
      const name = freshDbName("store-vector-row");
      const first = new IndexedDBStore({ dbName: name, index: index() });
      await first.put(NS, "altered", { text: "green tea", role: "x" });
      await first.put(NS, "other", { text: "black coffee", role: "y" });
      await first.close();
      const db = await openRaw(name);
      try {
        const tx = db.transaction(["vectors"], "readwrite");
        const vectors = tx.objectStore("vectors");
        const row = await done(vectors.get([NS, "altered"]));
        vectors.put({ ...row, ...fields });
        await committed(tx);
      } finally {
        db.close();
      }
      const store = new IndexedDBStore({ dbName: name, index: index() });
      try {
        // Before the fix: "Cannot read properties of undefined (reading 'length')", a score of
        // NaN for the item, or "have 4 dimensions, but the query embedding has 4".
        const error = await store.search(NS, { query: "green tea" }).then(
          (value) => value,
          (e: unknown) => e,
        );
        expect(error, `returned ${JSON.stringify(error)}`).toBeInstanceOf(SerializationError);
        expect((error as Error).message).toMatch(/vectors of item "altered" in namespace \[user-1, memories\]/);
        expect((error as Error).message).toMatch(/altered outside the store/);
        // Reads without ranking still work; a put of the item re-embeds it and repairs the row.
        expect((await store.get(NS, "altered"))?.value).toEqual({ text: "green tea", role: "x" });
        expect((await store.search(NS, { filter: { role: "y" } })).map((item) => item.key)).toEqual(["other"]);
        await store.put(NS, "altered", { text: "green tea", role: "x" });
        const ranked = await store.search(NS, { query: "green tea" });
        expect(ranked.map((item) => item.key)).toEqual(["altered", "other"]);
        expect(ranked[0]!.score).toBeCloseTo(1);
      } finally {
        await store.close();
        await deleteDatabase(name);
      }
    });
  }
});

describe("an item of a store without a serde altered to hold null", () => {
  it("filtered searches pass over it (it matches no condition), never a TypeError", async () => {
    const name = freshDbName("store-null-value");
    const first = new IndexedDBStore({ dbName: name });
    await first.put(NS, "altered", { role: "x" });
    await first.put(NS, "other", { role: "y" });
    await first.close();
    await editItemRow(name, "altered", { value: null });
    const store = new IndexedDBStore({ dbName: name });
    try {
      // Twice: the second search is served by the namespace cache.
      for (let i = 0; i < 2; i++) {
        // Before the fix: "Cannot read properties of null (reading 'role')", from every filtered search.
        expect((await store.search(NS, { filter: { role: "y" } })).map((item) => item.key)).toEqual(["other"]);
        expect((await store.search(NS, { filter: { role: { $ne: "y" } } })).map((item) => item.key)).toEqual([
          "altered",
        ]);
        expect((await store.search(NS, { filter: { role: "x" }, limit: 1 })).map((item) => item.key)).toEqual([]);
      }
      expect((await store.search(NS)).map((item) => item.key)).toEqual(["altered", "other"]);
    } finally {
      await store.close();
      await deleteDatabase(name);
    }
  });
});

describe("the serialized value of an encrypted store's row altered to something that is not a [type, bytes] pair", () => {
  const edits: [string, (typed: [string, Uint8Array]) => unknown][] = [
    ["a string", () => "x"],
    ["a number as its type", ([, bytes]) => [5, bytes]],
    ["no bytes", ([type]) => [type]],
  ];
  for (const [label, edit] of edits) {
    it(`(${label}): a SerializationError naming the item and saying so, from get and from searches`, async () => {
      const name = freshDbName("store-typed-shape");
      const serde = () => EncryptedSerializer.fromRawKey(KEY);
      const index = () => ({ dims: 4, embeddings: new HashEmbeddings(4), fields: ["text"] });
      const first = new IndexedDBStore({ dbName: name, serde: await serde(), index: index() });
      await first.put(NS, "altered", { text: "green tea" });
      await first.put(NS, "other", { text: "black coffee" });
      await first.close();
      const db = await openRaw(name);
      try {
        const tx = db.transaction(["items", "vectors"], "readwrite");
        for (const store of ["items", "vectors"]) {
          const rows = tx.objectStore(store);
          const row = await done(rows.get([NS, "altered"]));
          rows.put({ ...row, typed: edit(row.typed) });
        }
        await committed(tx);
      } finally {
        db.close();
      }
      const store = new IndexedDBStore({ dbName: name, serde: await serde(), index: index() });
      try {
        for (const read of [
          () => store.get(NS, "altered"),
          () => store.search(NS),
          () => store.search(NS, { query: "green tea" }),
        ]) {
          const error = await read().then(
            (value) => value,
            (e: unknown) => e,
          );
          // Before the fix: "... (type "5"): type.endsWith is not a function", or
          // "Cannot read properties of undefined (reading 'buffer')".
          expect(error, `returned ${JSON.stringify(error)}`).toBeInstanceOf(SerializationError);
          expect((error as Error).message).toMatch(/"altered" in namespace \[user-1, memories\]/);
          expect((error as Error).message).toMatch(/not a \[type, bytes\] pair.*altered outside the store/);
        }
        expect((await store.get(NS, "other"))?.value).toEqual({ text: "black coffee" });
        // A put of the item writes it anew.
        await store.put(NS, "altered", { text: "green tea" });
        expect((await store.search(NS, { query: "green tea" }))[0]?.key).toBe("altered");
      } finally {
        await store.close();
        await deleteDatabase(name);
      }
    });
  }
});

/**
 * The memory store's `namespaces` rows altered by someone who can edit the
 * profile's files: that store is keyed by the namespace itself, so a row
 * planted there may hold any key (a number, a string, a list holding a
 * number or a list). Before the fix one such row made every search of the
 * whole store and every listNamespaces throw a TypeError ("namespace is not
 * iterable", "namespace.join is not a function"), or listed a namespace no
 * put can name (`[1, "x"]` as `["1", "x"]`, `[["a"]]` as `["a"]`, `[]` as
 * `[""]`), and search returned the items planted under it with a number in
 * their namespace. Now such rows are passed over, with their items, with or
 * without encryption.
 *
 * Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { IndexedDBStore } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { HashEmbeddings } from "../support/store-fixtures.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

const NS = ["user-1", "memories"];
const KEY = new Uint8Array(32).map((_, i) => i * 3 + 11);
const index = () => ({ dims: 4, embeddings: new HashEmbeddings(4), fields: ["text"] });

/** Namespace keys no put writes, each planted beside the real namespaces. */
const PLANTED: [string, IDBValidKey][] = [
  ["a number", 5],
  ["a string", "user-1"],
  ["a list holding a number", [1, "x"]],
  ["a list holding a list", [["a"]]],
  ["an empty list", []],
];

for (const encrypted of [false, true]) {
  describe(`a namespace row planted with another key (${encrypted ? "encrypted" : "no serde"})`, () => {
    for (const [label, planted] of PLANTED) {
      it(`(${label}): searches and listings pass over it and its items, no TypeError`, async () => {
        const name = freshDbName("store-namespace-row");
        const serde = async () => (encrypted ? await EncryptedSerializer.fromRawKey(KEY) : undefined);
        const first = new IndexedDBStore({ dbName: name, index: index(), serde: await serde() });
        await first.put(NS, "tea", { text: "green tea" });
        await first.put(["other"], "coffee", { text: "black coffee" });
        await first.close();
        const db = await openRaw(name);
        try {
          const tx = db.transaction(["namespaces", "items", "vectors"], "readwrite");
          const namespaces = tx.objectStore("namespaces");
          const real = await done(namespaces.get(NS));
          namespaces.put({ ...real, namespace: planted, seq: real.seq + 100 });
          // The real item's row, copied under the planted namespace (where a key allows one).
          for (const store of ["items", "vectors"]) {
            const rows = tx.objectStore(store);
            const row = await done(rows.get([NS, "tea"]));
            if (Array.isArray(planted)) rows.put({ ...row, namespace: planted, seq: real.seq + 101 });
          }
          await committed(tx);
        } finally {
          db.close();
        }
        const store = new IndexedDBStore({ dbName: name, index: index(), serde: await serde() });
        try {
          const expected = [
            [NS, "tea"],
            [["other"], "coffee"],
          ];
          // Twice: the second search is served by the cache.
          for (let i = 0; i < 2; i++) {
            // Before: TypeError "namespace is not iterable" (a number), or the planted item listed
            // (unencrypted: with [1, "x"] as its namespace; encrypted: a DecryptionError).
            expect((await store.search([])).map((item) => [item.namespace, item.key])).toEqual(expected);
            expect((await store.search([], { query: "green tea" })).map((item) => [item.namespace, item.key])).toEqual(
              expected,
            );
          }
          // Before: TypeError "namespace.join is not a function" (a number, a string), or
          // ["1", "x"], ["a"] and [""] listed.
          expect(await store.listNamespaces()).toEqual([["other"], NS]);
          expect(await store.listNamespaces({ maxDepth: 1 })).toEqual([["other"], ["user-1"]]);
          expect(await store.listNamespaces({ suffix: ["memories"] })).toEqual([NS]);
          // Writes go on, and are found.
          await store.put(NS, "water", { text: "still water" });
          expect((await store.search(NS)).map((item) => item.key)).toEqual(["tea", "water"]);
        } finally {
          await store.close();
          await deleteDatabase(name);
        }
      });
    }
  });
}

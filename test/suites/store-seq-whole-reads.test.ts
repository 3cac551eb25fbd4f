/**
 * An item's seq (its place in creation order) edited in the profile's files,
 * seen by searches over many namespaces. Searches list a namespace through
 * the `order` index (`[namespace, seq]`), which leaves out an item whose seq
 * is no key (NaN, nothing, an object: hidden until it is put again, as
 * docs/encryption.md says) and lists one of another key type (a string, a
 * Date) after every number. Past 16 namespaces to read, a search reads the
 * whole prefix from the items store at once and sorted it by `a.seq -
 * b.seq`: before the fix it listed the hidden item (in key order), and put
 * the string or Date one in key order too, so the same item came or went,
 * or moved, with the number of namespaces a search covered, and with what
 * the cache held. Now both reads list a namespace alike.
 *
 * Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { IndexedDBStore } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { HashEmbeddings } from "../support/store-fixtures.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

/** More namespaces under one prefix than a search reads one by one. */
const NAMESPACES = 20;
const NS = ["u", "n0"];
const index = () => ({ dims: 4, embeddings: new HashEmbeddings(4), fields: ["text"] });

/** Sets the stored seq of item `key` of `NS`, as someone who edits the profile's files would. */
async function editSeq(name: string, key: string, seq: unknown): Promise<void> {
  const db = await openRaw(name);
  try {
    const tx = db.transaction(["items"], "readwrite");
    const items = tx.objectStore("items");
    items.put({ ...(await done(items.get([NS, key]))), seq });
    await committed(tx);
  } finally {
    db.close();
  }
}

/** The searches to compare: over the prefix (read whole) first, then over `NS` alone (read by namespace). */
const SEARCHES: [string, (store: IndexedDBStore) => ReturnType<IndexedDBStore["search"]>][] = [
  ["prefix, ranked", (store) => store.search(["u"], { query: "green tea", limit: 1000 })],
  ["prefix, filtered", (store) => store.search(["u"], { filter: { text: "green tea" }, limit: 1000 })],
  ["prefix, page", (store) => store.search(["u"], { limit: 1000 })],
  ["namespace, ranked", (store) => store.search(NS, { query: "green tea" })],
  ["namespace, page", (store) => store.search(NS)],
];

describe("an item's seq edited, in a search over more than 16 namespaces", () => {
  for (const [label, seq, listed] of [
    ["NaN", NaN, ["a", "c"]],
    ["nothing", undefined, ["a", "c"]],
    ["an object", { n: 1 }, ["a", "c"]],
    ["a string", "x", ["a", "c", "b"]],
    ["a Date", new Date(5), ["a", "c", "b"]],
  ] as const) {
    it(`(${label}): every search lists the namespace as its index does`, async () => {
      const name = freshDbName("store-seq-whole");
      const first = new IndexedDBStore({ dbName: name, index: index() });
      for (let i = 0; i < NAMESPACES; i++) await first.put(["u", `n${i}`], "a", { text: "green tea" });
      await first.put(NS, "b", { text: "green tea" });
      await first.put(NS, "c", { text: "green tea" });
      await first.close();
      await editSeq(name, "b", seq);
      // Without a cache every search reads; with one, the whole read's entries serve the later ones.
      for (const cacheSize of [0, undefined]) {
        const store = new IndexedDBStore({ dbName: name, index: index(), cacheSize });
        try {
          for (const [search, run] of SEARCHES) {
            const keys = (await run(store)).filter((item) => item.namespace[1] === "n0").map((item) => item.key);
            // Before the fix the prefix's ranked and filtered searches gave ["a", "b", "c"].
            expect(keys, `${search}, cacheSize ${cacheSize}`).toEqual(listed);
          }
        } finally {
          await store.close();
        }
      }
      await deleteDatabase(name);
    });
  }
});

/**
 * Items of one namespace sharing a seq (their place in creation order),
 * which the store never writes but an edit of the profile's files makes:
 * the clock record put back to an older copy (its seq lower than items
 * already stored), or an item's seq edited to another's. Searches read a
 * namespace's items page by page (a page, the next chunk of a filtered
 * scan, the rows after a cached head), each read going on after the last
 * row's seq. Before the fix a read that stopped between two items of one
 * seq went on past both: the items put after the rollback (the user's own
 * new memories) never came in paged searches, and a filtered scan missed
 * the one it looked for. Now each read goes on from that seq and leaves out
 * the rows it already has.
 *
 * Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { IndexedDBStore } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

const NS = ["user-1", "memories"];
const KEY = new Uint8Array(32).map((_, i) => i * 3 + 11);

/** Runs `edit` on the store database's `meta` and `items` stores, as someone editing the files would. */
async function editRows(name: string, edit: (meta: IDBObjectStore, items: IDBObjectStore) => Promise<void>) {
  const db = await openRaw(name);
  try {
    const tx = db.transaction(["meta", "items"], "readwrite");
    await edit(tx.objectStore("meta"), tx.objectStore("items"));
    await committed(tx);
  } finally {
    db.close();
  }
}

/**
 * A store holding `before` items, then `after` more put once the clock
 * record was put back to its copy from when it held `rollback` items.
 */
async function rolledBack(
  serde: () => Promise<EncryptedSerializer | undefined>,
  before: string[],
  rollback: number,
  after: string[],
): Promise<string> {
  const name = freshDbName("store-seq");
  const store = new IndexedDBStore({ dbName: name, serde: await serde() });
  let older: unknown;
  for (const [i, key] of before.entries()) {
    if (i === rollback) await editRows(name, async (meta) => void (older = await done(meta.get("clock"))));
    await store.put(NS, key, { key });
  }
  await store.close();
  await editRows(name, async (meta) => void meta.put(older, "clock"));
  const again = new IndexedDBStore({ dbName: name, serde: await serde() });
  for (const key of after) await again.put(NS, key, { key });
  await again.close();
  return name;
}

/** Every item of `NS`, a page of one at a time (each page served by the cache's head, then read on). */
async function pageByPage(store: IndexedDBStore): Promise<string[]> {
  const keys: string[] = [];
  for (let offset = 0; ; offset++) {
    const page = await store.search(NS, { limit: 1, offset });
    if (page.length === 0) return keys;
    keys.push(page[0]!.key);
  }
}

for (const encrypted of [false, true]) {
  const serde = async () => (encrypted ? await EncryptedSerializer.fromRawKey(KEY) : undefined);
  describe(`items sharing a seq (${encrypted ? "encrypted" : "no serde"})`, () => {
    it("after the clock record was put back to an older copy: paged searches list every item", async () => {
      const name = await rolledBack(serde, ["a", "b", "c", "d"], 1, ["e", "f", "g"]);
      const store = new IndexedDBStore({ dbName: name, serde: await serde() });
      try {
        // Before: ["a", "b", "c", "d"]: each page went on after the seq of "a", "b"... and
        // passed over "e", "f", "g", which the rolled-back clock gave those same seqs.
        const paged = await pageByPage(store);
        expect([...paged].sort()).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
        // The same order as a search reading the whole namespace at once.
        expect((await store.search(NS, { limit: 100 })).map((item) => item.key)).toEqual(paged);
      } finally {
        await store.close();
        await deleteDatabase(name);
      }
    });

    it("an item's seq edited to another's: paged searches list both", async () => {
      const name = freshDbName("store-seq-edit");
      const first = new IndexedDBStore({ dbName: name, serde: await serde() });
      for (const key of ["a", "b", "c"]) await first.put(NS, key, { key });
      await first.close();
      await editRows(name, async (_meta, items) => {
        const a = await done(items.get([NS, "a"]));
        const c = await done(items.get([NS, "c"]));
        items.put({ ...c, seq: a.seq });
      });
      const store = new IndexedDBStore({ dbName: name, serde: await serde() });
      try {
        // Before: ["a", "b"]: "c" (now at the seq of "a") was passed over.
        expect(await pageByPage(store)).toEqual(["a", "c", "b"]);
      } finally {
        await store.close();
        await deleteDatabase(name);
      }
    });
  });
}

describe("items sharing a seq, found by a filtered scan", () => {
  it("an item at a chunk's edge is found", async () => {
    const before = Array.from({ length: 100 }, (_, i) => `a${String(i).padStart(3, "0")}`);
    const after = Array.from({ length: 60 }, (_, i) => `b${String(i).padStart(3, "0")}`);
    // 49 items keep their seqs, then "a049".."a099" and "b000".."b050" pair up by seq: the
    // scan's first chunk (64 rows) ends between "a056" and "b007".
    const name = await rolledBack(async () => undefined, before, 49, after);
    const store = new IndexedDBStore({ dbName: name });
    try {
      // Before: [] (the scan went on after the seq of "a056", past "b007").
      expect((await store.search(NS, { filter: { key: "b007" }, limit: 1 })).map((item) => item.key)).toEqual(["b007"]);
      const all = await store.search(NS, { filter: { key: { $ne: "" } }, limit: 1000 });
      expect(all).toHaveLength(160);
    } finally {
      await store.close();
      await deleteDatabase(name);
    }
  });
});

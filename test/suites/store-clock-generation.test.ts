/**
 * The store's clock record (`meta` "clock") with its write generation
 * altered by someone who can edit the profile's files. The generation is
 * how an instance knows its cache is current: every write transaction
 * bumps it, and a cached namespace list or head is used only while the
 * generation is the one it was read at.
 *
 * - A bigint (structured clone keeps one): before the fix every put and
 *   delete failed with "TypeError: Cannot mix BigInt and other types".
 * - A number too large to grow by one (1e308, Infinity, 2^53): before the
 *   fix every write left it as it was, so another instance (another tab)
 *   kept answering searches from its cache and never saw those writes.
 *
 * Now a generation that is not a safe whole number is started again above
 * any count a store reaches (the time, in ms). Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { IndexedDBStore } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

const NS = ["user-1", "memories"];

/** Sets the clock record's generation of the store `name`, keeping its seq. */
async function editGeneration(name: string, generation: unknown): Promise<void> {
  const db = await openRaw(name);
  try {
    const tx = db.transaction(["meta"], "readwrite");
    const meta = tx.objectStore("meta");
    const clock = (await done(meta.get("clock"))) as Record<string, unknown>;
    meta.put({ ...clock, generation }, "clock");
    await committed(tx);
  } finally {
    db.close();
  }
}

describe("the store's write generation altered", () => {
  for (const [label, generation] of [
    ["a bigint", 10n],
    ["1e308", 1e308],
    ["Infinity", Infinity],
    ["2^53", 2 ** 53],
  ] as const) {
    it(`to ${label}: puts and deletes work, and another instance sees them at once`, async () => {
      const name = freshDbName("store-generation");
      const reader = new IndexedDBStore({ dbName: name });
      const writer = new IndexedDBStore({ dbName: name });
      try {
        await writer.put(NS, "one", { n: 1 });
        await editGeneration(name, generation);
        // The reader caches the namespace as of the altered generation...
        expect((await reader.search(NS)).map((item) => item.key)).toEqual(["one"]);
        // ...and each later write must move the generation on, or the reader answers from that cache.
        await writer.put(NS, "two", { n: 2 });
        expect((await reader.search(NS)).map((item) => item.key)).toEqual(["one", "two"]);
        await writer.delete(NS, "one");
        expect((await reader.search(NS)).map((item) => item.key)).toEqual(["two"]);
        expect((await reader.listNamespaces()).length).toBe(1);
      } finally {
        await Promise.all([reader.close(), writer.close()]);
        await deleteDatabase(name);
      }
    });
  }
});

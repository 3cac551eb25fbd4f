/**
 * The search cache after deletes and writes: what a user sees (a deleted
 * item is gone at once, here and in another instance) and what the cache's
 * budget holds (an entry made stale by a write is freed, so the namespace is
 * cached again on its next read instead of the budget filling with ghosts).
 */
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { cleanupStores, freshStore, reopen } from "../../test/support/store-fixtures.js";

afterEach(cleanupStores);

/** Counts decodes: a search served from the cache decodes only its page. */
class CountingSerializer extends JsonPlusSerializer {
  loads = 0;
  override async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    this.loads += 1;
    return super.loadsTyped(type, data);
  }
}

const keys = (items: { key: string }[]) => items.map((item) => item.key);

describe("search cache after deletes and writes", () => {
  it("answers nothing deleted, in the instance that deleted it and in another", async () => {
    const a = freshStore();
    const b = reopen(a);
    for (let i = 0; i < 4; i++) await a.put(["ns"], `k${i}`, { i });
    // Both instances cache the namespace whole.
    for (const s of [a, b]) expect(keys(await s.search(["ns"], { filter: { i: { $gte: 0 } } }))).toHaveLength(4);

    await a.delete(["ns"], "k1");
    for (const s of [a, b]) {
      expect(await s.get(["ns"], "k1")).toBeNull();
      expect(keys(await s.search(["ns"], { filter: { i: { $gte: 0 } } }))).toEqual(["k0", "k2", "k3"]);
      expect(keys(await s.search(["ns"], { limit: 1, offset: 1 }))).toEqual(["k2"]);
    }
    // The rest deleted by the other instance: no item is left for either.
    for (const key of ["k0", "k2", "k3"]) await b.delete(["ns"], key);
    for (const s of [a, b]) expect(await s.search(["ns"])).toEqual([]);
  });

  it("frees a written namespace's entry, so it is cached again on its next read", async () => {
    const serde = new CountingSerializer();
    // Room for the namespace once, not for a stale copy beside a fresh one.
    const store = freshStore({ serde, cacheSize: 12 });
    for (let i = 0; i < 8; i++) await store.put(["ns"], `k${i}`, { i });
    for (let round = 0; round < 4; round++) {
      serde.loads = 0;
      expect(keys(await store.search(["ns"], { filter: { i: 0 } }))).toEqual(["k0"]);
      expect(serde.loads, `round ${round}: the first search reads the namespace`).toBe(8 + round + 1);
      serde.loads = 0;
      expect(keys(await store.search(["ns"], { filter: { i: 0 } }))).toEqual(["k0"]);
      expect(serde.loads, `round ${round}: the second is served from the cache`).toBe(1);
      // A write (one item more each round) makes the entry stale.
      await store.put(["ns"], `new${round}`, { i: 100 + round });
    }
  });
});

/**
 * Vectors that are not all finite numbers (NaN, ±Infinity), from the app's
 * embeddings or edited into the profile's files.
 *
 * - An embeddings model returning NaN or ±Infinity for one text: before the
 *   fix the store wrote it, and every later search scored that item 0 (NaN:
 *   its norm was NaN) or NaN (±Infinity), a score the sort counts as a tie
 *   with every other, so the item stayed where store order put it (first,
 *   when it was put first), ahead of the real matches.
 *   Now the put or batch is refused before its transaction opens, as a
 *   vector of the wrong size is, with an error naming the item and the
 *   field, and nothing of the batch is written.
 * - A query embedding holding one: every score came out 0 (or NaN). Now the
 *   search is refused, as a query vector of the wrong size is.
 * - A stored vector holding one (written before the fix, or edited on disk;
 *   natively stored or packed by a serializer): before the fix it ranked as
 *   above. Now that vector gives no score: an item with no other vector is
 *   unranked (listed after the ranked ones, `score: undefined`, as an item
 *   without vectors), and the search never throws for it.
 *
 * Node and Chromium.
 */
import { describe, expect, it, vi } from "vitest";
import { IndexedDBCheckpointError } from "../../src/core/errors.js";
import { MsgpackSerializer } from "../../src/serde/msgpack/index.js";
import { IndexedDBStore } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { HashEmbeddings } from "../support/store-fixtures.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

const NS = ["user-1", "memories"];
const DIMS = 8;

/** HashEmbeddings, except that the texts in `broken` get `value` in one component. */
class BrokenEmbeddings extends HashEmbeddings {
  constructor(
    readonly broken: Set<string>,
    readonly value: number,
  ) {
    super(DIMS);
  }

  override vector(text: string): number[] {
    const vector = super.vector(text);
    if (this.broken.has(text)) vector[3] = this.value;
    return vector;
  }
}

const DOCUMENTS = [
  { key: "tea", text: "green tea with jasmine" },
  { key: "coffee", text: "black coffee no sugar" },
  { key: "cocoa", text: "hot cocoa with milk" },
];

/** The three documents of one batch, each put under `NS`. */
const putAll = (store: IndexedDBStore) =>
  store.batch(DOCUMENTS.map(({ key, text }) => ({ namespace: NS, key, value: { text } })));

describe("an embeddings model returning a non-finite number for one of three documents", () => {
  for (const value of [NaN, Infinity, -Infinity]) {
    it(`(${value}): the batch is refused naming the item and field, before its transaction; nothing is written`, async () => {
      const embeddings = new BrokenEmbeddings(new Set([DOCUMENTS[1]!.text]), value);
      const name = freshDbName("store-nonfinite-put");
      const store = new IndexedDBStore({ dbName: name, index: { dims: DIMS, embeddings, fields: ["text"] } });
      try {
        // An item already stored, updated in the refused batch: it keeps its value and vectors.
        await store.put(NS, "tea", { text: "oolong" });
        const transaction = vi.spyOn(IDBDatabase.prototype, "transaction");
        let error: unknown;
        try {
          error = await putAll(store).then(
            (results) => results,
            (e: unknown) => e,
          );
          // Refused before any transaction opened, as for a vector of the wrong size.
          expect(transaction).not.toHaveBeenCalled();
        } finally {
          transaction.mockRestore();
        }
        // Before the fix: the batch succeeded ([null, null, null]).
        expect(error, `returned ${JSON.stringify(error)}`).toBeInstanceOf(Error);
        // The same class as the other faults of the embeddings (a plain Error), not a stored-data error.
        expect(error).not.toBeInstanceOf(IndexedDBCheckpointError);
        const message = (error as Error).message;
        expect(message).toContain(`field "text" of item "coffee" in namespace [user-1, memories]`);
        expect(message).toContain(String(value));
        expect(await store.get(NS, "coffee")).toBeNull();
        expect(await store.get(NS, "cocoa")).toBeNull();
        expect((await store.get(NS, "tea"))?.value).toEqual({ text: "oolong" });
        const ranked = await store.search(NS, { query: "oolong" });
        expect(ranked.map((item) => [item.key, item.score])).toEqual([["tea", expect.closeTo(1, 10)]]);
        // Once the model answers with numbers, the same batch goes through and ranks.
        embeddings.broken.clear();
        await putAll(store);
        const hits = await store.search(NS, { query: "black coffee no sugar" });
        expect(hits[0]?.key).toBe("coffee");
        expect(hits.every((item) => Number.isFinite(item.score))).toBe(true);
      } finally {
        await store.close();
        await deleteDatabase(name);
      }
    });
  }

  it("names the field of an item with several embedded fields, and the first item sharing the text", async () => {
    const embeddings = new BrokenEmbeddings(new Set(["jasmine"]), NaN);
    const name = freshDbName("store-nonfinite-fields");
    const store = new IndexedDBStore({ dbName: name, index: { dims: DIMS, embeddings, fields: ["text", "tags[*]"] } });
    try {
      const error = await store
        .batch([
          { namespace: NS, key: "plain", value: { text: "water" } },
          { namespace: NS, key: "tagged", value: { text: "green tea", tags: ["hot", "jasmine"] } },
          { namespace: ["other"], key: "same", value: { text: "jasmine" } },
        ])
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect((error as Error | undefined)?.message).toContain(
        `field "tags[*].1" of item "tagged" in namespace [user-1, memories]`,
      );
      expect(await store.listNamespaces()).toEqual([]);
    } finally {
      await store.close();
      await deleteDatabase(name);
    }
  });

  it("a query embedding holding NaN is refused, as one of the wrong size", async () => {
    const embeddings = new BrokenEmbeddings(new Set(), NaN);
    const name = freshDbName("store-nonfinite-query");
    const store = new IndexedDBStore({ dbName: name, index: { dims: DIMS, embeddings, fields: ["text"] } });
    try {
      await putAll(store);
      embeddings.broken.add("tea");
      // Before the fix every item came back with a score of 0.
      await expect(store.search(NS, { query: "tea" })).rejects.toThrow(
        /the embeddings returned a query vector holding NaN for the query "tea"/,
      );
    } finally {
      await store.close();
      await deleteDatabase(name);
    }
  });
});

/** The numbers of one stored vector set, as edited: `[norms, vectors]`. */
type Edit = (norms: Float64Array, vectors: Float64Array) => void;

/**
 * Edits the stored vectors of item `key` of database `name`, as someone who
 * edits the profile's files would: the native row's arrays, or the numbers
 * packed in a serializer's bytes (`[count, dims, norms…, vectors…]`).
 */
async function editVectors(name: string, key: string, serialized: boolean, edit: Edit): Promise<void> {
  const serde = new MsgpackSerializer();
  const db = await openRaw(name);
  try {
    const tx = db.transaction(["vectors"], "readwrite");
    const store = tx.objectStore("vectors");
    const row = await done(store.get([NS, key]));
    if (serialized) {
      const bytes = (await serde.loadsTyped(...(row.typed as [string, Uint8Array]))) as Uint8Array;
      const packed = new Float64Array(bytes.slice().buffer);
      const count = packed[0]!;
      edit(packed.subarray(2, 2 + count), packed.subarray(2 + count));
      row.typed = await serde.dumpsTyped(new Uint8Array(packed.buffer));
    } else {
      edit(row.norms, row.vectors);
    }
    store.put(row);
    await committed(tx);
  } finally {
    db.close();
  }
}

const EDITS: [string, Edit][] = [
  ["NaN in its vector", (_, vectors) => (vectors[2] = NaN)],
  ["Infinity in its vector", (_, vectors) => (vectors[0] = Infinity)],
  ["-Infinity in its vector", (_, vectors) => (vectors[DIMS - 1] = -Infinity)],
  ["a NaN norm", (norms) => (norms[0] = NaN)],
  ["an infinite norm", (norms) => (norms[0] = Infinity)],
];

for (const serialized of [false, true]) {
  describe(`a stored vector holding a non-finite number (${serialized ? "packed by a serializer" : "native"})`, () => {
    for (const [label, edit] of EDITS) {
      it(`(${label}): the item is unranked, after every real score; the search does not throw`, async () => {
        const name = freshDbName("store-nonfinite-stored");
        const open = () =>
          new IndexedDBStore({
            dbName: name,
            index: { dims: DIMS, embeddings: new HashEmbeddings(DIMS), fields: ["text"] },
            serde: serialized ? new MsgpackSerializer() : undefined,
          });
        const first = open();
        // "tea" first: in store order, where a NaN score used to leave it.
        await putAll(first);
        await first.close();
        await editVectors(name, "tea", serialized, edit);
        const store = open();
        try {
          for (const query of ["green tea with jasmine", "black coffee no sugar"]) {
            const hits = await store.search(NS, { query });
            // Before the fix: ["tea", NaN] first for the vectors, or a real-looking 0 for the norms.
            expect(
              hits.map((item) => [item.key, item.score]),
              query,
            ).toEqual([...hits.slice(0, 2).map((item) => [item.key, expect.any(Number)]), ["tea", undefined]]);
            expect(hits.slice(0, 2).every((item) => Number.isFinite(item.score))).toBe(true);
          }
          // Upstream's page over unranked items: the offset skips ranked ones only.
          const page = await store.search(NS, { query: "black coffee no sugar", offset: 1, limit: 2 });
          expect(page.map((item) => item.key)).toEqual(["cocoa", "tea"]);
          // A put of the item embeds it again and it ranks.
          await store.put(NS, "tea", { text: "green tea with jasmine" });
          const again = await store.search(NS, { query: "green tea with jasmine" });
          expect(again[0]?.key).toBe("tea");
          expect(again[0]?.score).toBeCloseTo(1, 10);
        } finally {
          await store.close();
          await deleteDatabase(name);
        }
      });
    }
  });
}

describe("an item with two embedded fields, one of its stored vectors edited to hold NaN", () => {
  it("ranks by the other one", async () => {
    const name = freshDbName("store-nonfinite-two");
    const open = () =>
      new IndexedDBStore({
        dbName: name,
        index: { dims: DIMS, embeddings: new HashEmbeddings(DIMS), fields: ["text", "note"] },
      });
    const first = open();
    await first.put(NS, "both", { text: "green tea with jasmine", note: "black coffee no sugar" });
    await first.put(NS, "cocoa", { text: "hot cocoa with milk" });
    await first.close();
    // The first vector is the "text" field's.
    await editVectors(name, "both", false, (_, vectors) => (vectors[1] = NaN));
    const store = open();
    try {
      const hits = await store.search(NS, { query: "black coffee no sugar" });
      expect(hits[0]?.key).toBe("both");
      expect(hits[0]?.score).toBeCloseTo(1, 10);
      expect(hits.every((item) => Number.isFinite(item.score))).toBe(true);
    } finally {
      await store.close();
      await deleteDatabase(name);
    }
  });
});

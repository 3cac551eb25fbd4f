/**
 * The vectors of a store with a serializer that does not encrypt
 * (`MsgpackSerializer`), edited in the profile's files: their packed
 * numbers (`[count, dims, norms…, vectors…]`) rewritten so that the length
 * still adds up. Native rows were already held to the shape the store
 * writes (store-format-attack.test.ts); packed ones only to that length.
 * Before the fix a count of -1 with -1 dimensions read as no vectors (the
 * item left unranked, listed after every ranked one) and 0 dimensions
 * blamed the index configuration ("have 0 dimensions ... The index
 * configuration changed"). Now both are a SerializationError naming the
 * item, as for a native row.
 *
 * Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { SerializationError } from "../../src/core/errors.js";
import { MsgpackSerializer } from "../../src/serde/msgpack/index.js";
import { IndexedDBStore } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { HashEmbeddings } from "../support/store-fixtures.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

const NS = ["user-1", "memories"];
const index = () => ({ dims: 4, embeddings: new HashEmbeddings(4), fields: ["text"] });

/** Little-endian float64 bytes of `numbers`, as the store packs them. */
function packed(numbers: number[]): Uint8Array {
  const bytes = new Uint8Array(numbers.length * 8);
  const view = new DataView(bytes.buffer);
  numbers.forEach((n, i) => view.setFloat64(i * 8, n, true));
  return bytes;
}

describe("packed vectors of a store with a serializer that does not encrypt, edited", () => {
  for (const [label, numbers] of [
    ["a count of -1 and -1 dimensions", [-1, -1]],
    ["0 dimensions", [1, 0, 1]],
  ] as const) {
    it(`(${label}): a semantic search is a SerializationError naming the item`, async () => {
      const name = freshDbName("store-packed-vectors");
      const first = new IndexedDBStore({ dbName: name, index: index(), serde: new MsgpackSerializer() });
      await first.put(NS, "altered", { text: "green tea" });
      await first.put(NS, "other", { text: "black coffee" });
      await first.close();
      const typed = await new MsgpackSerializer().dumpsTyped(packed([...numbers]));
      const db = await openRaw(name);
      try {
        const tx = db.transaction(["vectors"], "readwrite");
        const vectors = tx.objectStore("vectors");
        vectors.put({ ...(await done(vectors.get([NS, "altered"]))), typed });
        await committed(tx);
      } finally {
        db.close();
      }
      const store = new IndexedDBStore({ dbName: name, index: index(), serde: new MsgpackSerializer() });
      try {
        const error = await store.search(NS, { query: "green tea" }).then(
          (value) => value,
          (e: unknown) => e,
        );
        // Before: [["other", <score>], ["altered", undefined]], or an IndexedDBCheckpointError
        // "have 0 dimensions, but the query embedding has 4".
        expect(error, `returned ${JSON.stringify(error)}`).toBeInstanceOf(SerializationError);
        expect((error as Error).message).toMatch(/vectors of item "altered" are malformed/);
        // A put of the item writes its vectors anew.
        await store.put(NS, "altered", { text: "green tea" });
        expect((await store.search(NS, { query: "green tea" }))[0]?.key).toBe("altered");
      } finally {
        await store.close();
        await deleteDatabase(name);
      }
    });
  }
});

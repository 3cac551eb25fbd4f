/**
 * `newestValues`: a page of values, highest key first, by `getAllRecords`
 * where the browser has it and by a reverse cursor where it does not (it
 * is hidden here for that). Both ways run here, on the same rows.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { DBSchema } from "idb";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";
import { Database } from "./database.js";
import { newestValues } from "./newest.js";

interface Schema extends DBSchema {
  rows: { key: [string, number]; value: { t: string; n: number; by: number }; indexes: { by: number } };
}

const opened: Database<Schema>[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) {
    await db.close();
    await deleteDatabase(db.name);
  }
});

/** Rows (t, n) for n in 0..9 of threads "a" and "b", indexed by `by` = 100 - n. */
async function seeded(): Promise<Database<Schema>> {
  const db = new Database<Schema>({
    name: freshDbName("newest"),
    upgrades: [(raw) => raw.createObjectStore("rows", { keyPath: ["t", "n"] }).createIndex("by", "by")],
  });
  opened.push(db);
  await db.write(
    ["rows"],
    async (tx) => {
      for (const t of ["a", "b"]) for (let n = 0; n < 10; n++) await tx.objectStore("rows").put({ t, n, by: 100 - n });
    },
    "seed",
  );
  return db;
}

/** Reads through `newestValues`, with the store's and index's `getAllRecords` hidden when `cursor` is set. */
function read(db: Database<Schema>, cursor: boolean, count: number, index = false) {
  return db.read(
    ["rows"],
    async (tx) => {
      const store = tx.objectStore("rows");
      const source = index ? store.index("by") : store;
      const raw = (index ? store.index("by") : store) as unknown as { getAllRecords?: unknown };
      if (cursor) Object.defineProperty(raw, "getAllRecords", { value: undefined });
      const range = index ? db.ranges.bound(95, 100) : db.ranges.bound(["a", 2], ["a", 8], false, true);
      return (await newestValues<{ t: string; n: number }>(source, range, count)).map((row) => `${row.t}${row.n}`);
    },
    "read",
  );
}

describe("newestValues", () => {
  for (const cursor of [false, true]) {
    const way = cursor ? "by cursor" : "by getAllRecords where present";
    it(`gives a page highest key first, the whole range when it is shorter, nothing for no count (${way})`, async () => {
      const db = await seeded();
      expect(await read(db, cursor, 3)).toEqual(["a7", "a6", "a5"]);
      expect(await read(db, cursor, 50)).toEqual(["a7", "a6", "a5", "a4", "a3", "a2"]);
      expect(await read(db, cursor, 0)).toEqual([]);
      // An index: its keys (by = 100 - n) highest first, ties in primary key order reversed.
      expect(await read(db, cursor, 4, true)).toEqual(["b0", "a0", "b1", "a1"]);
    });
  }
});

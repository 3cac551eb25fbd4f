/**
 * `unjournaled`, the open's check of whether the journal still holds what
 * the database holds, on records made from the database's own rows: an
 * insert refused because its key is there (a task's write repeated) is not
 * a difference, and a journal row whose key parts are no key is one (the
 * journal is rewritten), never an exception that fails the open.
 */
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, expect, it } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { unjournaled } from "./journal-held.js";
import type { Payload } from "../journal/raw.js";
import { withRaw } from "../../test/support/raw-idb.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";

const names: string[] = [];
afterEach(async () => {
  for (const name of names.splice(0)) await deleteDatabase(name);
});

/** A database with one checkpoint, a regular write and an error write; its rows as one journal record of puts. */
async function journaledDatabase(): Promise<{ name: string; puts: unknown[][]; regular: object; error: object }> {
  const name = freshDbName("journal-held");
  names.push(name);
  const saver = new IndexedDBSaver({ dbName: name, journal: "off" });
  const metadata: CheckpointMetadata = { source: "input", step: -1, parents: {} };
  const config = await saver.put(
    { configurable: { thread_id: "t", checkpoint_ns: "" } },
    emptyCheckpoint(),
    metadata,
    {},
  );
  await saver.putWrites(config, [["count", 1]], "task-r");
  await saver.putWrites(config, [["__error__", "boom"]], "task-e");
  await saver.close();
  const rows = await withRaw(name, (db) =>
    Promise.all(
      ["threads", "checkpoints", "blobs", "writes"].map(
        (store) =>
          new Promise<[string, unknown[]]>((resolve, reject) => {
            const request = db.transaction(store).objectStore(store).getAll();
            request.onsuccess = () => resolve([store, request.result]);
            request.onerror = () => reject(request.error);
          }),
      ),
    ),
  );
  const puts = rows.flatMap(([store, stored]) => stored.map((row) => [store, 0, row]));
  const writes = rows.find(([store]) => store === "writes")![1] as { idx: number }[];
  return { name, puts, regular: writes.find((row) => row.idx >= 0)!, error: writes.find((row) => row.idx < 0)! };
}

const check = (name: string, ops: unknown[][]) => withRaw(name, (db) => unjournaled(db, [{ o: ops } as Payload]));

it("a refused insert under a key the journal holds (a repeated write) is not a difference", async () => {
  const { name, puts, regular } = await journaledDatabase();
  expect(await check(name, puts)).toBe(false);
  // Before, the second insert of the key made every next open rewrite the whole journal.
  expect(await check(name, [...puts, ["writes", 1, regular]])).toBe(false);
  expect(await check(name, [...puts, ["writes", 1, { ...regular, value: ["json", new Uint8Array([49])] }]])).toBe(
    false,
  );
});

it("a special write whose key parts are no key asks for a rewrite instead of failing the open", async () => {
  const { name, puts, error } = await journaledDatabase();
  for (const odd of [{ thread_id: undefined }, { thread_id: { a: 1 } }, { checkpoint_ns: true }, { task_id: null }]) {
    expect(await check(name, [...puts, ["writes", 0, { ...error, ...odd }]])).toBe(true);
  }
});

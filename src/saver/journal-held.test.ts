/**
 * `unjournaled`, the open's check of whether the journal still holds what
 * the database holds, on records made from the database's own rows: an
 * insert refused because its key is there (a task's write repeated) is not
 * a difference, and a journal row whose key parts are no key is one (the
 * journal is rewritten), never an exception that fails the open. Its
 * special writes are read in one walk of few requests, not a get each.
 */
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, expect, it, vi } from "vitest";
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

/** `count` checkpoints' writes (a regular one and an interrupt each) in thread `threadId`, as stored rows. */
function writeRows(threadId: string, count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => {
    const base = { thread_id: threadId, checkpoint_ns: "", checkpoint_id: `c${String(i).padStart(5, "0")}` };
    const row = { ...base, task_id: "task", task_path: "", written_at: 1 };
    return [
      { ...row, idx: 0, channel: "count", value: ["json", new Uint8Array([49])] },
      { ...row, idx: -3, channel: "__interrupt__", value: ["json", new Uint8Array([i % 256])] },
    ];
  }).flat();
}

it("the special-write check reads the writes in a walk of few requests, not one get per special write", async () => {
  const { name, puts: held } = await journaledDatabase();
  const rows = [...writeRows("a", 700), ...writeRows("m", 700), ...writeRows("z", 700)];
  const special = rows.filter((row) => (row.idx as number) < 0);
  await withRaw(name, async (db) => {
    const tx = db.transaction("writes", "readwrite");
    for (const row of rows) tx.objectStore("writes").put(row);
    await new Promise((resolve) => (tx.oncomplete = resolve));
  });
  const puts = [...held, ...rows.map((row) => ["writes", 0, row])];
  const gets = vi.spyOn(IDBObjectStore.prototype, "get");
  const walks = vi.spyOn(IDBObjectStore.prototype, "getAll");
  try {
    expect(await check(name, puts)).toBe(false);
    // Before, 2,101 gets (one per special write).
    expect(gets.mock.calls.length).toBe(0);
    expect(walks.mock.calls.length).toBeLessThan(30);
  } finally {
    gets.mockRestore();
    walks.mockRestore();
  }
  // A special write the database holds in other bytes, or lacks, deep in the walk: a difference.
  const changed = { ...special[1234]!, value: ["json", new Uint8Array([7, 7])] };
  expect(await check(name, [...puts, ["writes", 0, changed]])).toBe(true);
  const lacking = { ...special[1500]!, task_id: "other" };
  expect(await check(name, [...puts, ["writes", 0, lacking]])).toBe(true);
  expect(await check(name, [...puts, ["writes", 0, { ...lacking, thread_id: "zz" }]])).toBe(true);
});

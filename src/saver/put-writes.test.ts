/**
 * putWrites' transaction commits as soon as its requests are out (put-writes.ts
 * `settled`), not after a round trip for the adds' results; and a write kept
 * out by a first one, whose refused add makes Chromium abort such a
 * transaction, still lands as the contract says, alone or sharing a put's
 * transaction. Runs in Node (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();
const meta = (step: number): CheckpointMetadata => ({ source: "loop", step, parents: {} });
const root: RunnableConfig = { configurable: { thread_id: "t", checkpoint_ns: "" } };
const checkpoint = (id: string) => ({
  ...emptyCheckpoint(),
  id,
  channel_values: { a: id },
  channel_versions: { a: 1 },
});

afterEach(() => vi.restoreAllMocks());

describe("putWrites' commit", () => {
  it("is asked while the adds are still pending", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("put-writes") }));
    const config = await saver.put(root, checkpoint(uuid6(0)), meta(0), { a: 1 });
    const adds: IDBRequest[] = [];
    // The state of the adds when their transaction's commit was asked.
    const atCommit: string[][] = [];
    const add = IDBObjectStore.prototype.add;
    vi.spyOn(IDBObjectStore.prototype, "add").mockImplementation(function (this: IDBObjectStore, value, key) {
      const request = add.call(this, value, key);
      adds.push(request);
      return request;
    });
    const commit = IDBTransaction.prototype.commit;
    vi.spyOn(IDBTransaction.prototype, "commit").mockImplementation(function (this: IDBTransaction) {
      if (adds.length > 0) atCommit.push(adds.splice(0).map((request) => request.readyState));
      return commit.call(this);
    });
    await saver.putWrites(
      config,
      [
        ["x", 1],
        ["y", 2],
        ["z", 3],
      ],
      "task",
    );
    expect(atCommit).toEqual([["pending", "pending", "pending"]]);
    expect((await saver.getTuple(config))?.pendingWrites).toEqual([
      ["task", "x", 1],
      ["task", "y", 2],
      ["task", "z", 3],
    ]);
  });

  it("keeps the first write when a second is refused, alone or in a put's transaction", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("put-writes") }));
    // Three puts: the saver then proves the next put's guards from memory (put-proof.ts), so that put
    // reads nothing and its transaction's commit waits for no read the refused add would come before.
    let first = await saver.put(root, checkpoint(uuid6(0)), meta(0), { a: 1 });
    first = await saver.put(first, checkpoint(uuid6(1)), meta(1), { a: 2 });
    first = await saver.put(first, checkpoint(uuid6(2)), meta(2), { a: 3 });
    await saver.putWrites(first, [["x", "first"]], "task");
    // Issued together, so they share a transaction: the put, and writes of which one is refused (its
    // (task, 0) is taken). In Chromium that transaction aborts, and the batcher runs each alone.
    const [child] = await Promise.all([
      saver.put(first, checkpoint(uuid6(3)), meta(3), { a: 4 }),
      saver.putWrites(
        first,
        [
          ["x", "third"],
          ["y", "new"],
        ],
        "task",
      ),
    ]);
    // Alone: refused again.
    await saver.putWrites(first, [["x", "second"]], "task");
    expect((await saver.getTuple(first))?.pendingWrites).toEqual([
      ["task", "x", "first"],
      ["task", "y", "new"],
    ]);
    expect((await saver.getTuple(child))?.checkpoint.id).toBe(child.configurable?.checkpoint_id);
  });
  it("keeps the first write when an attempt that failed before its work ran is tried again", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("put-writes") }));
    let first = await saver.put(root, checkpoint(uuid6(0)), meta(0), { a: 1 });
    first = await saver.put(first, checkpoint(uuid6(1)), meta(1), { a: 2 });
    await saver.putWrites(first, [["x", "first"]], "task");
    // The next read-write transaction cannot be created (as a closing connection's): the first attempt
    // fails before its work runs, and the retry, whose add is refused, must wait for its results (in
    // Chromium an early commit with that add in flight aborts: UnknownError).
    const transaction = IDBDatabase.prototype.transaction;
    let failures = 1;
    vi.spyOn(IDBDatabase.prototype, "transaction").mockImplementation(function (this: IDBDatabase, ...args) {
      if (args[1] === "readwrite" && failures-- > 0) throw new DOMException("planted", "NotFoundError");
      return transaction.apply(this, args);
    });
    await saver.putWrites(first, [["x", "second"]], "task");
    expect(failures).toBe(-1);
    expect((await saver.getTuple(first))?.pendingWrites).toEqual([["task", "x", "first"]]);
  });
});

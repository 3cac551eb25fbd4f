/**
 * A task's pending writes and the next checkpoint's `put` usually share one
 * transaction (idb/batch.ts). The put checks the key and its parent there,
 * so writes aimed at that parent skip their own guard reads (PutChecks in
 * context.ts); other writes of the thread in that transaction read them
 * once between them. These tests hold the saving to a count, and the outcome of
 * a failed check to what the writes would get alone.
 */
import { emptyCheckpoint, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();
const meta: CheckpointMetadata = { source: "loop", step: 0, parents: {} };

function checkpoint(id: string): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: { a: id }, channel_versions: { a: id } };
}

const at = (threadId: string, checkpointId?: string): RunnableConfig => ({
  configurable: { thread_id: threadId, checkpoint_ns: "", ...(checkpointId ? { checkpoint_id: checkpointId } : {}) },
});

/** Counts `get` requests on the `writes` store (the guard reads of `putWrites`) while `run` runs. */
async function writesGets(run: () => Promise<unknown>): Promise<number> {
  const original = IDBObjectStore.prototype.get;
  let count = 0;
  IDBObjectStore.prototype.get = function (this: IDBObjectStore, query: IDBValidKey | IDBKeyRange) {
    if (this.name === "writes") count += 1;
    return original.call(this, query);
  };
  try {
    await run();
  } finally {
    IDBObjectStore.prototype.get = original;
  }
  return count;
}

describe("pending writes sharing a transaction with the next put", () => {
  it("skip their guard reads when the put checks their checkpoint as its parent", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("guards") }));
    const first = await saver.put(at("t"), checkpoint("c1"), meta, { a: "c1" });
    // Issued together, as LangGraph does: the writes lead, the put joins them.
    const shared = await writesGets(() =>
      Promise.all([saver.putWrites(first, [["a", 1]], "task"), saver.put(first, checkpoint("c2"), meta, { a: "c2" })]),
    );
    // Alone (no put to share with), the same writes read both guards.
    const alone = await writesGets(() => saver.putWrites(first, [["a", 2]], "other"));
    expect(alone).toBe(2);
    expect(shared).toBe(0);
    const tuple = await saver.getTuple(first);
    expect(tuple?.pendingWrites).toEqual([
      ["other", "a", 2],
      ["task", "a", 1],
    ]);
    expect((await saver.getTuple(at("t")))?.checkpoint.id).toBe("c2");
  });

  it("are still dropped on a deleted thread: the put's failed check runs each write alone", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("guards-late") }));
    const first = await saver.put(at("t"), checkpoint("c1"), meta, { a: "c1" });
    await saver.deleteThread("t");
    // A run still in flight: its writes to c1 and its next checkpoint arrive after the delete.
    await Promise.all([
      saver.putWrites(first, [["a", 1]], "task"),
      saver.put(first, checkpoint("c2"), meta, { a: "c2" }),
    ]);
    expect(await saver.getTuple(at("t"))).toBeUndefined();
    expect(await saver.getTuple(first)).toBeUndefined();
    // A new run may start the thread afresh, even with the same id: the late writes stayed dropped.
    const again = await saver.put(at("t"), checkpoint("c1"), meta, { a: "c1" });
    expect((await saver.getTuple(again))?.pendingWrites).toEqual([]);
  });

  it("of several tasks of one thread read the guards once per transaction", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("guards-tasks") }));
    const first = await saver.put(at("t"), checkpoint("c1"), meta, { a: "c1" });
    const second = await saver.put(first, checkpoint("c2"), meta, { a: "c2" });
    const gets = await writesGets(() =>
      Promise.all([
        saver.putWrites(first, [["a", 1]], "one"),
        saver.putWrites(second, [["a", 2]], "two"),
        saver.putWrites(second, [["a", 3]], "three"),
      ]),
    );
    expect(gets).toBe(2);
    expect((await saver.getTuple(second))?.pendingWrites).toEqual([
      ["three", "a", 3],
      ["two", "a", 2],
    ]);
  });

  it("keep their guard reads when the put in their transaction is another checkpoint's child", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("guards-other") }));
    const first = await saver.put(at("t"), checkpoint("c1"), meta, { a: "c1" });
    const second = await saver.put(first, checkpoint("c2"), meta, { a: "c2" });
    const gets = await writesGets(() =>
      Promise.all([saver.putWrites(first, [["a", 1]], "task"), saver.put(second, checkpoint("c3"), meta, { a: "c3" })]),
    );
    expect(gets).toBe(2);
  });
});

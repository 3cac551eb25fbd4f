/**
 * `getTuple` of a namespace's latest checkpoint asks for the details of the
 * checkpoint this saver put last together with the latest row (recent.ts).
 * The guess must never leak into a read: another saver (another tab) that
 * puts after it, re-puts that very checkpoint with other values, deletes the
 * thread or adds pending writes is what the read returns. Runs in Node
 * (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, uuid6, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();

const meta: CheckpointMetadata = { source: "loop", step: 1, parents: {} };
const root = (thread_id: string, checkpoint_id?: string): RunnableConfig => ({
  configurable: { thread_id, checkpoint_ns: "", ...(checkpoint_id ? { checkpoint_id } : {}) },
});

function checkpoint(id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

/** Two savers on one database: this tab and another. */
function twoTabs(): [IndexedDBSaver, IndexedDBSaver] {
  const dbName = freshDbName("recent");
  return [track(new IndexedDBSaver({ dbName })), track(new IndexedDBSaver({ dbName }))];
}

describe("getTuple of the latest checkpoint after this saver's own put", () => {
  it("returns the checkpoint and values this saver put, with writes added after the put", async () => {
    const [saver] = twoTabs();
    const config = await saver.put(root("t"), checkpoint(uuid6(0), { a: "one", b: 1 }, { a: 1, b: 1 }), meta, {
      a: 1,
      b: 1,
    });
    await saver.putWrites(config, [["a", "pending"]], "task-1");
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "one", b: 1 });
    expect(tuple?.pendingWrites).toEqual([["task-1", "a", "pending"]]);
  });

  it("returns another tab's newer checkpoint, not the one this saver remembers", async () => {
    const [saver, other] = twoTabs();
    const first = await saver.put(root("t"), checkpoint(uuid6(0), { a: "mine" }, { a: 1 }), meta, { a: 1 });
    const theirs = uuid6(1);
    await other.put(first, checkpoint(theirs, { a: "theirs" }, { a: 2 }), meta, { a: 2 });
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.id).toBe(theirs);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "theirs" });
  });

  it("returns another tab's newer checkpoint with the same versions, and its own pending writes", async () => {
    const [saver, other] = twoTabs();
    const first = await saver.put(root("t"), checkpoint(uuid6(0), { a: "same" }, { a: 1 }), meta, { a: 1 });
    await saver.putWrites(first, [["a", "written on the first"]], "task-1");
    // No channel changed: the newer checkpoint has the very versions this saver remembers.
    const theirs = uuid6(1);
    const second = await other.put(first, checkpoint(theirs, { a: "same" }, { a: 1 }), meta, {});
    await other.putWrites(second, [["a", "written on the second"]], "task-2");
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.id).toBe(theirs);
    expect(tuple?.pendingWrites).toEqual([["task-2", "a", "written on the second"]]);
  });

  it("reads the row as it is now when another tab put the same checkpoint again with other versions", async () => {
    const [saver, other] = twoTabs();
    const id = uuid6(0);
    await saver.put(root("t"), checkpoint(id, { a: "old" }, { a: 1 }), meta, { a: 1 });
    // The same id, the value at a new version: the blob of version 1 is still stored.
    await other.put(root("t"), checkpoint(id, { a: "new" }, { a: 2 }), meta, { a: 2 });
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.channel_versions).toEqual({ a: 2 });
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "new" });
  });

  it("returns nothing once another tab deleted the thread, and the new run's checkpoint after it", async () => {
    const [saver, other] = twoTabs();
    await saver.put(root("t"), checkpoint(uuid6(0), { a: "before" }, { a: 1 }), meta, { a: 1 });
    await other.deleteThread("t");
    expect(await saver.getTuple(root("t"))).toBeUndefined();
    const next = uuid6(5);
    await other.put(root("t"), checkpoint(next, { a: "after" }, { a: 1 }), meta, { a: 1 });
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.id).toBe(next);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "after" });
  });

  it("keeps each namespace's own latest apart", async () => {
    const [saver] = twoTabs();
    await saver.put(root("t"), checkpoint(uuid6(0), { a: "root" }, { a: 1 }), meta, { a: 1 });
    await saver.put(
      { configurable: { thread_id: "t", checkpoint_ns: "child:1" } },
      checkpoint(uuid6(1), { a: "child" }, { a: 1 }),
      meta,
      { a: 1 },
    );
    const rootTuple = await saver.getTuple(root("t"));
    const childTuple = await saver.getTuple({ configurable: { thread_id: "t", checkpoint_ns: "child:1" } });
    expect(rootTuple?.checkpoint.channel_values).toEqual({ a: "root" });
    expect(childTuple?.checkpoint.channel_values).toEqual({ a: "child" });
  });
});

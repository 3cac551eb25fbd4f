/**
 * What a put keeps in memory (recent.ts, fresh-cache.ts) and whether it
 * copies the bytes to keep them: under the shipped MsgpackSerializer, whose
 * bytes are fresh and only read (serde/in-place.ts), the put keeps its own
 * bytes and the pending writes kept for it as they are; under any other
 * serializer it copies. Either way the next read from memory answers the
 * put. Runs in Node (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, uuid6, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { contextOf } from "./registry.js";
import { MsgpackSerializer } from "../serde/index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();
const meta: CheckpointMetadata = { source: "loop", step: 1, parents: {} };
const root = (checkpoint_id?: string): RunnableConfig => ({
  configurable: { thread_id: "t", checkpoint_ns: "", ...(checkpoint_id ? { checkpoint_id } : {}) },
});
const checkpoint = (id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint => ({
  ...emptyCheckpoint(),
  id,
  channel_values: values,
  channel_versions: versions,
});

/** Not the shipped class: its bytes are copied to be kept. */
class OwnSerializer extends MsgpackSerializer {}

/**
 * On a saver with `serde`: a checkpoint, a read (which fills the kept
 * window), a pending write to the next checkpoint stored before it (as with
 * async durability), then that checkpoint's put, counting the copies
 * (`Uint8Array#slice`) it makes; then a read, which must come from memory.
 */
async function copiesOfPut(serde: MsgpackSerializer): Promise<number> {
  const saver = track(new IndexedDBSaver({ dbName: freshDbName("kept-copies"), serde }));
  const first = await saver.put(root(), checkpoint(uuid6(0), { a: "a0", b: "b0" }, { a: 1, b: 1 }), meta, {
    a: 1,
    b: 1,
  });
  await saver.getTuple(root());
  const id = uuid6(0);
  await saver.putWrites(root(id), [["a", "pending"]], "task-1");
  const next = checkpoint(id, { a: "a1".repeat(300), b: "b0" }, { a: 2, b: 1 });
  // Made before counting: uuid6 copies bytes of its own.
  const slice = vi.spyOn(Uint8Array.prototype, "slice");
  await saver.put(first, next, meta, { a: 2 });
  const copies = slice.mock.calls.length;
  slice.mockRestore();
  const reads = vi.spyOn(contextOf(saver)!.db, "read");
  const tuple = await saver.getTuple(root());
  expect(reads).not.toHaveBeenCalled();
  expect(tuple?.checkpoint.id).toBe(id);
  expect(tuple?.checkpoint.channel_values).toEqual({ a: "a1".repeat(300), b: "b0" });
  expect(tuple?.pendingWrites).toEqual([["task-1", "a", "pending"]]);
  return copies;
}

afterEach(() => vi.restoreAllMocks());

describe("what a put keeps in memory", () => {
  it("keeps the shipped MsgpackSerializer's bytes and the writes kept for it without copying them", async () => {
    expect(await copiesOfPut(new MsgpackSerializer())).toBe(0);
  });

  it("copies them under another serializer, which may reuse its buffer or write into what it reads", async () => {
    expect(await copiesOfPut(new OwnSerializer())).toBeGreaterThan(0);
  });
});

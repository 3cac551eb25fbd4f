/**
 * Attacks on what a saver holding the write lease leaves unwritten
 * (put-proof.ts): a root put of the thread first by update time leaves its
 * summary row as it was, and `listThreads` reports the later of the
 * summary's time and its newest checkpoint's. Another saver's summary
 * written later must never come between the two, or the thread updated
 * last lists below it. Nor may that guard cost a summary write per step:
 * a step's pending writes, stamped in the same millisecond as the next
 * checkpoint, must not push its stamp ahead of the clock. Runs in Node
 * (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { countRequests } from "../../bench/requests.js";

const track = trackSavers<IndexedDBSaver>();

describe("a thread summary left unwritten", () => {
  afterEach(() => void vi.restoreAllMocks());

  /** Puts checkpoint `id` on `threadId` after `parent` (its first when undefined); returns its config. */
  function putAt(
    saver: IndexedDBSaver,
    threadId: string,
    id: string,
    parent: RunnableConfig | undefined,
    step: number,
  ) {
    const metadata: CheckpointMetadata = { source: "loop", step, parents: {} };
    const checkpoint = { ...emptyCheckpoint(), id, channel_values: { a: step }, channel_versions: { a: step } };
    return saver.put(parent ?? { configurable: { thread_id: threadId, checkpoint_ns: "" } }, checkpoint, metadata, {
      a: step,
    });
  }

  it("never lets another saver's summary of the same millisecond list above the thread updated last", async () => {
    const ids = Array.from({ length: 5 }, (_, i) => uuid6(i));
    const dbName = freshDbName("put-proof-attacks");
    const base = Date.now();
    const clock = vi.spyOn(Date, "now").mockReturnValue(base);
    const saver = track(new IndexedDBSaver({ dbName }));
    // Thread a's first put writes its summary at `base`; the next ones, a millisecond on, leave it (a is
    // first by update time), two within that millisecond: the saver's clock runs ahead of Date.now().
    let config = await putAt(saver, "a", ids[0]!, undefined, 1);
    clock.mockReturnValue(base + 1);
    for (let i = 1; i < 4; i++) config = await putAt(saver, "a", ids[i]!, config, i + 1);
    // Another saver of the page writes thread y's summary within that same millisecond.
    const other = track(new IndexedDBSaver({ dbName }));
    await putAt(other, "y", ids[4]!, undefined, 1);
    const listed = [];
    for await (const thread of other.listThreads()) listed.push([thread.threadId, thread.updatedAt] as const);
    // Most recently updated first: the order and the times reported agree.
    expect(listed[0]![1]).toBeGreaterThanOrEqual(listed[1]![1]);
    expect(listed.map(([id]) => id)).toEqual(["a", "y"]);
  });

  it("is not written for a put that follows its step's pending writes within a millisecond", async () => {
    const ids = Array.from({ length: 5 }, (_, i) => uuid6(i));
    const base = Date.now();
    const clock = vi.spyOn(Date, "now").mockReturnValue(base);
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("put-proof-attacks") }));
    let config: RunnableConfig | undefined;
    let puts = 0;
    for (let i = 0; i < 5; i++) {
      // Each step in a millisecond of its own; its writes, then the next checkpoint, within it.
      clock.mockReturnValue(base + i);
      if (config) await saver.putWrites(config, [["a", i]], `task-${i}`);
      const parent = config;
      puts = (await countRequests(async () => void (config = await putAt(saver, "a", ids[i]!, parent, i + 1)))).put!;
    }
    // The checkpoint row alone: the writes' stamp did not push the put's ahead of the clock (which would
    // make it write the summary, as the test above needs), as a write stamped with the put's clock did.
    expect(puts).toBe(1);
  });
});

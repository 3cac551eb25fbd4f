/**
 * Answers from memory (fresh-cache.ts) across real browsing contexts: this
 * page's saver answers the latest checkpoint, or a list of the thread's
 * newest, from memory, then a same-origin iframe (its own document, realm,
 * IndexedDB connection and Web Locks client, as another tab) writes; the
 * next read here must see that write.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { contextOf } from "./registry.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { openIframeTab, type IframeTab } from "../../test/support/iframe-tab.js";
import type { FreshTabApi } from "../../test/support/fresh/fresh-page.js";

const PAGE_MODULE = new URL("../../test/support/fresh/fresh-page.ts", import.meta.url).href;
const track = trackSavers<IndexedDBSaver>();
const meta: CheckpointMetadata = { source: "loop", step: 1, parents: {} };
const latest = { configurable: { thread_id: "t", checkpoint_ns: "" } };

let tab: IframeTab<FreshTabApi>;
beforeAll(async () => {
  tab = await openIframeTab<FreshTabApi>(PAGE_MODULE, "freshTab");
}, 60_000);
afterAll(async () => {
  await tab.api.close();
  tab.frame.remove();
});

/** A saver of this page that answers thread "t"'s latest from memory; resolves with it and the ids of its two checkpoints. */
async function primed(): Promise<{ saver: IndexedDBSaver; id: string; firstId: string }> {
  const saver = track(new IndexedDBSaver({ dbName: freshDbName("fresh-tabs") }));
  const put = (parent: string | undefined, value: string, version: number) =>
    saver.put(
      { configurable: { ...latest.configurable, ...(parent ? { checkpoint_id: parent } : {}) } },
      { ...emptyCheckpoint(), id: uuid6(0), channel_values: { a: value }, channel_versions: { a: version } },
      meta,
      { a: version },
    );
  const first = await put(undefined, "mine 1", 1);
  await saver.getTuple(latest);
  const second = await put(first.configurable?.checkpoint_id as string, "mine 2", 2);
  const reads = vi.spyOn(contextOf(saver)!.db, "read");
  expect((await saver.getTuple(latest))?.checkpoint.channel_values).toEqual({ a: "mine 2" });
  expect(reads).not.toHaveBeenCalled();
  reads.mockRestore();
  return {
    saver,
    id: second.configurable?.checkpoint_id as string,
    firstId: first.configurable?.checkpoint_id as string,
  };
}

describe("another tab writes while this page answers from memory", () => {
  it("its newer checkpoint is what the next read returns", async () => {
    const { saver, id } = await primed();
    const theirs = await tab.api.put(saver.dbName, id, "theirs", 3);
    const tuple = await saver.getTuple(latest);
    expect(tuple?.checkpoint.id).toBe(theirs);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "theirs" });
  });

  it("its pending writes on the kept checkpoint, then its delete, are what the next reads return", async () => {
    const { saver, id } = await primed();
    await tab.api.putWrites(saver.dbName, id, "from the tab");
    expect((await saver.getTuple(latest))?.pendingWrites).toEqual([["tab-task", "a", "from the tab"]]);
    await tab.api.deleteThread(saver.dbName);
    expect(await saver.getTuple(latest)).toBeUndefined();
  });
});

describe("another tab writes while this page lists from memory", () => {
  /** The newest two checkpoints of thread "t" as this page's saver lists them: ids and pending writes. */
  async function newestTwo(saver: IndexedDBSaver) {
    const listed = [];
    for await (const tuple of saver.list(latest, { limit: 2 })) listed.push(tuple);
    return listed.map((tuple) => ({ id: tuple.checkpoint.id, writes: tuple.pendingWrites }));
  }

  it("its newer checkpoint, its writes to an older one, then its delete, are what the next lists return", async () => {
    const { saver, id, firstId } = await primed();
    const reads = vi.spyOn(contextOf(saver)!.db, "read");
    expect(await newestTwo(saver)).toEqual([
      { id, writes: [] },
      { id: firstId, writes: [] },
    ]);
    expect(reads).not.toHaveBeenCalled();
    reads.mockRestore();
    const theirs = await tab.api.put(saver.dbName, id, "theirs", 3);
    expect(await newestTwo(saver)).toEqual([
      { id: theirs, writes: [] },
      { id, writes: [] },
    ]);
    await tab.api.putWrites(saver.dbName, id, "from the tab");
    expect(await newestTwo(saver)).toEqual([
      { id: theirs, writes: [] },
      { id, writes: [["tab-task", "a", "from the tab"]] },
    ]);
    await tab.api.deleteThread(saver.dbName);
    expect(await newestTwo(saver)).toEqual([]);
  });
});

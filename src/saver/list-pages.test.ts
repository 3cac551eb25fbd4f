/**
 * `list()` reads a page of one namespace with one request for the page's
 * pending writes and one range read per channel for its blobs (see
 * page.ts `readPage`). These tests hold those page reads to what a
 * checkpoint read alone (`getTuple`, one request each) returns, on a thread
 * built to trip them: other branches' versions crowding a page's version
 * range past the range read's cap, and writes of a checkpoint that was
 * never stored lying between a page's rows.
 */
import { emptyCheckpoint, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";

const THREAD = "pages";
const MAIN = 150;
const FORKS = 150;

const meta = (step: number): CheckpointMetadata => ({ source: "loop", step, parents: {} });
const mainId = (i: number) => `c${String(i).padStart(4, "0")}`;
const config = (checkpointId?: string): RunnableConfig => ({
  configurable: { thread_id: THREAD, checkpoint_ns: "", ...(checkpointId ? { checkpoint_id: checkpointId } : {}) },
});

function checkpoint(id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

/**
 * A main chain whose channel "a" changes at every step and "b" never after
 * the first, with two tasks' writes on each checkpoint; then forks from
 * steps 10-12 whose versions of "a" (10.001-10.15) fall inside the main
 * pages' ranges, and writes of a checkpoint id between two main rows that
 * was never put.
 */
async function buildThread(saver: IndexedDBSaver): Promise<void> {
  let parent: RunnableConfig = config();
  for (let i = 0; i < MAIN; i++) {
    const versions = { a: i + 0.5, b: 1 };
    const values = { a: `a${i}`, b: "constant" };
    parent = await saver.put(
      parent,
      checkpoint(mainId(i), values, versions),
      meta(i),
      i === 0 ? versions : { a: versions.a },
    );
    await saver.putWrites(parent, [["x", `w${i}`]], "task-1");
    await saver.putWrites(parent, [["y", `v${i}`]], "task-0");
  }
  for (let k = 0; k < FORKS; k++) {
    const from = 10 + (k % 3);
    const version = 10 + (k + 1) / 1000;
    await saver.put(
      config(mainId(from)),
      checkpoint(`f${String(k).padStart(4, "0")}`, { a: `fork${k}`, b: "constant" }, { a: version, b: 1 }),
      meta(from + 1),
      { a: version },
    );
  }
  await saver.putWrites(config(`${mainId(50)}x`), [["x", "a write of no checkpoint"]], "task-9");
}

describe("list() pages", () => {
  // Both tests only read the thread: it is built once (about 600 transactions), by the first test's saver.
  const dbName = freshDbName("list-pages");
  const builder = new IndexedDBSaver({ dbName });
  beforeAll(() => buildThread(builder));
  afterAll(async () => {
    await builder.close();
    await deleteDatabase(dbName);
  });

  it("return what getTuple returns for every checkpoint, with crowded version ranges and stray writes", async () => {
    const saver = builder;
    const listed = [];
    for await (const tuple of saver.list(config())) listed.push(tuple);
    expect(listed).toHaveLength(MAIN + FORKS);
    // Newest first, the forks (ids "f…") above the main chain.
    expect(listed[0]!.checkpoint.id).toBe(`f${String(FORKS - 1).padStart(4, "0")}`);
    for (const tuple of listed) {
      const alone = await saver.getTuple(config(tuple.checkpoint.id));
      expect(tuple).toEqual(alone);
    }
    const step12 = listed.find((tuple) => tuple.checkpoint.id === mainId(12))!;
    expect(step12.checkpoint.channel_values).toEqual({ a: "a12", b: "constant" });
    expect(step12.pendingWrites).toEqual([
      ["task-0", "y", "v12"],
      ["task-1", "x", "w12"],
    ]);
    // The stray writes belong to no listed checkpoint.
    expect(listed.flatMap((tuple) => tuple.pendingWrites ?? []).some(([task]) => task === "task-9")).toBe(false);
  });

  it("agree with getTuple from any starting point and page size", async () => {
    // Another saver on the database (a reload, or another tab): nothing of the thread in its memory.
    const saver = new IndexedDBSaver({ dbName });
    onTestFinished(() => saver.close());
    for (const options of [{ limit: 5 }, { before: config(mainId(70)) }, { before: config(mainId(20)), limit: 70 }]) {
      const listed = [];
      for await (const tuple of saver.list(config(), options)) listed.push(tuple);
      expect(listed.length).toBeGreaterThan(0);
      for (const tuple of listed) expect(tuple).toEqual(await saver.getTuple(config(tuple.checkpoint.id)));
    }
  });
});

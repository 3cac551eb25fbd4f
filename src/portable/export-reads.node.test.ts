/**
 * What an export of an IndexedDBSaver thread reads: each checkpoint's write
 * rows twice, once in the first pass over `list` (which counts them for the
 * header) and once when its record is written. The task paths of its pending
 * writes (the `p` frame) come from the rows its record's tuple is decoded
 * from, not from a third read of them (Node on fake-indexeddb, whose object
 * stores the test counts reads of).
 */
import { MemorySaver, emptyCheckpoint, type CheckpointTuple } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";
import { exportThread } from "./export.js";
import { importThread } from "./import.js";
import { storedTaskPaths } from "../../test/golden/export-paths.js";

const opened: IndexedDBSaver[] = [];
afterEach(async () => {
  await Promise.all(opened.map((saver) => saver.close()));
  await Promise.all(opened.splice(0).map((saver) => deleteDatabase(saver.dbName)));
});

/** Runs `work` counting the `getAll` and cursor requests made on the `writes` store. */
async function countWriteReads(work: () => Promise<unknown>): Promise<number> {
  const proto = IDBObjectStore.prototype;
  const { getAll, openCursor } = proto;
  let reads = 0;
  proto.getAll = function (this: IDBObjectStore, ...args: Parameters<typeof getAll>) {
    if (this.name === "writes") reads++;
    return getAll.apply(this, args);
  };
  proto.openCursor = function (this: IDBObjectStore, ...args: Parameters<typeof openCursor>) {
    if (this.name === "writes") reads++;
    return openCursor.apply(this, args);
  };
  try {
    await work();
  } finally {
    Object.assign(proto, { getAll, openCursor });
  }
  return reads;
}

const steps = 6;

/** A thread of `steps` checkpoints, each with one pending write of 1 KiB (a string: MemorySaver cannot read back a Uint8Array write) under its own task path. */
async function writeThread(source: IndexedDBSaver): Promise<void> {
  let parent: string | undefined;
  for (let step = 0; step < steps; step++) {
    const config = await source.put(
      { configurable: { thread_id: "t", checkpoint_ns: "", ...(parent ? { checkpoint_id: parent } : {}) } },
      { ...emptyCheckpoint(), id: `1f000000-0000-6000-8000-00000000000${step}` },
      { source: "loop", step, parents: {} },
      {},
    );
    await source.putWrites(config, [["out", String(step).repeat(1024)]], `task-${step}`, `~__pregel_pull, n${step}`);
    parent = config.configurable!.checkpoint_id as string;
  }
}

describe("exportThread of an IndexedDBSaver thread", () => {
  it("reads each checkpoint's pending writes once per pass, and keeps their task paths", async () => {
    const source = new IndexedDBSaver({ dbName: freshDbName("export-reads") });
    opened.push(source);
    await writeThread(source);
    let file: Uint8Array | undefined;
    const reads = await countWriteReads(async () => (file = await exportThread(source, "t", { as: "bytes" })));
    // Before: 18, the task path reader reading each checkpoint's rows again after its getTuple.
    expect(reads).toBe(2 * steps);

    const target = new IndexedDBSaver({ dbName: freshDbName("export-reads") });
    opened.push(target);
    await importThread(target, file!);
    await target.close();
    // Every write came with its task path (from the file's `p` frame).
    const paths = await storedTaskPaths(target.dbName);
    expect(paths.map(([, , taskId, , path]) => [taskId, path])).toEqual(
      Array.from({ length: steps }, (_, step) => [`task-${step}`, `~__pregel_pull, n${step}`]),
    );
  });

  it("of a subclass that overrides getTuple exports that method's tuples, with the task paths", async () => {
    class Tagged extends IndexedDBSaver {
      override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
        const tuple = await super.getTuple(config);
        return tuple && { ...tuple, metadata: { ...tuple.metadata!, tagged: true } as CheckpointTuple["metadata"] };
      }
    }
    const source = new Tagged({ dbName: freshDbName("export-reads") });
    opened.push(source);
    await writeThread(source);
    const target = new MemorySaver();
    await importThread(target, await exportThread(source, "t", { as: "bytes" }));
    const tuple = await target.getTuple({ configurable: { thread_id: "t", checkpoint_ns: "" } });
    expect(tuple?.metadata).toMatchObject({ tagged: true });
    const back = new IndexedDBSaver({ dbName: freshDbName("export-reads") });
    opened.push(back);
    await importThread(back, await exportThread(target, "t", { as: "bytes" }));
    await back.close();
    expect((await storedTaskPaths(back.dbName)).map(([, , , , path]) => path)).toEqual(
      Array.from({ length: steps }, (_, step) => `~__pregel_pull, n${step}`),
    );
  });
});

/**
 * Thread lifecycle: the copy_thread, prune and delete_for_runs cases of the
 * Python conformance suite restated for IndexedDBSaver, prune on a
 * MessagesDeltaValue thread, listThreads order and paging, and change
 * notifications. Runs in Node (fake-indexeddb) and Chromium.
 */
import { HumanMessage } from "@langchain/core/messages";
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { importThread } from "../../src/portable/index.js";
import type { CheckpointChange } from "../../src/saver/events.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { chatGraph, plain } from "../support/chat-graph.js";
import { readStore } from "../support/reliability/raw.js";
import type { MetaRow } from "../../src/rows/shapes.js";

const track = trackSavers<IndexedDBSaver>();

function newSaver(dbName = freshDbName("lifecycle")): IndexedDBSaver {
  return track(new IndexedDBSaver({ dbName }));
}

const cfg = (thread_id: string, checkpoint_ns = ""): RunnableConfig => ({ configurable: { thread_id, checkpoint_ns } });

/** A chain of n checkpoints with `channel_values {step: i}` as the Python suite builds it. */
async function chain(
  saver: IndexedDBSaver,
  threadId: string,
  n: number,
  ns = "",
  extra: (i: number) => Record<string, unknown> = () => ({}),
) {
  let config = cfg(threadId, ns);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(i),
      channel_values: { step: i },
      // A new version per value, as LangGraph gives (one version with several values reads back differently
      // in row format 1, where each put overwrote the one blob, and 2, where each row holds its own).
      channel_versions: { step: i + 1 },
    };
    config = await saver.put(
      config,
      checkpoint,
      { source: "loop", step: i, parents: {}, ...extra(i) } as CheckpointMetadata,
      { step: i + 1 },
    );
    ids.push(config.configurable!.checkpoint_id as string);
  }
  return { config, ids };
}

async function ids(saver: IndexedDBSaver, threadId: string, ns?: string): Promise<string[]> {
  const out: string[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: ns } })) {
    out.push(tuple.config.configurable!.checkpoint_id as string);
  }
  return out;
}

describe("copyThread (Python suite)", () => {
  it("basic, all checkpoints, ordering, source unchanged", async () => {
    const saver = newSaver();
    await chain(saver, "src", 4);
    const before = await ids(saver, "src", "");
    await saver.copyThread("src", "dst");
    expect(await ids(saver, "dst", "")).toEqual(before);
    expect(await ids(saver, "src", "")).toEqual(before);
    const values = async (t: string) => {
      const out: unknown[] = [];
      for await (const tuple of saver.list(cfg(t)))
        out.push([
          tuple.config.configurable?.checkpoint_id,
          tuple.checkpoint.channel_values,
          tuple.parentConfig?.configurable?.checkpoint_id,
        ]);
      return out;
    };
    expect(await values("dst")).toEqual(await values("src"));
    const parent = (await saver.getTuple(cfg("dst")))?.parentConfig;
    expect(parent?.configurable?.thread_id).toBe("dst");
  });

  it("preserves metadata, namespaces and writes", async () => {
    const saver = newSaver();
    const { config } = await chain(saver, "src", 2, "", (i) => ({ custom: { i, tags: ["a"] } }));
    await chain(saver, "src", 1, "child:1");
    await saver.putWrites(config, [["ch", "write_val"]], "task");
    await saver.copyThread("src", "dst");
    const metaOf = async (t: string) => {
      const out: unknown[] = [];
      for await (const tuple of saver.list(cfg(t))) out.push(tuple.metadata);
      return out;
    };
    expect(await metaOf("dst")).toEqual(await metaOf("src"));
    expect(await ids(saver, "dst", "child:1")).toHaveLength(1);
    expect((await saver.getTuple(cfg("dst")))?.pendingWrites).toEqual([["task", "ch", "write_val"]]);
  });

  it("leaves the target empty for an unknown source, and refuses a non-empty target", async () => {
    const saver = newSaver();
    await saver.copyThread("missing", "dst");
    expect(await ids(saver, "dst")).toEqual([]);
    await chain(saver, "a", 1);
    await chain(saver, "b", 1);
    await expect(saver.copyThread("a", "b")).rejects.toThrow(/already has 1 checkpoints/);
    expect(await ids(saver, "b")).toHaveLength(1);
    await expect(saver.copyThread("a", "a")).rejects.toThrow(/same/);
  });
});

describe("prune (Python suite)", () => {
  it("keeps the latest of one thread, of several, and per namespace", async () => {
    const saver = newSaver();
    const one = await chain(saver, "one", 4);
    const two = await chain(saver, "two", 3);
    const three = await chain(saver, "three", 2);
    const child = await chain(saver, "one", 2, "child:1");
    await saver.prune(["one", "two", "three"]);
    expect(await ids(saver, "one", "")).toEqual([one.ids.at(-1)]);
    expect(await ids(saver, "one", "child:1")).toEqual([child.ids.at(-1)]);
    expect(await ids(saver, "two")).toEqual([two.ids.at(-1)]);
    expect(await ids(saver, "three")).toEqual([three.ids.at(-1)]);
    expect((await saver.getTuple(cfg("two")))?.checkpoint.channel_values).toEqual({ step: 2 });
  });

  it("keeps the head's writes, and keepLast: N keeps N", async () => {
    const saver = newSaver();
    const { config, ids: all } = await chain(saver, "t", 5);
    await saver.putWrites(config, [["ch", "val"]], "task");
    await saver.prune(["t"], { keepLast: 3 });
    expect(await ids(saver, "t")).toEqual(all.slice(-3).reverse());
    await saver.prune(["t"]);
    expect((await saver.getTuple(cfg("t")))?.pendingWrites).toEqual([["task", "ch", "val"]]);
  });

  it("deletes with strategy delete, preserves other threads, and is a no-op for empty or unknown lists", async () => {
    const saver = newSaver();
    await chain(saver, "gone", 3);
    const other = await chain(saver, "other", 2);
    await saver.prune(["gone"], { strategy: "delete" });
    expect(await ids(saver, "gone")).toEqual([]);
    expect(await ids(saver, "other")).toEqual([...other.ids].reverse());
    await saver.prune([]);
    await saver.prune(["nobody"]);
    await expect(saver.prune(["other"], { strategy: "everything" as "delete" })).rejects.toThrow(/unknown strategy/);
    expect(await ids(saver, "other")).toHaveLength(2);
  });

  for (const mode of ["keeping the chain", "snapshotting with graph.channels"] as const) {
    it(`never empties a MessagesDeltaValue thread (${mode})`, async () => {
      const saver = newSaver();
      const graph = chatGraph(saver, true);
      const config = { configurable: { thread_id: "delta" } };
      for (let turn = 0; turn < 8; turn++) await graph.invoke({ messages: [new HumanMessage(`turn ${turn}`)] }, config);
      const before = plain((await graph.getState(config)).values.messages);
      const countBefore = (await ids(saver, "delta")).length;
      await saver.prune(["delta"], mode === "snapshotting with graph.channels" ? { channels: graph.channels } : {});
      const after = plain((await graph.getState(config)).values.messages);
      expect(after).toEqual(before);
      expect(after).toHaveLength(16);
      const countAfter = (await ids(saver, "delta")).length;
      if (mode === "snapshotting with graph.channels") expect(countAfter).toBe(1);
      else expect(countAfter).toBeLessThanOrEqual(countBefore);
      // The thread goes on after the prune.
      await graph.invoke({ messages: [new HumanMessage("after prune")] }, config);
      expect(plain((await graph.getState(config)).values.messages)).toHaveLength(18);
    });
  }

  it("marks each checkpoint it stored a snapshot for, for sync to push again; the marks go with the checkpoints", async () => {
    const saver = newSaver();
    const graph = chatGraph(saver, true);
    for (const thread of ["a", "b"]) {
      for (let turn = 0; turn < 3; turn++)
        await graph.invoke({ messages: [new HumanMessage(`turn ${turn}`)] }, { configurable: { thread_id: thread } });
    }
    // Without the channels nothing is snapshotted: no mark.
    await saver.prune(["a"], { keepLast: 4 });
    expect(await revaluedMarks(saver.dbName)).toEqual([]);
    await saver.prune(["a", "b"], { channels: graph.channels });
    const kept = [...(await ids(saver, "a")), ...(await ids(saver, "b"))];
    expect(kept).toHaveLength(2);
    expect(await revaluedMarks(saver.dbName)).toEqual([
      `revalued\u0000a\u0000\u0000${kept[0]}`,
      `revalued\u0000b\u0000\u0000${kept[1]}`,
    ]);
    // The kept checkpoint of "a" is pruned in turn (its mark goes; the new one's comes), "b" is deleted.
    await graph.invoke({ messages: [new HumanMessage("more")] }, { configurable: { thread_id: "a" } });
    await saver.prune(["a"], { channels: graph.channels });
    await saver.deleteThread("b");
    expect(await revaluedMarks(saver.dbName)).toEqual([`revalued\u0000a\u0000\u0000${(await ids(saver, "a"))[0]}`]);
  });
});

describe("export and restore", () => {
  it("restores a pruned thread after deleteThread (importThread lifts the tombstone)", async () => {
    const saver = newSaver();
    const { ids: all } = await chain(saver, "t", 4);
    await saver.prune(["t"], { keepLast: 2 });
    const file = await saver.exportThread("t", { as: "bytes" });
    await saver.deleteThread("t");
    expect(await ids(saver, "t")).toEqual([]);
    await importThread(saver, file);
    expect(await ids(saver, "t")).toEqual(all.slice(-2).reverse());
    expect((await saver.getTuple(cfg("t")))?.checkpoint.channel_values).toEqual({ step: 3 });
  });
});

describe("deleteForRuns (Python suite)", () => {
  async function runCheckpoint(saver: IndexedDBSaver, config: RunnableConfig, runId: string, step: number) {
    const checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(step),
      channel_values: { v: `${runId}-${step}` },
      channel_versions: { v: saver.getNextVersion(step) },
    };
    return saver.put(
      { ...config, metadata: { run_id: runId } },
      checkpoint,
      { source: "loop", step, parents: {} },
      checkpoint.channel_versions,
    );
  }

  it("single, multiple, other runs preserved, writes removed, across namespaces", async () => {
    const saver = newSaver();
    const r1 = await runCheckpoint(saver, cfg("t"), "run1", 0);
    await saver.putWrites(r1, [["ch", "x"]], "task");
    const r2 = await runCheckpoint(saver, r1, "run2", 1);
    const r3 = await runCheckpoint(saver, r2, "run3", 2);
    await runCheckpoint(saver, cfg("t", "child:1"), "run1", 3);
    await runCheckpoint(saver, cfg("u"), "other", 0);

    await saver.deleteForRuns(["run1"]);
    expect(await saver.getTuple(r1)).toBeUndefined();
    expect(await ids(saver, "t", "child:1")).toEqual([]);
    expect((await saver.getTuple(r2))?.checkpoint.channel_values).toEqual({ v: "run2-1" });

    await saver.deleteForRuns(["run2", "run3"]);
    expect(await ids(saver, "t")).toEqual([]);
    expect(await ids(saver, "u")).toHaveLength(1);
    await saver.deleteForRuns([]);
    await saver.deleteForRuns(["nonexistent"]);
    expect(r3).toBeDefined();
  });

  it("keeps a blob a surviving child still uses", async () => {
    const saver = newSaver();
    // run1 writes channel a; run2's checkpoint inherits a's version unchanged.
    const version = saver.getNextVersion(undefined);
    const first = await saver.put(
      { ...cfg("t"), metadata: { run_id: "run1" } },
      { ...emptyCheckpoint(), id: uuid6(0), channel_values: { a: "kept" }, channel_versions: { a: version } },
      { source: "loop", step: 0, parents: {} },
      { a: version },
    );
    const second = await saver.put(
      { ...first, metadata: { run_id: "run2" } },
      { ...emptyCheckpoint(), id: uuid6(1), channel_values: { a: "kept" }, channel_versions: { a: version } },
      { source: "loop", step: 1, parents: {} },
      {},
    );
    await saver.deleteForRuns(["run1"]);
    expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ a: "kept" });
  });

  it("keeps a blob a surviving checkpoint uses after the checkpoints between were deleted", async () => {
    const dbName = freshDbName("lifecycle");
    const saver = newSaver(dbName);
    // Three runs, one checkpoint each; a's value is stored with the first and unchanged since.
    const version = saver.getNextVersion(undefined);
    let config: RunnableConfig = cfg("t");
    for (const [step, runId] of ["run1", "run2", "run3"].entries()) {
      config = await saver.put(
        { ...config, metadata: { run_id: runId } },
        { ...emptyCheckpoint(), id: uuid6(step), channel_values: { a: "kept" }, channel_versions: { a: version } },
        { source: "loop", step, parents: {} },
        step === 0 ? { a: version } : {},
      );
    }
    // Once run2 is gone, run1's checkpoint and run3's are no longer neighbours.
    await saver.deleteForRuns(["run2"]);
    await saver.deleteForRuns(["run1"]);
    const reader = newSaver(dbName);
    expect((await reader.getTuple(cfg("t")))?.checkpoint.channel_values).toEqual({ a: "kept" });
  });

  it("a put on top of a checkpoint its run's delete removed meanwhile keeps the values it did not change", async () => {
    const dbName = freshDbName("lifecycle");
    const saver = newSaver(dbName);
    const [a, b] = [saver.getNextVersion(undefined), saver.getNextVersion(undefined)];
    // run1's checkpoint stores a and b; run2 read it as its latest and is about to put on top of it.
    const parent = await saver.put(
      { ...cfg("t"), metadata: { run_id: "run1" } },
      { ...emptyCheckpoint(), id: uuid6(0), channel_values: { a: "old a", b: "b" }, channel_versions: { a, b } },
      { source: "loop", step: 0, parents: {} },
      { a, b },
    );
    // Another tab deletes run1 (its checkpoint, and the values no other checkpoint names)...
    await newSaver(dbName).deleteForRuns(["run1"]);
    // ...before run2's checkpoint, which changed only a, is put.
    const a2 = saver.getNextVersion(a);
    const child = await saver.put(
      { ...parent, metadata: { run_id: "run2" } },
      { ...emptyCheckpoint(), id: uuid6(1), channel_values: { a: "new a", b: "b" }, channel_versions: { a: a2, b } },
      { source: "loop", step: 1, parents: {} },
      { a: a2 },
    );
    const reader = newSaver(dbName);
    expect((await reader.getTuple(child))?.checkpoint.channel_values).toEqual({ a: "new a", b: "b" });
    expect((await saver.getTuple(cfg("t")))?.checkpoint.channel_values).toEqual({ a: "new a", b: "b" });
  });
});

describe("listThreads", () => {
  it("lists each thread once, most recently updated first, with paging, and follows deletes and prunes", async () => {
    const saver = newSaver();
    const configs = new Map<string, RunnableConfig>();
    const order = ["a", "b", "c", "a", "d", "b", "e", "a"];
    for (const [i, thread] of order.entries()) {
      const checkpoint = { ...emptyCheckpoint(), id: uuid6(i), channel_values: {}, channel_versions: {} };
      configs.set(
        thread,
        await saver.put(
          configs.get(thread) ?? cfg(thread),
          checkpoint,
          { source: "loop", step: i, parents: {}, title: thread } as CheckpointMetadata,
          {},
        ),
      );
    }
    const list = async (options = {}) => {
      const out = [];
      for await (const info of saver.listThreads(options)) out.push(info);
      return out;
    };
    const all = await list();
    expect(all.map((t) => t.threadId)).toEqual(["a", "e", "b", "d", "c"]);
    expect(all[0]).toMatchObject({ threadId: "a", checkpointCount: 3, metadata: { step: 7, title: "a" } });
    expect(all.every((t) => t.updatedAt >= t.createdAt)).toBe(true);
    expect((await list({ limit: 2 })).map((t) => t.threadId)).toEqual(["a", "e"]);
    expect((await list({ limit: 2, offset: 2 })).map((t) => t.threadId)).toEqual(["b", "d"]);
    expect((await list({ before: all[1]!.updatedAt })).map((t) => t.threadId)).toEqual(["b", "d", "c"]);
    expect((await list({ filter: { title: "d" } })).map((t) => t.threadId)).toEqual(["d"]);

    await saver.deleteThread("e");
    await saver.prune(["a"]);
    const after = await list();
    expect(after.map((t) => t.threadId)).toEqual(["a", "b", "d", "c"]);
    expect(after[0]!.checkpointCount).toBe(1);
  });

  it("with count: false lists the same threads without checkpointCount, and counts no rows", async () => {
    const saver = newSaver();
    let config = cfg("long");
    for (let i = 0; i < 5; i++) {
      config = await saver.put(
        config,
        { ...emptyCheckpoint(), id: uuid6(i) },
        { source: "loop", step: i, parents: {} },
        {},
      );
    }
    await saver.put(cfg("short"), { ...emptyCheckpoint(), id: uuid6(9) }, { source: "loop", step: 0, parents: {} }, {});
    const counted = [];
    for await (const info of saver.listThreads()) counted.push(info);
    expect(counted.map((t) => [t.threadId, t.checkpointCount])).toEqual([
      ["short", 1],
      ["long", 5],
    ]);
    const counts = vi.spyOn(IDBObjectStore.prototype, "count");
    const listed = [];
    for await (const info of saver.listThreads({ count: false })) listed.push(info);
    expect(counts).not.toHaveBeenCalled();
    counts.mockRestore();
    expect(listed).toEqual(counted.map(({ checkpointCount: _, ...rest }) => rest));
    expect(listed.every((t) => !("checkpointCount" in t))).toBe(true);
    const page = [];
    for await (const info of saver.listThreads({ count: false, limit: 1, offset: 1 })) page.push(info.threadId);
    expect(page).toEqual(["long"]);
    await expect(saver.listThreads({ count: "no" as never }).next()).rejects.toThrow(/count must be true or false/);
  });

  it("pages past 64 threads", async () => {
    const saver = newSaver();
    for (let i = 0; i < 150; i++) {
      await saver.put(
        cfg(`thread-${String(i).padStart(3, "0")}`),
        { ...emptyCheckpoint(), id: uuid6(i) },
        { source: "loop", step: 0, parents: {} },
        {},
      );
    }
    const seen: string[] = [];
    for await (const info of saver.listThreads()) seen.push(info.threadId);
    expect(seen).toHaveLength(150);
    expect(seen[0]).toBe("thread-149");
    expect(seen.at(-1)).toBe("thread-000");
  });
});

describe("subscribe", () => {
  it("tells local listeners and other saver instances about puts, deletes, copies and prunes", async () => {
    const dbName = freshDbName("events");
    const writer = newSaver(dbName);
    const watcher = newSaver(dbName);
    const local: CheckpointChange[] = [];
    const remote: CheckpointChange[] = [];
    const stopLocal = writer.subscribe((change) => local.push(change));
    watcher.subscribe((change) => remote.push(change));
    const config = await writer.put(
      cfg("t"),
      { ...emptyCheckpoint(), id: uuid6(0) },
      { source: "loop", step: 0, parents: {} },
      {},
    );
    await writer.copyThread("t", "t2");
    await writer.prune(["t2"]);
    await writer.deleteThread("t");
    await vi.waitFor(() => expect(remote.length).toBeGreaterThanOrEqual(3));
    expect(local.map((c) => [c.kind, c.threadId, c.remote])).toEqual([
      ["put", "t", false],
      ["copy", "t2", false],
      ["delete", "t", false],
    ]);
    expect(local[0]!.checkpointId).toBe(config.configurable?.checkpoint_id);
    expect(remote.map((c) => [c.kind, c.threadId, c.remote])).toEqual([
      ["put", "t", true],
      ["copy", "t2", true],
      ["delete", "t", true],
    ]);
    stopLocal();
    await writer.deleteThread("t2");
    expect(local).toHaveLength(3);
  });
});

/** The names of the saver's revalued marks (rows/marks.ts), read over a connection of its own. */
async function revaluedMarks(dbName: string): Promise<string[]> {
  const meta = await readStore<MetaRow>(dbName, "meta");
  return meta.map((row) => row.name).filter((name) => name.startsWith("revalued\u0000"));
}

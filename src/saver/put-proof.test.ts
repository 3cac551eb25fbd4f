/**
 * A put skips its guard reads (the key record, its parent's key) when the
 * saver proves both from memory as the transaction is created
 * (fresh-cache.ts `provesPut`): it holds the write lease, a put of its own
 * found the key under that lease, and it stored or kept the parent since.
 * These tests check that the reads go, and that every write that could make
 * the proof wrong brings them back: another saver's write (the lease
 * changes hands), and this saver's own deletes, prunes and runs deletions
 * issued while the put waits, whose rows the put must not hang off.
 * Runs in Node (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { IndexedDBSaver } from "./index.js";
import { chatGraph, plain } from "../../test/support/chat-graph.js";
import { countRequests } from "../../bench/requests.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { request, withRaw } from "../../test/support/raw-idb.js";
import { contextOf } from "./registry.js";
import { noteLive, proofToken, proveWrites } from "./put-proof.js";
import { crossTabName } from "../core/channel.js";

const track = trackSavers<IndexedDBSaver>();

const root = (thread_id: string): RunnableConfig => ({ configurable: { thread_id, checkpoint_ns: "" } });

/**
 * Puts a checkpoint after `parent` (or the thread's first) whose `a` is `value` at `version`, in run
 * `runId`; `b` is the first put's, carried over unchanged (its value is stored with the first).
 */
function putStep(saver: IndexedDBSaver, parent: RunnableConfig, value: string, version: number, runId = "run-1") {
  const metadata: CheckpointMetadata & { run_id: string } = {
    source: "loop",
    step: version,
    parents: {},
    run_id: runId,
  };
  const checkpoint = {
    ...emptyCheckpoint(),
    id: uuid6(0),
    channel_values: { a: value, b: "b1" },
    channel_versions: { a: version, b: 1 },
  };
  return saver.put(parent, checkpoint, metadata, version === 1 ? { a: 1, b: 1 } : { a: version });
}

/** The guard reads among `counts`: the key record's `get` and the parent's `getKey`. */
const guardReads = (counts: Record<string, number>) => (counts.get ?? 0) + (counts.getKey ?? 0);

/** A saver with three puts on thread "t" behind it: the third is proven. Returns it and the last config. */
async function warmed(dbName = freshDbName("put-proof")) {
  const saver = track(new IndexedDBSaver({ dbName }));
  let config = await putStep(saver, root("t"), "a1", 1);
  config = await putStep(saver, config, "a2", 2);
  config = await putStep(saver, config, "a3", 3);
  return { saver, config, dbName };
}

/**
 * Thread "t"'s checkpoints that a reader cannot use: one without a value of
 * its channels (a put that carried `b` over from a parent that went), or one
 * whose parent is gone when `whole` (a removal that leaves no parent behind
 * must leave no child either).
 */
async function broken(saver: IndexedDBSaver, whole: boolean): Promise<string[]> {
  const tuples = [];
  for await (const tuple of saver.list(root("t"))) tuples.push(tuple);
  const ids = new Set(tuples.map((tuple) => tuple.checkpoint.id));
  return tuples
    .filter((tuple) => {
      const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
      const values = tuple.checkpoint.channel_values;
      return values.a === undefined || values.b !== "b1" || (whole && parent !== undefined && !ids.has(parent));
    })
    .map((tuple) => tuple.checkpoint.id);
}

describe("a put's guard reads proven from memory", () => {
  it("go once the saver has put the parent under the lease, and the put still lands", async () => {
    const { saver, config } = await warmed();
    let next: RunnableConfig | undefined;
    const counts = await countRequests(async () => void (next = await putStep(saver, config, "a4", 4)));
    expect(guardReads(counts)).toBe(0);
    expect(counts.put).toBeGreaterThan(0);
    const latest = await saver.getTuple(root("t"));
    expect(latest?.checkpoint.id).toBe(next?.configurable?.checkpoint_id);
    expect(latest?.checkpoint.channel_values).toEqual({ a: "a4", b: "b1" });
    expect(latest?.parentConfig?.configurable?.checkpoint_id).toBe(config.configurable?.checkpoint_id);
  });

  it("are made by a saver with freshReads: false, whatever another saver of the page has loaded", async () => {
    await warmed();
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("put-proof"), freshReads: false }));
    let config = await putStep(saver, root("t"), "a1", 1);
    config = await putStep(saver, config, "a2", 2);
    config = await putStep(saver, config, "a3", 3);
    const counts = await countRequests(() => putStep(saver, config, "a4", 4));
    expect(guardReads(counts)).toBeGreaterThanOrEqual(2);
    expect(counts.put).toBe(2);
  });

  it("come back after another saver on the database writes (the lease changed hands)", async () => {
    const { saver, config, dbName } = await warmed();
    const other = track(new IndexedDBSaver({ dbName }));
    await putStep(other, root("elsewhere"), "x", 1);
    const counts = await countRequests(() => putStep(saver, config, "a4", 4));
    expect(guardReads(counts)).toBeGreaterThanOrEqual(2);
  });

  it("come back when another saver deleted the thread, and the put is dropped as a late write", async () => {
    const { saver, config, dbName } = await warmed();
    const other = track(new IndexedDBSaver({ dbName }));
    await other.deleteThread("t");
    await putStep(saver, config, "a4", 4);
    expect(await saver.getTuple(root("t"))).toBeUndefined();
  });

  // This saver's own removals, issued while the put is on its way: however they interleave, every stored
  // checkpoint reads back whole (the put rolls back as a late write, or stores every value), and after a
  // deleteThread none hangs off a deleted one.
  const removals: [string, (saver: IndexedDBSaver) => Promise<void>, boolean][] = [
    ["deleteThread", (saver) => saver.deleteThread("t"), true],
    ["deleteForRuns", (saver) => saver.deleteForRuns(["run-1"]), false],
    ["prune keeping none", (saver) => saver.prune(["t"], { strategy: "delete" }), false],
  ];
  for (const [name, remove, whole] of removals) {
    it(`leave every checkpoint whole when this saver's ${name} removes rows meanwhile`, async () => {
      // The put issued before the removal, with it, and a few microtasks to a few tasks after it.
      for (let delay = -1; delay < 8; delay++) {
        const { saver, config } = await warmed();
        const put = delay < 0 ? putStep(saver, config, "a4", 4, "run-2") : undefined;
        const removal = remove(saver);
        for (let i = 0; i < delay; i++) await (i < 4 ? Promise.resolve() : new Promise((r) => setTimeout(r, 0)));
        await Promise.all([removal, put ?? putStep(saver, config, "a4", 4, "run-2")]);
        expect(await broken(saver, whole)).toEqual([]);
        // A put after the removal, on the config the run holds, must not take the removed parent as proven.
        await putStep(saver, config, "a5", 5, "run-2");
        expect(await broken(saver, whole)).toEqual([]);
      }
    });
  }

  describe("a putWrites' guard reads (the tombstone and key-id copies)", () => {
    const writesOf = (saver: IndexedDBSaver, config: RunnableConfig, task: string) =>
      saver.putWrites(config, [["a", `${task}-value`]], task);

    /** The checkpoint ids thread "t"'s pending-write rows point at, and those of its stored checkpoints. */
    const idsOf = (dbName: string) =>
      withRaw(dbName, async (db) => {
        const tx = db.transaction(["writes", "checkpoints"]);
        const range = IDBKeyRange.bound(["t", ""], ["t", "", []]);
        const writes = await request(tx.objectStore("writes").getAllKeys(range));
        const checkpoints = await request(tx.objectStore("checkpoints").getAllKeys(range));
        return {
          writes: new Set(writes.map((key) => (key as string[])[2])),
          checkpoints: new Set(checkpoints.map((key) => (key as string[])[2])),
        };
      });

    it("go for writes to the checkpoint this saver just put, which read back", async () => {
      const { saver, config } = await warmed();
      const counts = await countRequests(() => writesOf(saver, config, "task-1"));
      expect(guardReads(counts)).toBe(0);
      // Its one row, added (a regular channel: the first write wins).
      expect(counts.add).toBe(1);
      expect((await saver.getTuple(root("t")))?.pendingWrites).toEqual([["task-1", "a", "task-1-value"]]);
    });

    it("come back after another saver writes, and for a checkpoint older than this saver's last put there", async () => {
      const { saver, config, dbName } = await warmed();
      const older = (await saver.getTuple(root("t")))!.parentConfig!;
      expect(guardReads(await countRequests(() => writesOf(saver, older, "task-0")))).toBeGreaterThanOrEqual(2);
      await putStep(track(new IndexedDBSaver({ dbName })), root("elsewhere"), "x", 1);
      expect(guardReads(await countRequests(() => writesOf(saver, config, "task-1")))).toBeGreaterThanOrEqual(2);
    });

    it("go in a graph run with async durability, whose writes follow puts still on their way", async () => {
      const saver = track(new IndexedDBSaver({ dbName: freshDbName("put-proof") }));
      const graph = chatGraph(saver);
      const config = { configurable: { thread_id: "t" }, durability: "async" as const };
      for (const text of ["one", "two"]) await graph.invoke({ messages: [new HumanMessage(text)] }, config);
      const counts = await countRequests(async () => {
        for (const text of ["three", "four", "five"])
          await graph.invoke({ messages: [new HumanMessage(text)] }, config);
      });
      expect(guardReads(counts)).toBe(0);
      expect(counts.add).toBeGreaterThan(0);
      const fresh = track(new IndexedDBSaver({ dbName: saver.dbName, freshReads: false }));
      const state = await chatGraph(fresh).getState({ configurable: { thread_id: "t" } });
      const turns = ["one", "two", "three", "four", "five"];
      expect(plain(state.values.messages as BaseMessage[]).map(([, text]) => text)).toEqual(
        turns.flatMap((text, i) => [text, `echo ${text} (#${2 * i + 1})`]),
      );
    });

    it("leave no write of a deleted thread when this saver's deleteThread runs meanwhile", async () => {
      for (let delay = -1; delay < 8; delay++) {
        const { saver, config, dbName } = await warmed();
        const early = delay < 0 ? writesOf(saver, config, "task-1") : undefined;
        const removal = saver.deleteThread("t");
        for (let i = 0; i < delay; i++) await (i < 4 ? Promise.resolve() : new Promise((r) => setTimeout(r, 0)));
        await Promise.all([removal, early ?? writesOf(saver, config, "task-1")]);
        const { writes, checkpoints } = await idsOf(dbName);
        expect(checkpoints.size).toBe(0);
        expect([...writes]).toEqual([]);
      }
    });
  });

  it("come back after a notice from a tab without the lease, for what a write in flight then learned", async () => {
    const { saver, config, dbName } = await warmed();
    const ctx = contextOf(saver)!;
    // Taken as a putWrites to thread "t2" starts; its transaction would find no tombstone there.
    const before = proofToken(ctx);
    expect(before).toBeDefined();
    // An older build's tab deletes "t2" without the lease, and says so.
    const heard = new Promise<void>((resolve) => ctx.feed.subscribe((change) => change.remote && resolve()));
    const other = new BroadcastChannel(crossTabName({ kind: "changes", dbName }));
    other.postMessage({ v: 1, sender: "old-build", change: { threadId: "t2", kind: "delete" } });
    await heard;
    other.close();
    // This saver's next put proves the key again, under the same lease epoch as before the notice.
    await putStep(saver, config, "a4", 4);
    // The putWrites' note arrives late: what it read came before the notice, and proves nothing now.
    noteLive(ctx, before, "t2");
    const { serde, keyId } = await ctx.bind();
    const proves = (threadId: string) => proveWrites(ctx, serde, keyId, threadId, "", "not-stored", () => false);
    expect(proves("t2")).toBe(false);
    // A note taken after the notice still counts (the key is proven: the proof can hold).
    noteLive(ctx, proofToken(ctx), "t3");
    expect(proves("t3")).toBe(true);
  });

  it("subscribe one change listener per saver however often it closes and writes again", async () => {
    const { saver, config } = await warmed();
    const feed = contextOf(saver)!.feed;
    const listeners = new Set<unknown>();
    const subscribe = feed.subscribe.bind(feed);
    feed.subscribe = (listener) => (listeners.add(listener), subscribe(listener));
    for (let i = 0; i < 5; i++) {
      await saver.close();
      await putStep(saver, config, `again${i}`, 4 + i);
    }
    // The cache's and the latest reads' listeners, and the proofs': each the same function at every reopen.
    expect(listeners.size).toBeLessThanOrEqual(3);
  });

  describe("the thread summary left as it was", () => {
    /** Resolves once Date.now() has moved on: the saver's next stamp is then not ahead of it. */
    async function nextMillisecond() {
      const start = Date.now();
      while (Date.now() === start) await new Promise((resolve) => setTimeout(resolve, 0));
    }

    /**
     * Puts `count` checkpoints on `thread` after `config`; returns the last config and the requests of the
     * last put, counted unless `concurrent` (counting patches IndexedDB's prototypes for the call's length,
     * which two calls at once would leave patched).
     */
    async function steps(
      saver: IndexedDBSaver,
      thread: string,
      config: RunnableConfig | undefined,
      count: number,
      concurrent = false,
    ) {
      let last = config ?? root(thread);
      let counts: Record<string, number> = {};
      for (let i = 0; i < count; i++) {
        // A put stamped ahead of the clock (two within a millisecond) writes its summary all the same.
        await nextMillisecond();
        const parent = last;
        const step = async () => void (last = await putStep(saver, parent, `${thread}${i}`, i + 2));
        if (concurrent) await step();
        else counts = await countRequests(step);
      }
      return { config: last, counts };
    }

    it("by puts to the thread first by update time, which listThreads still reports, orders and filters by", async () => {
      const dbName = freshDbName("put-proof");
      const saver = track(new IndexedDBSaver({ dbName }));
      let a = await steps(saver, "a", undefined, 4);
      // The first summary is known now, and is thread a's: its next puts write the checkpoint row alone.
      expect(a.counts.put).toBe(1);
      const b = await steps(saver, "b", undefined, 3);
      // Thread b is first now; a's next put writes its summary again, the ones after it do not.
      a = await steps(saver, "a", a.config, 1);
      expect(a.counts.put).toBe(2);
      // Later than the summary a's put just wrote.
      await new Promise((resolve) => setTimeout(resolve, 5));
      const beforeA = Date.now();
      a = await steps(saver, "a", a.config, 3);
      expect(a.counts.put).toBe(1);
      const afterA = Date.now();
      const latestA = a.config.configurable?.checkpoint_id as string;
      for (const reader of [saver, track(new IndexedDBSaver({ dbName }))]) {
        const threads = [];
        for await (const thread of reader.listThreads()) threads.push(thread);
        expect(threads.map((thread) => thread.threadId)).toEqual(["a", "b"]);
        const [first, second] = threads;
        expect(first!.latestCheckpointId).toBe(latestA);
        // The time of a's last put, which no summary row holds.
        expect(first!.updatedAt).toBeGreaterThanOrEqual(beforeA);
        expect(first!.updatedAt).toBeLessThanOrEqual(afterA + 1);
        expect(second!.latestCheckpointId).toBe(b.config.configurable?.checkpoint_id);
        expect(second!.updatedAt).toBeLessThan(first!.updatedAt);
        // Threads updated before a's last put: b only, though a's summary row is older than that.
        const before = [];
        for await (const thread of reader.listThreads({ before: first!.updatedAt })) before.push(thread.threadId);
        expect(before).toEqual(["b"]);
      }
    });

    it("never by a put racing another thread's summary write", async () => {
      const saver = track(new IndexedDBSaver({ dbName: freshDbName("put-proof") }));
      let a = await steps(saver, "a", undefined, 4);
      let b = await steps(saver, "b", undefined, 1);
      a = await steps(saver, "a", a.config, 2);
      // b's summary write and a's put issued together, many times: a must never skip its own while
      // b's is newer than a's row, or a would list below b though updated last.
      for (let round = 0; round < 10; round++) {
        [b, a] = await Promise.all([steps(saver, "b", b.config, 1, true), steps(saver, "a", a.config, 1, true)]);
        const order = [];
        for await (const thread of saver.listThreads()) order.push([thread.threadId, thread.updatedAt] as const);
        expect(order.map(([id]) => id).sort()).toEqual(["a", "b"]);
        expect(order[0]![1]).toBeGreaterThanOrEqual(order[1]![1]);
      }
    });
  });
});

/**
 * The kept delta walks (delta-cache.ts): every history a history read gets
 * from a derived walk equals the default walk's (BaseCheckpointSaver, one
 * getTuple per ancestor, nothing kept), over random histories with forks,
 * new roots, two namespaces, removals, snapshots and late writes; and no
 * write, delete, copy or prune (of this saver or another on the database)
 * leaves a stale walk served.
 */
import { RemoveMessage, HumanMessage } from "@langchain/core/messages";
import {
  BaseCheckpointSaver,
  DeltaSnapshot,
  emptyCheckpoint,
  uuid6,
  type Checkpoint,
  type CheckpointMetadata,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { rawAccessOf } from "./raw-access.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { byDepth } from "../../test/support/depth.js";

const track = trackSavers<IndexedDBSaver>();
const CHANNELS = ["messages", "notes"];
const NAMESPACES = ["", "child:1"];

/** A small seeded generator (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const meta = (step: number): CheckpointMetadata => ({ source: "loop", step, parents: {} });
const at = (threadId: string, checkpointNs: string, checkpointId?: string): RunnableConfig => ({
  configurable: {
    thread_id: threadId,
    checkpoint_ns: checkpointNs,
    ...(checkpointId && { checkpoint_id: checkpointId }),
  },
});

/**
 * Checkpoints per namespace of the histories the tests of one change write:
 * 12 at the fast depth, 24 at the full depth. Each test checks every
 * checkpoint's walk against the default walk, one read per ancestor, so its
 * cost grows with the square (in Chromium, 2-7 s a test at 24). The test of
 * random histories writes 24 at both depths.
 */
const HISTORY = byDepth(12, 24);

/**
 * Writes a random history into `threadId`: per namespace, `count`
 * checkpoints whose parent is mostly the latest, sometimes an older one (a
 * fork) or none (a new root); delta channels snapshotted now and then;
 * writes that add and remove messages, by several tasks, some late (to an
 * older checkpoint). Returns every checkpoint config written.
 */
async function randomHistory(saver: IndexedDBSaver, threadId: string, seed: number, count = HISTORY) {
  const next = random(seed);
  // Ids that depend only on the position: a thread written again with another seed reuses them.
  const written: RunnableConfig[] = [];
  let step = 0;
  for (const ns of NAMESPACES) {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const roll = next();
      const parentId =
        ids.length === 0 || roll < 0.04 ? undefined : roll < 0.2 ? ids[Math.floor(next() * ids.length)] : ids.at(-1);
      const values: Record<string, unknown> = {};
      const versions: Record<string, number> = {};
      for (const channel of CHANNELS) {
        versions[channel] = saver.getNextVersion(undefined);
        if (next() < 0.12) values[channel] = new DeltaSnapshot([`${channel}-snapshot-${i}`]);
      }
      const checkpoint: Checkpoint = {
        ...emptyCheckpoint(),
        id: `1f0-${String(step++).padStart(5, "0")}`,
        channel_values: values,
        channel_versions: versions,
      };
      const config = await saver.put(at(threadId, ns, parentId), checkpoint, meta(i), versions);
      ids.push(checkpoint.id);
      written.push(config);
      const writes: [string, unknown][] = [];
      for (let w = Math.floor(next() * 4); w > 0; w--) {
        const channel = next() < 0.8 ? CHANNELS[Math.floor(next() * CHANNELS.length)]! : "other";
        writes.push([
          channel,
          next() < 0.25
            ? new RemoveMessage({ id: `m${Math.floor(next() * i)}` })
            : new HumanMessage({ content: `${ns} ${i} ${w}`, id: `m${i}` }),
        ]);
      }
      if (writes.length) await saver.putWrites(config, writes, `task-${Math.floor(next() * 3)}`);
      if (next() < 0.1 && written.length > 1) {
        const older = written[Math.floor(next() * (written.length - 1))]!;
        await saver.putWrites(older, [["messages", `late ${i}`]], `late-${i}`);
      }
    }
  }
  return written;
}

/** The default walk: one getTuple per ancestor, nothing kept. */
function defaultWalk(saver: IndexedDBSaver, config: RunnableConfig) {
  return BaseCheckpointSaver.prototype.getDeltaChannelHistory.call(saver, { config, channels: CHANNELS });
}

/** What `graph.getStateHistory` asks: list newest first, each checkpoint's history in turn. */
async function historyRead(saver: IndexedDBSaver, threadId: string, checkpointNs: string) {
  const seen: { config: RunnableConfig; history: unknown }[] = [];
  for await (const tuple of saver.list(at(threadId, checkpointNs))) {
    seen.push({
      config: tuple.config,
      history: await saver.getDeltaChannelHistory({ config: tuple.config, channels: CHANNELS }),
    });
  }
  return seen;
}

async function expectSameAsDefault(saver: IndexedDBSaver, threadId: string) {
  let compared = 0;
  for (const ns of NAMESPACES) {
    for (const { config, history } of await historyRead(saver, threadId, ns)) {
      expect(history, `${ns} ${String(config.configurable?.checkpoint_id)}`).toEqual(await defaultWalk(saver, config));
      compared++;
    }
  }
  return compared;
}

/**
 * A history read stopped half-way, before a checkpoint whose walk will be
 * derived from its child's (it holds no seed itself): returns that checkpoint.
 */
async function readHalfway(saver: IndexedDBSaver, threadId: string): Promise<RunnableConfig> {
  const tuples = [];
  for await (const tuple of saver.list(at(threadId, ""))) tuples.push(tuple);
  const byId = new Map(tuples.map((tuple) => [tuple.checkpoint.id, tuple]));
  const stop = tuples.findIndex((tuple, i) => {
    const parent = byId.get(String(tuple.parentConfig?.configurable?.checkpoint_id));
    return (
      i >= 8 && parent !== undefined && CHANNELS.every((channel) => !(channel in parent.checkpoint.channel_values))
    );
  });
  expect(stop).toBeGreaterThan(0);
  for (const tuple of tuples.slice(0, stop + 1))
    await saver.getDeltaChannelHistory({ config: tuple.config, channels: CHANNELS });
  return tuples[stop]!.parentConfig!;
}

/** Clears one object store of `dbName` with a raw connection, as code outside the saver would. */
async function clearStore(dbName: string, store: string): Promise<void> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const tx = db.transaction(store, "readwrite");
      tx.objectStore(store).clear();
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

describe("kept delta walks", () => {
  it("give every checkpoint of random histories the default walk's history", async () => {
    // Two random histories at the fast depth, six at the full depth (docs/testing.md).
    for (const seed of byDepth([1, 2], [1, 2, 3, 4, 5, 6])) {
      const saver = track(new IndexedDBSaver({ dbName: freshDbName("walks") }));
      await randomHistory(saver, "t", seed, 24);
      expect(await expectSameAsDefault(saver, "t")).toBe(2 * 24);
    }
  });

  it("give the same history in any order of calls, mixing namespaces and channel sets", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("walks") }));
    const written = await randomHistory(saver, "t", 7);
    const next = random(99);
    for (let n = 0; n < 80; n++) {
      const config = written[Math.floor(next() * written.length)]!;
      const channels = next() < 0.5 ? CHANNELS : ["notes"];
      expect(await saver.getDeltaChannelHistory({ config, channels })).toEqual(
        await BaseCheckpointSaver.prototype.getDeltaChannelHistory.call(saver, { config, channels }),
      );
    }
  });

  it("are derived, not re-read, along a history read (the parent's walk from its child's)", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("walks") }));
    let config = at("t", "");
    for (let i = 0; i < 10; i++) {
      const versions = { messages: saver.getNextVersion(undefined) };
      const values = i === 0 ? { messages: new DeltaSnapshot([]) } : {};
      const checkpoint = { ...emptyCheckpoint(), id: uuid6(i), channel_values: values, channel_versions: versions };
      config = await saver.put(config, checkpoint, meta(i), versions);
      await saver.putWrites(config, [["messages", `turn ${i}`]], "task");
    }
    const tuples = [];
    for await (const tuple of saver.list(at("t", ""))) tuples.push(tuple);
    await saver.getDeltaChannelHistory({ config: tuples[0]!.config, channels: ["messages"] });
    // The next reads never reach the database: a closed connection would make them reopen it.
    const reads: string[] = [];
    const db = rawAccessOf(saver)!.db;
    const read = db.read.bind(db);
    db.read = ((...args: Parameters<typeof read>) => (reads.push(String(args[2])), read(...args))) as typeof db.read;
    for (const tuple of tuples.slice(1, -1)) {
      const history = await saver.getDeltaChannelHistory({ config: tuple.config, channels: ["messages"] });
      const step = tuple.metadata!.step;
      expect(history.messages!.writes.map((write) => write[2])).toEqual(
        Array.from({ length: step }, (_, i) => `turn ${i}`),
      );
    }
    expect(reads).toEqual([]);
  });

  const changes: [
    string,
    (saver: IndexedDBSaver, t: string, parent: RunnableConfig | undefined) => Promise<unknown>,
  ][] = [
    [
      "a late write to an ancestor",
      async (saver, _t, parent) => parent && saver.putWrites(parent, [["messages", "added later"]], "late-task"),
    ],
    [
      "a delete and a new history",
      async (saver, t) => {
        await saver.deleteThread(t);
        await randomHistory(saver, t, 12);
      },
    ],
    [
      "a delete and a copy",
      async (saver, t) => {
        await saver.deleteThread(t);
        await randomHistory(saver, "source", 13);
        await saver.copyThread("source", t);
      },
    ],
    ["a prune", (saver, t) => saver.prune([t], { strategy: "keep_latest" })],
  ];
  it.each(changes)("are not served after %s by this saver", async (_, change) => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("walks") }));
    await randomHistory(saver, "t", 20);
    const next = await readHalfway(saver, "t");
    const nextTuple = await saver.getTuple(next);
    await change(saver, "t", nextTuple?.parentConfig);
    expect(await saver.getDeltaChannelHistory({ config: next, channels: CHANNELS })).toEqual(
      await defaultWalk(saver, next),
    );
    await expectSameAsDefault(saver, "t");
  });

  it("are not served after this saver was closed and its rows edited outside it (a restored backup, another program)", async () => {
    const dbName = freshDbName("walks");
    const saver = track(new IndexedDBSaver({ dbName }));
    await randomHistory(saver, "t", 40);
    const next = await readHalfway(saver, "t");
    await saver.close();
    await clearStore(dbName, "writes");
    const history = await saver.getDeltaChannelHistory({ config: next, channels: CHANNELS });
    expect(history).toEqual(await defaultWalk(saver, next));
    expect(history.messages!.writes).toEqual([]);
  });

  it.each([
    ["", false],
    // close() shuts the change feed; the walks kept after the reopen must still hear of other tabs.
    [", also once this saver was closed and reopened", true],
  ])("are not served after another saver on the database (another tab) changes the thread%s", async (_, reopen) => {
    const dbName = freshDbName("walks");
    const ours = track(new IndexedDBSaver({ dbName }));
    const theirs = track(new IndexedDBSaver({ dbName }));
    // Hears what ours hears without touching ours' feed (a subscription would reopen its channel).
    const witness = track(new IndexedDBSaver({ dbName }));
    await randomHistory(ours, "t", 30);
    if (reopen) {
      await readHalfway(ours, "t");
      await ours.close();
    }
    const next = await readHalfway(ours, "t");
    const seen = new Promise<void>((resolve) => {
      const stop = witness.subscribe((change) => change.remote && (stop(), resolve()));
    });
    await theirs.deleteThread("t");
    await randomHistory(theirs, "t", 31);
    await seen;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await ours.getDeltaChannelHistory({ config: next, channels: CHANNELS })).toEqual(
      await defaultWalk(ours, next),
    );
    await expectSameAsDefault(ours, "t");
  });
});

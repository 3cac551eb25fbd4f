/**
 * IndexedDBSaver's own rules, beyond the official suite: the write contract
 * decided per write, late writes after a delete, id guards, fork-safe
 * versions, the delta walk against the default walk, and Python-suite checks
 * the JS suite lacks. Runs in Node (fake-indexeddb) and Chromium.
 */
import {
  BaseCheckpointSaver,
  DeltaSnapshot,
  ERROR,
  INTERRUPT,
  emptyCheckpoint,
  uuid6,
  type Checkpoint,
  type CheckpointMetadata,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();

function newSaver(dbName = freshDbName("saver")): IndexedDBSaver {
  return track(new IndexedDBSaver({ dbName }));
}

const meta = (step: number, extra: Record<string, unknown> = {}): CheckpointMetadata =>
  ({ source: "loop", step, parents: {}, ...extra }) as CheckpointMetadata;

function checkpoint(
  id: string,
  values: Record<string, unknown> = {},
  versions: Record<string, number> = {},
): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

const root = (thread_id: string, checkpoint_ns = ""): RunnableConfig => ({
  configurable: { thread_id, checkpoint_ns },
});

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe("putWrites", () => {
  it("keeps the first regular write and replaces special ones, decided per write", async () => {
    const saver = newSaver();
    const config = await saver.put(root("t"), checkpoint(uuid6(0)), meta(0), {});
    await saver.putWrites(
      config,
      [
        ["a", "first"],
        [ERROR, "old error"],
      ],
      "task",
    );
    // Same batch shape again: the regular write must not change, the error must.
    await saver.putWrites(
      config,
      [
        ["a", "second"],
        [ERROR, "new error"],
      ],
      "task",
    );
    const tuple = await saver.getTuple(config);
    expect(tuple?.pendingWrites).toEqual([
      ["task", ERROR, "new error"],
      ["task", "a", "first"],
    ]);
  });

  it("stores the same (task, writes) put twice as one row", async () => {
    const saver = newSaver();
    const config = await saver.put(root("t"), checkpoint(uuid6(0)), meta(0), {});
    await saver.putWrites(config, [["ch", 1]], "task");
    await saver.putWrites(config, [["ch", 1]], "task");
    expect((await saver.getTuple(config))?.pendingWrites).toEqual([["task", "ch", 1]]);
  });

  it("accepts writes before their checkpoint is put, and merges into older checkpoints", async () => {
    const saver = newSaver();
    const id = uuid6(0);
    const early = { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: id } };
    await saver.putWrites(early, [["x", "early"]], "task-b");
    const config = await saver.put(root("t"), checkpoint(id), meta(0), {});
    const child = await saver.put(config, checkpoint(uuid6(1)), meta(1), {});
    // Exit mode anchors writes on an older checkpoint that already has some.
    await saver.putWrites(config, [["x", "late"]], "task-a");
    expect((await saver.getTuple(config))?.pendingWrites).toEqual([
      ["task-a", "x", "late"],
      ["task-b", "x", "early"],
    ]);
    expect((await saver.getTuple(child))?.pendingWrites).toEqual([]);
  });

  it("returns writes in writesSortKey order: task path, task id, idx", async () => {
    const saver = newSaver();
    const config = await saver.put(root("t"), checkpoint(uuid6(0)), meta(0), {});
    await saver.putWrites(
      config,
      [
        ["c", "z1"],
        ["c", "z2"],
      ],
      "z-task",
      "~__pregel_pull, a",
    );
    await saver.putWrites(config, [["c", "b"]], "b-task", "~__pregel_pull, b");
    await saver.putWrites(config, [["c", "input"]], "00000000-0000-0000-0000-000000000000");
    const writes = (await saver.getTuple(config))?.pendingWrites?.map((w) => w[2]);
    expect(writes).toEqual(["input", "z1", "z2", "b"]);
  });
});

describe("put and getTuple", () => {
  it("copies config.metadata.run_id into stored metadata and round-trips metadata exactly", async () => {
    const saver = newSaver();
    const extra = { score: 42, nested: { list: [1, { deep: null }], empty: {} }, "unicode ✓": "é" };
    const config = await saver.put(
      { configurable: { thread_id: "t", checkpoint_ns: "" }, metadata: { run_id: "run-1" } },
      checkpoint(uuid6(0)),
      meta(0, extra),
      {},
    );
    const tuple = await saver.getTuple(config);
    expect(tuple?.metadata).toEqual({ ...meta(0, extra), run_id: "run-1" });
    // An explicit run_id in metadata wins over the config's.
    const other = await saver.put(
      { configurable: { thread_id: "t", checkpoint_ns: "" }, metadata: { run_id: "run-2" } },
      checkpoint(uuid6(1)),
      meta(1, { run_id: "mine" }),
      {},
    );
    expect(((await saver.getTuple(other))?.metadata as Record<string, unknown>).run_id).toBe("mine");
  });

  it("stores only new versions, loads carried-over channels, and never shows dropped ones", async () => {
    const saver = newSaver();
    const c1 = await saver.put(root("t"), checkpoint(uuid6(0), { a: "a1", b: "b1" }, { a: 1, b: 1 }), meta(0), {
      a: 1,
      b: 1,
    });
    const c2 = await saver.put(c1, checkpoint(uuid6(1), { a: "a2", b: "b1" }, { a: 2, b: 1 }), meta(1), { a: 2 });
    const c3 = await saver.put(c2, checkpoint(uuid6(2), { a: "a2" }, { a: 2 }), meta(2), {});
    expect((await saver.getTuple(c2))?.checkpoint.channel_values).toEqual({ a: "a2", b: "b1" });
    expect((await saver.getTuple(c1))?.checkpoint.channel_values).toEqual({ a: "a1", b: "b1" });
    expect((await saver.getTuple(c3))?.checkpoint.channel_values).toEqual({ a: "a2" });
  });

  it("finds the latest by id in code-unit order, not by locale", async () => {
    const saver = newSaver();
    for (const id of ["2", "10", "B", "a", "é", "b"]) await saver.put(root("t"), checkpoint(id), meta(0), {});
    expect((await saver.getTuple(root("t")))?.config.configurable?.checkpoint_id).toBe("é");
    const ids = (await collect(saver.list(root("t")))).map((t) => t.config.configurable?.checkpoint_id);
    expect(ids).toEqual(["é", "b", "a", "B", "2", "10"]);
  });

  it("keeps namespaces apart and lists all of them newest first when none is given", async () => {
    const saver = newSaver();
    await saver.put(root("t", ""), checkpoint("1"), meta(0), {});
    await saver.put(root("t", "child:1"), checkpoint("3"), meta(0), {});
    await saver.put(root("t", ""), checkpoint("2"), meta(1), {});
    const rootOnly = await collect(saver.list(root("t", "")));
    expect(rootOnly.map((t) => t.config.configurable?.checkpoint_id)).toEqual(["2", "1"]);
    const all = await collect(saver.list({ configurable: { thread_id: "t" } }));
    expect(all.map((t) => [t.config.configurable?.checkpoint_ns, t.config.configurable?.checkpoint_id])).toEqual([
      ["child:1", "3"],
      ["", "2"],
      ["", "1"],
    ]);
  });

  it("lists equal ids in several namespaces and threads by thread, then namespace, across pages and limits", async () => {
    const saver = newSaver();
    // Ids "a000".."a069", then one id shared by 3 namespaces of 2 threads, at the 64-row page edge.
    const plain = Array.from({ length: 70 }, (_, i) => `a${String(i).padStart(3, "0")}`);
    for (const [i, id] of plain.entries()) {
      await saver.put(root(i % 2 ? "t2" : "t1", ["", "sub:b", "sub:a"][i % 3]!), checkpoint(id), meta(i), {});
    }
    const shared = "a0075x";
    for (const thread of ["t2", "t1"]) {
      for (const ns of ["sub:b", "", "sub:a"]) await saver.put(root(thread, ns), checkpoint(shared), meta(99), {});
    }
    type Row = [string, string, string];
    const rowOf = (t: { config: RunnableConfig }): Row => {
      const c = t.config.configurable!;
      return [c.checkpoint_id as string, c.thread_id as string, c.checkpoint_ns as string];
    };
    const newestFirst = (a: Row, b: Row) =>
      a[0] !== b[0] ? (a[0] < b[0] ? 1 : -1) : a[1] !== b[1] ? (a[1] < b[1] ? -1 : 1) : a[2] < b[2] ? -1 : 1;
    const expected = (keep: (row: Row) => boolean): Row[] => {
      const rows: Row[] = plain.map((id, i) => [id, i % 2 ? "t2" : "t1", ["", "sub:b", "sub:a"][i % 3]!]);
      for (const thread of ["t1", "t2"]) for (const ns of ["", "sub:a", "sub:b"]) rows.push([shared, thread, ns]);
      return rows.filter(keep).sort(newestFirst);
    };
    const everything = expected(() => true);
    expect((await collect(saver.list({}))).map(rowOf)).toEqual(everything);
    for (const limit of [1, 3, 61, 62, 63, 64, 65, 68, 69]) {
      expect((await collect(saver.list({}, { limit }))).map(rowOf)).toEqual(everything.slice(0, limit));
      const t1 = expected(([, thread]) => thread === "t1");
      expect((await collect(saver.list({ configurable: { thread_id: "t1" } }, { limit }))).map(rowOf)).toEqual(
        t1.slice(0, limit),
      );
    }
    const before = { configurable: { checkpoint_id: "a0076" } };
    expect((await collect(saver.list({}, { before, limit: 4 }))).map(rowOf)).toEqual(
      expected(([id]) => id < "a0076").slice(0, 4),
    );
    expect((await collect(saver.list({ configurable: { checkpoint_ns: "sub:a" } }, { limit: 5 }))).map(rowOf)).toEqual(
      expected(([, , ns]) => ns === "sub:a").slice(0, 5),
    );
    expect((await collect(saver.list({ configurable: { checkpoint_id: shared } }))).map(rowOf)).toEqual(
      expected(([id]) => id === shared),
    );
    expect(
      (await collect(saver.list({ configurable: { thread_id: "t2", checkpoint_id: shared } }, { limit: 2 }))).map(
        rowOf,
      ),
    ).toEqual(expected(([id, thread]) => id === shared && thread === "t2").slice(0, 2));
    expect(
      (await collect(saver.list({}, { filter: { step: 99 }, before: { configurable: { checkpoint_id: shared } } })))
        .length,
    ).toBe(0);
    expect((await collect(saver.list({}, { filter: { step: 99 }, limit: 4 }))).map(rowOf)).toEqual(
      expected(([id]) => id === shared).slice(0, 4),
    );
  });

  it("pages through long namespaces with before, limit and filter", async () => {
    const saver = newSaver();
    let config = root("t");
    const ids: string[] = [];
    for (let step = 0; step < 150; step++) {
      const id = uuid6(step);
      ids.push(id);
      config = await saver.put(config, checkpoint(id), meta(step, { even: step % 2 === 0 }), {});
    }
    const all = await collect(saver.list(root("t")));
    expect(all.map((t) => t.config.configurable?.checkpoint_id)).toEqual([...ids].reverse());
    const evens = await collect(saver.list(root("t"), { filter: { even: true }, limit: 70 }));
    expect(evens).toHaveLength(70);
    expect(evens.every((t) => t.metadata?.step !== undefined && t.metadata.step % 2 === 0)).toBe(true);
    const before = await collect(
      saver.list(root("t"), { before: { configurable: { checkpoint_id: ids[100] } }, limit: 3 }),
    );
    expect(before.map((t) => t.config.configurable?.checkpoint_id)).toEqual([ids[99], ids[98], ids[97]]);
  });
});

describe("ids", () => {
  it("refuses prototype-pollution names and non-string ids with clear errors", async () => {
    const saver = newSaver();
    for (const bad of ["__proto__", "constructor", "prototype"]) {
      await expect(saver.put(root(bad), checkpoint(uuid6(0)), meta(0), {})).rejects.toThrow(/reserved/);
      await expect(saver.put(root("t", bad), checkpoint(uuid6(0)), meta(0), {})).rejects.toThrow(/reserved/);
      await expect(saver.put(root("t"), checkpoint(bad), meta(0), {})).rejects.toThrow(/reserved/);
      await expect(saver.deleteThread(bad)).rejects.toThrow(/reserved/);
    }
    await expect(saver.put(root(42 as unknown as string), checkpoint(uuid6(0)), meta(0), {})).rejects.toThrow(
      /expected a string id, got number/,
    );
    await expect(saver.put({ configurable: {} }, checkpoint(uuid6(0)), meta(0), {})).rejects.toThrow(/thread_id/);
    await expect(saver.put(root(""), checkpoint(uuid6(0)), meta(0), {})).rejects.toThrow(/empty/);
    const config = await saver.put(root("t"), checkpoint(uuid6(0)), meta(0), {});
    await expect(saver.putWrites(config, [["ch", 1]], "__proto__")).rejects.toThrow(/reserved/);
    // Nothing bad was stored; the good row is intact.
    expect(await collect(saver.list({ configurable: {} }))).toHaveLength(1);
    expect(Object.prototype).not.toHaveProperty("t");
  });
});

describe("deleteThread", () => {
  it("removes every namespace and leaves a tombstone that drops late writes of a run in flight", async () => {
    const saver = newSaver();
    const c1 = await saver.put(root("t"), checkpoint(uuid6(0), { a: 1 }, { a: 1 }), meta(0), { a: 1 });
    await saver.put(root("t", "child:1"), checkpoint(uuid6(0)), meta(0), {});
    await saver.putWrites(c1, [["a", 2]], "task");
    await saver.put(root("other"), checkpoint(uuid6(0)), meta(0), {});

    await saver.deleteThread("t");
    expect(await collect(saver.list({ configurable: { thread_id: "t" } }))).toEqual([]);

    // The in-flight run goes on: its next put, its writes, and the put after.
    const late = await saver.put(c1, checkpoint(uuid6(1), { a: 2 }, { a: 2 }), meta(1), { a: 2 });
    await saver.putWrites(late, [["a", 3]], "task");
    await saver.putWrites(c1, [["a", 4]], "task2");
    await saver.put(late, checkpoint(uuid6(2)), meta(2), {});
    expect(await saver.getTuple(root("t"))).toBeUndefined();
    expect(await collect(saver.list({ configurable: { thread_id: "t" } }))).toEqual([]);

    // A new run on the same id starts afresh.
    const fresh = await saver.put(root("t"), checkpoint(uuid6(3), { a: "new" }, { a: 5 }), meta(-1), { a: 5 });
    await saver.putWrites(fresh, [["a", "w"]], "task");
    const tuple = await saver.getTuple(root("t"));
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "new" });
    expect(tuple?.pendingWrites).toEqual([["task", "a", "w"]]);
    expect(await collect(saver.list({ configurable: { thread_id: "t" } }))).toHaveLength(1);
    // Other threads untouched.
    expect(await collect(saver.list({ configurable: { thread_id: "other" } }))).toHaveLength(1);
  });

  it("is a no-op for an unknown thread", async () => {
    const saver = newSaver();
    await saver.deleteThread("nobody");
    const config = await saver.put(root("nobody"), checkpoint(uuid6(0)), meta(0), {});
    expect(await saver.getTuple(config)).toBeDefined();
  });
});

describe("getNextVersion", () => {
  it("counts like LangGraph's default and never repeats across forks", () => {
    const saver = newSaver();
    const first = saver.getNextVersion(undefined);
    expect(Math.floor(first)).toBe(1);
    const a = saver.getNextVersion(first);
    const b = saver.getNextVersion(first);
    expect(Math.floor(a)).toBe(2);
    expect(a).not.toBe(b);
    expect(a > first && b > first).toBe(true);
    // Versions written by other savers continue their count.
    expect(Math.floor(saver.getNextVersion(7))).toBe(8);
    expect(Math.floor(saver.getNextVersion("00000000000000000000000000000041.5" as unknown as number))).toBe(42);
    // 300 forks of one parent: with 2^30 tags a repeat has odds of about 4e-5.
    const forks = new Set(Array.from({ length: 300 }, () => saver.getNextVersion(5)));
    expect(forks.size).toBe(300);
    expect([...forks].every((version) => Math.floor(version) === 6)).toBe(true);
  });
});

describe("getDeltaChannelHistory", () => {
  /** Seeded PRNG so a failure can be replayed. */
  function mulberry32(seed: number) {
    return () => {
      seed |= 0;
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  for (const seed of [1, 2, 3, 4, 5]) {
    it(`matches the default walk on a random forked tree (seed ${seed})`, async () => {
      const random = mulberry32(seed);
      const saver = newSaver();
      const ns = seed % 2 === 0 ? "" : "sub:1";
      const configs: RunnableConfig[] = [];
      const channels = ["messages", "events", "unused"];
      for (let step = 0; step < 60; step++) {
        const parent =
          configs.length === 0 || random() < 0.1 ? undefined : configs[Math.floor(random() * configs.length)];
        const values: Record<string, unknown> = {};
        const versions: Record<string, number> = {};
        for (const channel of channels.slice(0, 2)) {
          const r = random();
          if (r < 0.15) values[channel] = new DeltaSnapshot([`snap-${step}`]);
          else if (r < 0.2) values[channel] = [`plain-${step}`];
          versions[channel] = saver.getNextVersion(step);
        }
        const config = await saver.put(
          parent ?? root(`tree-${seed}`, ns),
          checkpoint(uuid6(step), values, versions),
          meta(step),
          versions,
        );
        const tasks = Math.floor(random() * 3);
        for (let task = 0; task < tasks; task++) {
          await saver.putWrites(
            config,
            [
              [channels[Math.floor(random() * 2)]!, `w-${step}-${task}`],
              [INTERRUPT, { id: `i-${step}` }],
            ],
            `task-${Math.floor(random() * 5)}`,
          );
        }
        configs.push(config);
      }
      let writesSeen = 0;
      for (const target of [...configs.slice(-8), root(`tree-${seed}`, ns)]) {
        const ours = await saver.getDeltaChannelHistory({ config: target, channels });
        const reference = await BaseCheckpointSaver.prototype.getDeltaChannelHistory.call(saver, {
          config: target,
          channels,
        });
        expect(ours).toEqual(reference);
        writesSeen += ours.messages!.writes.length + ours.events!.writes.length;
      }
      // The comparison is only worth something if the walks found writes.
      expect(writesSeen).toBeGreaterThan(0);
    });
  }

  it("returns empty entries for an unknown thread and {} for no channels", async () => {
    const saver = newSaver();
    expect(await saver.getDeltaChannelHistory({ config: root("none"), channels: [] })).toEqual({});
    expect(await saver.getDeltaChannelHistory({ config: root("none"), channels: ["m"] })).toEqual({
      m: { writes: [] },
    });
  });
});

describe("group commit", () => {
  it("commits concurrent writes together and still gives each its own outcome", async () => {
    const saver = newSaver();
    const doomed = await saver.put(root("gone"), checkpoint(uuid6(0)), meta(0), {});
    await saver.deleteThread("gone");
    const base = await saver.put(root("t"), checkpoint(uuid6(1), { a: 1 }, { a: 1 }), meta(0), { a: 1 });
    // Fired together: they share a transaction, the late write among them
    // makes it roll back, and each is then run on its own.
    const results = await Promise.allSettled([
      saver.put(base, checkpoint(uuid6(2), { a: 2 }, { a: 2 }), meta(1), { a: 2 }),
      saver.putWrites(base, [["a", "w1"]], "task-1"),
      saver.put(doomed, checkpoint(uuid6(3)), meta(1), {}),
      saver.putWrites(base, [["a", "w2"]], "task-2"),
      saver.put(root("other"), checkpoint(uuid6(4), { b: () => 1 }, { b: 1 }), meta(0), { b: 1 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "fulfilled", "rejected"]);
    expect(((results[4] as PromiseRejectedResult).reason as Error).name).toBe("SerializationError");
    expect((await saver.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ a: 2 });
    expect((await saver.getTuple(base))?.pendingWrites).toEqual([
      ["task-1", "a", "w1"],
      ["task-2", "a", "w2"],
    ]);
    expect(await saver.getTuple(root("gone"))).toBeUndefined();
    expect(await saver.getTuple(root("other"))).toBeUndefined();
  });
});

describe("connection", () => {
  it("reopens transparently after close()", async () => {
    const saver = newSaver();
    const config = await saver.put(root("t"), checkpoint(uuid6(0)), meta(0), {});
    await saver.close();
    expect((await saver.getTuple(config))?.config).toEqual(config);
  });
});

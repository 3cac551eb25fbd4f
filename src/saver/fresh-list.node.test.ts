/**
 * `list` answered from memory (fresh-cache.ts `freshList`, list.ts) must
 * return exactly what a read of the database returns. Random sequences of
 * this saver's writes (put, putWrites of any kept checkpoint, regular and
 * special, out-of-order ids), its maintenance (delete, prune, copy,
 * deleteForRuns), another tab's writes, and reads that fill the windows;
 * after each step, lists of every shape (limit, before, metadata filter,
 * checkpoint_id, one namespace, thread-wide) from this saver against the
 * same lists from a saver that always reads (`freshReads: false`). Plus: a
 * put whose transaction aborts leaves nothing kept, and the caps hold.
 * Node only (fake-indexeddb), to keep `npm test` short: in Chromium,
 * fresh-tabs.browser.test.ts lists from memory while another tab writes.
 */
import {
  emptyCheckpoint,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { contextOf } from "./registry.js";
import { MAX_ENTRY_BYTES, MAX_KEPT_ROWS } from "./fresh-cache.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { byDepth } from "../../test/support/depth.js";

const track = trackSavers<IndexedDBSaver>();
const NAMESPACES = ["", "child:1"];
const meta = (step: number): CheckpointMetadata => ({ source: "loop", step, parents: {} });

afterEach(() => vi.restoreAllMocks());

/** mulberry32: a seeded PRNG, so a failing sequence replays. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const config = (thread_id: string, checkpoint_ns?: string, checkpoint_id?: string): RunnableConfig => ({
  configurable: {
    thread_id,
    ...(checkpoint_ns !== undefined ? { checkpoint_ns } : {}),
    ...(checkpoint_id ? { checkpoint_id } : {}),
  },
});

function checkpoint(id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

async function collect(saver: IndexedDBSaver, target: RunnableConfig, options?: CheckpointListOptions) {
  const tuples = [];
  for await (const tuple of saver.list(target, options)) tuples.push(tuple);
  return tuples;
}

/** Counts the read transactions `saver` opens from now on. */
function countReads(saver: IndexedDBSaver): () => number {
  const spy = vi.spyOn(contextOf(saver)!.db, "read");
  return () => spy.mock.calls.length;
}

/**
 * A saver that holds its lease (its first write, to another thread, takes
 * it and loads the cache) and has read thread "t" empty: the window its puts
 * there fill starts complete.
 */
async function holding(dbName: string): Promise<IndexedDBSaver> {
  const saver = track(new IndexedDBSaver({ dbName }));
  await saver.put(config("other", ""), checkpoint("p0", {}, {}), meta(0), {});
  await saver.getTuple(config("t", ""));
  return saver;
}

/** One random sequence on one database: `steps` steps, each followed by `checks` compared lists. */
async function randomRun(seed: number, steps: number, checks: number): Promise<{ lists: number; fromMemory: number }> {
  const random = seeded(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const dbName = freshDbName("fresh-list");
  const saver = track(new IndexedDBSaver({ dbName }));
  const reference = track(new IndexedDBSaver({ dbName, freshReads: false }));
  const otherTab = track(new IndexedDBSaver({ dbName }));
  const threads = ["t1", "t2"];
  let counter = 0;
  let version = 0;
  const reads = countReads(saver);
  let lists = 0;
  let fromMemory = 0;

  /** The stored ids of a namespace, newest first, as the reference reads them. */
  const idsOf = async (thread: string, ns: string) =>
    (await collect(reference, config(thread, ns))).map((t) => t.checkpoint.id);

  const put = async (writer: IndexedDBSaver, thread: string, ns: string) => {
    const ids = await idsOf(thread, ns);
    const parent = ids.length > 0 && random() < 0.8 ? pick(ids.slice(0, 3)) : undefined;
    counter++;
    // Mostly newer than every stored id; sometimes below the newest (a fork with an id of the caller's making).
    const id =
      random() < 0.1 && counter > 3
        ? `c${String(counter - 3).padStart(5, "0")}x`
        : `c${String(counter).padStart(5, "0")}`;
    const a = ++version;
    const changed: Record<string, number> = random() < 0.3 || !parent ? { a, b: a } : { a };
    const versions = { a, b: changed.b ?? 0 };
    if (parent) {
      const stored = (await reference.getTuple(config(thread, ns, parent)))!;
      versions.b = changed.b ?? (stored.checkpoint.channel_versions.b as number);
    }
    await writer.put(
      config(thread, ns, parent),
      checkpoint(id, { a: `a${a}`, b: `b${versions.b}` }, versions),
      { ...meta(counter), run_id: `run-${counter % 3}` } as CheckpointMetadata,
      changed,
    );
  };

  const putWrites = async (writer: IndexedDBSaver, thread: string, ns: string) => {
    const ids = await idsOf(thread, ns);
    if (ids.length === 0) return;
    // Mostly the newest; sometimes an older one (exit durability, updateState).
    const id = random() < 0.5 ? ids[0]! : pick(ids);
    const channel = random() < 0.3 ? "__error__" : pick(["x", "y"]);
    await writer.putWrites(config(thread, ns, id), [[channel, `w${++version}`]], pick(["task-1", "task-2"]));
  };

  const randomList = async (): Promise<[RunnableConfig, CheckpointListOptions]> => {
    const thread = random() < 0.6 ? threads[0]! : pick(threads);
    const ns = random() < 0.15 ? undefined : pick(NAMESPACES);
    const ids = ns === undefined ? [] : await idsOf(thread, ns);
    const options: CheckpointListOptions = {};
    if (random() < 0.5) options.limit = pick([1, 2, 3, 10]);
    if (random() < 0.3 && ids.length > 0) options.before = config(thread, ns, pick(ids));
    if (random() < 0.2) options.filter = { run_id: pick(["run-0", "run-1", "run-2"]) };
    const only = random() < 0.1 && ids.length > 0 ? pick(ids) : undefined;
    return [config(thread, ns, only), options];
  };

  for (let step = 0; step < steps; step++) {
    const roll = random();
    // Mostly the first thread's root namespace, so its window grows between the resets.
    const thread = random() < 0.6 ? threads[0]! : pick(threads);
    const ns = random() < 0.7 ? "" : NAMESPACES[1]!;
    if (roll < 0.4) await put(saver, thread, ns);
    else if (roll < 0.65) await putWrites(saver, thread, ns);
    else if (roll < 0.7) await (random() < 0.5 ? put(otherTab, thread, ns) : putWrites(otherTab, thread, ns));
    else if (roll < 0.73) await saver.deleteThread(thread);
    else if (roll < 0.76) await saver.prune([thread], { strategy: random() < 0.7 ? "keep_latest" : "delete" });
    else if (roll < 0.78) {
      const target = `t${threads.length + 1}`;
      await saver.copyThread(thread, target);
      threads.push(target);
    } else if (roll < 0.8) await saver.deleteForRuns([pick(["run-0", "run-1", "run-2"])]);
    else if (roll < 0.85) await saver.getTuple(config(thread, ns));
    // Reads fill the windows: a whole namespace, or its newest page.
    else await collect(saver, config(thread, ns), random() < 0.5 ? {} : { limit: pick([2, 10]) });

    for (let c = 0; c < checks; c++) {
      const [target, options] = await randomList();
      const before = reads();
      const ours = await collect(saver, target, options);
      lists++;
      if (reads() === before) fromMemory++;
      expect(ours, `seed ${seed}, step ${step}: ${JSON.stringify([target, options])}`).toEqual(
        await collect(reference, target, options),
      );
    }
  }
  return { lists, fromMemory };
}

describe("list from memory", () => {
  const seeds = byDepth([1, 2, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  for (const seed of seeds) {
    it(`returns what the database returns, over random writes, maintenance and another tab's writes (seed ${seed})`, async () => {
      const { lists, fromMemory } = await randomRun(seed, byDepth(60, 200), 3);
      // Not a test of the read path alone: most lists of one namespace are answered from memory.
      expect(fromMemory).toBeGreaterThan(lists / 4);
    });
  }

  it("lists this saver's writes to an older kept checkpoint (exit durability, updateState), by the putWrites rules", async () => {
    const dbName = freshDbName("fresh-list");
    const saver = await holding(dbName);
    const reference = track(new IndexedDBSaver({ dbName, freshReads: false }));
    const configs: RunnableConfig[] = [config("t", "")];
    for (let i = 0; i < 4; i++) {
      configs.push(await saver.put(configs[i]!, checkpoint(`c${i}`, { a: i }, { a: i + 1 }), meta(i), { a: i + 1 }));
    }
    await saver.putWrites(configs[2]!, [["x", "first"]], "task-1");
    // A regular write again is ignored, a special one replaces.
    await saver.putWrites(configs[2]!, [["x", "second"]], "task-1");
    await saver.putWrites(configs[2]!, [["__error__", "e1"]], "task-2");
    await saver.putWrites(configs[2]!, [["__error__", "e2"]], "task-2");
    const reads = countReads(saver);
    const ours = await collect(saver, config("t", ""));
    expect(reads()).toBe(0);
    expect(ours[2]?.pendingWrites).toEqual([
      ["task-1", "x", "first"],
      ["task-2", "__error__", "e2"],
    ]);
    expect(ours).toEqual(await collect(reference, config("t", "")));
  });

  it("sees another saver's write at once, before its change notice arrives (the lease was lost)", async () => {
    const dbName = freshDbName("fresh-list");
    const saver = await holding(dbName);
    const other = track(new IndexedDBSaver({ dbName }));
    let parent = config("t", "");
    for (let i = 0; i < 3; i++) {
      parent = await saver.put(parent, checkpoint(`c${i}`, { a: i }, { a: i + 1 }), meta(i), { a: i + 1 });
    }
    const reads = countReads(saver);
    expect(await collect(saver, config("t", ""))).toHaveLength(3);
    expect(reads()).toBe(0);
    await other.put(parent, checkpoint("c3", { a: "theirs" }, { a: 9 }), meta(3), { a: 9 });
    // No await in between: the notice (a BroadcastChannel message) comes a task later.
    const ids = (await collect(saver, config("t", ""))).map((t) => t.checkpoint.id);
    expect(ids).toEqual(["c3", "c2", "c1", "c0"]);
  });

  it("lists right after a put of an id below the kept newest, and after overlapping lists and puts", async () => {
    const dbName = freshDbName("fresh-list");
    const saver = await holding(dbName);
    const reference = track(new IndexedDBSaver({ dbName, freshReads: false }));
    let parent = config("t", "");
    for (let i = 0; i < 3; i++) {
      parent = await saver.put(parent, checkpoint(`c${i}`, { a: i }, { a: i + 1 }), meta(i), { a: i + 1 });
    }
    // An id of the caller's making, below the newest: it is not the window's newest.
    await saver.put(config("t", "", "c0"), checkpoint("c0x", { a: "fork" }, { a: 7 }), meta(1), { a: 7 });
    expect(await collect(saver, config("t", ""))).toEqual(await collect(reference, config("t", "")));
    // Lists that fill the window while this saver's puts and writes are in flight.
    const pending: Promise<unknown>[] = [];
    for (let i = 3; i < 9; i++) {
      pending.push(collect(saver, config("t", ""), { limit: 5 }));
      pending.push(saver.put(parent, checkpoint(`c${i}`, { a: i }, { a: i + 10 }), meta(i), { a: i + 10 }));
      pending.push(saver.putWrites(config("t", "", `c${i - 1}`), [["x", `w${i}`]], "task-1"));
      pending.push(collect(saver, config("t", "")));
      parent = config("t", "", `c${i}`);
    }
    await Promise.all(pending);
    for (const options of [{}, { limit: 3 }, { before: config("t", "", "c5") }]) {
      expect(await collect(saver, config("t", ""), options)).toEqual(
        await collect(reference, config("t", ""), options),
      );
    }
  });

  it("keeps nothing of a put whose transaction aborted", async () => {
    const saver = await holding(freshDbName("fresh-list"));
    let parent = config("t", "");
    for (let i = 0; i < 3; i++) {
      parent = await saver.put(parent, checkpoint(`c${i}`, { a: i }, { a: i + 1 }), meta(i), { a: i + 1 });
    }
    const reads = countReads(saver);
    expect((await collect(saver, config("t", ""))).map((t) => t.checkpoint.id)).toEqual(["c2", "c1", "c0"]);
    expect(reads()).toBe(0);
    const put = IDBObjectStore.prototype.put;
    // The row is stored, then the transaction aborts before it commits (as the browser aborts one).
    vi.spyOn(IDBObjectStore.prototype, "put").mockImplementation(function (this: IDBObjectStore, value, key) {
      const request = put.call(this, value, key);
      if ((value as { checkpoint_id?: string }).checkpoint_id === "c3") queueMicrotask(() => this.transaction.abort());
      return request;
    });
    await expect(saver.put(parent, checkpoint("c3", { a: 9 }, { a: 9 }), meta(3), { a: 9 })).rejects.toThrow();
    vi.restoreAllMocks();
    expect((await collect(saver, config("t", ""))).map((t) => t.checkpoint.id)).toEqual(["c2", "c1", "c0"]);
    expect((await collect(saver, config("t", ""), { limit: 1 }))[0]?.checkpoint.channel_values).toEqual({ a: 2 });
  });

  it("keeps at most MAX_KEPT_ROWS checkpoints of a namespace, and reads on below them", async () => {
    const dbName = freshDbName("fresh-list");
    const saver = await holding(dbName);
    const reference = track(new IndexedDBSaver({ dbName, freshReads: false }));
    let parent = config("t", "");
    const total = MAX_KEPT_ROWS + 20;
    for (let i = 0; i < total; i++) {
      const id = `c${String(i).padStart(5, "0")}`;
      parent = await saver.put(parent, checkpoint(id, { a: i }, { a: i + 1 }), meta(i), { a: i + 1 });
    }
    const listed = async (limit?: number) => {
      const reads = countReads(saver);
      const tuples = await collect(saver, config("t", ""), limit === undefined ? {} : { limit });
      expect(tuples).toEqual(await collect(reference, config("t", ""), limit === undefined ? {} : { limit }));
      const count = reads();
      vi.restoreAllMocks();
      return { count: tuples.length, reads: count };
    };
    // The newest MAX_KEPT_ROWS from memory; one more reads on below the window.
    expect(await listed(MAX_KEPT_ROWS)).toEqual({ count: MAX_KEPT_ROWS, reads: 0 });
    expect((await listed(MAX_KEPT_ROWS + 1)).reads).toBeGreaterThan(0);
    expect((await listed()).count).toBe(total);
    // Reading on did not grow the window past its cap.
    expect(await listed(MAX_KEPT_ROWS)).toEqual({ count: MAX_KEPT_ROWS, reads: 0 });
    expect((await listed(MAX_KEPT_ROWS + 1)).reads).toBeGreaterThan(0);
  });

  it("keeps at most MAX_ENTRY_BYTES of a namespace", async () => {
    const dbName = freshDbName("fresh-list");
    const saver = await holding(dbName);
    let parent = config("t", "");
    const big = "x".repeat(200 * 1024);
    for (let i = 0; i < 8; i++) {
      const id = `c${String(i).padStart(5, "0")}`;
      parent = await saver.put(parent, checkpoint(id, { a: `${i}${big}` }, { a: i + 1 }), meta(i), { a: i + 1 });
    }
    // Each checkpoint weighs about 200 KB: the newest whole ones under the cap come from memory, no more.
    const fit = Math.floor(MAX_ENTRY_BYTES / (200 * 1024 + 64));
    for (const [limit, read] of [
      [fit, false],
      [fit + 1, true],
    ] as const) {
      const reads = countReads(saver);
      expect(await collect(saver, config("t", ""), { limit })).toHaveLength(limit);
      expect(reads() > 0).toBe(read);
      vi.restoreAllMocks();
    }
    expect((await collect(saver, config("t", ""))).map((t) => t.checkpoint.id)).toHaveLength(8);
  });

  it("counts values held inline in rows read toward MAX_ENTRY_BYTES", async () => {
    const dbName = freshDbName("fresh-list");
    const writer = track(new IndexedDBSaver({ dbName }));
    let parent = config("t", "");
    // Three values of about 1.9 KB, each under the inline limit: about 5.8 KB a checkpoint, all in its row.
    const value = (i: number, channel: string) => `${i}${channel}`.padEnd(1900, "x");
    const total = 200;
    for (let i = 0; i < total; i++) {
      const id = `c${String(i).padStart(5, "0")}`;
      const values = { a: value(i, "a"), b: value(i, "b"), c: value(i, "c") };
      const versions = { a: i + 1, b: i + 1, c: i + 1 };
      parent = await writer.put(parent, checkpoint(id, values, versions), meta(i), versions);
    }
    await writer.close();
    // Another saver reads them all: its window is filled from rows read, which hold the values inline.
    const saver = await holding(dbName);
    expect(await collect(saver, config("t", ""))).toHaveLength(total);
    // 200 such checkpoints weigh over 1 MiB, though under MAX_KEPT_ROWS: the newest are kept, not all.
    expect(total).toBeLessThan(MAX_KEPT_ROWS);
    const fit = Math.floor(MAX_ENTRY_BYTES / (3 * 1900 + 1024));
    for (const [limit, read] of [
      [fit, false],
      [total, true],
    ] as const) {
      const reads = countReads(saver);
      expect(await collect(saver, config("t", ""), { limit })).toHaveLength(limit);
      expect(reads() > 0).toBe(read);
      vi.restoreAllMocks();
    }
  });
});

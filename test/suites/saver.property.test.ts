/**
 * Property test (reliability issue, part 5): seeded random sequences of put,
 * putWrites, getTuple, list, deleteThread, copyThread and prune run against
 * IndexedDBSaver and against a reference (MemorySaver, plus a small model of
 * copyThread and prune on MemorySaver's public `storage`/`writes`), and every
 * observable result must be the same: returned configs, tuples (ids, parents,
 * channel values and versions, metadata, pending writes), list results, and
 * which calls throw. Runs in Node (fake-indexeddb) and Chromium.
 *
 * Generated puts follow LangGraph's rules for a saver that stores channel
 * values per version: every changed (or cleared) channel gets a new version
 * from `saver.getNextVersion` and is listed in `newVersions`; ids are uuid6.
 *
 * A failure names its seed and operation; replay one seed with
 * `PROPERTY_SEEDS=<seed> npx vitest run test/suites/saver.property.test.ts`
 * (`PROPERTY_OPS` changes the length). Each seed runs 500 operations at the
 * fast depth (`npm test`) and 1,000 at the full depth (`npm run test:full`);
 * docs/testing.md shows a planted bug caught at both.
 */
import {
  ERROR,
  INTERRUPT,
  MemorySaver,
  emptyCheckpoint,
  uuid6,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { byDepth } from "../support/depth.js";

const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {};
const SEEDS = (env.PROPERTY_SEEDS ?? "1,2,3,4").split(",").map(Number);
const OPS = Number(env.PROPERTY_OPS ?? byDepth(500, 1000));

const THREADS = ["t0", "t1", "t2", "t3"];
const NAMESPACES = ["", "", "", "inner:1"];
const CHANNELS = ["a", "b", "c", "d"];
const TASKS = ["task-1", "task-2", "task-3"];
const TASK_PATHS = ["", "~__pregel_pull, a", "~__pregel_push, 0"];
const TAGS = ["x", "y", "z"];

/** mulberry32: a small, fast, seeded generator. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick<T>(items: readonly T[]): T {
      return items[Math.floor(next() * items.length)]!;
    },
    chance: (p: number) => next() < p,
  };
}
type Random = ReturnType<typeof random>;

/** A JSON-safe value (MemorySaver stores JSON). */
function value(r: Random, depth = 0): unknown {
  switch (r.int(depth > 1 ? 4 : 6)) {
    case 0:
      return r.int(1000) - 500;
    case 1:
      return `s${r.int(100)}\u00e9\u{1f600}`;
    case 2:
      return r.chance(0.5);
    case 3:
      return null;
    case 4:
      return Array.from({ length: r.int(4) }, () => value(r, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: r.int(4) }, (_, i) => [`k${i}`, value(r, depth + 1)]));
  }
}

const configOf = (thread_id: string, checkpoint_ns: string, checkpoint_id?: string): RunnableConfig => ({
  configurable:
    checkpoint_id === undefined ? { thread_id, checkpoint_ns } : { thread_id, checkpoint_ns, checkpoint_id },
});

/** What a tuple shows, in a form both savers can be compared by. */
function view(tuple: CheckpointTuple | undefined) {
  if (!tuple) return undefined;
  const { thread_id, checkpoint_ns, checkpoint_id } = tuple.config.configurable ?? {};
  const { channel_values, channel_versions, versions_seen, id, ts, v } = tuple.checkpoint;
  return {
    config: { thread_id, checkpoint_ns: checkpoint_ns ?? "", checkpoint_id },
    parent: tuple.parentConfig
      ? {
          thread_id: tuple.parentConfig.configurable?.thread_id,
          checkpoint_ns: tuple.parentConfig.configurable?.checkpoint_ns ?? "",
          checkpoint_id: tuple.parentConfig.configurable?.checkpoint_id,
        }
      : undefined,
    checkpoint: { id, ts, v, channel_values, channel_versions, versions_seen },
    metadata: tuple.metadata,
    pendingWrites: tuple.pendingWrites ?? [],
  };
}
type View = NonNullable<ReturnType<typeof view>>;

const byNsAndId = (a: View, b: View) => {
  const ka = `${a.config.thread_id}\u0000${a.config.checkpoint_ns}\u0000${a.config.checkpoint_id}`;
  const kb = `${b.config.thread_id}\u0000${b.config.checkpoint_ns}\u0000${b.config.checkpoint_id}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
};

async function collect(iterable: AsyncIterable<CheckpointTuple>): Promise<View[]> {
  const out: View[] = [];
  for await (const tuple of iterable) out.push(view(tuple)!);
  return out;
}

/** Outcome of a call on one saver: its value, or that it threw. */
async function outcome<T>(call: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    return { ok: false, error: `${(error as Error)?.name}: ${(error as Error)?.message}` };
  }
}

/** Stored shapes of MemorySaver (public fields, not typed by the package). */
type MemoryStorage = Record<string, Record<string, Record<string, [Uint8Array, Uint8Array, string | undefined]>>>;
type MemoryWrites = Record<string, Record<string, [string, string, Uint8Array, string]>>;

/**
 * MemorySaver plus copyThread and prune, modelled on its storage: copy =
 * every checkpoint and write duplicated under the target; keep_latest = the
 * newest `keepLast` checkpoints of each namespace with their writes.
 */
class Reference extends MemorySaver {
  get #storage(): MemoryStorage {
    return this.storage as unknown as MemoryStorage;
  }

  get #writes(): MemoryWrites {
    return this.writes as unknown as MemoryWrites;
  }

  /** Checkpoint ids of (thread, ns), oldest first. */
  ids(threadId: string, ns: string): string[] {
    return Object.keys(this.#storage[threadId]?.[ns] ?? {}).sort();
  }

  /** Namespaces of a thread that hold checkpoints. */
  namespaces(threadId: string): string[] {
    return Object.keys(this.#storage[threadId] ?? {}).filter((ns) => this.ids(threadId, ns).length > 0);
  }

  async copyThread(source: string, target: string): Promise<void> {
    if (source === target) throw new Error("same thread");
    // An unknown (or emptied) source copies nothing, whatever the target holds.
    const stored = this.#storage[source];
    if (!stored || this.namespaces(source).length === 0) return;
    const existing = this.namespaces(target).reduce((n, ns) => n + this.ids(target, ns).length, 0);
    if (existing > 0) throw new Error(`target has ${existing} checkpoints`);
    this.#storage[target] = Object.create(null);
    for (const ns of this.namespaces(source)) {
      this.#storage[target]![ns] = Object.assign(Object.create(null), stored[ns]);
    }
    for (const key of Object.keys(this.#writes)) {
      const [thread, ns, id] = JSON.parse(key) as [string, string, string];
      if (thread === source)
        this.#writes[JSON.stringify([target, ns, id])] = Object.assign(Object.create(null), this.#writes[key]);
    }
  }

  async prune(threadIds: string[], strategy: "keep_latest" | "delete", keepLast: number): Promise<void> {
    for (const threadId of new Set(threadIds)) {
      if (strategy === "delete") {
        await this.deleteThread(threadId);
        continue;
      }
      for (const ns of this.namespaces(threadId)) {
        const doomed = this.ids(threadId, ns).slice(0, -keepLast);
        for (const id of doomed) {
          delete this.#storage[threadId]![ns]![id];
          delete this.#writes[JSON.stringify([threadId, ns, id])];
        }
      }
    }
  }
}

const savers: IndexedDBSaver[] = [];

afterEach(async () => {
  const names = new Set(savers.map((saver) => saver.dbName));
  await Promise.all(savers.splice(0).map((saver) => saver.close()));
  await Promise.all([...names].map((name) => deleteDatabase(name)));
});

/** One random operation on both savers, checked; returns its description. */
/** Checkpoint ids that got writes before their put, per `thread\u0000ns`. */
type Early = Map<string, string[]>;

async function step(r: Random, idb: IndexedDBSaver, ref: Reference, n: number, early: Early): Promise<string> {
  const thread = r.pick(THREADS);
  const ns = r.pick(NAMESPACES);
  const ids = ref.ids(thread, ns);
  const roll = r.next();
  const earlyKey = `${thread}\u0000${ns}`;

  if (roll < 0.34) {
    // put: continue the latest, fork an older checkpoint, or start a new chain.
    const parentId = ids.length > 0 && r.chance(0.85) ? (r.chance(0.75) ? ids.at(-1)! : r.pick(ids)) : undefined;
    const parent = parentId ? await ref.getTuple(configOf(thread, ns, parentId)) : undefined;
    const values: Record<string, unknown> = { ...(parent?.checkpoint.channel_values ?? {}) };
    const versions: Record<string, number> = {
      ...((parent?.checkpoint.channel_versions ?? {}) as Record<string, number>),
    };
    const newVersions: Record<string, number> = {};
    for (const channel of CHANNELS) {
      const change = r.next();
      if (change < 0.35) {
        values[channel] = value(r);
      } else if (change < 0.42 && channel in versions) {
        delete values[channel]; // cleared: a new version without a value
      } else continue;
      versions[channel] = newVersions[channel] = idb.getNextVersion(versions[channel]);
    }
    // Sometimes the id whose writes arrived first (LangGraph may call putWrites before put).
    const earlyId = r.chance(0.5) ? early.get(earlyKey)?.shift() : undefined;
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: earlyId ?? uuid6(0),
      channel_values: values,
      channel_versions: versions,
      versions_seen: r.chance(0.5) ? { node: { a: r.int(5) } } : {},
    };
    const metadata = {
      source: r.pick(["input", "loop", "update"]),
      step: n,
      parents: {},
      tag: r.pick(TAGS),
      nested: { list: [r.int(3), { deep: r.pick(TAGS) }] },
    } as CheckpointMetadata;
    const config = configOf(thread, ns, parentId);
    const [got, want] = [
      await outcome(() => idb.put(config, checkpoint, metadata, newVersions)),
      await outcome(() => ref.put(config, checkpoint, metadata)),
    ];
    expect(got).toEqual(want);
    return `put ${thread}/${ns || "root"} ${checkpoint.id} parent=${parentId ?? "-"} new=${Object.keys(newVersions).join("")}`;
  }

  if (roll < 0.52) {
    let id: string;
    if (r.chance(0.15)) {
      // Writes for a checkpoint not put yet.
      id = uuid6(0);
      early.set(earlyKey, [...(early.get(earlyKey) ?? []), id]);
    } else if (ids.length === 0) {
      return "putWrites (no checkpoint)";
    } else {
      id = r.chance(0.6) ? ids.at(-1)! : r.pick(ids);
    }
    const taskId = r.pick(TASKS);
    const taskPath = r.pick(TASK_PATHS);
    const specials = [ERROR, INTERRUPT].filter(() => r.chance(0.2));
    const writes: PendingWrite[] = [
      ...Array.from({ length: r.int(3) }, (): PendingWrite => [r.pick(CHANNELS), value(r)]),
      ...specials.map((channel): PendingWrite => [channel, value(r)]),
    ];
    // Specials anywhere in the list: positions of regular writes move.
    if (r.chance(0.5)) writes.reverse();
    const config = configOf(thread, ns, id);
    const [got, want] = [
      await outcome(() => idb.putWrites(config, writes, taskId, taskPath)),
      await outcome(() => ref.putWrites(config, writes, taskId, taskPath)),
    ];
    expect(got).toEqual(want);
    return `putWrites ${thread}/${ns || "root"} ${id} ${taskId} [${writes.map(([c]) => c).join(",")}]`;
  }

  if (roll < 0.64) {
    const which = r.next();
    const id = which < 0.4 || ids.length === 0 ? undefined : which < 0.9 ? r.pick(ids) : uuid6(0);
    const config = configOf(thread, ns, id);
    expect(view(await idb.getTuple(config))).toEqual(view(await ref.getTuple(config)));
    return `getTuple ${thread}/${ns || "root"} ${id ?? "latest"}`;
  }

  if (roll < 0.8) {
    const options: { limit?: number; before?: RunnableConfig; filter?: Record<string, unknown> } = {};
    if (r.chance(0.4)) options.limit = 1 + r.int(4);
    if (r.chance(0.3) && ids.length > 0) options.before = configOf(thread, ns, r.pick(ids));
    if (r.chance(0.3)) options.filter = r.chance(0.5) ? { tag: r.pick(TAGS) } : { source: "loop", tag: r.pick(TAGS) };
    const scope = r.next();
    if (scope < 0.6) {
      // One namespace: the exact sequence, newest first.
      const config = configOf(thread, ns);
      expect(await collect(idb.list(config, options))).toEqual(await collect(ref.list(config, options)));
      return `list ${thread}/${ns || "root"} ${JSON.stringify(options)}`;
    }
    // Several namespaces or threads: MemorySaver orders per namespace, so
    // compare as sets (no limit), and check our order is newest first.
    delete options.limit;
    const config: RunnableConfig = scope < 0.85 ? { configurable: { thread_id: thread } } : { configurable: {} };
    const got = await collect(idb.list(config, options));
    const order = got.map((v) => v.config.checkpoint_id!);
    expect(order).toEqual([...order].sort().reverse());
    expect([...got].sort(byNsAndId)).toEqual((await collect(ref.list(config, options))).sort(byNsAndId));
    return `list ${JSON.stringify(config.configurable)} ${JSON.stringify(options)}`;
  }

  if (roll < 0.85) {
    await idb.deleteThread(thread);
    await ref.deleteThread(thread);
    return `deleteThread ${thread}`;
  }

  if (roll < 0.93) {
    const target = r.pick(THREADS);
    const [got, want] = [
      await outcome(() => idb.copyThread(thread, target)),
      await outcome(() => ref.copyThread(thread, target)),
    ];
    expect(got.ok, `copyThread ${thread} -> ${target}: ${JSON.stringify([got, want])}`).toBe(want.ok);
    return `copyThread ${thread} -> ${target} (${got.ok ? "done" : "refused"})`;
  }

  const threads = THREADS.filter(() => r.chance(0.4));
  const strategy = r.chance(0.85) ? "keep_latest" : "delete";
  const keepLast = r.chance(0.7) ? 1 : 2;
  await idb.prune(threads, { strategy, keepLast });
  await ref.prune(threads, strategy, keepLast);
  return `prune [${threads.join(",")}] ${strategy} keepLast=${keepLast}`;
}

/** Everything both savers hold, and listThreads against the reference. */
async function compareAll(idb: IndexedDBSaver, ref: Reference): Promise<void> {
  expect((await collect(idb.list({ configurable: {} }))).sort(byNsAndId)).toEqual(
    (await collect(ref.list({ configurable: {} }))).sort(byNsAndId),
  );
  const listed = new Map<string, string | undefined>();
  for await (const info of idb.listThreads()) {
    expect(listed.has(info.threadId), `listThreads lists ${info.threadId} twice`).toBe(false);
    listed.set(info.threadId, info.latestCheckpointId);
  }
  for (const thread of THREADS) {
    const roots = ref.ids(thread, "");
    const any = ref.namespaces(thread).length > 0;
    if (roots.length > 0) {
      expect(listed.get(thread), `listThreads' latest checkpoint of ${thread}`).toBe(roots.at(-1));
    } else if (!any) {
      expect(listed.has(thread), `listThreads shows ${thread}, which has no checkpoints`).toBe(false);
    }
  }
}

describe("IndexedDBSaver and MemorySaver agree on random operation sequences", () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}: ${OPS} operations`, async () => {
      const idb = new IndexedDBSaver({ dbName: freshDbName(`property-${seed}`) });
      savers.push(idb);
      const ref = new Reference();
      const r = random(seed);
      const recent: string[] = [];
      const early: Early = new Map();
      const counts: Record<string, number> = {};
      let i = 0;
      try {
        for (; i < OPS; i++) {
          const done = await step(r, idb, ref, i, early);
          const kind = done.split(" ")[0]!;
          counts[kind] = (counts[kind] ?? 0) + 1;
          recent.push(`#${i} ${done}`);
          if (recent.length > 8) recent.shift();
          if (i % 100 === 99) await compareAll(idb, ref);
        }
        await compareAll(idb, ref);
      } catch (error) {
        const message = `Property test failed: seed ${seed}, operation #${i} (replay: PROPERTY_SEEDS=${seed} PROPERTY_OPS=${i + 1}).\nLast operations:\n  ${recent.join("\n  ")}\n${(error as Error)?.message ?? String(error)}`;
        console.error(message);
        throw new Error(message, { cause: error });
      }
      // Every kind of operation ran.
      for (const kind of ["put", "putWrites", "getTuple", "list", "deleteThread", "copyThread", "prune"]) {
        expect(counts[kind] ?? 0, `${kind} ran`).toBeGreaterThan(5);
      }
    }, 120_000);
  }
});

/**
 * Differential tests: seeded random sequences of operations run on
 * IndexedDBStore and on InMemoryStore must give the same answers, step by
 * step, and a reload must give the same answers again. A failure names the
 * seed and step, so it replays exactly.
 */
import {
  BaseStore,
  InMemoryStore,
  JsonPlusSerializer,
  type Operation,
  type OperationResults,
} from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import type { IndexedDBStoreParams } from "./index.js";
import {
  HashEmbeddings,
  Random,
  cleanupStores,
  comparable,
  freshStore,
  reopen,
} from "../../test/support/store-fixtures.js";

afterEach(cleanupStores);

/** One step: a description (for failure messages) and what to run on a store. */
interface Step {
  label: string;
  run: (store: BaseStore) => Promise<unknown>;
}

/** Runs `run` and makes its outcome (a result or an error) comparable. */
async function outcome(store: BaseStore, step: Step): Promise<unknown> {
  try {
    return { ok: comparable(await step.run(store)) };
  } catch (error) {
    return { error: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

/** Runs every step on both stores, comparing each answer. */
async function compare(seed: number, steps: Step[], idb: BaseStore, memory: BaseStore): Promise<void> {
  for (const [i, step] of steps.entries()) {
    const expected = await outcome(memory, step);
    const actual = await outcome(idb, step);
    expect(actual, `seed ${seed}, step ${i}: ${step.label}`).toEqual(expected);
  }
}

const NAMESPACES = [
  ["a"],
  ["a", "b"],
  ["a", "b", "c"],
  ["a", "B"],
  ["b"],
  ["b", "a"],
  ["é", "x"],
  ["10"],
  ["2", "a"],
  ["users", "u1", "memories"],
  ["users", "u2", "memories"],
  ["users", "u1", "prefs"],
];
const KEYS = ["k0", "k1", "k2", "k3", "k4", "k5", "__proto__", "constructor", "ключ", "k.1", "K0", ""];
const COLORS = ["red", "green", "blue"];

/** A prefix of a known namespace, or one that matches nothing. */
function randomPrefix(rng: Random, namespaces: string[][]): string[] {
  if (rng.chance(0.08)) return rng.pick([["zzz"], ["a", "zzz"], ["users", "u3"]]);
  const namespace = rng.pick(namespaces);
  return namespace.slice(0, rng.int(namespace.length + 1));
}

function randomValue(rng: Random): Record<string, unknown> {
  const value: Record<string, unknown> = {
    color: rng.pick(COLORS),
    n: rng.chance(0.15) ? String(rng.int(10)) : rng.chance(0.2) ? rng.int(100) / 10 : rng.int(10),
    flag: rng.chance(0.5),
    nested: { x: rng.int(3) },
    text: `${rng.pick(COLORS)} note ${rng.int(5)}`,
  };
  if (rng.chance(0.3)) delete value.color;
  if (rng.chance(0.2)) value.tag = rng.pick(["x", "y", null]);
  return value;
}

function randomFilter(rng: Random): Record<string, unknown> | undefined {
  const roll = rng.next();
  if (roll < 0.35) return undefined;
  const n = rng.int(10);
  const conditions: Record<string, unknown>[] = [
    { color: rng.pick(COLORS) },
    { n },
    { flag: rng.chance(0.5) },
    { n: { $eq: n } },
    { n: { $ne: n } },
    { n: { $gt: n } },
    { n: { $gte: n } },
    { n: { $lt: n } },
    { n: { $lte: n } },
    { n: { $gt: rng.int(5), $lte: 5 + rng.int(5) } },
    { color: { $in: [rng.pick(COLORS), rng.pick(COLORS)] } },
    { color: { $nin: [rng.pick(COLORS)] } },
    { tag: { $in: ["x", null] } },
    { tag: null },
    { nested: { x: 1 } },
  ];
  const filter: Record<string, unknown> = {};
  const count = 1 + rng.int(2);
  for (let i = 0; i < count; i++) Object.assign(filter, rng.pick(conditions));
  return filter;
}

function randomSearch(
  rng: Random,
  withQuery: boolean,
  namespaces: string[][],
): { prefix: string[]; options: Record<string, unknown> } {
  const options: Record<string, unknown> = {};
  const filter = randomFilter(rng);
  if (filter) options.filter = filter;
  if (rng.chance(0.6)) options.limit = rng.int(12);
  if (rng.chance(0.5)) options.offset = rng.int(8);
  if (withQuery && rng.chance(0.3)) options.query = `${rng.pick(COLORS)} note`;
  return { prefix: randomPrefix(rng, namespaces), options };
}

function randomWildcardPath(rng: Random, namespace: string[]): string[] {
  return namespace.map((label) => (rng.chance(0.25) ? "*" : label));
}

/** A random sequence over the whole API, without semantic search. */
function storeSteps(seed: number, count: number, namespaces: string[][] = NAMESPACES): Step[] {
  const rng = new Random(seed);
  const steps: Step[] = [];
  while (steps.length < count) {
    const roll = rng.next();
    const namespace = rng.pick(namespaces);
    const key = rng.pick(KEYS);
    if (roll < 0.34) {
      const value = randomValue(rng);
      steps.push({ label: `put ${JSON.stringify([namespace, key, value])}`, run: (s) => s.put(namespace, key, value) });
    } else if (roll < 0.44) {
      steps.push({ label: `delete ${JSON.stringify([namespace, key])}`, run: (s) => s.delete(namespace, key) });
    } else if (roll < 0.56) {
      steps.push({ label: `get ${JSON.stringify([namespace, key])}`, run: (s) => s.get(namespace, key) });
    } else if (roll < 0.8) {
      const { prefix, options } = randomSearch(rng, true, namespaces);
      steps.push({ label: `search ${JSON.stringify([prefix, options])}`, run: (s) => s.search(prefix, options) });
    } else if (roll < 0.92) {
      const options: Record<string, unknown> = {};
      if (rng.chance(0.5)) options.prefix = randomWildcardPath(rng, randomPrefix(rng, namespaces));
      if (rng.chance(0.3)) {
        const source = rng.pick(namespaces);
        options.suffix = randomWildcardPath(rng, source.slice(rng.int(source.length)));
      }
      if (rng.chance(0.4)) options.maxDepth = 1 + rng.int(3);
      if (rng.chance(0.4)) options.limit = rng.int(6);
      if (rng.chance(0.3)) options.offset = rng.int(4);
      steps.push({ label: `listNamespaces ${JSON.stringify(options)}`, run: (s) => s.listNamespaces(options) });
    } else if (roll < 0.98) {
      steps.push(randomBatch(rng, namespaces));
    } else {
      const bad = rng.pick([["a.b"], ["a", ""], ["x:y"], []]);
      steps.push({ label: `invalid put ${JSON.stringify(bad)}`, run: (s) => s.put(bad, key, { v: 1 }) });
    }
  }
  return steps;
}

/**
 * A batch of mixed operations. Gets target keys the batch does not write:
 * InMemoryStore's get returns its live item, which a later put of the same
 * batch mutates (this store returns a snapshot from before the batch).
 */
function randomBatch(rng: Random, namespaces: string[][]): Step {
  const ops: Operation[] = [];
  const written = new Set<string>();
  const size = 2 + rng.int(5);
  const gets: [string[], string][] = [];
  for (let i = 0; i < size; i++) {
    const namespace = rng.pick(namespaces);
    const key = rng.pick(KEYS);
    const roll = rng.next();
    if (roll < 0.45) {
      ops.push({ namespace, key, value: rng.chance(0.2) ? null : randomValue(rng) });
      written.add(JSON.stringify([namespace, key]));
    } else if (roll < 0.65) {
      gets.push([namespace, key]);
      ops.push({ namespace, key });
    } else if (roll < 0.9) {
      const { prefix, options } = randomSearch(rng, false, namespaces);
      ops.push({ namespacePrefix: prefix, limit: 10, offset: 0, ...options });
    } else {
      ops.push({ matchConditions: undefined, limit: 100, offset: 0 });
    }
  }
  const safe = ops.filter(
    (op) => !("key" in op && !("value" in op) && written.has(JSON.stringify([op.namespace, op.key]))),
  );
  return { label: `batch ${JSON.stringify(safe)}`, run: (s) => s.batch(safe) };
}

/** Everything a reload must still answer: every item in order, and every namespace. */
function snapshotSteps(namespaces: string[][] = NAMESPACES): Step[] {
  return [
    { label: "search all", run: (s) => s.search([], { limit: 10_000 }) },
    { label: "listNamespaces all", run: (s) => s.listNamespaces({ limit: 10_000 }) },
    ...namespaces.map((namespace) => ({
      label: `search ${JSON.stringify(namespace)}`,
      run: (s: BaseStore) => s.search(namespace, { limit: 10_000 }),
    })),
  ];
}

/**
 * The store configurations each sequence runs on: the search cache on, off
 * and tiny (evicting all the time), with structured-clone values and with a
 * serializer (which reads and decodes differently).
 */
const VARIANTS: { seed: number; label: string; params: IndexedDBStoreParams }[] = [
  { seed: 11, label: "default", params: {} },
  { seed: 2024, label: "no cache", params: { cacheSize: 0 } },
  { seed: 777, label: "tiny cache, serde", params: { cacheSize: 8, serde: new JsonPlusSerializer() } },
  { seed: 4242, label: "no cache, serde", params: { cacheSize: 0, serde: new JsonPlusSerializer() } },
];

describe("IndexedDBStore vs InMemoryStore", () => {
  for (const { seed, label, params } of VARIANTS) {
    it(`gives the same answers over 350 random operations (seed ${seed}, ${label}), and after a reload`, async () => {
      const idb = freshStore(params);
      const memory = new InMemoryStore();
      await compare(seed, storeSteps(seed, 350), idb, memory);
      await idb.close();
      await compare(seed, snapshotSteps(), reopen(idb, params), memory);
    });
  }
});

/**
 * More namespaces than a search reads one by one (16): a search over a
 * prefix then reads the whole prefix at once. Namespaces sharing prefixes
 * at several depths, so prefixes cover many of them.
 */
const MANY_NAMESPACES = Array.from({ length: 40 }, (_, i) =>
  i % 4 === 3 ? ["t", `n${i}`, "deep"] : [i % 2 ? "s" : "t", `n${i}`],
);

/**
 * A BaseStore that sends each batch to one of two instances on one database
 * (two tabs), chosen by a seeded generator: each must see at once what the
 * other wrote, through its search cache too.
 */
class TwoTabs extends BaseStore {
  readonly #rng: Random;

  constructor(
    readonly tabs: readonly [BaseStore, BaseStore],
    seed: number,
  ) {
    super();
    this.#rng = new Random(seed);
  }

  batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    return this.tabs[this.#rng.int(2)]!.batch(operations);
  }
}

describe("two instances on one database, many namespaces, vs InMemoryStore", () => {
  for (const { seed, label, params } of [
    { seed: 515, label: "cache", params: { cacheSize: 400 } },
    { seed: 616, label: "tiny cache, serde", params: { cacheSize: 8, serde: new JsonPlusSerializer() } },
  ]) {
    it(`gives the same answers over 300 random operations (seed ${seed}, ${label}), and after a reload`, async () => {
      const first = freshStore(params);
      const idb = new TwoTabs([first, reopen(first, params)], seed);
      const memory = new InMemoryStore();
      await compare(seed, storeSteps(seed, 300, MANY_NAMESPACES), idb, memory);
      await compare(seed, snapshotSteps(MANY_NAMESPACES), reopen(first, params), memory);
    });
  }
});

/**
 * Semantic search, same embeddings on both stores. Each key keeps one
 * indexing profile and one value shape, so the set of vector labels of an
 * item never shrinks: InMemoryStore never deletes vectors (not on delete,
 * not on a re-put with fewer fields, not with `index: false`), while this
 * store replaces them; with stable labels both hold the same vectors.
 */
const PROFILES: Record<string, { tags: number; index?: false | string[] }> = {
  d0: { tags: 0 },
  d1: { tags: 1 },
  d2: { tags: 2 },
  d3: { tags: 3 },
  t0: { tags: 2, index: ["title"] },
  t1: { tags: 0, index: ["title", "tags[-1]"] },
  x0: { tags: 2, index: false },
};
const WORDS = ["tea", "coffee", "morning", "evening", "cello", "piano", "hiking", "peanuts", "cats", "dogs"];
const SEMANTIC_NAMESPACES = [["u1", "memories"], ["u1", "notes"], ["u2", "memories"], ["u2"]];

function phrase(rng: Random, words: number): string {
  return Array.from({ length: words }, () => rng.pick(WORDS)).join(" ");
}

function semanticSteps(seed: number, count: number): Step[] {
  const rng = new Random(seed);
  const steps: Step[] = [];
  const keys = Object.keys(PROFILES);
  while (steps.length < count) {
    const roll = rng.next();
    const namespace = rng.pick(SEMANTIC_NAMESPACES);
    const key = rng.pick(keys);
    const profile = PROFILES[key]!;
    if (roll < 0.4) {
      const value = {
        text: phrase(rng, 1 + rng.int(3)),
        title: phrase(rng, 1),
        tags: Array.from({ length: profile.tags }, () => phrase(rng, 1)),
        n: rng.int(10),
      };
      steps.push({
        label: `put ${JSON.stringify([namespace, key, value, profile.index])}`,
        run: (s) => s.put(namespace, key, value, profile.index),
      });
    } else if (roll < 0.5) {
      steps.push({ label: `delete ${JSON.stringify([namespace, key])}`, run: (s) => s.delete(namespace, key) });
    } else if (roll < 0.58) {
      steps.push({ label: `get ${JSON.stringify([namespace, key])}`, run: (s) => s.get(namespace, key) });
    } else {
      const prefix = rng.pick([[], ["u1"], ["u2"], ...SEMANTIC_NAMESPACES]);
      const options: Record<string, unknown> = { query: phrase(rng, 1 + rng.int(2)) };
      if (rng.chance(0.3)) options.filter = rng.pick([{ n: { $gte: 5 } }, { n: { $lt: 3 } }, { n: 4 }]);
      if (rng.chance(0.6)) options.limit = 1 + rng.int(8);
      if (rng.chance(0.4)) options.offset = rng.int(6);
      if (rng.chance(0.1)) delete options.query;
      steps.push({ label: `search ${JSON.stringify([prefix, options])}`, run: (s) => s.search(prefix, options) });
    }
  }
  return steps;
}

describe("semantic search vs InMemoryStore", () => {
  for (const { seed, label, params } of [VARIANTS[0]!, { ...VARIANTS[3]!, seed: 31337 }]) {
    it(`ranks the same items with the same scores over 300 operations (seed ${seed}, ${label}), and after a reload`, async () => {
      const embeddings = new HashEmbeddings(24);
      const index = { dims: 24, embeddings, fields: ["text", "tags[*]"] };
      const idb = freshStore({ ...params, index });
      const memory = new InMemoryStore({ index });
      await compare(seed, semanticSteps(seed, 300), idb, memory);

      await idb.close();
      const reloadEmbeddings = new HashEmbeddings(24);
      const reloaded = reopen(idb, { ...params, index: { ...index, embeddings: reloadEmbeddings } });
      const queries: Step[] = WORDS.map((word) => ({
        label: `ranked search "${word}"`,
        run: (s) => s.search([], { query: word, limit: 100 }),
      }));
      await compare(seed, queries, reloaded, memory);
      // The reload used the stored vectors: it embedded queries only.
      expect(reloadEmbeddings.documentCalls).toBe(0);
      expect(reloadEmbeddings.queryCalls).toBe(WORDS.length);
    });
  }
});

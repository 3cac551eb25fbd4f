/**
 * IndexedDBStore figures against InMemoryStore in the same run: a filtered
 * search over 10,000 items under one prefix among 50,000 (cold, then warm),
 * and a semantic query over 5,000 vectors of 384 dims.
 */
import { InMemoryStore, type Operation } from "@langchain/langgraph-checkpoint";
import { IndexedDBStore } from "../../src/index.js";
import { HashEmbeddings } from "../../test/support/store-fixtures.js";
import { deleteDatabase, ms, msPerCall, row, type BenchRow, type Suite } from "../harness.js";

const SUITE = "store";

/** Puts `count` items per prefix in batches of 1,000 (one transaction each). */
async function fill(
  store: InMemoryStore | IndexedDBStore,
  prefixes: string[][],
  count: number,
  value: (i: number) => Record<string, unknown>,
) {
  for (const prefix of prefixes) {
    for (let start = 0; start < count; start += 1000) {
      const ops: Operation[] = [];
      for (let i = start; i < Math.min(count, start + 1000); i++) {
        ops.push({ namespace: prefix, key: `item-${i}`, value: value(i), index: false });
      }
      await store.batch(ops);
    }
  }
}

async function filtered(): Promise<BenchRow[]> {
  const dbName = `bench-store-${Date.now()}`;
  const ours = new IndexedDBStore({ dbName });
  const memory = new InMemoryStore();
  const prefixes = [
    ["users", "u1"],
    ["users", "u2"],
    ["users", "u3"],
    ["users", "u4"],
    ["users", "u5"],
  ];
  const value = (i: number) => ({ kind: i % 50 === 0 ? "rare" : "common", score: i % 100, text: `memory ${i}` });
  for (const store of [ours, memory]) await fill(store, prefixes, 10_000, value);
  const search = (store: InMemoryStore | IndexedDBStore) => () =>
    store.search(["users", "u3"], { filter: { kind: "rare", score: { $gte: 0 } }, limit: 10 });
  // Cold: a second instance on the same database, nothing cached yet.
  const cold = new IndexedDBStore({ dbName });
  const coldStart = performance.now();
  await search(cold)();
  const coldMs = performance.now() - coldStart;
  await cold.close();
  const memoryTime = await msPerCall(search(memory), { perRound: 10 });
  const warm = await msPerCall(search(ours), { perRound: 10 });
  const uncached = new IndexedDBStore({ dbName, cacheSize: 0 });
  const uncachedTime = await msPerCall(search(uncached), { perRound: 5, rounds: 3, warmup: 1 });
  await uncached.close();
  await ours.close();
  await deleteDatabase(dbName);
  return [
    row(SUITE, "filtered search, 10k of 50k items (warm)", warm, memoryTime, "InMemoryStore", ms, { max: 3 }),
    row(SUITE, "  same, cacheSize 0 (every row read)", uncachedTime, memoryTime, "InMemoryStore", ms),
    row(SUITE, "  same, first search after a reload (cold)", coldMs, memoryTime, "InMemoryStore", ms),
  ];
}

async function semantic(): Promise<BenchRow[]> {
  const dbName = `bench-vectors-${Date.now()}`;
  const embeddings = new HashEmbeddings(384);
  const index = { dims: 384, embeddings, fields: ["text"] };
  const ours = new IndexedDBStore({ dbName, index });
  const memory = new InMemoryStore({ index });
  const words = ["apple", "river", "teal", "mountain", "coffee", "piano", "garden", "rocket", "violet", "ocean"];
  for (const store of [ours, memory]) {
    for (let start = 0; start < 5000; start += 500) {
      const ops: Operation[] = [];
      for (let i = start; i < start + 500; i++) {
        ops.push({
          namespace: ["memories", "u1"],
          key: `m${i}`,
          value: { text: `${words[i % 10]} ${words[(i * 7) % 10]} note ${i}` },
        });
      }
      await store.batch(ops);
    }
  }
  const query = (store: InMemoryStore | IndexedDBStore) => () =>
    store.search(["memories"], { query: "teal ocean", limit: 10 });
  const memoryTime = await msPerCall(query(memory), { perRound: 5 });
  const oursTime = await msPerCall(query(ours), { perRound: 5 });
  await ours.close();
  await deleteDatabase(dbName);
  return [row(SUITE, "semantic query, 5,000 × 384-dim vectors", oursTime, memoryTime, "InMemoryStore", ms)];
}

/** The store suite. */
export const storeSuite: Suite = {
  name: SUITE,
  async run() {
    return [...(await filtered()), ...(await semantic())];
  },
};

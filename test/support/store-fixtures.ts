/**
 * Fixtures for the IndexedDBStore tests: deterministic embeddings, a seeded
 * random generator, stores on fresh databases, and result normalization for
 * comparing with InMemoryStore.
 */
import { Embeddings } from "@langchain/core/embeddings";
import type { Item, SearchItem } from "@langchain/langgraph-checkpoint";
import { IndexedDBStore, type IndexedDBStoreParams } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "./databases.js";

/** FNV-1a, 32 bits: a stable hash of a string. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/**
 * Bag-of-words embeddings: each word adds a signed, weighted unit to one
 * hashed dimension, so texts sharing words are similar. Deterministic, no
 * network, and counts its calls (to prove a reload does not re-embed).
 */
export class HashEmbeddings extends Embeddings {
  documentCalls = 0;
  documentsEmbedded = 0;
  queryCalls = 0;
  /** Calls in order, with a marker, for checks on "embed before the transaction". */
  readonly log: string[] = [];

  constructor(readonly dims = 16) {
    super({});
  }

  vector(text: string): number[] {
    const vector = new Array<number>(this.dims).fill(0);
    for (const word of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
      if (!word) continue;
      const hash = fnv1a(word);
      const weight = 1 + ((hash >>> 20) & 7) / 8;
      vector[hash % this.dims]! += hash & 0x10000 ? weight : -weight;
    }
    return vector;
  }

  async embedDocuments(texts: string[]): Promise<number[][]> {
    this.documentCalls += 1;
    this.documentsEmbedded += texts.length;
    this.log.push("embedDocuments");
    return texts.map((text) => this.vector(text));
  }

  async embedQuery(text: string): Promise<number[]> {
    this.queryCalls += 1;
    this.log.push("embedQuery");
    return this.vector(text);
  }
}

/** Mulberry32: a small seeded PRNG, so a failing sequence can be replayed by its seed. */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** One element of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const opened: IndexedDBStore[] = [];

/** A store on a fresh database, closed and deleted by {@link cleanupStores}. */
export function freshStore(params: IndexedDBStoreParams = {}): IndexedDBStore {
  const store = new IndexedDBStore({ dbName: freshDbName("store"), ...params });
  opened.push(store);
  return store;
}

/** A second instance on an existing store's database (a reload), cleaned up with it. */
export function reopen(store: IndexedDBStore, params: IndexedDBStoreParams = {}): IndexedDBStore {
  const again = new IndexedDBStore({ ...params, dbName: store.dbName });
  opened.push(again);
  return again;
}

/** Closes every store made by {@link freshStore}/{@link reopen} and deletes their databases. */
export async function cleanupStores(): Promise<void> {
  const stores = opened.splice(0);
  const names = new Set(stores.map((store) => store.dbName));
  await Promise.all(stores.map((store) => store.close()));
  await Promise.all([...names].map((name) => deleteDatabase(name)));
}

/** An item without its timestamps (they differ between two stores by a few ms). */
export function withoutTimes(item: Item | SearchItem | null): unknown {
  if (item === null) return null;
  const { createdAt, updatedAt, ...rest } = item;
  expectDate(createdAt);
  expectDate(updatedAt);
  return rest;
}

function expectDate(value: unknown): void {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new Error(`expected a valid Date, got ${String(value)}`);
  }
}

/**
 * Any operation or batch result, comparable across stores: items without
 * timestamps (checked to be Dates), with `hasScore` telling whether the
 * `score` key is present; arrays compared element by element.
 */
export function comparable(result: unknown): unknown {
  if (result === null || result === undefined) return null;
  if (Array.isArray(result)) return result.map((entry) => comparable(entry));
  if (typeof result === "object" && "key" in result && "namespace" in result) {
    return { ...(withoutTimes(result as Item) as object), hasScore: "score" in result };
  }
  return result;
}

/**
 * `IndexedDBStore` searches. Inside the transaction: the namespaces under
 * the prefix, then each one, in order of first use, from the cache or from
 * IndexedDB (whole, or until a page is full). After it: decode, cache whole
 * namespaces, filter, rank, cut the page.
 */
import type { Item, SearchItem, SearchOperation, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { KeyRanges, Tx } from "./db.js";
import type { CachedNamespace, NamespaceCache } from "./store-cache.js";
import { decodeValue, itemOf, namespaceId, toVectors } from "./store-codec.js";
import {
  DEFAULT_SEARCH_LIMIT,
  compileFilter,
  matchesFilter,
  rankByVector,
  type CompiledFilter,
  type Filter,
  type ItemVectors,
} from "./store-query.js";
import {
  META,
  itemPrefixRange,
  namespacePrefixRange,
  namespaceRange,
  orderRangeAfter,
  type ClockRecord,
  type ItemRow,
  type NamespaceRow,
  type StoreSchema,
  type VectorRow,
} from "./store-schema.js";

/** A transaction a search or a get reads in: read-only, or the batch's read-write one. */
export type AnyTx = Tx<StoreSchema, "readonly"> | Tx<StoreSchema, "readwrite">;

/** What reads need besides the transaction. */
export interface ReadContext {
  ranges: KeyRanges;
  cache: NamespaceCache;
}

/** A search, planned before the transaction. */
export interface SearchPlan {
  op: SearchOperation;
  filter: CompiledFilter;
  offset: number;
  limit: number;
  /** The query's embedding, when this is a ranked search. */
  queryVector?: number[];
  /**
   * Items needed in store order: the first `need` matches suffice (a page
   * without ranking). Undefined: read every item under the prefix.
   */
  need?: number;
}

/**
 * What a search found for one namespace inside the transaction: a current
 * cache entry, or rows read now (in creation order), or both (a cached
 * namespace whose vectors were read now).
 */
interface Segment {
  namespace: NamespaceRow;
  cached?: CachedNamespace;
  rows?: ItemRow[];
  /** True when `rows` holds the whole namespace, so it can be cached. */
  complete?: boolean;
  vectors?: VectorRow[];
}

/** What a search read inside the transaction, namespace by namespace in store order. */
export interface SearchRead {
  segments: Segment[];
}

/** One item a search considers, in store order. */
interface Candidate {
  row: ItemRow;
  /** The decoded value (the row's own without a serializer). */
  value: unknown;
  /** True when the cache holds `row`: the caller gets a copy. */
  shared: boolean;
  vectors?: ItemVectors;
  /** For rankByVector's messages. */
  key: string;
  namespace: string[];
}

/** True for a whole, non-negative number: a page bound that allows stopping early. */
function isCount(n: number): boolean {
  return Number.isInteger(n) && n >= 0;
}

/**
 * Plans a search before the transaction: its page bounds (upstream's
 * defaults), its compiled filter, and whether it may stop early.
 */
export function planSearch(op: SearchOperation, serialized: boolean): SearchPlan {
  const offset = op.offset ?? 0;
  const limit = op.limit ?? DEFAULT_SEARCH_LIMIT;
  const filter = compileFilter(op.filter as Filter | undefined);
  // A page can stop at the first offset + limit matches when the filter can
  // run inside the transaction (structured-clone values) or there is none;
  // odd bounds (negative, fractional) read everything and slice as upstream.
  const early = isCount(offset) && isCount(limit) && (!serialized || !filter);
  return { op, filter, offset, limit, need: early ? offset + limit : undefined };
}

/** Chunk size of an early-stopping scan with a filter: starts small, doubles. */
const FIRST_CHUNK = 64;
const MAX_CHUNK = 4096;

/**
 * Past this many namespaces to read, one range read of the whole prefix
 * beats a request per namespace (each costs a round trip).
 */
const MANY_NAMESPACES = 16;

/**
 * A search's reads. Namespaces under the prefix come from one range read of
 * `namespaces` (with their generations; skipped when the cache shows no
 * write since); then each namespace, in order of first use, is served by a
 * current cache entry or read from the `order` index, which lists it in
 * creation order.
 */
export async function readSearch(tx: AnyTx, { ranges, cache }: ReadContext, plan: SearchPlan): Promise<SearchRead> {
  const prefix = plan.op.namespacePrefix;
  const namespaceRows = await readNamespaces(tx, ranges, cache, prefix);
  const order = tx.objectStore("items").index("order");
  const ranked = plan.queryVector !== undefined;
  let need = plan.need;
  // A filtered page over many namespaces not in memory would cost a round
  // trip per namespace: read the whole prefix at once instead (and cache it).
  if (need !== undefined && plan.filter && namespaceRows.length > MANY_NAMESPACES) {
    const missing = namespaceRows.filter((row) => !cache.get(namespaceId(row.namespace), row.generation)).length;
    if (missing > MANY_NAMESPACES) need = undefined;
  }
  if (need === undefined) {
    const cached = namespaceRows.map((row) => cache.get(namespaceId(row.namespace), row.generation));
    const missingRows = cached.filter((entry) => !entry).length;
    const missingVectors = ranked ? cached.filter((entry) => !entry?.vectors).length : 0;
    if (Math.max(missingRows, missingVectors) > MANY_NAMESPACES) {
      return { segments: await readPrefixWhole(tx, ranges, prefix, namespaceRows, ranked) };
    }
    // What the cache lacks is read whole, all namespaces at once. Only a
    // ranked search's transaction covers `vectors`.
    const vectorStore = ranked ? tx.objectStore("vectors") : undefined;
    const segments = await Promise.all(
      namespaceRows.map(async (namespace, i): Promise<Segment> => {
        const entry = cached[i];
        const range = namespaceRange(ranges, namespace.namespace);
        const [rows, vectors] = await Promise.all([
          entry ? undefined : order.getAll(range),
          vectorStore && !entry?.vectors ? vectorStore.getAll(range) : undefined,
        ]);
        return { namespace, cached: entry, rows, complete: rows !== undefined, vectors };
      }),
    );
    return { segments };
  }
  // A page: stop as soon as `need` items pass the filter (which then runs
  // here, on structured-clone values or cached decoded ones).
  const filter = plan.filter;
  const segments: Segment[] = [];
  let matched = 0;
  for (const namespace of namespaceRows) {
    if (matched >= need) break;
    const cached = cache.get(namespaceId(namespace.namespace), namespace.generation);
    if (cached) {
      segments.push({ namespace, cached });
      for (const value of cached.values) if (matchesFilter(value, filter) && ++matched >= need) break;
      continue;
    }
    const rows: ItemRow[] = [];
    let chunk = FIRST_CHUNK;
    let complete = false;
    while (matched < need) {
      const wanted = filter ? Math.max(chunk, need - matched) : need - matched;
      const range =
        rows.length === 0 ? namespaceRange(ranges, namespace.namespace) : orderRangeAfter(ranges, namespace.namespace, rows[rows.length - 1]!.seq);
      const batch = await order.getAll(range, wanted);
      for (const row of batch) {
        rows.push(row);
        if (matchesFilter(row.value, filter)) matched += 1;
      }
      if (batch.length < wanted) {
        complete = true;
        break;
      }
      if (filter) chunk = Math.min(chunk * 2, MAX_CHUNK);
    }
    segments.push({ namespace, rows, complete });
  }
  return { segments };
}

/** The namespace rows under `prefix`, in first-use order: from the cache when no write happened since, else read. */
async function readNamespaces(
  tx: AnyTx,
  ranges: KeyRanges,
  cache: NamespaceCache,
  prefix: readonly string[],
): Promise<NamespaceRow[]> {
  const id = JSON.stringify(prefix);
  let generation: number | undefined;
  if (cache.enabled) {
    const clock = (await tx.objectStore("meta").get(META.clock)) as ClockRecord | undefined;
    generation = clock?.generation ?? 0;
    const known = cache.namespaces(id, generation);
    if (known) return known;
  }
  const rows = await tx.objectStore("namespaces").getAll(namespacePrefixRange(ranges, prefix));
  rows.sort((a, b) => a.seq - b.seq);
  // Read in this transaction, right after that generation: consistent.
  if (generation !== undefined) cache.setNamespaces(id, generation, rows);
  return rows;
}

/**
 * Every namespace under `prefix` read whole with one range read (rows come
 * in key order, a namespace's together; each is then put in creation
 * order), and their vectors alike for a ranked search.
 */
async function readPrefixWhole(
  tx: AnyTx,
  ranges: KeyRanges,
  prefix: readonly string[],
  namespaceRows: NamespaceRow[],
  ranked: boolean,
): Promise<Segment[]> {
  const range = itemPrefixRange(ranges, prefix);
  const [rows, vectors] = await Promise.all([
    tx.objectStore("items").getAll(range),
    ranked ? tx.objectStore("vectors").getAll(range) : undefined,
  ]);
  const rowsOf = groupByNamespace(rows);
  for (const group of rowsOf.values()) group.sort((a, b) => a.seq - b.seq);
  const vectorsOf = vectors ? groupByNamespace(vectors) : undefined;
  return namespaceRows.map((namespace) => {
    const id = namespaceId(namespace.namespace);
    return {
      namespace,
      rows: rowsOf.get(id) ?? [],
      complete: true,
      vectors: vectorsOf ? (vectorsOf.get(id) ?? []) : undefined,
    };
  });
}

/** Rows in key order, split by namespace (a namespace's rows are adjacent). */
function groupByNamespace<Row extends { namespace: string[] }>(rows: Row[]): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  let current: Row[] | undefined;
  let previous: string[] | undefined;
  for (const row of rows) {
    if (!current || !sameLabels(previous!, row.namespace)) {
      previous = row.namespace;
      current = [];
      groups.set(namespaceId(row.namespace), current);
    }
    current.push(row);
  }
  return groups;
}

/** True when two namespaces have the same labels. */
function sameLabels(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Decodes what a search read, keeps whole namespaces in the cache, and cuts the page. */
export async function finishSearch(
  plan: SearchPlan,
  read: SearchRead,
  serde: SerializerProtocol | undefined,
  cache: NamespaceCache,
): Promise<SearchItem[]> {
  const candidates: Candidate[] = [];
  for (const segment of read.segments) {
    let entry = segment.cached;
    let rows = entry?.rows ?? [];
    let values: unknown[] = entry?.values ?? [];
    if (segment.rows) {
      rows = segment.rows;
      values = await Promise.all(rows.map((row) => decodeValue(row, serde)));
      if (segment.complete) {
        const candidate: CachedNamespace = { generation: segment.namespace.generation, rows, values };
        if (cache.set(namespaceId(segment.namespace.namespace), candidate)) entry = candidate;
      }
    }
    let vectors = entry?.vectors;
    if (segment.vectors) {
      const decoded = await Promise.all(segment.vectors.map((row) => toVectors(row, serde)));
      vectors = new Map(segment.vectors.map((row, i) => [row.key, decoded[i]!]));
      // Read in the same transaction as the entry was validated: same generation.
      if (entry) entry.vectors = vectors;
    }
    const shared = entry !== undefined;
    rows.forEach((row, i) => {
      if (!matchesFilter(values[i], plan.filter)) return;
      candidates.push({
        row,
        value: values[i],
        shared,
        vectors: vectors?.get(row.key),
        key: row.key,
        namespace: row.namespace,
      });
    });
  }
  const { offset, limit } = plan;
  if (!plan.queryVector) {
    // Upstream slices the whole filtered list, odd bounds included.
    const page = candidates.slice(offset, plan.need ?? offset + limit);
    return Promise.all(page.map(async (c) => ({ ...(await output(c, serde)), score: undefined })));
  }
  const ranked = rankByVector(candidates, (index) => candidates[index]!.vectors, plan.queryVector, offset, limit);
  return Promise.all(ranked.map(async ([score, c]) => ({ ...(await output(c, serde)), score })));
}

/** A candidate as the `Item` the caller gets: never an object the cache holds. */
async function output(candidate: Candidate, serde: SerializerProtocol | undefined): Promise<Item> {
  const { row } = candidate;
  if (!candidate.shared) return itemOf(row, candidate.value);
  // A fresh decode (or clone) so the caller may mutate what it gets.
  const value = row.typed ? await decodeValue(row, serde) : structuredClone(row.value);
  return {
    value: value as Record<string, unknown>,
    key: row.key,
    namespace: [...row.namespace],
    createdAt: new Date(row.createdAt),
    updatedAt: new Date(row.updatedAt),
  };
}

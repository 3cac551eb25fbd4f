/**
 * `IndexedDBStore` searches. Inside the transaction: the namespaces under
 * the prefix, then each one, in order of first use, from the cache or from
 * IndexedDB (whole, or until a page is full), a cached head followed by the
 * rows after it. After it: decode, cache what was read (whole namespaces and
 * the heads pages read), filter, rank, cut the page.
 */
import type { Item, SearchItem, SearchOperation, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { KeyRanges, Tx } from "../idb/database.js";
import type { CachedNamespace, NamespaceCache } from "./cache.js";
import { decodeValue, isNamespace, itemOf, namespaceId, timestampOf, toVectors } from "./codec.js";
import {
  DEFAULT_SEARCH_LIMIT,
  compileFilter,
  matchesFilter,
  rankByVector,
  type CompiledFilter,
  type Filter,
  type ItemVectors,
} from "./query.js";
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
} from "./schema.js";

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
 * cache entry (the whole namespace or its head), rows read now (in creation
 * order, after the cached ones), or both; and vectors read now.
 */
interface Segment {
  namespace: NamespaceRow;
  cached?: CachedNamespace;
  /** Rows read now, in creation order: those after `cached`'s rows, or from the first. */
  rows?: ItemRow[];
  /** True when `cached`'s rows and `rows` together are the whole namespace. */
  complete?: boolean;
  vectors?: VectorRow[];
}

/** What a search read inside the transaction, namespace by namespace in store order. */
export interface SearchRead {
  segments: Segment[];
  /** The cache's epoch when the search began: nothing read before a clear is kept. */
  epoch: number;
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

/** The largest count `getAll` takes (a WebIDL `unsigned long`); more is a TypeError. */
const MAX_GETALL_COUNT = 2 ** 32 - 1;

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
  // odd bounds (negative, fractional) and pages past what getAll can count
  // (limit: Number.MAX_SAFE_INTEGER for "all") read everything and slice as upstream.
  const early = isCount(offset) && isCount(limit) && offset + limit <= MAX_GETALL_COUNT && (!serialized || !filter);
  return { op, filter, offset, limit, need: early ? offset + limit : undefined };
}

/**
 * Chunk sizes of an early-stopping scan with a filter: the first chunk, then
 * as many rows as the matches still needed take at the rate seen so far
 * (with a margin), or twice what was scanned while nothing matched.
 */
const FIRST_CHUNK = 64;
const MAX_CHUNK = 4096;
const CHUNK_MARGIN = 1.25;

/**
 * How many rows the next read of a page scan asks for: `remaining` matches
 * are still needed and `hits` of the namespace's `scanned` rows matched.
 * Rows cost ~10 µs each and a request about as much as 50 rows, so it aims
 * at one more request, without reading much past the page.
 */
function nextChunk(filtered: boolean, remaining: number, scanned: number, hits: number): number {
  if (!filtered) return remaining;
  const estimate = hits > 0 ? Math.ceil(((remaining * scanned) / hits) * CHUNK_MARGIN) : scanned;
  return Math.max(Math.min(Math.max(estimate, FIRST_CHUNK), MAX_CHUNK), remaining);
}

/**
 * Past this many namespaces to read, one range read of the whole prefix
 * beats a request per namespace (each costs a round trip).
 */
const MANY_NAMESPACES = 16;

/**
 * A search's reads. Namespaces under the prefix come from one range read of
 * `namespaces` (with their generations; skipped when the cache shows no
 * write since); then each namespace, in order of first use, is served by a
 * current cache entry, or read from the `order` index (which lists it in
 * creation order), or both: a cached head, then the rows after it.
 */
export async function readSearch(tx: AnyTx, { ranges, cache }: ReadContext, plan: SearchPlan): Promise<SearchRead> {
  const epoch = cache.epoch;
  const prefix = plan.op.namespacePrefix;
  const namespaceRows = await readNamespaces(tx, ranges, cache, prefix, epoch);
  const order = tx.objectStore("items").index("order");
  const ranked = plan.queryVector !== undefined;
  let need = plan.need;
  // A filtered page over many namespaces not in memory would cost a round
  // trip per namespace: read the whole prefix at once instead (and cache it).
  if (need !== undefined && plan.filter && namespaceRows.length > MANY_NAMESPACES) {
    const missing = namespaceRows.filter(
      (row) => !cache.get(namespaceId(row.namespace), row.generation)?.complete,
    ).length;
    if (missing > MANY_NAMESPACES) need = undefined;
  }
  if (need === undefined) {
    const cached = namespaceRows.map((row) => cache.get(namespaceId(row.namespace), row.generation));
    const missingRows = cached.filter((entry) => !entry?.complete).length;
    const missingVectors = ranked ? cached.filter((entry) => !entry?.vectors).length : 0;
    if (Math.max(missingRows, missingVectors) > MANY_NAMESPACES) {
      return { segments: await readPrefixWhole(tx, ranges, prefix, namespaceRows, ranked), epoch };
    }
    // What the cache lacks is read, all namespaces at once: a namespace not
    // cached whole, or the rows after its cached head. Only a ranked
    // search's transaction covers `vectors`.
    const vectorStore = ranked ? tx.objectStore("vectors") : undefined;
    const segments = await Promise.all(
      namespaceRows.map(async (namespace, i): Promise<Segment> => {
        const entry = cached[i];
        const range = namespaceRange(ranges, namespace.namespace);
        // The rows after a cached head (all of them without one).
        const after = entry?.complete
          ? undefined
          : orderRangeAfter(ranges, namespace.namespace, entry ? [entry.rows] : []);
        const [rows, vectors] = await Promise.all([
          after && order.getAll(after.range).then((read) => read.slice(after.skip)),
          vectorStore && !entry?.vectors ? vectorStore.getAll(range) : undefined,
        ]);
        return { namespace, cached: entry, rows, complete: true, vectors };
      }),
    );
    return { segments, epoch };
  }
  // A page: stop as soon as `need` items pass the filter (which then runs
  // here, on structured-clone values or cached decoded ones).
  const filter = plan.filter;
  const segments: Segment[] = [];
  let matched = 0;
  for (const namespace of namespaceRows) {
    if (matched >= need) break;
    const cached = cache.get(namespaceId(namespace.namespace), namespace.generation);
    let scanned = 0;
    let hits = 0;
    if (cached) {
      for (const value of cached.values) {
        scanned += 1;
        if (matchesFilter(value, filter)) {
          hits += 1;
          if (++matched >= need) break;
        }
      }
      if (matched >= need || cached.complete) {
        segments.push({ namespace, cached });
        continue;
      }
    }
    // Not cached, or only its head, short of the page: read on from there.
    const rows: ItemRow[] = [];
    let complete = false;
    while (matched < need) {
      const wanted = nextChunk(filter !== undefined, need - matched, scanned, hits);
      const { range, skip } = orderRangeAfter(ranges, namespace.namespace, cached ? [cached.rows, rows] : [rows]);
      const asked = Math.min(wanted + skip, MAX_GETALL_COUNT);
      const batch = (await order.getAll(range, asked)).slice(skip);
      for (const row of batch) {
        rows.push(row);
        scanned += 1;
        if (matchesFilter(row.value, filter)) {
          hits += 1;
          matched += 1;
        }
      }
      if (batch.length < asked - skip) {
        complete = true;
        break;
      }
    }
    segments.push({ namespace, cached, rows, complete });
  }
  return { segments, epoch };
}

/** The namespace rows under `prefix`, in first-use order: from the cache when no write happened since, else read. */
async function readNamespaces(
  tx: AnyTx,
  ranges: KeyRanges,
  cache: NamespaceCache,
  prefix: readonly string[],
  epoch: number,
): Promise<NamespaceRow[]> {
  const id = JSON.stringify(prefix);
  let generation: number | undefined;
  if (cache.enabled) {
    const clock = (await tx.objectStore("meta").get(META.clock)) as ClockRecord | undefined;
    generation = clock?.generation ?? 0;
    const known = cache.namespaces(id, generation);
    if (known) return known;
  }
  // A row whose key is no namespace (altered outside the store) is passed over, with its items.
  const rows = (await tx.objectStore("namespaces").getAll(namespacePrefixRange(ranges, prefix))).filter((row) =>
    isNamespace(row.namespace),
  );
  rows.sort((a, b) => a.seq - b.seq);
  // Read in this transaction, right after that generation: consistent (unless the cache was cleared between).
  if (generation !== undefined) cache.setNamespaces(id, generation, rows, epoch);
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
  const items = tx.objectStore("items");
  const [rows, vectors] = await Promise.all([
    items.getAll(range),
    ranked ? tx.objectStore("vectors").getAll(range) : undefined,
  ]);
  const rowsOf = groupByNamespace(rows);
  // Every other read lists a namespace through the `order` index, which
  // leaves out an item whose seq is no key (NaN, an object: edited on disk)
  // and puts one of another key type (a string, a Date) after the numbers.
  // Sorting such seqs here listed the first and misordered the second, so a
  // search over more than MANY_NAMESPACES namespaces answered otherwise than
  // one over fewer. A namespace holding one is read again from the index.
  await Promise.all(
    [...rowsOf].map(async ([id, group]) => {
      if (group.every((row) => Number.isFinite(row.seq))) group.sort((a, b) => a.seq - b.seq);
      else rowsOf.set(id, await items.index("order").getAll(namespaceRange(ranges, group[0]!.namespace)));
    }),
  );
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

/**
 * Decodes what a search read, keeps it in the cache (whole namespaces, and
 * the heads that pages read), and cuts the page.
 */
export async function finishSearch(
  plan: SearchPlan,
  read: SearchRead,
  serde: SerializerProtocol | undefined,
  cache: NamespaceCache,
): Promise<SearchItem[]> {
  const candidates: Candidate[] = [];
  // An unranked page needs only its first `need` matches, in store order.
  const enough = plan.queryVector ? undefined : plan.need;
  for (const segment of read.segments) {
    const cached = segment.cached;
    // The entry now in the cache for these rows, and how many of them it holds.
    let entry = cached;
    let rows = cached?.rows ?? [];
    let values: unknown[] = cached?.values ?? [];
    let shared = rows.length;
    if (segment.rows) {
      const tailValues = await Promise.all(segment.rows.map((row) => decodeValue(row, serde)));
      rows = cached ? cached.rows.concat(segment.rows) : segment.rows;
      values = cached ? cached.values.concat(tailValues) : tailValues;
      const complete = segment.complete === true;
      if (rows.length > 0 || complete) {
        // Read in the transaction that validated `cached`: the same generation.
        const candidate: CachedNamespace = { generation: segment.namespace.generation, rows, values, complete };
        if (cache.set(namespaceId(segment.namespace.namespace), candidate, read.epoch)) {
          entry = candidate;
          shared = rows.length;
        }
      }
    }
    let vectors = entry?.complete ? entry.vectors : undefined;
    if (segment.vectors) {
      const decoded = await Promise.all(segment.vectors.map((row) => toVectors(row, serde)));
      vectors = new Map(segment.vectors.map((row, i) => [row.key, decoded[i]!]));
      // Read in the same transaction as the entry was validated: same generation.
      if (entry?.complete) entry.vectors = vectors;
    }
    for (let i = 0; i < rows.length; i++) {
      if (enough !== undefined && candidates.length >= enough) break;
      if (!matchesFilter(values[i], plan.filter)) continue;
      const row = rows[i]!;
      candidates.push({
        row,
        value: values[i],
        shared: i < shared,
        vectors: vectors?.get(row.key),
        key: row.key,
        namespace: row.namespace,
      });
    }
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
  const value = row.typed || serde ? await decodeValue(row, serde) : structuredClone(row.value);
  return {
    value: value as Record<string, unknown>,
    key: row.key,
    namespace: [...row.namespace],
    createdAt: new Date(timestampOf(row.createdAt)),
    updatedAt: new Date(timestampOf(row.updatedAt)),
  };
}

/**
 * The pure half of `IndexedDBStore` queries: filters, namespace matching,
 * cosine similarity and ranking. Each function reproduces what
 * `InMemoryStore` (`@langchain/langgraph-checkpoint` `store/memory` and
 * `store/utils`) does, quirks included, so that both stores give the same
 * answers; the comments name the quirks that are kept on purpose.
 */
import type { MatchCondition } from "@langchain/langgraph-checkpoint";
import { IndexedDBCheckpointError } from "../core/errors.js";

/** The comparison operators a search `filter` understands. */
const OPERATORS = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"]);

/**
 * True when `value` is an operator object such as `{ $gt: 3 }`. Like
 * upstream, an empty object counts (and then matches everything).
 */
function isOperatorObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && Object.keys(value).every((key) => OPERATORS.has(key));
}

/**
 * One filter condition against one field: strict equality, or every operator
 * of an operator object. Ordering operators compare `Number(...)` of both
 * sides, as upstream does.
 */
export function compareValues(itemValue: unknown, filterValue: unknown): boolean {
  if (!isOperatorObject(filterValue)) return itemValue === filterValue;
  return Object.keys(filterValue)
    .filter((op) => op.startsWith("$"))
    .every((op) => {
      const operand = filterValue[op];
      switch (op) {
        case "$eq":
          return itemValue === operand;
        case "$ne":
          return itemValue !== operand;
        case "$gt":
          return Number(itemValue) > Number(operand);
        case "$gte":
          return Number(itemValue) >= Number(operand);
        case "$lt":
          return Number(itemValue) < Number(operand);
        case "$lte":
          return Number(itemValue) <= Number(operand);
        case "$in":
          return Array.isArray(operand) ? operand.includes(itemValue) : false;
        case "$nin":
          return Array.isArray(operand) ? !operand.includes(itemValue) : true;
        default:
          return false;
      }
    });
}

/** A search filter: top-level field name to a value or an operator object. */
export type Filter = Readonly<Record<string, unknown>>;

/**
 * A filter compiled once per search: its entries, so matching 10,000 items
 * does not rebuild them per item. Undefined means "no filter".
 */
export type CompiledFilter = readonly (readonly [field: string, condition: unknown])[] | undefined;

/** Compiles a search filter (absent or `null` means match all, as upstream's `if (op.filter)`). */
export function compileFilter(filter: Filter | null | undefined): CompiledFilter {
  return filter ? Object.entries(filter) : undefined;
}

/** True when an item's value passes every condition of the filter. */
export function matchesFilter(value: unknown, filter: CompiledFilter): boolean {
  if (!filter) return true;
  // No put stores null (a put of null deletes), but a row altered outside the
  // store can hold it: it has no fields, as an item without them.
  const fields = (value ?? {}) as Record<string, unknown>;
  for (const [field, condition] of filter) {
    if (!compareValues(fields[field], condition)) return false;
  }
  return true;
}

/** One `listNamespaces` condition against one namespace; `"*"` matches any label. */
export function matchesCondition(condition: MatchCondition, namespace: readonly string[]): boolean {
  const { matchType, path } = condition;
  if (path.length > namespace.length) return false;
  if (matchType === "prefix") {
    return path.every((label, i) => label === "*" || namespace[i] === label);
  }
  if (matchType === "suffix") {
    const start = namespace.length - path.length;
    return path.every((label, i) => label === "*" || namespace[start + i] === label);
  }
  throw new Error(`Unsupported match type: ${String(matchType)}`);
}

/** The list-namespaces request as it reaches `batch`. */
export interface NamespaceQuery {
  matchConditions?: readonly MatchCondition[];
  maxDepth?: number;
  limit?: number;
  offset?: number;
}

/**
 * Filters, truncates, de-duplicates, sorts and pages namespaces exactly as
 * `InMemoryStore.listNamespaces` does. Notes on parity:
 * - namespaces are compared through their `":"`-joined form (labels cannot
 *   contain colons), so `maxDepth: 0` yields `[[""]]` as it does upstream;
 * - the order is `localeCompare` of the joined form, upstream's choice,
 *   which is locale-dependent (unlike IndexedDB's code-unit key order).
 */
export function selectNamespaces(namespaces: readonly (readonly string[])[], query: NamespaceQuery): string[][] {
  let selected = namespaces.map((namespace) => namespace.join(":"));
  const conditions = query.matchConditions;
  if (conditions && conditions.length > 0) {
    selected = selected.filter((joined) => {
      const namespace = joined.split(":");
      return conditions.every((condition) => matchesCondition(condition, namespace));
    });
  }
  if (query.maxDepth !== undefined) {
    const depth = query.maxDepth;
    selected = Array.from(new Set(selected.map((joined) => joined.split(":").slice(0, depth).join(":"))));
  }
  selected.sort((a, b) => a.localeCompare(b));
  const offset = query.offset ?? 0;
  return selected.slice(offset, offset + (query.limit ?? selected.length)).map((joined) => joined.split(":"));
}

/** Upstream's defaults for a search's page. */
export const DEFAULT_SEARCH_LIMIT = 10;

/**
 * The Euclidean norm of a vector, summed left to right like upstream's
 * `reduce`, so a norm computed at write time equals the one `InMemoryStore`
 * computes at query time, bit for bit.
 */
export function norm(vector: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  return Math.sqrt(sum);
}

/**
 * Cosine similarity of `query` (with norm `queryNorm`) and the vector that
 * starts at `offset` in `vectors` (with norm `vectorNorm`), in upstream's
 * order of operations; 0 when either norm is 0. NaN when the vector or its
 * norm holds a number that is not finite: it has no score (upstream gives 0
 * for a NaN norm and NaN for the rest, which its sort counts as a tie with
 * every score).
 */
export function cosine(
  query: ArrayLike<number>,
  queryNorm: number,
  vectors: ArrayLike<number>,
  offset: number,
  vectorNorm: number,
): number {
  let dot = 0;
  for (let i = 0; i < query.length; i++) dot += vectors[offset + i]! * query[i]!;
  // A NaN or infinite number makes the sum NaN or infinite (a product with a
  // zero of the query included), so no second pass over the vector is needed.
  if (!Number.isFinite(dot) || !Number.isFinite(vectorNorm)) return NaN;
  return queryNorm && vectorNorm ? dot / (queryNorm * vectorNorm) : 0;
}

/** An item's stored vectors: `count` vectors of `dims` numbers, back to back, with their norms. */
export interface ItemVectors {
  vectors: ArrayLike<number>;
  norms: ArrayLike<number>;
  dims: number;
}

/**
 * Ranks candidates (in the store's order) against a query vector, exactly as
 * `InMemoryStore.scoreResults`:
 * - every vector of every candidate is scored; the list is sorted by score,
 *   descending, stably (ties keep candidate order);
 * - an item counts once, at its best score; `offset` skips ranked items;
 * - items with no vector are not ranked: when the page is short they fill
 *   it, with `score: undefined`, from the start of the unranked list (the
 *   offset does not apply to them, upstream's behaviour);
 * - unlike upstream, a vector holding NaN or ±Infinity (in its numbers or
 *   its norm: written before puts refused them, or edited on disk) gives no
 *   score, so an item with no other vector is unranked, never ahead of a
 *   real score.
 *
 * @param vectorsOf The stored vectors of candidate `index`, or undefined.
 * @returns The page: each entry's score (undefined: unranked) and candidate.
 */
export function rankByVector<T extends { key: string; namespace: string[] }>(
  candidates: readonly T[],
  vectorsOf: (index: number) => ItemVectors | undefined,
  query: ArrayLike<number>,
  offset: number,
  limit: number,
): [score: number | undefined, candidate: T][] {
  const queryNorm = norm(query);
  const scored: [score: number, candidate: number][] = [];
  const unranked: number[] = [];
  candidates.forEach((item, index) => {
    const stored = vectorsOf(index);
    const count = stored ? stored.norms.length : 0;
    if (!stored || count === 0) {
      unranked.push(index);
      return;
    }
    if (stored.dims !== query.length) {
      throw new IndexedDBCheckpointError(
        `The stored vectors of item "${item.key}" in namespace [${item.namespace.join(", ")}] have ${stored.dims} dimensions, but the query embedding has ${query.length}. The index configuration (embeddings or dims) changed since they were written: put those items again to re-embed them, or use a new dbName.`,
      );
    }
    let ranked = false;
    for (let j = 0; j < count; j++) {
      const score = cosine(query, queryNorm, stored.vectors, j * stored.dims, stored.norms[j]!);
      if (Number.isNaN(score)) continue;
      scored.push([score, index]);
      ranked = true;
    }
    if (!ranked) unranked.push(index);
  });
  // Array.prototype.sort is stable, and the comparator is upstream's, so
  // ties come out in the same order.
  scored.sort((a, b) => b[0] - a[0]);
  const seen = new Set<number>();
  const kept: [number | undefined, number][] = [];
  for (const [score, index] of scored) {
    if (seen.has(index)) continue;
    const rank = seen.size;
    if (rank >= offset + limit) break;
    seen.add(index);
    if (rank < offset) continue;
    kept.push([score, index]);
  }
  if (unranked.length && kept.length < limit) {
    for (const index of unranked.slice(0, limit - kept.length)) {
      if (!seen.has(index)) {
        seen.add(index);
        kept.push([undefined, index]);
      }
    }
  }
  return kept.map(([score, index]) => [score, candidates[index]!]);
}

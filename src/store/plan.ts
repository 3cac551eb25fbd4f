/**
 * A batch, planned: every operation validated (as `InMemoryStore` does) and
 * classified, puts de-duplicated, reads issued, results finished.
 */
import {
  validateNamespace,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type PutOperation,
  type SearchItem,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { KeyRanges } from "../idb/database.js";
import { isValidKey } from "../core/guards.js";
import type { NamespaceCache } from "./cache.js";
import { isNamespace, itemId, toItem } from "./codec.js";
import { selectNamespaces } from "./query.js";
import { namespacePrefixRange, type ItemRow } from "./schema.js";
import {
  finishSearch,
  planSearch,
  readSearch,
  type AnyTx,
  type ReadContext,
  type SearchPlan,
  type SearchRead,
} from "./search.js";

/** One operation of a batch, validated and classified. */
export type Planned =
  | { kind: "get"; op: GetOperation }
  | { kind: "search"; plan: SearchPlan }
  | { kind: "put" }
  | { kind: "list"; op: ListNamespacesOperation };

/** What one operation read inside the transaction. */
export type ReadResult = ItemRow | undefined | SearchRead | string[][] | null;

/** `InMemoryStore`'s namespace rule for items: non-empty, no dots, colons, NULs or empty labels; "langgraph" allowed. */
export function validateItemNamespace(namespace: string[]): void {
  validateNamespace(namespace, { allowReservedRoot: true });
}

/**
 * Refuses an item key IndexedDB cannot store (`undefined`, `null`, an
 * object, `NaN`, a boolean…) before any I/O. `InMemoryStore` takes any
 * value as a Map key; here the request would fail inside the transaction
 * with a bare `DataError`.
 */
export function validateItemKey(namespace: readonly string[], key: unknown, ranges: KeyRanges): void {
  if (isValidKey(key, ranges.only)) return;
  const shown = typeof key === "object" && key !== null ? Object.prototype.toString.call(key) : String(key);
  throw new TypeError(
    `IndexedDBStore: the item key ${shown} in namespace [${namespace.join(", ")}] is not a valid key; item keys are strings.`,
  );
}

/** The puts of a batch, one per item, at the position of its first put, with its last value (as upstream). */
export function dedupePuts(operations: readonly Operation[]): PutOperation[] {
  const puts = new Map<string, PutOperation>();
  for (const op of operations) {
    if ("value" in op && "namespace" in op) puts.set(itemId(op.namespace, op.key), op);
  }
  return [...puts.values()];
}

/** Issues the reads of one operation; only IndexedDB requests are awaited. */
export async function readOne(tx: AnyTx, context: ReadContext, planned: Planned): Promise<ReadResult> {
  switch (planned.kind) {
    case "get":
      return tx.objectStore("items").get([planned.op.namespace, planned.op.key]);
    case "list": {
      const conditions = planned.op.matchConditions ?? [];
      // Narrow to a key range by the literal labels of a prefix condition.
      const prefix = conditions.find((c) => c.matchType === "prefix")?.path ?? [];
      const wildcard = prefix.indexOf("*");
      const head = wildcard === -1 ? prefix : prefix.slice(0, wildcard);
      return tx.objectStore("namespaces").getAllKeys(namespacePrefixRange(context.ranges, head));
    }
    case "search":
      return readSearch(tx, context, planned.plan);
    case "put":
      return null;
  }
}

/** Turns what an operation read into its result: decode, filter, order, rank, page. */
export async function finish(
  planned: Planned,
  read: ReadResult,
  serde: SerializerProtocol | undefined,
  cache: NamespaceCache,
): Promise<Item | null | SearchItem[] | string[][]> {
  switch (planned.kind) {
    case "get":
      return read ? toItem(read as ItemRow, serde) : null;
    case "put":
      return null;
    case "list":
      // Keys that are no namespace (rows altered outside the store) are left out, as search leaves them.
      return selectNamespaces((read as unknown[]).filter(isNamespace), planned.op);
    case "search":
      return finishSearch(planned.plan, read as SearchRead, serde, cache);
  }
}

/**
 * Validates every operation (same checks and messages as `InMemoryStore`,
 * plus item keys IndexedDB can store) and plans it.
 */
export function plan(operations: readonly Operation[], encrypted: boolean, ranges: () => KeyRanges): Planned[] {
  return operations.map((op): Planned => {
    if ("namespace" in op) {
      validateItemNamespace(op.namespace);
      if ("key" in op) validateItemKey(op.namespace, op.key, ranges());
    }
    if ("key" in op && "namespace" in op && !("value" in op)) return { kind: "get", op };
    if ("namespacePrefix" in op) {
      if (op.namespacePrefix.length > 0) validateItemNamespace(op.namespacePrefix);
      return { kind: "search", plan: planSearch(op, encrypted) };
    }
    if ("value" in op) return { kind: "put" };
    if ("matchConditions" in op || "maxDepth" in op || "limit" in op) return { kind: "list", op };
    throw new Error(`IndexedDBStore: unknown operation ${JSON.stringify(op)}.`);
  });
}

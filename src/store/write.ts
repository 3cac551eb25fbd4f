/**
 * Writing a batch's puts and deletes: values serialized before the
 * transaction, then one round of reads and every write, namespaces touched
 * so that caches (any tab) reread them.
 */
import type { PutOperation, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { dumpForRow, type KeyRecord } from "../serde/protocol.js";
import type { Tx } from "../idb/database.js";
import { IndexedDBCheckpointError, SerializationError } from "../core/errors.js";
import { namespaceId, valueRow, vectorRow } from "./codec.js";
import {
  META,
  packVectors,
  type ClockRecord,
  type ItemRow,
  type NamespaceRow,
  type StoreSchema,
  type TypedBytes,
  type VectorRow,
} from "./schema.js";

/** A put after de-duplication, with everything computed before the transaction. */
export interface PreparedPut {
  op: PutOperation;
  /** The vectors to store; undefined: the item has none (its old ones are deleted). */
  vectors?: NativeVectors;
  /** Serde format: the serialized value and vectors. */
  typedValue?: TypedBytes;
  typedVectors?: TypedBytes;
}

/** An item's vectors as computed before the transaction, back to back with their norms. */
export interface NativeVectors {
  fields: string[];
  dims: number;
  vectors: Float64Array;
  norms: Float64Array;
}

/**
 * The generation a write transaction gives the clock: one past the stored one. A stored one that is not a
 * safe whole number (the record edited on disk: a bigint threw on `+ 1`, 1e308 or Infinity stayed the same,
 * so other instances kept serving their caches) starts again at the time in ms, above any count a store
 * reaches, so it matches no generation an instance has cached.
 */
function nextGeneration(clock: ClockRecord | undefined): number {
  const stored: unknown = clock?.generation ?? 0;
  return Number.isSafeInteger(stored) && (stored as number) >= 0 && (stored as number) < Number.MAX_SAFE_INTEGER
    ? (stored as number) + 1
    : Date.now();
}

/**
 * Gives `namespaces` (which must exist) a new write generation, as a write
 * to their items does, so that caches reread them.
 */
export async function touchNamespaces(tx: Tx<StoreSchema, "readwrite">, namespaces: string[][]): Promise<void> {
  if (!namespaces.length) return;
  const distinct = [...new Map(namespaces.map((namespace) => [namespaceId(namespace), namespace])).values()];
  const meta = tx.objectStore("meta");
  const store = tx.objectStore("namespaces");
  const [clockRecord, rows] = await Promise.all([
    meta.get(META.clock) as Promise<ClockRecord | undefined>,
    Promise.all(distinct.map((namespace) => store.get(namespace))),
  ]);
  const clock: ClockRecord = { seq: clockRecord?.seq ?? 0, generation: nextGeneration(clockRecord) };
  await Promise.all([
    meta.put(clock, META.clock),
    ...rows.flatMap((row) => (row ? [store.put({ ...row, generation: clock.generation })] : [])),
  ]);
}

/** Serializes every value and vector set of the batch (before the transaction). */
export async function serializePuts(serde: SerializerProtocol, prepared: PreparedPut[]): Promise<void> {
  await Promise.all(
    prepared.map(async (put) => {
      const { namespace, key, value } = put.op;
      if (value === null) return;
      try {
        put.typedValue = await dumpForRow(serde, value, valueRow(namespace, key));
        if (put.vectors) {
          const { norms, vectors, dims } = put.vectors;
          put.typedVectors = await dumpForRow(serde, packVectors(norms, vectors, dims), vectorRow(namespace, key));
        }
      } catch (error) {
        if (error instanceof IndexedDBCheckpointError) throw error;
        throw new SerializationError(
          `Could not serialize the store item "${key}" in namespace [${namespace.join(", ")}]: ${(error as Error)?.message ?? String(error)}`,
          { cause: error },
        );
      }
    }),
  );
}

/**
 * Writes the batch's puts and deletes. First one round of reads (existing
 * items, known namespaces, the clock), then every write, in batch order.
 */
export async function writePuts(
  tx: Tx<StoreSchema, "readwrite">,
  puts: PreparedPut[],
  checkKey?: (record: KeyRecord | undefined) => void,
): Promise<void> {
  const items = tx.objectStore("items");
  const vectors = tx.objectStore("vectors");
  const namespaces = tx.objectStore("namespaces");
  const meta = tx.objectStore("meta");
  const touched = new Map<string, string[]>();
  for (const put of puts) touched.set(namespaceId(put.op.namespace), put.op.namespace);
  // The key record is read in the same round as the rest: no extra round trip.
  const [clockRecord, existing, namespaceRows, keyRecord] = await Promise.all([
    meta.get(META.clock) as Promise<ClockRecord | undefined>,
    Promise.all(puts.map((put) => items.get([put.op.namespace, put.op.key]))),
    Promise.all([...touched.values()].map((namespace) => namespaces.get(namespace))),
    checkKey && (meta.get(META.serdeKey) as Promise<KeyRecord | undefined>),
  ]);
  checkKey?.(keyRecord);
  let seq: unknown = clockRecord?.seq;
  if (!Number.isSafeInteger(seq) || (seq as number) < 0) {
    // No clock yet, or one altered outside the store: a seq that is not a
    // number would keep every new item out of the "order" index, so search
    // would silently never return them. Start above every stored item.
    seq = 0;
    for (const row of await items.getAll()) if (Number.isSafeInteger(row.seq)) seq = Math.max(seq as number, row.seq);
  }
  const clock: ClockRecord = {
    seq: seq as number,
    generation: nextGeneration(clockRecord),
  };
  const known = new Map<string, NamespaceRow>();
  for (const row of namespaceRows) if (row) known.set(namespaceId(row.namespace), row);
  const now = new Date();
  // Awaited together at the end: a failed request must not be an unhandled rejection.
  const requests: Promise<unknown>[] = [];
  try {
    for (const [i, put] of puts.entries()) {
      const { namespace, key, value } = put.op;
      const id: [string[], string] = [namespace, key];
      const namespaceRow = known.get(namespaceId(namespace));
      if (!namespaceRow) {
        // Registered on first put or delete, as InMemoryStore's map entries are.
        const row: NamespaceRow = { namespace: [...namespace], seq: ++clock.seq, generation: clock.generation };
        known.set(namespaceId(namespace), row);
        requests.push(namespaces.put(row));
      } else if (namespaceRow.generation !== clock.generation) {
        namespaceRow.generation = clock.generation;
        requests.push(namespaces.put(namespaceRow));
      }
      const before = existing[i];
      if (value === null) {
        if (before) requests.push(items.delete(id));
        if (before?.indexed) requests.push(vectors.delete(id));
        continue;
      }
      const row: ItemRow = {
        namespace: [...namespace],
        key,
        // A seq that is not a number (altered outside the store) would keep
        // the item out of the "order" index: stored, but never searched.
        seq: Number.isSafeInteger(before?.seq) ? before!.seq : ++clock.seq,
        // Likewise a createdAt that is not a valid Date is replaced.
        createdAt: before && isValidDate(before.createdAt) ? before.createdAt : now,
        updatedAt: now,
      };
      if (put.typedValue) row.typed = put.typedValue;
      else row.value = value;
      if (put.vectors) {
        row.indexed = true;
        const { fields, dims } = put.vectors;
        const vectorRowValue: VectorRow = { namespace: [...namespace], key, fields, dims };
        if (put.typedVectors) vectorRowValue.typed = put.typedVectors;
        else {
          vectorRowValue.vectors = put.vectors.vectors;
          vectorRowValue.norms = put.vectors.norms;
        }
        requests.push(vectors.put(vectorRowValue));
      } else if (before?.indexed) {
        // The new value has no vectors: never leave the old ones to score it.
        requests.push(vectors.delete(id));
      }
      try {
        requests.push(items.put(row));
      } catch (error) {
        throw cloneError(error, namespace, key);
      }
    }
  } catch (error) {
    // The transaction aborts: the requests already issued fail with it.
    for (const request of requests) request.catch(() => undefined);
    throw error;
  }
  requests.push(meta.put(clock, META.clock));
  await Promise.all(requests);
}

function isValidDate(value: unknown): value is Date {
  return value instanceof Date && !Number.isNaN(value.getTime());
}

/** A value that structured clone refuses, explained. */
export function cloneError(error: unknown, namespace: readonly string[], key: string): Error {
  const name = (error as { name?: string } | null)?.name;
  if (name === "RangeError") {
    // The browser's structured clone recurses: thousands of levels overflow its stack.
    return new SerializationError(
      `The value of store item "${key}" in namespace [${namespace.join(", ")}] is nested too deeply to be stored as a structured clone (${(error as Error).message}). Store flatter data.`,
      { cause: error },
    );
  }
  if (name !== "DataCloneError") return error as Error;
  return new SerializationError(
    `The value of store item "${key}" in namespace [${namespace.join(", ")}] cannot be stored as a structured clone (it holds a function, a symbol or a DOM object?). Store plain data, or give the IndexedDBStore a \`serde\`.`,
    { cause: error },
  );
}

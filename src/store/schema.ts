/**
 * The memory store's database: object stores, row shapes, upgrades and key
 * ranges. Kept apart from the saver's schema: a store lives in its own
 * database (default name "langgraph-store").
 *
 * | object store | key | holds | indexes |
 * |---|---|---|---|
 * | `items` | `[namespace, key]` (namespace is a string array) | value, timestamps, insertion sequence | `order`: `[namespace, seq]` |
 * | `vectors` | `[namespace, key]` | every embedded field of one item | — |
 * | `namespaces` | `namespace` | first-use sequence, last write generation | — |
 * | `meta` | name | format, clock, serializer key record | — |
 *
 * Keys hold the namespace as a nested array, not a joined string: IndexedDB
 * compares arrays element by element and shorter first, so the namespaces
 * under a prefix `P` are the one range `P .. [...P, []]` (an array sorts
 * after every string), one namespace's items are `[ns] .. [ns, []]`, and a
 * search never touches another namespace's rows. Labels are never split or
 * escaped.
 */
import type { DBSchema } from "idb";
import type { KeyRanges, Upgrade } from "../idb/database.js";
import { SerializationError } from "../core/errors.js";

/** A serialized value: the serializer's type tag and its bytes. */
export type TypedBytes = [type: string, data: Uint8Array];

/** One item. Exactly one of `value` (native format) and `typed` (serde format) is set. */
export interface ItemRow {
  namespace: string[];
  key: string;
  /**
   * When the key was created in its namespace (an update keeps it, a delete
   * and re-put renews it), from the store-wide clock: searches list items in
   * this order within a namespace, as `InMemoryStore`'s Map does.
   */
  seq: number;
  createdAt: Date;
  updatedAt: Date;
  /** The value itself (structured clone), when no serializer is configured. */
  value?: Record<string, unknown>;
  /** The serializer's output, when one is configured. */
  typed?: TypedBytes;
  /** True when the item has a row in `vectors`: a put without vectors then deletes it. */
  indexed?: boolean;
}

/**
 * All vectors of one item, one per embedded text. Absent when the item has
 * none. Rewritten whole on every put of the item, deleted with it.
 */
export interface VectorRow {
  namespace: string[];
  key: string;
  /** Labels of the embedded texts (`"text"`, `"tags[*].0"`…), for inspection. */
  fields: string[];
  /** Numbers per vector. */
  dims: number;
  /** Native format: `fields.length * dims` numbers, vector after vector. */
  vectors?: Float64Array;
  /** Native format: the norm of each vector, computed once at write time. */
  norms?: Float64Array;
  /** Serde format: norms and vectors packed by `packVectors`, then serialized. */
  typed?: TypedBytes;
}

/** A namespace that has been written to (put or delete), as `InMemoryStore` keeps them. */
export interface NamespaceRow {
  namespace: string[];
  /** First use, from the store-wide clock: the order of namespaces in a search. */
  seq: number;
  /**
   * Generation of the last write transaction that touched this namespace.
   * A reader that remembers a namespace's items can tell, from this row
   * alone, whether any tab changed them since.
   */
  generation: number;
}

/** `meta["format"]`: what this database holds and how values are encoded. */
export interface FormatRecord {
  kind: "langgraph-store";
  version: number;
  /** `"native"`: values stored as structured clones; `"serde"`: as serializer bytes. */
  values: "native" | "serde";
}

/** `meta["clock"]`: the store-wide sequence and the write generation. */
export interface ClockRecord {
  /** Last sequence number given to a namespace or an item. */
  seq: number;
  /** Bumped by every write transaction; copied into the namespaces it touches. */
  generation: number;
}

/** The store's IndexedDB schema. */
export interface StoreSchema extends DBSchema {
  items: {
    key: [string[], string];
    value: ItemRow;
    indexes: { order: [string[], number] };
  };
  vectors: {
    key: [string[], string];
    value: VectorRow;
  };
  namespaces: {
    key: string[];
    value: NamespaceRow;
  };
  meta: {
    key: string;
    value: unknown;
  };
}

/** Names of the records in `meta`. */
export const META = {
  format: "format",
  clock: "clock",
  serdeKey: "serde-key",
} as const;

/** The format version this code writes and reads. */
export const STORE_FORMAT_VERSION = 1;

/**
 * The store's upgrades; the position is the database version. Never edit a
 * released step, append a new one.
 */
export const STORE_UPGRADES: readonly Upgrade<StoreSchema>[] = [
  (db) => {
    const items = db.createObjectStore("items", { keyPath: ["namespace", "key"] });
    // Unique by construction (seq is store-wide); a `unique` index would
    // cost a lookup per put, about doubling write time in Chromium.
    items.createIndex("order", ["namespace", "seq"]);
    db.createObjectStore("vectors", { keyPath: ["namespace", "key"] });
    db.createObjectStore("namespaces", { keyPath: "namespace" });
    db.createObjectStore("meta");
  },
];

/** Above every string and number in IndexedDB's key order. */
const ABOVE: IDBValidKey = [];

/**
 * The range of `items`/`vectors` keys whose namespace starts with `prefix`;
 * undefined (the whole store) for the empty prefix.
 */
export function itemPrefixRange(ranges: KeyRanges, prefix: readonly string[]): IDBKeyRange | undefined {
  if (prefix.length === 0) return undefined;
  return ranges.bound([[...prefix]], [[...prefix, ABOVE]]);
}

/** The range of `namespaces` keys that start with `prefix`; undefined for the empty prefix. */
export function namespacePrefixRange(ranges: KeyRanges, prefix: readonly string[]): IDBKeyRange | undefined {
  if (prefix.length === 0) return undefined;
  return ranges.bound([...prefix], [...prefix, ABOVE]);
}

/**
 * The keys of exactly one namespace: in `items`/`vectors` (`[namespace, key]`)
 * and in the `order` index (`[namespace, seq]`, creation order).
 */
export function namespaceRange(ranges: KeyRanges, namespace: readonly string[]): IDBKeyRange {
  return ranges.bound([[...namespace]], [[...namespace], ABOVE]);
}

/**
 * Where a read of one namespace's `order` entries goes on after the rows
 * `read` (lists in index order: a cached head, then rows read since): the
 * range from the last row's seq on, and how many rows at its start were
 * read already (the entries of one seq come in key order). Not the range
 * after that seq: seqs are unique only as the store writes them, and a clock
 * record rolled back (an older copy put back) or an item's seq edited gives
 * two items one seq; a range after it passed over those of that seq not read
 * yet, so items put since never came in paged searches. All rows without any.
 */
export function orderRangeAfter(
  ranges: KeyRanges,
  namespace: readonly string[],
  read: readonly (readonly ItemRow[])[],
): { range: IDBKeyRange; skip: number } {
  let last: ItemRow["seq"] | undefined;
  let skip = 0;
  for (let l = read.length - 1; l >= 0; l--) {
    const rows = read[l]!;
    let i = rows.length - 1;
    if (skip === 0 && i >= 0) last = rows[i]!.seq;
    for (; i >= 0 && rows[i]!.seq === last; i--) skip += 1;
    if (i >= 0) break;
  }
  if (skip === 0) return { range: namespaceRange(ranges, namespace), skip: 0 };
  // A seq `===` cannot compare (a Date or a list, edited on disk): after it, as its equals cannot be counted.
  const counted = typeof last === "number" || typeof last === "string";
  return { range: ranges.bound([[...namespace], last!], [[...namespace], ABOVE], !counted), skip: counted ? skip : 0 };
}

/**
 * Packs an item's norms and vectors into bytes, for serializers that only
 * promise to round-trip `Uint8Array`: `[count, dims]` as float64, then the
 * norms, then the vectors, all little-endian float64.
 */
export function packVectors(norms: Float64Array, vectors: Float64Array, dims: number): Uint8Array {
  const packed = new Float64Array(2 + norms.length + vectors.length);
  packed[0] = norms.length;
  packed[1] = dims;
  packed.set(norms, 2);
  packed.set(vectors, 2 + norms.length);
  return toLittleEndianBytes(packed);
}

/** Reverses {@link packVectors}. */
export function unpackVectors(bytes: Uint8Array): { norms: Float64Array; vectors: Float64Array; dims: number } {
  const packed = fromLittleEndianBytes(bytes);
  const count = packed[0] ?? 0;
  const dims = packed[1] ?? 0;
  // As nativeVectors checks a native row: the store writes at least one dimension and never a negative
  // count. A count of -1 with -1 dimensions passed the length check (2 - 1 + 1), read as no vectors at
  // all (the item left unranked), and 0 dimensions blamed the index configuration.
  if (
    !Number.isInteger(count) ||
    !Number.isInteger(dims) ||
    count < 0 ||
    dims < 1 ||
    packed.length !== 2 + count + count * dims
  ) {
    throw new SerializationError("stored vectors are malformed");
  }
  return {
    norms: packed.subarray(2, 2 + count),
    vectors: packed.subarray(2 + count),
    dims,
  };
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function toLittleEndianBytes(numbers: Float64Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(numbers.buffer, numbers.byteOffset, numbers.byteLength);
  const bytes = new Uint8Array(numbers.length * 8);
  const view = new DataView(bytes.buffer);
  numbers.forEach((n, i) => view.setFloat64(i * 8, n, true));
  return bytes;
}

function fromLittleEndianBytes(bytes: Uint8Array): Float64Array {
  if (bytes.byteLength % 8 !== 0) throw new SerializationError("stored vectors are malformed");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const numbers = new Float64Array(bytes.byteLength / 8);
  for (let i = 0; i < numbers.length; i++) numbers[i] = view.getFloat64(i * 8, true);
  return numbers;
}

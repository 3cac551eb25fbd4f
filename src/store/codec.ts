/**
 * How `IndexedDBStore` rows turn back into values: row ids, the row
 * references a serializer binds values to (part of the stored format), and
 * decoding, after the transaction, of item values and vector sets.
 */
import type { Item, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { loadForRow, type RowRef } from "../serde/protocol.js";
import { DecryptionError, IndexedDBCheckpointError, SerializationError } from "../core/errors.js";
import type { ItemVectors } from "./query.js";
import { isUint8Array } from "../core/bytes.js";
import { isStringList } from "../core/guards.js";
import { unpackVectors, type ItemRow, type TypedBytes, type VectorRow } from "./schema.js";

/** A collision-free string id of an item. */
export function itemId(namespace: readonly string[], key: string): string {
  return JSON.stringify([namespace, key]);
}

/**
 * A collision-free string id of a namespace. Not a join: the store never
 * writes a label holding a NUL, but a namespace planted in the database can
 * hold one, and must not share an id (in the search cache) with the
 * namespace its labels would join to.
 */
export function namespaceId(namespace: readonly string[]): string {
  return JSON.stringify(namespace);
}

/**
 * True for a namespace of the shape every row the store writes has: a
 * non-empty list of strings. The `namespaces` store is keyed by the
 * namespace itself, so a row planted or altered outside the store may hold
 * any key there (a number, a string, `[1, "x"]`): read as a namespace, one
 * such row made every search of the whole store and every listNamespaces
 * throw a TypeError, or listed a namespace no put can name.
 */
export function isNamespace(value: unknown): value is string[] {
  return isStringList(value) && value.length > 0;
}

/**
 * The row reference a serializer binds an item's value to. Part of the
 * stored format: an encrypting serializer authenticates it with each value,
 * so changing it would make every encrypted value unreadable.
 */
export function valueRow(namespace: readonly string[], key: string): RowRef {
  return ["store", "item", ...namespace, key];
}

/** The row reference a serializer binds an item's vectors to (stored format too). */
export function vectorRow(namespace: readonly string[], key: string): RowRef {
  return ["store", "vectors", ...namespace, key];
}

/**
 * A row's timestamp as a `Date`: the row's own, or (for a row altered
 * outside the store, whose timestamps are stored in clear) what `new Date`
 * makes of the stored value, so callers always get a Date.
 */
export function timestampOf(stored: Date): Date {
  if (stored instanceof Date) return stored;
  // A bigint (structured clone keeps one) is a TypeError for new Date: its number instead.
  const primitive = typeof stored === "object" && stored !== null ? (stored as object).valueOf() : stored;
  return new Date(typeof primitive === "bigint" ? Number(primitive) : (primitive as string));
}

/** The `Item` of a row, around an already decoded value. */
export function itemOf(row: ItemRow, value: unknown): Item {
  return {
    value: value as Record<string, unknown>,
    key: row.key,
    namespace: row.namespace,
    createdAt: timestampOf(row.createdAt),
    updatedAt: timestampOf(row.updatedAt),
  };
}

/** An item row as the `Item` callers get (decoded when a serializer wrote it). */
export async function toItem(row: ItemRow, serde: SerializerProtocol | undefined): Promise<Item> {
  return itemOf(row, await decodeValue(row, serde));
}

/*
 * Rows are decoded by the database's format record, never by their shape:
 * `openStore` refuses a database whose record (`values: "serde"` or
 * `"native"`) does not match the store, so `serde` is set exactly when the
 * record says every value is the serializer's output. A row of the other
 * shape was planted or altered outside the store (with an encrypting
 * serializer: a plaintext value an attacker wants read as the user's) and
 * is refused, never returned.
 */

/** The error for a row without serializer output in a `"serde"` database. */
function plantedRow(what: string, row: { namespace: string[]; key: string }): DecryptionError {
  return new DecryptionError(
    `Store ${what} "${row.key}" in namespace [${row.namespace.join(", ")}] is stored in clear, but this database's values are serialized (its format record says "serde"): the row was written or altered outside the store. Delete it (store.delete) or restore the database.`,
  );
}

/** An item row's value: the serializer's output decoded in a `"serde"` database, the row's own in a `"native"` one. */
export function decodeValue(row: ItemRow, serde: SerializerProtocol | undefined): unknown {
  if (row.typed) return decode(serde, row.typed, valueRow(row.namespace, row.key), row);
  if (serde) throw plantedRow("item", row);
  return row.value;
}

/** A vector row as scoring needs it (decoded in a `"serde"` database). */
export async function toVectors(row: VectorRow, serde: SerializerProtocol | undefined): Promise<ItemVectors> {
  if (!row.typed) {
    if (serde) throw plantedRow("vectors of item", row);
    return nativeVectors(row);
  }
  const bytes = await decode(serde, row.typed, vectorRow(row.namespace, row.key), row);
  // Any byte view will do (a serializer may hand back a Node Buffer).
  if (!ArrayBuffer.isView(bytes)) {
    throw new SerializationError(`The stored vectors of item "${row.key}" did not decode to bytes.`);
  }
  try {
    return unpackVectors(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch (error) {
    throw new SerializationError(`The stored vectors of item "${row.key}" are malformed.`, { cause: error });
  }
}

/**
 * A native vector row's numbers, checked as `unpackVectors` checks packed
 * ones: the store writes two `Float64Array`s, `vectors` holding `dims`
 * numbers per norm. A row altered outside the store may hold anything
 * there, which scoring would turn into a TypeError, a NaN score or a wrong
 * dimensions message.
 */
function nativeVectors(row: VectorRow): ItemVectors {
  const { vectors, norms, dims } = row as { vectors: unknown; norms: unknown; dims: unknown };
  if (
    !(vectors instanceof Float64Array) ||
    !(norms instanceof Float64Array) ||
    !Number.isSafeInteger(dims) ||
    (dims as number) < 1 ||
    vectors.length !== norms.length * (dims as number)
  ) {
    throw new SerializationError(
      `The stored vectors of item "${row.key}" in namespace [${row.namespace.join(", ")}] are malformed: the row was altered outside the store. Put the item again to re-embed it, or delete it.`,
    );
  }
  return { vectors, norms, dims: dims as number };
}

/**
 * Deserializes a value read from `rowRef`, checking its binding when the
 * serializer can; failures other than the package's own become
 * `SerializationError`.
 */
async function decode(
  serde: SerializerProtocol | undefined,
  typed: TypedBytes,
  rowRef: RowRef,
  row: { namespace: string[]; key: string },
): Promise<unknown> {
  if (!serde) {
    throw new SerializationError(`Store item "${row.key}" was written by a serializer, but this store has none.`);
  }
  // A row altered outside the store may hold anything here: say so, not what the serializer trips on.
  const [type, data] = Array.isArray(typed) ? typed : [];
  if (typeof type !== "string" || !(isUint8Array(data) || typeof data === "string")) {
    throw new SerializationError(
      `Store item "${row.key}" in namespace [${row.namespace.join(", ")}]: its stored value is not a [type, bytes] pair; the row was altered outside the store.`,
    );
  }
  try {
    return await loadForRow(serde, type, data, rowRef);
  } catch (error) {
    // A SerializationError from the serializer does not say which item it was reading.
    if (error instanceof IndexedDBCheckpointError && !(error instanceof SerializationError)) throw error;
    throw new SerializationError(
      `Could not decode store item "${row.key}" in namespace [${row.namespace.join(", ")}] (type "${type}"): ${(error as Error)?.message ?? String(error)}`,
      { cause: error },
    );
  }
}

/**
 * The saver's read plans: sequences of requests issued inside one read
 * transaction (opened by idb/database.ts), returning rows still serialized.
 */
import type { KeyRanges, Tx } from "../idb/database.js";
import { SerializationError } from "../core/errors.js";
import { prefixBounds } from "./keys.js";
import type { RawTuple } from "../rows/codec.js";
import type { SaverSchema } from "./schema.js";
import {
  heldInline,
  inlineBlob,
  isAbsent,
  type BlobRow,
  type CheckpointRow,
  type ValueKey,
  type Version,
  type WriteRow,
} from "../rows/shapes.js";

/** A transaction that can at least read the saver's stores. */
export type ReadTx = Tx<SaverSchema, "readonly"> | Tx<SaverSchema, "readwrite">;

/** The newest checkpoint row of a namespace: one step of a reverse cursor. */
export async function latestRow(
  tx: ReadTx,
  ranges: KeyRanges,
  threadId: string,
  checkpointNs: string,
): Promise<CheckpointRow | undefined> {
  const bounds = prefixBounds(threadId, checkpointNs);
  const cursor = await tx.objectStore("checkpoints").openCursor(ranges.bound(bounds.lower, bounds.upper), "prev");
  return cursor?.value;
}

/**
 * Blob reads already issued in one transaction, by key: consecutive
 * checkpoints share most channel versions, so a page of them asks for each
 * blob once.
 */
export type BlobReads = Map<string, Promise<BlobRow | undefined>>;

/** The key of a blob read in a {@link BlobReads} map. */
export function blobKey(t: string, ns: string, channel: string, version: Version): string {
  // String(): JSON would write Infinity and -Infinity (distinct keys in IndexedDB) both as null.
  return JSON.stringify([t, ns, channel, typeof version, String(version)]);
}

/**
 * The value of `channel` at `version`, as a blob row: from `blobs` (row
 * format 1, and large values) or from the format 2 row that holds it
 * inline, found by the `by_value` index; both asked at once, one round trip.
 */
export function readValue(
  tx: ReadTx,
  t: string,
  ns: string,
  channel: string,
  version: Version,
): Promise<BlobRow | undefined> {
  const key: ValueKey = [t, ns, channel, version];
  // Every row the index names, not the first: an edited row listing this key must not hide its holder.
  const holders = tx.objectStore("checkpoints").index("by_value").getAll(key);
  return Promise.all([tx.objectStore("blobs").get(key), holders]).then(([blob, rows]) => {
    if (blob) return blob;
    // A holder of this thread that cannot hold it (fields of another shape) is an error, not a missing value.
    for (const row of rows) if (row.thread_id === t && row.checkpoint_ns === ns) assertRowFields(row);
    return heldInline(rows, t, ns, channel, version);
  });
}

/** What is wrong with a row holding its inline values (row format 2) in a form no saver writes. */
export const INLINE_SHAPE = "holds its inline values in a shape no version of the saver writes";

/**
 * A row's clear channel versions are an object, its parent link (if any) an
 * id, and its values held inline (row format 2), if any, a map by channel.
 * A row edited outside the saver may hold anything there: a clear error
 * instead of a TypeError in whatever reads them first, a parent config whose
 * id is not a string, or a value read as missing (and a delta walk going on
 * to an older seed) when the map is of another type.
 */
export function assertRowFields(row: CheckpointRow): void {
  const inline: unknown = row.inline;
  const parent: unknown = row.parent_checkpoint_id;
  const problem =
    typeof row.thread_id !== "string" || typeof row.checkpoint_ns !== "string" || typeof row.checkpoint_id !== "string"
      ? `is stored under the key ${JSON.stringify([row.thread_id, row.checkpoint_ns, row.checkpoint_id])}, not of strings`
      : typeof row.channel_versions !== "object" || row.channel_versions === null
        ? "has no channel versions"
        : !Object.values(row.channel_versions).every((version) => isVersionKey(version))
          ? "has a channel version that is not a valid key"
          : parent !== undefined && typeof parent !== "string"
            ? "has a parent link that is not a checkpoint id"
            : inline !== undefined && (typeof inline !== "object" || inline === null || Array.isArray(inline))
              ? INLINE_SHAPE
              : undefined;
  if (problem !== undefined) throw alteredRow(row, problem);
}

/**
 * Whether `version` may be part of a key, as the blob and `by_value` reads
 * of that version need: IndexedDB's own rule (a number but NaN, a string, a
 * valid date, bytes, or a list of those without a cycle or a hole).
 * LangGraph's versions are strings and numbers; anything else in a row's
 * clear versions (only an edit puts it there: null, a boolean, a plain
 * object, a Map, a RegExp, a list holding one) would fail the read with
 * IndexedDB's `DataError`, naming no row, abort the read transaction, and
 * leave the read's other requests rejecting unheard. A valid key of another
 * type (a list, a date, bytes) is read, and caught where the row's versions
 * are checked against its checkpoint.
 */
function isVersionKey(version: unknown, seen: unknown[] = []): boolean {
  return typeof version === "string" || version instanceof ArrayBuffer || ArrayBuffer.isView(version)
    ? true
    : Array.isArray(version)
      ? !seen.includes(version) && Array.from(version).every((part) => isVersionKey(part, [...seen, version]))
      : (typeof version === "number" || version instanceof Date) && +version === +version;
}

/** The error for a checkpoint row edited outside the saver: names the row and says what is wrong (`problem`). */
export function alteredRow(row: CheckpointRow, problem: string): SerializationError {
  return new SerializationError(
    `Checkpoint ${String(row.checkpoint_id)} of thread "${String(row.thread_id)}" ${problem}: the row was altered outside the saver.`,
  );
}

/** The blobs and writes of one checkpoint row. */
export async function readDetails(
  tx: ReadTx,
  ranges: KeyRanges,
  row: CheckpointRow,
  blobReads: BlobReads = new Map(),
  writesRead?: Promise<WriteRow[]>,
): Promise<RawTuple> {
  try {
    assertRowFields(row);
  } catch (error) {
    // A list page's writes read for this row would reject unheard when the transaction aborts.
    writesRead?.catch(() => undefined);
    throw error;
  }
  const { thread_id: t, checkpoint_ns: ns, checkpoint_id: id } = row;
  const bounds = prefixBounds(t, ns, id);
  const readBlob = (channel: string, version: Version) => {
    const key = blobKey(t, ns, channel, version);
    let read = blobReads.get(key);
    if (read) return read;
    const own = inlineBlob(row, channel, version);
    // Schema version 5: a version the row lists as having no value is not asked for. The list speaks for
    // this row alone, so its answer is not kept for the page's other rows: a list edited outside the saver
    // would otherwise hide a stored value from every row sharing the version.
    if (!own && isAbsent(row, channel, version)) return Promise.resolve(undefined);
    read = own ? Promise.resolve(own) : readValue(tx, t, ns, channel, version);
    blobReads.set(key, read);
    return read;
  };
  const [blobs, writes] = await Promise.all([
    Promise.all(Object.entries(row.channel_versions).map(([channel, version]) => readBlob(channel, version))),
    writesRead ?? tx.objectStore("writes").getAll(ranges.bound(bounds.lower, bounds.upper)),
  ]);
  return { row, blobs, writes };
}

/** Every row of a thread in one store (all namespaces). */
export function threadRows<S extends "checkpoints" | "blobs" | "writes">(
  tx: ReadTx,
  ranges: KeyRanges,
  store: S,
  threadId: string,
): Promise<SaverSchema[S]["value"][]> {
  const bounds = prefixBounds(threadId);
  return tx.objectStore(store).getAll(ranges.bound(bounds.lower, bounds.upper)) as Promise<SaverSchema[S]["value"][]>;
}

/**
 * Turning stored rows back into LangGraph values (and naming the rows each
 * value is bound to). Runs after a read transaction has completed: decoding
 * and decrypting are async and must never happen inside one.
 */
import {
  compareWritesSortKeys,
  writesSortKey,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { dumpForRow, loadForRow, type RowRef } from "../serde/protocol.js";
import { DecryptionError, IndexedDBCheckpointError, SerializationError } from "../core/errors.js";
import { errorMessage } from "../core/guards.js";
import type { BlobRow, CheckpointRow, TypedBytes, Version, WriteRow } from "./shapes.js";

/** Rows one read transaction gathered for one checkpoint, still serialized. */
export interface RawTuple {
  row: CheckpointRow;
  /** The blob of each channel in `row.channel_versions` (same order), if stored. */
  blobs: (BlobRow | undefined)[];
  writes: WriteRow[];
}

/**
 * The row names bound into each value (associated data for encrypting
 * serializers). Binding version 2 (`checkpoint.2`, `write.2`) also names the
 * clear fields that steer reads: a checkpoint's parent link, a write's
 * channel and task path. Version 3 (`checkpoint.3`) adds the row's `chain`
 * (saver/chain.ts). Rows written before version 2 carry version 1 (the `legacy`
 * refs) and still read: see {@link decode}.
 */
export const rowRef = {
  checkpoint: (t: string, ns: string, id: string, parentId: string | undefined, chain?: string): RowRef => {
    const tail = parentId === undefined ? [id] : [id, parentId];
    return chain === undefined ? ["checkpoint.2", t, ns, ...tail] : ["checkpoint.3", t, ns, ...tail, chain];
  },
  metadata: (t: string, ns: string, id: string): RowRef => ["metadata", t, ns, id],
  blob: (t: string, ns: string, channel: string, version: Version): RowRef => ["blob", t, ns, channel, version],
  write: (
    t: string,
    ns: string,
    id: string,
    taskId: string,
    idx: number,
    channel: string,
    taskPath: string,
  ): RowRef => ["write.2", t, ns, id, taskId, idx, channel, taskPath],
};

/** Binding version 1 refs: what rows written before version 2 are bound to. */
export const legacyRowRef = {
  checkpoint: (t: string, ns: string, id: string): RowRef => ["checkpoint", t, ns, id],
  write: (t: string, ns: string, id: string, taskId: string, idx: number): RowRef => ["write", t, ns, id, taskId, idx],
};

/**
 * The ref of a stored checkpoint row (version 3 if it has a chain, else 2),
 * and the version 1 ref it may be sealed under instead. A row with a chain
 * has no such fallback: removing or adding a chain cannot make a row read.
 */
export function checkpointRefs(row: CheckpointRow): [RowRef, RowRef?] {
  const { thread_id: t, checkpoint_ns: ns, checkpoint_id: id, chain } = row;
  const ref = rowRef.checkpoint(t, ns, id, row.parent_checkpoint_id, chain);
  return chain === undefined ? [ref, legacyRowRef.checkpoint(t, ns, id)] : [ref];
}

/** The version 2 ref of a stored write row, and its version 1 ref. */
export function writeRefs(write: WriteRow): [RowRef, RowRef] {
  const { thread_id: t, checkpoint_ns: ns, checkpoint_id: id, task_id: task, idx } = write;
  return [
    rowRef.write(t, ns, id, task, idx, write.channel, write.task_path ?? ""),
    legacyRowRef.write(t, ns, id, task, idx),
  ];
}

/** Runs a serializer call, turning foreign failures into `SerializationError`. */
export async function serializing<T>(what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof IndexedDBCheckpointError) throw error;
    throw new SerializationError(`Could not ${what}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
  }
}

/** Serializes `value` for the row `row`. */
export function encode(serde: SerializerProtocol, what: string, value: unknown, row: RowRef): Promise<TypedBytes> {
  return serializing(what, () => dumpForRow(serde, value, row));
}

/**
 * Decodes a value stored in the row `row`. With `legacy`, a value that does
 * not open under `row` is tried under that older binding (rows written
 * before binding version 2); if neither opens, the first failure stands.
 * Only a value sealed under `legacy` opens there, so an altered clear field
 * cannot make a version 2 row read as version 1.
 */
export function decode(
  serde: SerializerProtocol,
  what: string,
  stored: TypedBytes,
  row: RowRef,
  legacy?: RowRef,
): Promise<unknown> {
  // A row altered outside the saver may hold anything here, even null.
  if (!Array.isArray(stored) || typeof stored[0] !== "string") {
    return Promise.reject(
      new SerializationError(
        `Could not ${what}: the stored value of row ${JSON.stringify(row)} is not a [type, bytes] pair; ${ALTERED}`,
      ),
    );
  }
  const [type, data] = stored;
  return serializing(what, async () => {
    try {
      return await loadForRow(serde, type, data, row);
    } catch (error) {
      // The serializer's own message does not say which row it was reading.
      if (error instanceof SerializationError || !(error instanceof IndexedDBCheckpointError)) {
        throw new SerializationError(`Could not ${what} from row ${JSON.stringify(row)}: ${errorMessage(error)}`, {
          cause: error,
        });
      }
      if (legacy === undefined || !(error instanceof DecryptionError)) throw error;
      try {
        return await loadForRow(serde, type, data, legacy);
      } catch {
        throw error;
      }
    }
  });
}

/** What the errors about a row edited outside the saver end with. */
const ALTERED = "the row was altered outside the saver.";

/**
 * A value decoded from the row `ref` that every saver writes as an object
 * (metadata, a checkpoint): a row edited outside the saver may decode to
 * anything (null, a string, a list), which would reach a `list` filter,
 * LangGraph or a version check as such (a TypeError reading `null.source`):
 * a `SerializationError` naming the row instead.
 */
function asObject<T>(value: unknown, what: string, ref: RowRef): T {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as T;
  throw new SerializationError(`Could not ${what} from row ${JSON.stringify(ref)}: not an object; ${ALTERED}`);
}

/** A checkpoint row's metadata. */
export async function decodeMetadata(serde: SerializerProtocol, row: CheckpointRow): Promise<CheckpointMetadata> {
  const ref = rowRef.metadata(row.thread_id, row.checkpoint_ns, row.checkpoint_id);
  return asObject(await decode(serde, "read checkpoint metadata", row.metadata, ref), "read checkpoint metadata", ref);
}

/** A blob's channel value. */
export function decodeBlob(serde: SerializerProtocol, blob: BlobRow): Promise<unknown> {
  return decode(
    serde,
    `read channel "${blob.channel}"`,
    blob.value,
    rowRef.blob(blob.thread_id, blob.checkpoint_ns, blob.channel, blob.version),
  );
}

/** A write row as LangGraph's pending write tuple. */
export async function decodeWrite(serde: SerializerProtocol, write: WriteRow): Promise<CheckpointPendingWrite> {
  const value = await decode(serde, `read a write to "${String(write.channel)}"`, write.value, ...writeRefs(write));
  assertWriteFields(write);
  return [write.task_id, write.channel, value];
}

/** The checkpoint stored in a row, without channel values (an object: see {@link asObject}). */
export async function decodeCheckpoint(
  serde: SerializerProtocol,
  row: CheckpointRow,
): Promise<Omit<Checkpoint, "channel_values">> {
  const refs = checkpointRefs(row);
  return asObject(await decode(serde, "read a checkpoint", row.checkpoint, ...refs), "read a checkpoint", refs[0]);
}

/**
 * A stored write's task id, task path and channel are strings in every row
 * a saver writes; one edited outside the saver (a number, a list) would
 * reach LangGraph as a pending write of a task or channel that is not a
 * name: a `SerializationError` naming the row instead. Checked after the
 * value is decoded, so an encrypted row fails closed first (its binding
 * names all three).
 */
function assertWriteFields(write: WriteRow): void {
  if ([write.task_path ?? "", write.task_id, write.channel].some((field) => typeof field !== "string")) {
    throw new SerializationError(
      `Could not read the write ${JSON.stringify(writeRefs(write)[1])}: a task id, task path or channel that is not a string; ${ALTERED}`,
    );
  }
}

/**
 * The `writesSortKey` of a stored write. A task id or task path that is not
 * a string (only an edit puts one there) sorts as its string form: LangGraph's
 * comparator would throw a TypeError naming nothing, and decoding the write
 * reports it ({@link decodeWrite}).
 */
export function writeSortKey(write: WriteRow) {
  return writesSortKey(String(write.task_path ?? ""), String(write.task_id), write.idx);
}

/** Writes of one checkpoint in `writesSortKey` order: `(task_path, task_id, idx)`. */
export function sortWrites(writes: WriteRow[]): WriteRow[] {
  return writes.sort((a, b) => compareWritesSortKeys(writeSortKey(a), writeSortKey(b)));
}

/**
 * The row's plain copy of the channel versions (used to fetch blobs) must
 * match the serialized checkpoint's; a mismatch means the row was altered.
 * Under an encrypting serializer (`authenticated`) the checkpoint is the
 * authenticated copy, so a mismatch is a `DecryptionError`.
 */
export function assertVersionsMatch(
  row: CheckpointRow,
  checkpoint: Pick<Checkpoint, "channel_versions">,
  authenticated = false,
): void {
  if (!sameVersions(row.channel_versions, checkpoint.channel_versions ?? {})) {
    const message = `Checkpoint ${row.checkpoint_id} of thread "${row.thread_id}" is inconsistent: its channel versions do not match its row. The row was altered outside the saver.`;
    throw authenticated ? new DecryptionError(message) : new SerializationError(message);
  }
}

/**
 * True when a row's clear channel versions are exactly `stored` (same
 * channels, same values and types). `plain` comes from a row anyone with
 * the database files can edit, so it may be anything: not an object is false.
 */
export function sameVersions(plain: unknown, stored: Record<string, Version>): boolean {
  if (typeof plain !== "object" || plain === null) return false;
  const versions = plain as Record<string, unknown>;
  const keys = Object.keys(stored);
  return keys.length === Object.keys(versions).length && keys.every((key) => versions[key] === stored[key]);
}

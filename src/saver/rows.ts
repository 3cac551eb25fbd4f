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
import { IndexedDBCheckpointError, SerializationError } from "../core/errors.js";
import type { BlobRow, CheckpointRow, TypedBytes, Version, WriteRow } from "./schema.js";

/** Rows one read transaction gathered for one checkpoint, still serialized. */
export interface RawTuple {
  row: CheckpointRow;
  /** The blob of each channel in `row.channel_versions` (same order), if stored. */
  blobs: (BlobRow | undefined)[];
  writes: WriteRow[];
}

/** The row names bound into each value (associated data for encrypting serializers). */
export const rowRef = {
  checkpoint: (t: string, ns: string, id: string): RowRef => ["checkpoint", t, ns, id],
  metadata: (t: string, ns: string, id: string): RowRef => ["metadata", t, ns, id],
  blob: (t: string, ns: string, channel: string, version: Version): RowRef => ["blob", t, ns, channel, version],
  write: (t: string, ns: string, id: string, taskId: string, idx: number): RowRef => ["write", t, ns, id, taskId, idx],
};

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

/** Decodes a value stored in the row `row`. */
export function decode(serde: SerializerProtocol, what: string, stored: TypedBytes, row: RowRef): Promise<unknown> {
  // A row altered outside the saver may hold anything here, even null.
  if (!Array.isArray(stored) || typeof stored[0] !== "string") {
    return Promise.reject(
      new SerializationError(
        `Could not ${what}: the stored value of row ${JSON.stringify(row)} is not a [type, bytes] pair; the row was altered outside the saver.`,
      ),
    );
  }
  const [type, data] = stored;
  return serializing(what, () => loadForRow(serde, type, data, row));
}

/** A checkpoint row's metadata. */
export function decodeMetadata(serde: SerializerProtocol, row: CheckpointRow): Promise<CheckpointMetadata> {
  return decode(
    serde,
    "read checkpoint metadata",
    row.metadata,
    rowRef.metadata(row.thread_id, row.checkpoint_ns, row.checkpoint_id),
  ) as Promise<CheckpointMetadata>;
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
  const value = await decode(
    serde,
    `read a write to "${write.channel}"`,
    write.value,
    rowRef.write(write.thread_id, write.checkpoint_ns, write.checkpoint_id, write.task_id, write.idx),
  );
  return [write.task_id, write.channel, value];
}

/** The checkpoint stored in a row, without channel values. */
export function decodeCheckpoint(
  serde: SerializerProtocol,
  row: CheckpointRow,
): Promise<Omit<Checkpoint, "channel_values">> {
  return decode(
    serde,
    "read a checkpoint",
    row.checkpoint,
    rowRef.checkpoint(row.thread_id, row.checkpoint_ns, row.checkpoint_id),
  ) as Promise<Omit<Checkpoint, "channel_values">>;
}

/** The `writesSortKey` of a stored write. */
export function writeSortKey(write: WriteRow) {
  return writesSortKey(write.task_path ?? "", write.task_id, write.idx);
}

/** Writes of one checkpoint in `writesSortKey` order: `(task_path, task_id, idx)`. */
export function sortWrites(writes: WriteRow[]): WriteRow[] {
  return writes.sort((a, b) => compareWritesSortKeys(writeSortKey(a), writeSortKey(b)));
}

/**
 * The row's plain copy of the channel versions (used to fetch blobs) must
 * match the serialized checkpoint's; a mismatch means the row was altered.
 */
export function assertVersionsMatch(row: CheckpointRow, checkpoint: Pick<Checkpoint, "channel_versions">): void {
  const stored = checkpoint.channel_versions ?? {};
  const plain = row.channel_versions;
  const keys = Object.keys(stored);
  if (keys.length !== Object.keys(plain).length || keys.some((key) => plain[key] !== stored[key])) {
    throw new SerializationError(
      `Checkpoint ${row.checkpoint_id} of thread "${row.thread_id}" is inconsistent: its channel versions do not match its row. The row was altered outside the saver.`,
    );
  }
}

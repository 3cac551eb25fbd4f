/**
 * Row helpers of the answers from memory (fresh-cache.ts): copies of kept
 * rows, the `putWrites` merge rule, and what a kept checkpoint weighs.
 */
import type { RawTuple } from "../rows/codec.js";
import type { BlobRow, CheckpointRow, TypedBytes, WriteRow } from "../rows/shapes.js";

// Copies of the bytes: the serializer that made them may reuse its buffer,
// and a decoder may write into the bytes it reads.
const copyBytes = ([type, data]: TypedBytes): TypedBytes => [type, data.slice()];

/** `row` with its own copies of the checkpoint and metadata bytes. */
export const copyRow = (row: CheckpointRow): CheckpointRow => ({
  ...row,
  checkpoint: copyBytes(row.checkpoint),
  metadata: copyBytes(row.metadata),
});

/** `blob` with its own copy of the bytes. */
export const copyBlob = (blob: BlobRow): BlobRow => ({ ...blob, value: copyBytes(blob.value) });

/** `write` with its own copy of the bytes. */
export const copyWrite = (write: WriteRow): WriteRow => ({ ...write, value: copyBytes(write.value) });

/** A checkpoint's rows with bytes of their own: what a caller may decode (or a decoder scribble on). */
export const copyRaw = (raw: RawTuple): RawTuple => ({
  row: copyRow(raw.row),
  blobs: raw.blobs.map((blob) => blob && copyBlob(blob)),
  writes: raw.writes.map(copyWrite),
});

/** The `putWrites` rules: a special write (negative idx) replaces, a regular one is kept only if new. */
export function mergeWrites(kept: WriteRow[], rows: WriteRow[]): WriteRow[] {
  const merged = [...kept];
  for (const row of rows) {
    const at = merged.findIndex((w) => w.task_id === row.task_id && w.idx === row.idx);
    if (at < 0) merged.push(copyWrite(row));
    else if (row.idx < 0) merged[at] = copyWrite(row);
  }
  return merged;
}

/**
 * The stored bytes of one checkpoint's rows. A value shared with a
 * neighbour (a channel the next checkpoint did not change) counts in both:
 * the bound is conservative.
 */
export function sizeOf(raw: RawTuple): number {
  let bytes = raw.row.checkpoint[1].byteLength + raw.row.metadata[1].byteLength;
  for (const blob of raw.blobs) bytes += blob?.value[1].byteLength ?? 0;
  for (const write of raw.writes) bytes += write.value[1].byteLength;
  return bytes;
}

/**
 * Row format 2's values held inline, listed as the blob rows they stand for:
 * apart from shapes.ts so only the paths that need them (deletes, copy,
 * rekey, sync push, list pages) load them, not every put.
 */
import { inlineBlob, type BlobRow, type CheckpointRow } from "./shapes.js";

/** Every value `row` holds inline, as blob rows (what export, sync and deletes see). */
export function inlineBlobs(row: CheckpointRow): BlobRow[] {
  // A row edited outside the saver may hold anything here: a row without
  // channel versions holds no value at any (reading it says what is wrong).
  const versions: unknown = row.channel_versions;
  if (typeof versions !== "object" || versions === null || typeof row.inline !== "object" || row.inline === null) {
    return [];
  }
  return Object.keys(row.inline).flatMap((channel) =>
    Object.hasOwn(versions, channel) ? (inlineBlob(row, channel, row.channel_versions[channel]!) ?? []) : [],
  );
}

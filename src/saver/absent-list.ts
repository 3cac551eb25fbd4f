/**
 * What a `put` lists as its row's versions without a stored value
 * (`absent_keys`, schema version 5); saver/absent.ts keeps the lists true
 * when a value is stored later.
 */
import type { ChannelVersions } from "@langchain/langgraph-checkpoint";
import type { PutInput } from "../rows/put-input.js";
import { isAbsent, type BlobRow, type CheckpointRow, type ValueKey } from "../rows/shapes.js";

/**
 * Sets `row.absent_keys` (schema version 5): the versions of the row's
 * channels known to have no stored value. Those `versions` (the put's
 * `newVersions`) introduce without a value in the checkpoint, and those it
 * carries over unchanged that `parent` lists (the row as this saver last put
 * or read it, or as read in the put's transaction); never one of `stored`.
 * Listing too few is always right (a read then asks, as for rows without the
 * list); listing a version that has a value is not, hence the check of the
 * parent row in the transaction.
 */
export function listAbsent(
  row: CheckpointRow,
  input: PutInput,
  versions: ChannelVersions,
  stored: BlobRow[],
  parent: CheckpointRow | undefined,
): void {
  const keys: ValueKey[] = [];
  for (const [channel, version] of Object.entries(row.channel_versions)) {
    if (stored.some((blob) => blob.channel === channel && blob.version === version)) continue;
    const absent = Object.hasOwn(versions, channel)
      ? versions[channel] === version && !Object.hasOwn(input.values, channel)
      : parent !== undefined && isAbsent(parent, channel, version);
    if (absent) keys.push([row.thread_id, row.checkpoint_ns, channel, version]);
  }
  row.absent_keys = keys;
  if (keys.length === 0) delete row.absent_keys;
}

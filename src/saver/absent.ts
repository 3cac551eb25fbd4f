/**
 * Keeping rows' `absent_keys` (schema version 5) true: a value stored at a
 * channel version some checkpoint rows list as having none (prune's delta
 * snapshot, a blob sync pulls) takes that version off each of them, in the
 * transaction that stores the value, found through the `by_absent` index.
 * A put lists a version only when it stores no value for it, so only these
 * later stores can make a listed version have one.
 */
import { issue, storePut } from "../idb/requests.js";
import { absentKeysOf, type CheckpointRow, type ValueKey } from "../rows/shapes.js";
import type { WriteTx } from "./tombstones.js";
import { blobKey } from "./reads.js";
import { checkpointMapKey } from "./keys.js";

/**
 * Takes each of `keys` off every checkpoint row that lists it, in `tx`;
 * returns the rows changed (as they are now), whose readers must read
 * them again.
 */
export async function takeOffAbsent(tx: WriteTx, keys: ValueKey[]): Promise<CheckpointRow[]> {
  if (keys.length === 0) return [];
  const checkpoints = tx.objectStore("checkpoints");
  const index = checkpoints.index("by_absent");
  const found = await Promise.all(keys.map((key) => index.getAll(key)));
  // One put per row, however many of its keys go.
  const rows = new Map<string, CheckpointRow>();
  for (const row of found.flat()) {
    rows.set(checkpointMapKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id), row);
  }
  const gone = new Set(keys.map((key) => blobKey(...key)));
  const changed: CheckpointRow[] = [];
  for (const row of rows.values()) {
    // An empty list stays (no index entry): the row reads every version, as one without the field.
    const updated: CheckpointRow = {
      ...row,
      absent_keys: absentKeysOf(row).filter((key) => !gone.has(blobKey(...key))),
    };
    issue(storePut(checkpoints, updated));
    changed.push(updated);
  }
  return changed;
}

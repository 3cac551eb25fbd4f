/**
 * Checks of the clear fields of checkpoint rows against their authenticated
 * copies, under an encrypting serializer. A row keeps its parent link, run
 * id and channel versions in the clear (they are keys and index keys, read
 * inside transactions); anyone who can edit the profile's files can change
 * them. The parent link is part of the checkpoint's binding (version 2, see
 * rows/codec.ts), the run id and versions are inside the sealed metadata and
 * checkpoint: wherever one of them steers a read or a delete, it is checked
 * here (the walks up the parent chain: verify-links.ts), and a mismatch is a
 * `DecryptionError`. Without encryption nothing is
 * authenticated and these checks are skipped (they would cost and prove
 * nothing).
 */
import type { Checkpoint, CheckpointMetadata, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { DecryptionError } from "../core/errors.js";
import { isRowBound } from "../serde/protocol.js";
import { assertVersionsMatch } from "../rows/codec.js";
import type { CheckpointRow } from "../rows/shapes.js";

/** True when `serde` authenticates rows, so their clear fields can be checked. */
export function authenticates(serde: SerializerProtocol): boolean {
  return isRowBound(serde);
}

/**
 * The row's clear run id and channel versions must be the decoded
 * metadata's and checkpoint's (its parent link was checked by decoding the
 * checkpoint under binding version 2).
 */
export function verifyCheckpointFields(
  row: CheckpointRow,
  checkpoint: Pick<Checkpoint, "channel_versions">,
  metadata: CheckpointMetadata,
  authenticated: boolean,
): void {
  assertVersionsMatch(row, checkpoint, authenticated);
  if (authenticated) verifyRunId(row, metadata);
}

/** The row's clear `run_id` (the `deleteForRuns` index) must be its sealed `metadata.run_id`. */
export function verifyRunId(row: CheckpointRow, metadata: CheckpointMetadata): void {
  const sealed: unknown = (metadata as { run_id?: unknown }).run_id;
  const expected = typeof sealed === "string" ? sealed : undefined;
  if (row.run_id !== expected) {
    throw new DecryptionError(
      `Checkpoint ${row.checkpoint_id} of thread "${row.thread_id}" (namespace "${row.checkpoint_ns}") has a run id that does not match its encrypted metadata: the row was altered outside the saver.`,
    );
  }
}

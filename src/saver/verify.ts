/**
 * Checks of the clear fields of checkpoint rows against their authenticated
 * copies, under an encrypting serializer. A row keeps its parent link, run
 * id and channel versions in the clear (they are keys and index keys, read
 * inside transactions); anyone who can edit the profile's files can change
 * them. The parent link is part of the checkpoint's binding (version 2, see
 * rows.ts), the run id and versions are inside the sealed metadata and
 * checkpoint: wherever one of them steers a read or a delete, it is checked
 * here, and a mismatch is a `DecryptionError`. Without encryption nothing is
 * authenticated and these checks are skipped (they would cost and prove
 * nothing).
 */
import type { Checkpoint, CheckpointMetadata, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { DecryptionError } from "../core/errors.js";
import { isRowBound } from "../serde/protocol.js";
import { checkpointIdentity } from "../core/identity.js";
import type { SaverContext } from "./context.js";
import { assertVersionsMatch, decodeCheckpoint, decodeMetadata } from "./rows.js";
import type { CheckpointRow, TypedBytes } from "./schema.js";

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

/**
 * Checks the parent links and channel versions a walk up the parent chain
 * followed: each row's checkpoint is decoded under binding version 2 (which
 * names its parent) and its versions compared with the row's. Resolves when
 * all hold; no-op without encryption.
 */
export async function verifyParentLinks(serde: SerializerProtocol, rows: readonly CheckpointRow[]): Promise<void> {
  if (!authenticates(serde)) return;
  await Promise.all(rows.map(async (row) => assertVersionsMatch(row, await decodeCheckpoint(serde, row), true)));
}

/**
 * Under encryption, the rows the run index names for `runIds`, each checked
 * against its sealed `metadata.run_id` before anything is deleted (a row
 * whose clear run id was edited would otherwise take another run's, or
 * another thread's, checkpoint with it). Keyed by row identity, with the
 * metadata bytes that were checked, so the deleting transaction can see a
 * row is still the one verified. `undefined` without encryption.
 */
export async function verifiedRunRows(
  ctx: SaverContext,
  runIds: readonly string[],
): Promise<Map<string, TypedBytes> | undefined> {
  const serde = await ctx.serde();
  if (!authenticates(serde)) return undefined;
  const rows = await ctx.db.read(
    ["checkpoints"],
    async (tx) =>
      (await Promise.all(runIds.map((runId) => tx.objectStore("checkpoints").index("by_run").getAll(runId)))).flat(),
    "read checkpoints of runs",
  );
  const verified = new Map<string, TypedBytes>();
  await Promise.all(
    rows.map(async (row) => {
      verifyRunId(row, await decodeMetadata(serde, row));
      verified.set(rowIdentity(row), row.metadata);
    }),
  );
  return verified;
}

/** A checkpoint row's identity across threads. */
export function rowIdentity(row: CheckpointRow): string {
  return `${row.thread_id}\u0000${checkpointIdentity(row.checkpoint_ns, row.checkpoint_id)}`;
}

/** True when the row still holds the metadata that was verified (`verified` undefined: nothing to check). */
export function stillVerified(verified: Map<string, TypedBytes> | undefined, row: CheckpointRow): boolean {
  if (verified === undefined) return true;
  const checked = verified.get(rowIdentity(row))?.[1];
  const now = row.metadata?.[1];
  if (checked === undefined || !(now instanceof Uint8Array) || checked.length !== now.length) return false;
  return checked.every((byte, i) => byte === now[i]);
}

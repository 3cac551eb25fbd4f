/**
 * `deleteForRuns` under encryption: the run index is a clear field, so the
 * rows it names are checked against their sealed metadata before anything
 * is deleted (kept apart from verify.ts: only the lazily loaded runs.ts
 * needs it).
 */
import { checkpointIdentity } from "../core/identity.js";
import type { SaverContext } from "./context.js";
import { decodeMetadata } from "../rows/codec.js";
import type { CheckpointRow, TypedBytes } from "../rows/shapes.js";
import { authenticates, verifyRunId } from "./verify.js";

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

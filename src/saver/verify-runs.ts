/**
 * `deleteForRuns` under encryption: the run index is a clear field, so the
 * rows it names are checked against their sealed metadata before anything
 * is deleted (kept apart from verify.ts: only the lazily loaded runs.ts
 * needs it). A row holding values inline (row format 2) also has its clear
 * channel versions checked: they decide which of those values move to blob
 * rows when it goes, for the checkpoints left that name them.
 */
import { checkpointIdentity } from "../core/identity.js";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import { assertVersionsMatch, decodeCheckpoint, decodeMetadata, sameVersions } from "../rows/codec.js";
import type { CheckpointRow, TypedBytes, Version } from "../rows/shapes.js";
import { authenticates, verifyRunId } from "./verify.js";

/** What was checked of a row: its metadata bytes, and the channel versions of a row holding values inline. */
export interface VerifiedRow {
  metadata: TypedBytes;
  versions?: Record<string, Version>;
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
): Promise<Map<string, VerifiedRow> | undefined> {
  const serde = await ctx.serde();
  if (!authenticates(serde)) return undefined;
  const rows = await ctx.db.read(
    ["checkpoints"],
    async (tx) =>
      (await Promise.all(runIds.map((runId) => tx.objectStore("checkpoints").index("by_run").getAll(runId)))).flat(),
    "read checkpoints of runs",
  );
  const verified = new Map<string, VerifiedRow>();
  await Promise.all(
    rows.map(async (row) => {
      const holdsInline = row.inline !== undefined;
      const [metadata] = await Promise.all([decodeMetadata(serde, row), verifyInlineVersions(serde, row)]);
      verifyRunId(row, metadata);
      verified.set(rowIdentity(row), {
        metadata: row.metadata,
        ...(holdsInline && { versions: row.channel_versions }),
      });
    }),
  );
  return verified;
}

/**
 * Under encryption, before `row` is deleted: if it holds values inline, its
 * clear channel versions match its sealed checkpoint (they decide which of
 * those values move to blob rows for the checkpoints left; an edited one
 * would leave a value they name behind, lost with the row), else a
 * `DecryptionError`. Nothing to check for a row without inline values.
 */
export async function verifyInlineVersions(serde: SerializerProtocol, row: CheckpointRow): Promise<void> {
  if (row.inline === undefined) return;
  assertVersionsMatch(row, await decodeCheckpoint(serde, row), true);
}

/** The clear channel versions of rows holding values inline, checked by {@link checkInlineVersions}, by {@link rowIdentity}. */
export type CheckedVersions = Map<string, Record<string, Version>>;

/**
 * Under encryption, checks the clear versions of each of `rows` holding
 * values inline ({@link verifyInlineVersions}) and notes them in `into`,
 * for a deleting transaction to see ({@link inlineChecked}) that a row it
 * deletes is still the one checked.
 */
export async function checkInlineVersions(
  serde: SerializerProtocol,
  rows: readonly CheckpointRow[],
  into: CheckedVersions = new Map(),
): Promise<CheckedVersions> {
  await Promise.all(
    rows.map(async (row) => {
      await verifyInlineVersions(serde, row);
      if (row.inline !== undefined) into.set(rowIdentity(row), row.channel_versions);
    }),
  );
  return into;
}

/** True when `row` holds no values inline, or holds the clear versions `checked` has for it. */
export function inlineChecked(checked: CheckedVersions, row: CheckpointRow): boolean {
  if (row.inline === undefined) return true;
  const versions = checked.get(rowIdentity(row));
  return versions !== undefined && sameVersions(row.channel_versions, versions);
}

/** A checkpoint row's identity across threads. */
export function rowIdentity(row: CheckpointRow): string {
  return `${row.thread_id}\u0000${checkpointIdentity(row.checkpoint_ns, row.checkpoint_id)}`;
}

/**
 * True when the row still holds the metadata (and channel versions) that
 * were verified (`verified` undefined: nothing to check).
 */
export function stillVerified(verified: Map<string, VerifiedRow> | undefined, row: CheckpointRow): boolean {
  if (verified === undefined) return true;
  const entry = verified.get(rowIdentity(row));
  if (entry?.versions !== undefined ? !sameVersions(row.channel_versions, entry.versions) : row.inline !== undefined) {
    return false;
  }
  const checked = entry?.metadata[1];
  const now = row.metadata?.[1];
  if (checked === undefined || !(now instanceof Uint8Array) || checked.length !== now.length) return false;
  return checked.every((byte, i) => byte === now[i]);
}

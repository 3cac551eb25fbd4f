/**
 * `deleteForRuns` under encryption: the run index is a clear field, so the
 * rows it names are checked against their sealed metadata before anything
 * is deleted (kept apart from verify.ts: only the lazily loaded runs.ts
 * needs it). A row holding values inline (row format 2) also has its clear
 * channel versions checked: they decide which of those values move to blob
 * rows when it goes, for the checkpoints left that name them.
 */
import { checkpointIdentity } from "../core/identity.js";
import { sameClone } from "../core/equality.js";
import { assertRowFields } from "./reads.js";
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
 * The rows the run index names for `runIds`, each checked before anything
 * is deleted: under encryption against its sealed `metadata.run_id` (a row
 * whose clear run id was edited would otherwise take another run's, or
 * another thread's, checkpoint with it), and with or without it, a row
 * holding values inline, its clear versions ({@link verifyInlineVersions}).
 * Keyed by row identity, with the metadata bytes that were checked, so the
 * deleting transaction can see a row is still the one verified.
 */
export async function verifiedRunRows(
  ctx: SaverContext,
  runIds: readonly string[],
): Promise<Map<string, VerifiedRow> | undefined> {
  const serde = await ctx.serde();
  const authenticated = authenticates(serde);
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
      // Without encryption, the run id is not checked (anyone who can edit it can delete the row), but the
      // versions of a row holding values inline are: an edited one would take another checkpoint's value with it.
      const [metadata] = await Promise.all([
        authenticated ? decodeMetadata(serde, row) : undefined,
        verifyInlineVersions(serde, row),
      ]);
      if (metadata) verifyRunId(row, metadata);
      verified.set(rowIdentity(row), {
        metadata: row.metadata,
        ...(holdsInline && { versions: row.channel_versions }),
      });
    }),
  );
  return verified;
}

/**
 * Before `row` is deleted: if it holds values inline, its clear channel
 * versions match its checkpoint (they decide which of those values move to
 * blob rows for the checkpoints left; an edited one would leave a value
 * they name behind, lost with the row), else a `DecryptionError` (a
 * `SerializationError` without encryption, whose checkpoint anyone could
 * have edited too: a reader of the row reports it so). Nothing to check for
 * a row without inline values.
 */
export async function verifyInlineVersions(serde: SerializerProtocol, row: CheckpointRow): Promise<void> {
  if (row.inline === undefined) return;
  const authenticated = authenticates(serde);
  // Without encryption, a row of a shape no saver writes is named as such, as its reads name it.
  if (!authenticated) assertRowFields(row);
  assertVersionsMatch(row, await decodeCheckpoint(serde, row), authenticated);
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
  // Without encryption the metadata was not decoded: it may be anything an edit left there.
  return entry !== undefined && sameClone(entry.metadata, row.metadata);
}

/**
 * Delta channels' snapshots stored by the maintenance operations given the
 * graph's channels. A delta channel is rebuilt by walking parent links back
 * to a stored value and replaying the writes on the way, and the walk stops
 * where a parent is missing: `prune` snapshots the checkpoints it keeps, and
 * `deleteForRuns` the checkpoints it leaves whose parent goes with the
 * deleted runs, without those runs' writes (docs/saver.md). Sync pushes the
 * checkpoints again with them (rows/marks.ts).
 */
import { DeltaSnapshot, type CheckpointTuple, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { SaverContext } from "./context.js";
import { getTuple } from "./get.js";
import { assertRowFields, threadRows } from "./reads.js";
import { decodeMetadata, encode, rowRef } from "../rows/codec.js";
import type { BlobRow, CheckpointRow } from "../rows/shapes.js";
import { checkpointIdentity } from "../core/identity.js";
import { isDeltaChannelLike, type DeltaChannelLike } from "./types.js";
import { issue, storePut } from "../idb/requests.js";
import { revaluedName, type RevaluedCheckpoint } from "../rows/marks.js";
import { takeOffAbsent } from "./absent.js";
import type { WriteTx } from "./tombstones.js";
import { loadOnce } from "../core/tasks.js";

const deltaModule = loadOnce(() => import("./delta-history.js"));

/** The config naming `row`. */
function configOf(row: CheckpointRow): RunnableConfig {
  return {
    configurable: { thread_id: row.thread_id, checkpoint_ns: row.checkpoint_ns, checkpoint_id: row.checkpoint_id },
  };
}

/**
 * The delta channels `row` has (its metadata's snapshot counters) without a
 * stored value at its version, and the config naming it.
 */
export async function unstoredDeltas(
  ctx: SaverContext,
  serde: SerializerProtocol,
  row: CheckpointRow,
): Promise<{ config: RunnableConfig; missing: string[] }> {
  // Its clear versions are read below: a row edited outside the saver is named, not a TypeError.
  assertRowFields(row);
  const config = configOf(row);
  const metadata = await decodeMetadata(serde, row);
  const counters =
    (metadata as { counters_since_delta_snapshot?: Record<string, unknown> }).counters_since_delta_snapshot ?? {};
  const deltas = Object.keys(counters).filter((channel) => row.channel_versions[channel] !== undefined);
  if (deltas.length === 0) return { config, missing: [] };
  const stored = (await getTuple(ctx, config))?.checkpoint.channel_values ?? {};
  return { config, missing: deltas.filter((channel) => !(channel in stored)) };
}

/** `value` as the `DeltaSnapshot` blob row of `channel` at `row`'s version, sealed as that blob. */
export async function snapshotBlob(
  serde: SerializerProtocol,
  row: CheckpointRow,
  channel: string,
  value: unknown,
): Promise<BlobRow> {
  const version = row.channel_versions[channel]!;
  return {
    thread_id: row.thread_id,
    checkpoint_ns: row.checkpoint_ns,
    channel,
    version,
    value: await encode(
      serde,
      `snapshot channel "${channel}"`,
      new DeltaSnapshot(value),
      rowRef.blob(row.thread_id, row.checkpoint_ns, channel, version),
    ),
  };
}

/** A snapshot, and the checkpoint it was made for. */
export interface Snapshot {
  row: CheckpointRow;
  blob: BlobRow;
}

/**
 * Stores `snapshots` in `tx` and marks their checkpoints revalued, for sync
 * to push them again with the value (rows/marks.ts); takes their versions
 * off the rows that list them as having no value (absent.ts).
 */
export async function storeSnapshots(ctx: SaverContext, tx: WriteTx, snapshots: readonly Snapshot[]): Promise<void> {
  const marked: RevaluedCheckpoint = { revalued_at: ctx.now() };
  for (const { row, blob } of snapshots) {
    issue(storePut(tx.objectStore("blobs"), blob));
    const name = revaluedName(row.thread_id, row.checkpoint_ns, row.checkpoint_id);
    issue(storePut(tx.objectStore("meta"), { name, value: marked }));
  }
  await takeOffAbsent(
    tx,
    snapshots.map(({ blob }) => [blob.thread_id, blob.checkpoint_ns, blob.channel, blob.version]),
  );
}

/**
 * The snapshots the checkpoints left would need once the rows of `runIds`
 * (of `threadId` only, if given) are deleted. Read and encoded before the
 * deleting transaction opens; a checkpoint's value without the deleted
 * writes is its nearest ancestor left's value plus that ancestor's own
 * writes (those that made its child). With no ancestor left there is
 * nothing to keep: the history starts after the gap, as without channels.
 */
export async function orphanSnapshots(
  ctx: SaverContext,
  runIds: readonly string[],
  threadId: string | undefined,
  channels: Record<string, unknown>,
): Promise<Snapshot[]> {
  const ranges = ctx.db.ranges;
  const { doomed, threads } = await ctx.db.read(
    ["checkpoints"],
    async (tx) => {
      const byRun = await Promise.all(
        runIds.map((runId) => tx.objectStore("checkpoints").index("by_run").getAll(runId)),
      );
      const doomed = byRun.flat().filter((row) => threadId === undefined || row.thread_id === threadId);
      const ids = [...new Set(doomed.map((row) => row.thread_id))];
      return { doomed, threads: await Promise.all(ids.map((id) => threadRows(tx, ranges, "checkpoints", id))) };
    },
    "read the checkpoints deleteForRuns leaves",
  );
  const serde = await ctx.serde();
  const key = (row: CheckpointRow, id: string) => `${row.thread_id}\u0000${checkpointIdentity(row.checkpoint_ns, id)}`;
  const gone = new Set(doomed.map((row) => key(row, row.checkpoint_id)));
  const byKey = new Map(threads.flat().map((row) => [key(row, row.checkpoint_id), row]));
  const snapshots: Snapshot[] = [];
  for (const row of byKey.values()) {
    const parent = row.parent_checkpoint_id;
    if (gone.has(key(row, row.checkpoint_id)) || parent === undefined || !gone.has(key(row, parent))) continue;
    const deltas = (await unstoredDeltas(ctx, serde, row)).missing.filter((c) => isDeltaChannelLike(channels[c]));
    if (deltas.length === 0) continue;
    // The nearest ancestor the deletion leaves (the thread's rows as read: a parent missing ends the line).
    let ancestor = byKey.get(key(row, parent));
    while (ancestor && gone.has(key(ancestor, ancestor.checkpoint_id))) {
      const up = ancestor.parent_checkpoint_id;
      ancestor = up === undefined ? undefined : byKey.get(key(ancestor, up));
    }
    const base = ancestor && (await getTuple(ctx, configOf(ancestor)));
    if (!base) continue;
    for (const channel of deltas) {
      const value = await valueAt(ctx, channels[channel] as DeltaChannelLike, channel, base);
      snapshots.push({ row, blob: await snapshotBlob(serde, row, channel, value) });
    }
  }
  return snapshots;
}

/** The value of `channel` at `base`'s child: `base`'s value, and its own writes to it replayed. */
async function valueAt(ctx: SaverContext, delta: DeltaChannelLike, channel: string, base: CheckpointTuple) {
  const stored = base.checkpoint.channel_values;
  const { getDeltaChannelHistory } = await deltaModule();
  const walked =
    channel in stored
      ? undefined
      : (await getDeltaChannelHistory(ctx, { config: base.config, channels: [channel] }))[channel];
  const rebuilt = delta.fromCheckpoint(channel in stored ? stored[channel] : walked?.seed);
  if (walked) rebuilt.replayWrites(walked.writes);
  rebuilt.replayWrites((base.pendingWrites ?? []).filter(([, written]) => written === channel));
  return rebuilt.get();
}

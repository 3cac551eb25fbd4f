/**
 * `prune`: keep the newest checkpoints of every namespace (snapshotting or
 * keeping delta-channel history), or delete whole threads.
 */
import type { SaverContext } from "./context.js";
import { assertId } from "../rows/ids.js";
import { threadRows } from "./reads.js";
import { snapshotBlob, storeSnapshots, unstoredDeltas, type Snapshot } from "./snapshots.js";
import { deleteCheckpointRows, deleteUnusedBlobs } from "./runs.js";
import type { CheckpointRow } from "../rows/shapes.js";
import { refreshThread } from "./threads.js";
import { deleteThread } from "./delete-thread.js";
import { THREAD_STORES } from "./tombstones.js";
import { isDeltaChannelLike, type DeltaChannelLike, type PruneOptions } from "./types.js";
import { checkpointIdentity } from "../core/identity.js";
import { authenticates } from "./verify.js";
import { verifyInlineVersions } from "./verify-runs.js";
import { loadOnce } from "../core/tasks.js";

const deltaModule = loadOnce(() => import("./delta-history.js"));
const sealedModule = loadOnce(() => import("./sealed.js"));

/**
 * Shrinks threads. `"keep_latest"` (the default) keeps the newest
 * checkpoint of every namespace (or the newest `keepLast`), with its
 * pending writes and the channel values it uses, and deletes the rest;
 * `"delete"` deletes the threads (`deleteThread`).
 *
 * Delta channels (`MessagesDeltaValue`) are never emptied: their value
 * lives in ancestors' writes. Pass the graph's channels (`{ channels:
 * graph.channels }`) and the kept checkpoint gets a `DeltaSnapshot` of the
 * rebuilt value, so its ancestors can go; without them the ancestors back
 * to the nearest snapshot are kept.
 */
export async function prune(ctx: SaverContext, threadIds: string[], options: PruneOptions = {}): Promise<void> {
  const strategy = options.strategy ?? "keep_latest";
  if (strategy !== "keep_latest" && strategy !== "delete") {
    throw new Error(`prune: unknown strategy "${String(strategy)}"; use "keep_latest" or "delete".`);
  }
  const keepLast = options.keepLast ?? 1;
  if (!Number.isInteger(keepLast) || keepLast < 1) {
    throw new Error(`prune: keepLast must be a positive integer (got ${String(keepLast)}).`);
  }
  if (!Array.isArray(threadIds)) throw new Error("prune: threadIds must be an array of thread ids.");
  for (const threadId of threadIds) assertId("thread_id", threadId);
  for (const threadId of new Set(threadIds)) {
    if (strategy === "delete") await deleteThread(ctx, threadId);
    else await pruneThread(ctx, threadId, keepLast, options.channels);
  }
}

async function pruneThread(
  ctx: SaverContext,
  threadId: string,
  keepLast: number,
  channels: PruneOptions["channels"],
): Promise<void> {
  const ranges = ctx.db.ranges;
  const rows = await ctx.db.read(
    ["checkpoints"],
    (tx) => threadRows(tx, ranges, "checkpoints", threadId),
    "read the thread to prune",
  );
  if (rows.length === 0) return;
  const serde = await ctx.serde();
  const byNs = new Map<string, CheckpointRow[]>();
  for (const row of rows) byNs.set(row.checkpoint_ns, [...(byNs.get(row.checkpoint_ns) ?? []), row]);
  const keep = new Set<string>();
  const kept: CheckpointRow[] = [];
  for (const nsRows of byNs.values()) {
    nsRows.sort((a, b) => (a.checkpoint_id < b.checkpoint_id ? 1 : a.checkpoint_id > b.checkpoint_id ? -1 : 0));
    for (const row of nsRows.slice(0, keepLast)) {
      keep.add(checkpointIdentity(row.checkpoint_ns, row.checkpoint_id));
      kept.push(row);
    }
  }
  if (kept.length === rows.length) return;
  // The delta walk's chunk (delta-history.ts), loaded with the first prune that deletes; sealed rows' links
  // are checked by the encryption-only chunk (sealed.ts): without encryption there is nothing to check.
  const { getDeltaChannelHistory, walkAncestors } = await deltaModule();
  const sealed = authenticates(serde) ? await sealedModule() : undefined;
  // The kept rows' clear versions decide which blobs survive: check them.
  await sealed?.verifyParentLinks(serde, kept, rows);

  // Delta channels the kept checkpoints rebuild from ancestors' writes.
  const snapshots: Snapshot[] = [];
  for (const row of kept) {
    const { config, missing } = await unstoredDeltas(ctx, serde, row);
    const materialize = missing.filter((channel) => isDeltaChannelLike(channels?.[channel]));
    const chained = missing.filter((channel) => !materialize.includes(channel));
    if (materialize.length > 0) {
      const history = await getDeltaChannelHistory(ctx, { config, channels: materialize });
      for (const channel of materialize) {
        const rebuilt = (channels![channel] as DeltaChannelLike).fromCheckpoint(history[channel]!.seed);
        rebuilt.replayWrites(history[channel]!.writes);
        snapshots.push({ row, blob: await snapshotBlob(serde, row, channel, rebuilt.get()) });
      }
    }
    if (chained.length > 0) {
      const walk = await ctx.db.read(
        ["checkpoints", "blobs", "writes"],
        (tx) => walkAncestors(tx, ranges, row, chained),
        "walk delta history",
      );
      // The kept chain follows parent links: check them before deleting around them.
      await sealed?.verifyParentLinks(serde, [row, ...walk.rows], walk.tail ? [walk.tail] : []);
      const depth = Math.max(...chained.map((channel) => walk.seeds.get(channel)?.depth ?? walk.path.length - 1));
      for (const id of walk.path.slice(0, depth + 1)) keep.add(checkpointIdentity(row.checkpoint_ns, id));
    }
  }

  const doomed = rows.filter((row) => !keep.has(checkpointIdentity(row.checkpoint_ns, row.checkpoint_id)));
  if (doomed.length === 0 && snapshots.length === 0) return;
  // The doomed rows' clear versions decide which of their inline values move to blob rows: check them.
  await Promise.all(doomed.map((row) => verifyInlineVersions(serde, row)));
  await ctx.writes.write(
    THREAD_STORES,
    async (tx) => {
      for (const row of doomed) deleteCheckpointRows(ctx, tx, row);
      await storeSnapshots(ctx, tx, snapshots);
      const remaining = await deleteUnusedBlobs(tx, ranges, threadId, doomed);
      await refreshThread(ctx, tx, threadId, remaining);
    },
    "prune thread",
    false,
  );
  ctx.feed.emit({ threadId, kind: "prune" });
}

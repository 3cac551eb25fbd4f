/**
 * `getDeltaChannelHistory`: the delta-channel walk in one read-only
 * transaction (parent links from checkpoint rows, seeds from blobs, each
 * channel's writes in one range read of the writes index).
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { compareWritesSortKeys, type DeltaChannelHistory } from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import { assertId, configIds } from "./ids.js";
import { latestRow, walkAncestors } from "./reads.js";
import { decodeBlob, decodeWrite, writeSortKey } from "./rows.js";
import { verifyParentLinks } from "./verify.js";

/**
 * The delta-channel history walk in one read-only transaction: parent links
 * from the checkpoint rows, seeds from the blobs, and each channel's writes
 * in one range read of the writes index.
 */
export async function getDeltaChannelHistory(
  ctx: SaverContext,
  options: { config: RunnableConfig; channels: string[] },
): Promise<Record<string, DeltaChannelHistory>> {
  const { config, channels } = options;
  if (channels.length === 0) return {};
  if (config.configurable?.thread_id === undefined) {
    return Object.fromEntries(channels.map((channel) => [channel, { writes: [] }]));
  }
  const { threadId, checkpointNs, checkpointId } = configIds(config, "get delta channel history");
  for (const channel of channels) assertId("channel", channel);

  const walked = await ctx.db.read(
    ["checkpoints", "blobs", "writes"],
    async (tx) => {
      const target = checkpointId
        ? await tx.objectStore("checkpoints").get([threadId, checkpointNs, checkpointId])
        : await latestRow(tx, ctx.db.ranges, threadId, checkpointNs);
      return { target, ...(await walkAncestors(tx, ctx.db.ranges, target, channels)) };
    },
    "read delta channel history",
  );

  const serde = await ctx.serde();
  // The links and versions that chose the path and the seeds, checked
  // while the writes decode (a no-op without encryption).
  const verified = verifyParentLinks(serde, walked.target ? [walked.target, ...walked.rows] : []);
  const order = new Map(walked.path.map((id, depth) => [id, depth]));
  const result: Record<string, DeltaChannelHistory> = {};
  await Promise.all([
    verified,
    ...channels.map(async (channel, i) => {
      const rows = walked.writesByChannel[i]!;
      // Oldest checkpoint first; inside one checkpoint, live execution's order.
      rows.sort((a, b) => {
        const byDepth = order.get(b.checkpoint_id)! - order.get(a.checkpoint_id)!;
        return byDepth !== 0 ? byDepth : compareWritesSortKeys(writeSortKey(a), writeSortKey(b));
      });
      const entry: DeltaChannelHistory = {
        writes: await Promise.all(rows.map((write) => decodeWrite(serde, write))),
      };
      const seed = walked.seeds.get(channel);
      if (seed) entry.seed = await decodeBlob(serde, seed.blob);
      result[channel] = entry;
    }),
  ]);
  return result;
}

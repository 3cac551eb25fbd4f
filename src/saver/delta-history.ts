/**
 * `getDeltaChannelHistory`: the delta-channel walk in one read-only
 * transaction (parent links from checkpoint rows, seeds from blobs, each
 * channel's writes in one range read of the writes index).
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { compareWritesSortKeys, type DeltaChannelHistory } from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import { walksOf, type ChannelWalk } from "./delta-cache.js";
import { assertId, configIds } from "../rows/ids.js";
import { latestRow } from "./reads.js";
import { walkAncestors } from "./walk.js";
import { decodeBlob, decodeWrite, writeSortKey } from "../rows/codec.js";
import type { LinkCheck } from "./verify-links.js";
import { authenticates } from "./verify.js";
import { loadOnce } from "../core/tasks.js";

/**
 * The encryption-only chunk, imported once and kept: an app bundler's
 * `import()` checks its preloads at every call. (Imported here, not from
 * put.ts, which loads it too: an import of put.ts from this lazy module
 * made the app's bundler split the up-front code into four chunks.)
 */
const sealedModule = loadOnce(() => import("./sealed.js"));

// What prune (maintenance.ts) walks with, through this module: the walk ships as one chunk, loaded by either.
export { walkAncestors } from "./walk.js";

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

  const walks = walksOf(ctx);
  if (checkpointId) {
    const kept = walks.lookup(threadId, checkpointNs, checkpointId, channels);
    if (kept) return kept;
  }
  // Taken before the read: a write that starts meanwhile keeps this walk from being kept.
  const mark = walks.mark();
  const serde = await ctx.serde();
  // Sealed rows' links are checked by the encryption-only chunk, loaded before the read (not inside it).
  const sealed = authenticates(serde) ? await sealedModule() : undefined;
  // The links and versions that chose the path and the seeds (a no-op
  // without encryption): hashed while the walk's last reads are out,
  // decrypted while the writes decode.
  let links: LinkCheck | undefined;
  const walked = await ctx.db.read(
    ["checkpoints", "blobs", "writes"],
    async (tx) => {
      const target = checkpointId
        ? await tx.objectStore("checkpoints").get([threadId, checkpointNs, checkpointId])
        : await latestRow(tx, ctx.db.ranges, threadId, checkpointNs);
      const walk = await walkAncestors(tx, ctx.db.ranges, target, channels, (rows, tail) => {
        links = sealed?.checkChains(serde, target ? [target, ...rows] : [], tail ? [tail] : []);
      });
      return { target, ...walk };
    },
    "read delta channel history",
  );
  // Then the writes each proven child lists for its parent (binding version 4): all there.
  const verified = sealed?.finishLinkCheck(links).then(() => {
    const { target, path, rows, seeds } = walked;
    if (links === undefined || target === undefined) return;
    const depths = channels.map((channel) => seeds.get(channel)?.depth ?? path.length - 1);
    sealed.checkListedWrites([target, ...rows], path, channels, depths, walked.writesByChannel);
  });
  const order = new Map(walked.path.map((id, depth) => [id, depth]));
  // Decoded while the links are checked; a failed check is reported first: it names what was altered
  // (a listed write moved to another key also fails to decrypt there, which says less).
  const decoding = Promise.all(
    channels.map(async (channel, i): Promise<ChannelWalk> => {
      const rows = walked.writesByChannel[i]!;
      // Oldest checkpoint first; inside one checkpoint, live execution's order.
      rows.sort((a, b) => {
        const byDepth = order.get(b.checkpoint_id)! - order.get(a.checkpoint_id)!;
        return byDepth !== 0 ? byDepth : compareWritesSortKeys(writeSortKey(a), writeSortKey(b));
      });
      const writes = await Promise.all(rows.map((write) => decodeWrite(serde, write)));
      const seed = walked.seeds.get(channel);
      return {
        writes,
        ids: rows.map((write) => write.checkpoint_id),
        ...(seed && { seed: { value: await decodeBlob(serde, seed.blob), depth: seed.depth } }),
      };
    }),
  );
  void decoding.catch(() => undefined);
  await verified;
  const decoded = await decoding;
  const result: Record<string, DeltaChannelHistory> = {};
  channels.forEach((channel, i) => {
    const { writes, seed } = decoded[i]!;
    // A copy of the list: the kept walk shares the decoded writes, not the array handed out.
    result[channel] = seed ? { writes: [...writes], seed: seed.value } : { writes: [...writes] };
  });
  // Kept only once verified: a walk derived from it later needs no check of its own (its links are a subset).
  if (walked.target !== undefined) {
    const targetId = walked.target.checkpoint_id;
    walks.keep(mark, threadId, checkpointNs, targetId, channels, { path: walked.path, channels: decoded });
  }
  return result;
}

/**
 * The saver's read plans: sequences of requests issued inside one read
 * transaction (opened by db.ts), returning rows still serialized.
 */
import type { KeyRanges, Tx } from "./db.js";
import { prefixBounds } from "./keys.js";
import type { RawTuple } from "./rows.js";
import type { BlobRow, CheckpointRow, SaverSchema, Version, WriteRow } from "./schema.js";

/** A transaction that can at least read the saver's stores. */
type ReadTx = Tx<SaverSchema, "readonly"> | Tx<SaverSchema, "readwrite">;

/** The newest checkpoint row of a namespace: one step of a reverse cursor. */
export async function latestRow(
  tx: ReadTx,
  ranges: KeyRanges,
  threadId: string,
  checkpointNs: string,
): Promise<CheckpointRow | undefined> {
  const bounds = prefixBounds(threadId, checkpointNs);
  const cursor = await tx.objectStore("checkpoints").openCursor(ranges.bound(bounds.lower, bounds.upper), "prev");
  return cursor?.value;
}

/** The blobs and writes of one checkpoint row. */
export async function readDetails(tx: ReadTx, ranges: KeyRanges, row: CheckpointRow): Promise<RawTuple> {
  const blobStore = tx.objectStore("blobs");
  const { thread_id: t, checkpoint_ns: ns, checkpoint_id: id } = row;
  const bounds = prefixBounds(t, ns, id);
  const [blobs, writes] = await Promise.all([
    Promise.all(Object.entries(row.channel_versions).map(([channel, version]) => blobStore.get([t, ns, channel, version]))),
    tx.objectStore("writes").getAll(ranges.bound(bounds.lower, bounds.upper)),
  ]);
  return { row, blobs, writes };
}

/** Every row of a thread in one store (all namespaces). */
export function threadRows<S extends "checkpoints" | "blobs" | "writes">(
  tx: ReadTx,
  ranges: KeyRanges,
  store: S,
  threadId: string,
): Promise<SaverSchema[S]["value"][]> {
  const bounds = prefixBounds(threadId);
  return tx.objectStore(store).getAll(ranges.bound(bounds.lower, bounds.upper)) as Promise<SaverSchema[S]["value"][]>;
}

/** What the ancestor walk found for the delta-channel history. */
export interface AncestorWalk {
  /** Ancestor ids from the parent of the target up, nearest first. */
  path: string[];
  /** Per channel: the blob that seeds it and the depth in `path` it was found at. */
  seeds: Map<string, { blob: BlobRow; depth: number }>;
  /** Per requested channel (same order): its writes on its part of the path. */
  writesByChannel: WriteRow[][];
}

/**
 * The delta-channel history walk: parent links from the checkpoint rows,
 * seeds from the blobs, and each channel's writes in one range read of the
 * writes index `[thread, ns, channel, checkpoint_id]`. All in the caller's
 * transaction.
 */
export async function walkAncestors(
  tx: ReadTx,
  ranges: KeyRanges,
  target: CheckpointRow | undefined,
  channels: string[],
): Promise<AncestorWalk> {
  const path: string[] = [];
  const seeds = new Map<string, { blob: BlobRow; depth: number }>();
  if (!target) return { path, seeds, writesByChannel: channels.map(() => []) };
  const { thread_id: threadId, checkpoint_ns: checkpointNs } = target;
  const checkpoints = tx.objectStore("checkpoints");
  const blobStore = tx.objectStore("blobs");
  const remaining = new Set(channels);
  // A channel keeps its version across steps it is not written in:
  // remember the versions already known to have no value.
  const knownEmpty = new Map<string, Version>();
  let cursor = target.parent_checkpoint_id;
  while (cursor !== undefined && remaining.size > 0) {
    const row = await checkpoints.get([threadId, checkpointNs, cursor]);
    if (!row) break;
    const depth = path.push(cursor) - 1;
    const probes = [...remaining].filter((channel) => {
      const version = row.channel_versions[channel];
      return version !== undefined && knownEmpty.get(channel) !== version;
    });
    const found = await Promise.all(
      probes.map((channel) => blobStore.get([threadId, checkpointNs, channel, row.channel_versions[channel]!])),
    );
    probes.forEach((channel, i) => {
      const blob = found[i];
      if (blob) {
        seeds.set(channel, { blob, depth });
        remaining.delete(channel);
      } else {
        knownEmpty.set(channel, row.channel_versions[channel]!);
      }
    });
    cursor = row.parent_checkpoint_id;
  }
  const writesIndex = tx.objectStore("writes").index("by_channel");
  const writesByChannel = await Promise.all(
    channels.map(async (channel) => {
      const last = seeds.get(channel)?.depth ?? path.length - 1;
      if (last < 0) return [];
      const onPath = new Set(path.slice(0, last + 1));
      let low = path[0]!;
      let high = path[0]!;
      for (const id of onPath) {
        if (id < low) low = id;
        if (id > high) high = id;
      }
      const rows = await writesIndex.getAll(
        ranges.bound([threadId, checkpointNs, channel, low], [threadId, checkpointNs, channel, high]),
      );
      return rows.filter((write) => onPath.has(write.checkpoint_id));
    }),
  );
  return { path, seeds, writesByChannel };
}

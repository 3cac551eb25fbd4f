/**
 * The checkpoint this saver put last in each namespace, so `getTuple` of a
 * namespace's latest can ask for that checkpoint's blobs and writes in the
 * same round trip as the latest row itself (a graph run asks for the latest
 * checkpoint at every invoke, and it is almost always the one this saver
 * just put). A guess only: the read checks it against the row it finds, in
 * the same transaction, and reads the row's own details when it was wrong.
 */
import type { SaverContext } from "./context.js";
import type { Version } from "./schema.js";

/** A namespace's checkpoint put last: its id and the versions of its stored values. */
export interface RecentPut {
  checkpointId: string;
  channelVersions: Record<string, Version>;
}

/** Namespaces remembered per saver: enough for the threads of a busy page, small enough to forget. */
const LIMIT = 64;

const recents = new WeakMap<SaverContext, Map<string, RecentPut>>();

function keyOf(threadId: string, checkpointNs: string): string {
  return `${threadId}\u0000${checkpointNs}`;
}

/** Remembers the checkpoint `put` just committed as its namespace's newest. */
export function rememberPut(ctx: SaverContext, threadId: string, checkpointNs: string, put: RecentPut): void {
  let map = recents.get(ctx);
  if (!map) recents.set(ctx, (map = new Map()));
  const key = keyOf(threadId, checkpointNs);
  // Re-inserted, so the map's order is the order of use and the oldest goes first.
  map.delete(key);
  map.set(key, put);
  if (map.size > LIMIT) map.delete(map.keys().next().value!);
}

/** The checkpoint this saver put last in a namespace, if it remembers one. */
export function recentPut(ctx: SaverContext, threadId: string, checkpointNs: string): RecentPut | undefined {
  return recents.get(ctx)?.get(keyOf(threadId, checkpointNs));
}

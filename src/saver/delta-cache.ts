/**
 * The last delta-channel walks, kept so that the walk of a checkpoint's
 * parent is derived from its child's instead of read and decoded again.
 *
 * `graph.getStateHistory` lists checkpoints newest first and asks, for each,
 * the history of its delta channels: without this, every snapshot re-reads
 * and re-decodes its whole chain (quadratic in turns). A checkpoint's chain
 * is its parent's plus one step, so the parent's history is the child's
 * minus the parent's own writes, as long as the parent does not hold the
 * seed itself (then its walk goes further up and is read afresh).
 *
 * A kept walk is served only while nothing could have changed it: no write
 * of this saver started since it was read (the database's write mark), and
 * no change announced by another tab (the change feed). Few are kept.
 */
import type { CheckpointPendingWrite, DeltaChannelHistory } from "@langchain/langgraph-checkpoint";
import type { Database } from "../idb/database.js";
import type { ChangeFeed, CheckpointChange } from "./events.js";
import type { SaverContext } from "./context.js";
import type { SaverSchema } from "./schema.js";

/** One channel of a decoded walk, oldest write first. */
export interface ChannelWalk {
  writes: CheckpointPendingWrite[];
  /** The checkpoint each write belongs to (same order as `writes`). */
  ids: string[];
  /** The seed, and the depth on the path of the checkpoint that holds it. */
  seed?: { value: unknown; depth: number };
}

/** A decoded walk from one checkpoint up its parent chain. */
export interface Walk {
  /** Ancestor ids from the target's parent up, nearest first. */
  path: string[];
  channels: ChannelWalk[];
}

/** A kept walk: `path` and each channel's writes are read from an offset (shared arrays, never copied). */
interface Kept {
  mark: string;
  targetId: string;
  path: string[];
  start: number;
  channels: {
    writes: CheckpointPendingWrite[];
    ids: string[];
    count: number;
    seed?: { value: unknown; depth: number };
  }[];
}

/** Walk sequences kept (one per thread, namespace and channel set). */
const MAX_KEPT = 8;

/** Keeps the last walk of each (thread, namespace, channels); see the module comment. @internal */
export class WalkCache {
  readonly #db: Database<SaverSchema>;
  readonly #feed: ChangeFeed;
  readonly #kept = new Map<string, Kept>();
  /** Bumped by every change another tab announces. */
  #remote = 0;

  constructor(db: Database<SaverSchema>, feed: ChangeFeed) {
    this.#db = db;
    this.#feed = feed;
  }

  /** The mark to read a walk under: pass it back to {@link WalkCache.keep}. */
  mark(): string | undefined {
    const local = this.#db.writeMark;
    return local === undefined ? undefined : `${local}:${this.#remote}`;
  }

  /**
   * The history of `checkpointId` for `channels`, if a kept walk gives it:
   * the walk of the checkpoint itself, or of a child whose parent it is.
   */
  lookup(
    threadId: string,
    checkpointNs: string,
    checkpointId: string,
    channels: string[],
  ): Record<string, DeltaChannelHistory> | undefined {
    const key = keyOf(threadId, checkpointNs, channels);
    const kept = this.#kept.get(key);
    if (!kept) return undefined;
    if (kept.mark !== this.mark()) {
      this.#kept.delete(key);
      return undefined;
    }
    if (kept.targetId !== checkpointId) {
      // Only the target's parent is derived: its chain is the target's minus one step.
      if (kept.path[kept.start] !== checkpointId) return undefined;
      if (kept.channels.some((channel) => channel.seed?.depth === kept.start)) return undefined;
      kept.targetId = checkpointId;
      kept.start++;
      for (const channel of kept.channels) {
        while (channel.count > 0 && channel.ids[channel.count - 1] === checkpointId) channel.count--;
      }
    }
    const result: Record<string, DeltaChannelHistory> = {};
    channels.forEach((name, i) => {
      const channel = kept.channels[i]!;
      const entry: DeltaChannelHistory = { writes: channel.writes.slice(0, channel.count) };
      if (channel.seed) entry.seed = channel.seed.value;
      result[name] = entry;
    });
    return result;
  }

  /** Keeps the walk of `targetId`, read under `mark`, unless something was written since. */
  keep(
    mark: string | undefined,
    threadId: string,
    checkpointNs: string,
    targetId: string,
    channelNames: string[],
    walk: Walk,
  ): void {
    if (mark === undefined || mark !== this.mark()) return;
    // Every time, not once: after the saver's close() the feed's channel is shut, and this reopens it.
    this.#feed.subscribe(this.#onChange);
    const key = keyOf(threadId, checkpointNs, channelNames);
    this.#kept.delete(key);
    if (this.#kept.size >= MAX_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
    this.#kept.set(key, {
      mark,
      targetId,
      path: walk.path,
      start: 0,
      channels: walk.channels.map((channel) => ({ ...channel, count: channel.writes.length })),
    });
  }

  /** Counts other tabs' changes; one function, so subscribing again adds nothing. */
  readonly #onChange = (change: CheckpointChange): void => {
    if (change.remote) this.#remote++;
  };
}

const caches = new WeakMap<SaverContext, WalkCache>();

/**
 * The walk cache of a saver's context, made on first use (the context does
 * not hold it, so savers whose graphs have no delta channel never load this
 * module). It needs no clearing on close or on a key change: a reopened
 * connection and every write change the mark.
 */
export function walksOf(ctx: SaverContext): WalkCache {
  let cache = caches.get(ctx);
  if (!cache) caches.set(ctx, (cache = new WalkCache(ctx.db, ctx.feed)));
  return cache;
}

function keyOf(threadId: string, checkpointNs: string, channels: string[]): string {
  return JSON.stringify([threadId, checkpointNs, channels]);
}

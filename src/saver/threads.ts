/**
 * Thread summaries: `listThreads` (the `threads` store by its updated-time
 * index, so the cost is the page, not the database) and the summary rows
 * that puts, copies and removals keep.
 */
import type { CheckpointMetadata, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { DecryptionError, SerializationError } from "../core/errors.js";
import type { SaverContext } from "./context.js";
import { LIST_PAGE, prefixBounds } from "./keys.js";
import { decodeMetadata } from "../rows/codec.js";
import { threadSummary, type CheckpointRow, type ThreadRow } from "../rows/shapes.js";
import type { WriteTx } from "./tombstones.js";
import type { ListThreadsOptions, ListedThread } from "./types.js";
import { storeDelete, storePut } from "../idb/requests.js";
import type { KeyRanges } from "../idb/database.js";

/** The checkpoint `listThreads` shows a thread by: the newest root one, else the newest. */
export function latestOf(rows: CheckpointRow[]): CheckpointRow | undefined {
  let best: CheckpointRow | undefined;
  for (const row of rows) {
    const rootFirst = (row.checkpoint_ns === "" ? 1 : 0) - (best?.checkpoint_ns === "" ? 1 : 0);
    if (!best || rootFirst > 0 || (rootFirst === 0 && row.checkpoint_id > best.checkpoint_id)) best = row;
  }
  return best;
}

/**
 * The threads of this database, most recently updated first (see
 * `IndexedDBSaver.listThreads`); with `count: false`, without
 * `checkpointCount`.
 */
export async function* listThreads(ctx: SaverContext, options: ListThreadsOptions = {}): AsyncGenerator<ListedThread> {
  const { limit, before, filter } = options;
  const counted = options.count ?? true;
  if (typeof counted !== "boolean") throw new Error(`listThreads: count must be true or false.`);
  let skip = options.offset ?? 0;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 0))
    throw new Error(`listThreads: limit must be a non-negative integer.`);
  if (!Number.isInteger(skip) || skip < 0) throw new Error(`listThreads: offset must be a non-negative integer.`);
  let remaining = limit;
  if (remaining === 0) return;
  const filterEntries = Object.entries(filter ?? {});
  const serde = await ctx.serde();
  let last: { updatedAt: number; threadId: string } | undefined;
  // Without a filter the rows needed are known: read no more than that.
  const pageSize =
    filterEntries.length === 0 && remaining !== undefined ? Math.min(LIST_PAGE, remaining + skip) : LIST_PAGE;
  const ranges = ctx.db.ranges;
  for (;;) {
    const page = await ctx.db.read(
      ["threads", "checkpoints"],
      async (tx) => {
        const upper = last?.updatedAt ?? before ?? Number.MAX_VALUE;
        const range = ranges.bound(-Number.MAX_VALUE, upper, false, last === undefined && before !== undefined);
        const rows: ThreadRow[] = [];
        let cursor = await tx.objectStore("threads").index("by_updated").openCursor(range, "prev");
        while (cursor && rows.length < pageSize) {
          const row = cursor.value;
          // Rows tied on updated_at come in descending thread id: skip those seen.
          if (!(last && row.updated_at === last.updatedAt && row.thread_id >= last.threadId)) rows.push(row);
          if (rows.length < pageSize) cursor = await cursor.continue();
        }
        // What puts do not keep (they write the summary blind): the count
        // and the creation time, from the thread's own rows.
        const checkpoints = tx.objectStore("checkpoints");
        return Promise.all(
          rows.map(async (row) => {
            const all = prefixBounds(row.thread_id);
            const root = prefixBounds(row.thread_id, "");
            const [count, first, newest] = await Promise.all([
              counted ? checkpoints.count(ranges.bound(all.lower, all.upper)) : undefined,
              checkpoints.openCursor(ranges.bound(root.lower, root.upper), "next"),
              checkpoints.openCursor(ranges.bound(root.lower, root.upper), "prev"),
            ]);
            // The newest root checkpoint by id, not the one put last: puts
            // of one thread can commit out of id order (two tabs, two runs,
            // a put whose writes came first).
            const latest = newest
              ? {
                  checkpoint_ns: newest.value.checkpoint_ns,
                  checkpoint_id: newest.value.checkpoint_id,
                  metadata: newest.value.metadata,
                }
              : row.latest;
            // A put that found its thread first by update time and its checkpoint the newest leaves the
            // summary as it was (put-proof.ts): its checkpoint's stamp is the thread's update time then.
            const updatedAt = Math.max(row.updated_at, stampOf(newest?.value) ?? row.updated_at);
            return { row, count, createdAt: stampOf(first?.value) ?? row.updated_at, latest, updatedAt };
          }),
        );
      },
      "list threads",
    );
    for (const { row, count, createdAt, latest, updatedAt } of page) {
      // Found below `before` by its summary's time, though updated since (see above).
      if (before !== undefined && updatedAt >= before) continue;
      // Checked as a checkpoint row's metadata is: an object, whatever an edit of the row left there.
      const { metadata, error } = await readLatest(serde, row.thread_id, latest);
      if (
        filterEntries.length > 0 &&
        (error ||
          !filterEntries.every(([key, value]) => (metadata as Record<string, unknown> | undefined)?.[key] === value))
      )
        continue;
      if (skip > 0) {
        skip -= 1;
        continue;
      }
      const listed: ListedThread = {
        threadId: row.thread_id,
        createdAt,
        updatedAt,
        latestCheckpointId: latest?.checkpoint_id,
        metadata,
        ...(error && { error }),
      };
      yield count === undefined ? listed : { ...listed, checkpointCount: count };
      if (remaining !== undefined && --remaining <= 0) return;
    }
    if (page.length < pageSize) return;
    const tail = page[page.length - 1]!.row;
    last = { updatedAt: tail.updated_at, threadId: tail.thread_id };
  }
}

/**
 * The metadata of a thread's latest checkpoint, or why it cannot be read:
 * a listing is not `getTuple`, and one unreadable thread (a row edited by
 * hand, half written by an old version, sealed under another key) must not
 * make every page throw and hide the threads that read. Only what the row
 * caused is kept as the thread's `error`; anything else (a closed database)
 * still fails the listing.
 */
async function readLatest(
  serde: SerializerProtocol,
  threadId: string,
  latest: ThreadRow["latest"],
): Promise<{ metadata?: CheckpointMetadata; error?: SerializationError | DecryptionError }> {
  if (!latest) return {};
  try {
    return { metadata: await decodeMetadata(serde, { ...latest, thread_id: threadId } as CheckpointRow) };
  } catch (error) {
    if (error instanceof SerializationError || error instanceof DecryptionError) return { error };
    throw error;
  }
}

/**
 * A checkpoint row's `created_at`, when it is a time: the field is clear,
 * and a row edited outside the saver may hold anything there (a string, an
 * object, NaN), which `listThreads` must not hand on as a thread's time.
 * The summary's own time (an index key, so always a number) stands in.
 */
function stampOf(row: CheckpointRow | undefined): number | undefined {
  // Number.isFinite is false for anything but a finite number.
  return Number.isFinite(row?.created_at) ? row!.created_at : undefined;
}

/** Rewrites a thread's summary after checkpoints were removed. */
export async function refreshThread(
  ctx: SaverContext,
  tx: WriteTx,
  threadId: string,
  remaining: CheckpointRow[],
): Promise<void> {
  const latest = latestOf(remaining);
  // No checkpoints left: no summary, so listThreads does not show it.
  if (!latest) return void (await storeDelete(tx.objectStore("threads"), threadId));
  await storePut(tx.objectStore("threads"), threadSummary(threadId, ctx.now(), latest));
}

/**
 * Rewrites a thread's summary from its stored rows, in `tx`: the newest root
 * checkpoint, else the newest of any namespace (as {@link latestOf} picks);
 * no checkpoint left, no summary. For rows that arrived without a `put`
 * (replication).
 */
export async function summarizeThread(
  tx: WriteTx,
  ranges: KeyRanges,
  threadId: string,
  updatedAt: number,
): Promise<void> {
  const root = prefixBounds(threadId, "");
  const checkpoints = tx.objectStore("checkpoints");
  const newest =
    (await checkpoints.openCursor(ranges.bound(root.lower, root.upper), "prev")) ??
    (await checkpoints.index("by_thread_checkpoint").openCursor(ranges.bound([threadId], [threadId, []]), "prev"));
  if (!newest) return void (await storeDelete(tx.objectStore("threads"), threadId));
  await storePut(tx.objectStore("threads"), threadSummary(threadId, updatedAt, newest.value));
}

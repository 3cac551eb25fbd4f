/**
 * `list()` across namespaces or threads: pages by a reverse cursor over an
 * index of checkpoint ids. Loaded with the maintenance chunk (maintenance.ts)
 * by the first such `list()`: a graph run lists one namespace only (list.ts).
 */
import type { SaverContext } from "./context.js";
import { ABOVE_STRINGS } from "./keys.js";
import { readPage } from "./page.js";
import type { RawTuple } from "../rows/codec.js";
import type { CheckpointRow } from "../rows/shapes.js";

/** What one pager reads: which rows, how many per transaction, with or without their details. */
export interface PageQuery {
  threadId?: string;
  checkpointNs?: string;
  /** Only checkpoints strictly older than this id. */
  beforeId?: string;
  /** Only this checkpoint id. */
  onlyId?: string;
  /** Read blobs and writes in the same transaction (no filter: every row read is listed). */
  withDetails: boolean;
  pageSize: number;
}

/** Newest checkpoint id first; equal ids by thread, then namespace (as every saver lists them). */
function newestFirst(a: CheckpointRow, b: CheckpointRow): number {
  if (a.checkpoint_id !== b.checkpoint_id) return a.checkpoint_id < b.checkpoint_id ? 1 : -1;
  if (a.thread_id !== b.thread_id) return a.thread_id < b.thread_id ? -1 : 1;
  return a.checkpoint_ns < b.checkpoint_ns ? -1 : a.checkpoint_ns > b.checkpoint_ns ? 1 : 0;
}

/**
 * Pages across namespaces (one thread, `by_thread_checkpoint`) or threads
 * (`by_checkpoint`), newest first, by a reverse cursor over the index: the
 * cost is the page, not the thread or the database. A page ends only between
 * two checkpoint ids, so rows of equal ids (in several namespaces or threads)
 * are in one page, sorted there by thread and namespace; the index alone
 * would give them in reverse key order. With `withDetails`, blobs and writes
 * come in the same transaction.
 */
export async function* indexPages(ctx: SaverContext, query: PageQuery): AsyncGenerator<RawTuple[]> {
  const { threadId, checkpointNs, beforeId, onlyId, withDetails, pageSize } = query;
  if (onlyId !== undefined && beforeId !== undefined && !(onlyId < beforeId)) return;
  let upperId = beforeId;
  for (;;) {
    const { page, more, lastId } = await ctx.db.read(
      ["checkpoints", "blobs", "writes"],
      async (tx) => {
        const store = tx.objectStore("checkpoints");
        const ranges = ctx.db.ranges;
        // One thread: `by_thread_checkpoint`, keyed [thread, id]; every thread: `by_checkpoint`, keyed id.
        const key = (id: IDBValidKey) => (threadId === undefined ? id : [threadId, id]);
        // One thread's range starts at [thread], below every id of it: a row planted under an id that is no
        // string (a number sorts before "") is listed, and refused by name, not skipped.
        const cursorStart = store
          .index(threadId === undefined ? "by_checkpoint" : "by_thread_checkpoint")
          .openCursor(
            onlyId !== undefined
              ? ranges.only(key(onlyId))
              : ranges.bound(
                  threadId === undefined ? "" : [threadId],
                  key(upperId ?? ABOVE_STRINGS),
                  false,
                  upperId !== undefined,
                ),
            "prev",
          );
        const rows: CheckpointRow[] = [];
        let lastId: string | undefined;
        let cursor = await cursorStart;
        while (cursor) {
          const row = cursor.value;
          // Stop only where the id changes, once the page is full.
          if (rows.length >= pageSize && row.checkpoint_id !== lastId) break;
          lastId = row.checkpoint_id;
          if (checkpointNs === undefined || row.checkpoint_ns === checkpointNs) rows.push(row);
          cursor = await cursor.continue();
        }
        rows.sort(newestFirst);
        const more = cursor !== null && onlyId === undefined;
        const page = await readPage(tx, ctx.db.ranges, rows, withDetails);
        return { page, more, lastId };
      },
      "list checkpoints",
    );
    if (page.length > 0) yield page;
    if (!more || lastId === undefined) return;
    upperId = lastId;
  }
}

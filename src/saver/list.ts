/**
 * `list`: checkpoints newest first, by one namespace's reverse cursor or,
 * across namespaces and threads, by a reverse cursor over an index of ids.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type {
  CheckpointListOptions,
  CheckpointMetadata,
  CheckpointTuple,
  SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import type { PageQuery } from "./index-pages.js";
import { decodeTuple, storedAsWritten } from "./get.js";
import { assertId } from "../rows/ids.js";
import { LIST_PAGE, checkpointRangeBounds } from "./keys.js";
import { newestValues } from "../idb/newest.js";
import { readPage } from "./page.js";
import { readDetails } from "./reads.js";
import { decodeMetadata, type RawTuple } from "../rows/codec.js";
import type { CheckpointRow } from "../rows/shapes.js";
import { freshModule } from "./fresh.js";
import { maintenance } from "./lazy.js";

/** The checkpoints `config` and `options` select, newest first (LangGraph's `list` contract). */
export async function* list(
  ctx: SaverContext,
  config: RunnableConfig,
  options: CheckpointListOptions = {},
): AsyncGenerator<CheckpointTuple> {
  const { before, filter } = options;
  let remaining = options.limit;
  if (remaining !== undefined && remaining <= 0) return;
  const configurable = config.configurable ?? {};
  const threadId: unknown = configurable.thread_id || undefined;
  if (threadId !== undefined) assertId("thread_id", threadId);
  const checkpointNs: unknown = configurable.checkpoint_ns;
  if (checkpointNs !== undefined) assertId("checkpoint_ns", checkpointNs, { allowEmpty: true });
  const onlyId: unknown = configurable.checkpoint_id || undefined;
  if (onlyId !== undefined) assertId("checkpoint_id", onlyId);
  const beforeId: unknown = before?.configurable?.checkpoint_id || undefined;
  if (beforeId !== undefined) assertId("before.checkpoint_id", beforeId);
  const filterEntries = Object.entries(filter ?? {});
  const noFilter = filterEntries.length === 0;
  const serde = await ctx.serde();
  const namespace =
    typeof threadId === "string" && typeof checkpointNs === "string" ? { threadId, checkpointNs } : undefined;
  const fresh = namespace && freshModule();
  // Taken now, with no await since the check: what the window holds is what the database holds (fresh-cache.ts).
  const kept =
    namespace &&
    fresh?.freshList(
      ctx,
      namespace.threadId,
      namespace.checkpointNs,
      serde,
      beforeId as string | undefined,
      onlyId as string | undefined,
    );

  // Kept rows are decoded as `own` gives them: copies, unless the serializer only reads its bytes (fresh-rows.ts).
  async function* pages(): AsyncGenerator<{ page: readonly RawTuple[]; own?: (raw: RawTuple) => RawTuple }> {
    if (kept) {
      yield { page: kept.page, own: (raw) => fresh!.answerOf(raw, serde) };
      if (kept.readFrom === undefined) return;
    }
    const query = {
      beforeId: kept ? kept.readFrom : (beforeId as string | undefined),
      onlyId: onlyId as string | undefined,
      withDetails: noFilter,
      // Without a filter the limit is known: read no more rows than it (less what memory answered).
      pageSize: noFilter && remaining !== undefined ? Math.min(remaining, LIST_PAGE) : LIST_PAGE,
    };
    // Across namespaces or threads (no graph run lists so): loaded with the maintenance chunk, before its first read.
    const reads = namespace
      ? namespacePages(ctx, { ...query, ...namespace }, serde)
      : (await maintenance()).indexPages(ctx, {
          ...query,
          threadId: threadId as string | undefined,
          checkpointNs: checkpointNs as string | undefined,
        });
    for await (const page of reads) yield { page };
  }

  for await (const { page, own } of pages()) {
    // Metadata decides the filter; details are read only for rows that pass.
    const matched: RawTuple[] = [];
    const metadataById = new Map<RawTuple, CheckpointMetadata>();
    for (const raw of page) {
      if (noFilter) {
        matched.push(raw);
        continue;
      }
      const metadata = await decodeMetadata(serde, (own ? own(raw) : raw).row);
      if (filterEntries.every(([key, value]) => (metadata as Record<string, unknown>)[key] === value)) {
        matched.push(raw);
        metadataById.set(raw, metadata);
      }
    }
    if (matched.length === 0) continue;
    const chosen = remaining === undefined ? matched : matched.slice(0, remaining);
    const details =
      noFilter || own
        ? chosen
        : await ctx.db.read(
            ["checkpoints", "blobs", "writes"],
            (tx) =>
              readPage(
                tx,
                ctx.db.ranges,
                chosen.map((raw) => raw.row),
              ),
            "list checkpoints",
          );
    for (const [i, raw] of details.entries()) {
      const metadata = metadataById.get(chosen[i]!);
      yield await decodeTuple(ctx, serde, own ? own(raw) : raw, metadata);
      if (remaining !== undefined && --remaining <= 0) return;
    }
  }
}

/**
 * Pages of one namespace, newest first, by a reverse cursor: the cost is
 * the page, not the thread's length. With `withDetails`, blobs and writes
 * come in the same transaction.
 */
async function* namespacePages(
  ctx: SaverContext,
  query: PageQuery & { threadId: string; checkpointNs: string },
  serde: SerializerProtocol,
): AsyncGenerator<RawTuple[]> {
  const { threadId, checkpointNs, beforeId, onlyId, withDetails, pageSize } = query;
  if (onlyId !== undefined) {
    if (beforeId !== undefined && !(onlyId < beforeId)) return;
    const single = await ctx.db.read(
      ["checkpoints", "blobs", "writes"],
      async (tx) => {
        const row = await tx.objectStore("checkpoints").get([threadId, checkpointNs, onlyId]);
        return row ? [await readDetails(tx, ctx.db.ranges, row)] : [];
      },
      "list checkpoints",
    );
    if (single.length > 0) yield single;
    return;
  }
  let upperId = beforeId;
  const fresh = withDetails ? freshModule() : undefined;
  for (;;) {
    // What the page shows is kept (fresh-cache.ts) if no write of this saver to the namespace overlapped its read.
    const ticket = fresh?.ticket(ctx, threadId, checkpointNs, false);
    const page = await ctx.db.read(
      ["checkpoints", "blobs", "writes"],
      async (tx) => {
        const bounds = checkpointRangeBounds(threadId, checkpointNs, upperId);
        const range = ctx.db.ranges.bound(bounds.lower, bounds.upper, false, bounds.upperOpen);
        const rows = await newestValues<CheckpointRow>(tx.objectStore("checkpoints"), range, pageSize);
        // A run of one namespace's consecutive rows: their writes come in one request.
        return readPage(tx, ctx.db.ranges, rows, withDetails, true);
      },
      "list checkpoints",
    );
    // Only rows as the saver writes them: decoding an edited one is a clear error, copying it a TypeError.
    if (page.every(storedAsWritten))
      fresh?.keepPage(ctx, ticket, serde, threadId, checkpointNs, page, upperId, page.length < pageSize);
    if (page.length === 0) return;
    yield page;
    if (page.length < pageSize) return;
    upperId = page[page.length - 1]!.row.checkpoint_id;
  }
}

/**
 * `list`: checkpoints newest first, by one namespace's reverse cursor or,
 * across namespaces and threads, by keys first and rows a page at a time.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type { CheckpointListOptions, CheckpointMetadata, CheckpointTuple } from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import { decodeTuple } from "./get.js";
import { assertId } from "./ids.js";
import { checkpointRangeBounds, prefixBounds } from "./keys.js";
import { readDetails, type BlobReads } from "./reads.js";
import { decodeMetadata, type RawTuple } from "./rows.js";
import type { CheckpointRow } from "./schema.js";

/** Rows per read transaction when `list` pages through a namespace. */
export const LIST_PAGE = 64;

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
  const serde = await ctx.serde();

  const pages =
    typeof threadId === "string" && typeof checkpointNs === "string"
      ? namespacePages(
          ctx,
          threadId,
          checkpointNs,
          beforeId,
          onlyId,
          filterEntries.length === 0,
          // Without a filter the limit is known: read no more rows than it.
          filterEntries.length === 0 && remaining !== undefined ? Math.min(remaining, LIST_PAGE) : LIST_PAGE,
        )
      : scatteredPages(
          ctx,
          threadId as string | undefined,
          checkpointNs as string | undefined,
          beforeId,
          onlyId,
          filterEntries.length === 0,
        );

  for await (const page of pages) {
    // Metadata decides the filter; details are read only for rows that pass.
    const matched: CheckpointRow[] = [];
    const metadataById = new Map<CheckpointRow, CheckpointMetadata>();
    for (const raw of page) {
      if (filterEntries.length === 0) {
        matched.push(raw.row);
        continue;
      }
      const metadata = await decodeMetadata(serde, raw.row);
      if (filterEntries.every(([key, value]) => (metadata as Record<string, unknown>)[key] === value)) {
        matched.push(raw.row);
        metadataById.set(raw.row, metadata);
      }
    }
    if (matched.length === 0) continue;
    const chosen = remaining === undefined ? matched : matched.slice(0, remaining);
    const details =
      filterEntries.length === 0
        ? page.slice(0, chosen.length)
        : await ctx.db.read(
            ["blobs", "writes"],
            (tx) => {
              const blobReads: BlobReads = new Map();
              return Promise.all(chosen.map((row) => readDetails(tx, ctx.db.ranges, row, blobReads)));
            },
            "list checkpoints",
          );
    for (const raw of details) {
      yield await decodeTuple(ctx, serde, raw, metadataById.get(raw.row));
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
  threadId: string,
  checkpointNs: string,
  beforeId: string | undefined,
  onlyId: string | undefined,
  withDetails: boolean,
  pageSize: number,
): AsyncGenerator<RawTuple[]> {
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
  for (;;) {
    const page = await ctx.db.read(
      ["checkpoints", "blobs", "writes"],
      async (tx) => {
        const bounds = checkpointRangeBounds(threadId, checkpointNs, upperId);
        const range = ctx.db.ranges.bound(bounds.lower, bounds.upper, false, bounds.upperOpen);
        const rows: CheckpointRow[] = [];
        let cursor = await tx.objectStore("checkpoints").openCursor(range, "prev");
        while (cursor && rows.length < pageSize) {
          rows.push(cursor.value);
          if (rows.length < pageSize) cursor = await cursor.continue();
        }
        if (!withDetails) return rows.map((row): RawTuple => ({ row, blobs: [], writes: [] }));
        const blobReads: BlobReads = new Map();
        return Promise.all(rows.map((row) => readDetails(tx, ctx.db.ranges, row, blobReads)));
      },
      "list checkpoints",
    );
    if (page.length === 0) return;
    yield page;
    if (page.length < pageSize) return;
    upperId = page[page.length - 1]!.row.checkpoint_id;
  }
}

/**
 * Pages across namespaces or threads: keys first (cheap), ordered newest
 * checkpoint id first as every other saver lists them, then rows by page.
 */
async function* scatteredPages(
  ctx: SaverContext,
  threadId: string | undefined,
  checkpointNs: string | undefined,
  beforeId: string | undefined,
  onlyId: string | undefined,
  withDetails: boolean,
): AsyncGenerator<RawTuple[]> {
  const keys = await ctx.db.read(
    ["checkpoints"],
    (tx) => {
      const store = tx.objectStore("checkpoints");
      if (threadId === undefined) return store.getAllKeys();
      const bounds = prefixBounds(threadId);
      return store.getAllKeys(ctx.db.ranges.bound(bounds.lower, bounds.upper));
    },
    "list checkpoints",
  );
  const wanted = keys.filter(
    ([, ns, id]) =>
      (checkpointNs === undefined || ns === checkpointNs) &&
      (onlyId === undefined || id === onlyId) &&
      (beforeId === undefined || id < beforeId),
  );
  wanted.sort((a, b) =>
    a[2] !== b[2]
      ? a[2] < b[2]
        ? 1
        : -1
      : a[0] !== b[0]
        ? a[0] < b[0]
          ? -1
          : 1
        : a[1] < b[1]
          ? -1
          : a[1] > b[1]
            ? 1
            : 0,
  );
  for (let start = 0; start < wanted.length; start += LIST_PAGE) {
    const slice = wanted.slice(start, start + LIST_PAGE);
    const page = await ctx.db.read(
      ["checkpoints", "blobs", "writes"],
      async (tx) => {
        const rows = await Promise.all(slice.map((key) => tx.objectStore("checkpoints").get(key)));
        const present = rows.filter((row): row is CheckpointRow => row !== undefined);
        if (!withDetails) return present.map((row): RawTuple => ({ row, blobs: [], writes: [] }));
        const blobReads: BlobReads = new Map();
        return Promise.all(present.map((row) => readDetails(tx, ctx.db.ranges, row, blobReads)));
      },
      "list checkpoints",
    );
    if (page.length > 0) yield page;
  }
}

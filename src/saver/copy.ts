/**
 * `copyThread`: a whole thread under another id, in one transaction, values
 * re-bound to their new rows first when the serializer binds rows.
 */
import { crossTabName } from "../core/channel.js";
import { holdIfFree } from "../core/run-locks.js";
import { issue, storePut } from "../idb/requests.js";
import { isRowBound, withCurrentKey } from "../serde/protocol.js";
import { checkKeyRow, type SaverContext } from "./context.js";
import { assertId, assertStorableId } from "../rows/ids.js";
import { prefixBounds } from "./keys.js";
import { INLINE_SHAPE, alteredRow, assertRowFields, blobKey, threadRows } from "./reads.js";
import { verifyCheckpointFields } from "./verify.js";
import { decodeBlob, decodeCheckpoint, decodeMetadata, decodeWrite, encode, rowRef } from "../rows/codec.js";
import {
  inlineBlobs,
  absentKeysOf,
  isTombstoneWrite,
  isTypedBytes,
  threadSummary,
  type BlobRow,
  type CheckpointRow,
  type ValueKey,
  type WriteRow,
} from "../rows/shapes.js";
import { latestOf } from "./threads.js";
import { THREAD_STORES } from "./tombstones.js";

/**
 * Copies a whole thread (every namespace, checkpoint, channel value and
 * pending write) to `targetThreadId`, keeping checkpoint ids, parent links
 * and metadata. The source is untouched; an unknown source copies nothing.
 * The target must not have checkpoints yet, nor be running: a run of
 * `runOnThread` (in any tab or worker) holding the target refuses the copy.
 * Values bound to their row (an encrypting serializer) are re-encrypted for
 * the target's rows first; the copy itself is one transaction.
 */
export async function copyThread(ctx: SaverContext, sourceThreadId: string, targetThreadId: string): Promise<void> {
  assertId("sourceThreadId", sourceThreadId);
  assertStorableId("targetThreadId", targetThreadId);
  if (sourceThreadId === targetThreadId) throw new Error("copyThread: the source and target thread ids are the same.");
  const ranges = ctx.db.ranges;
  const source = await ctx.db.read(
    ["checkpoints", "blobs", "writes", "threads"],
    async (tx) => {
      const [checkpoints, blobs, writes, thread] = await Promise.all([
        threadRows(tx, ranges, "checkpoints", sourceThreadId),
        threadRows(tx, ranges, "blobs", sourceThreadId),
        threadRows(tx, ranges, "writes", sourceThreadId).then((rows) => rows.filter((row) => !isTombstoneWrite(row))),
        tx.objectStore("threads").get(sourceThreadId),
      ]);
      return { checkpoints, blobs, writes, thread };
    },
    "read the thread to copy",
  );
  if (source.checkpoints.length === 0 && source.writes.length === 0) return;
  await withCurrentKey(ctx.db.name, ctx.bind, ctx.stale, async (bound) => {
    const serde = bound.serde;
    const t = targetThreadId;
    // Re-bind each value to its new row when the serializer binds rows;
    // otherwise the bytes are valid anywhere and are copied as they are.
    const rebind = isRowBound(serde);
    /** A blob row (or a value held inline, as one) bound to the target thread. */
    const moveBlob = async (blob: BlobRow): Promise<BlobRow> => {
      if (!rebind) return { ...blob, thread_id: t };
      const value = await decodeBlob(serde, blob);
      return {
        ...blob,
        thread_id: t,
        value: await encode(
          serde,
          "re-encrypt a channel value",
          value,
          rowRef.blob(t, blob.checkpoint_ns, blob.channel, blob.version),
        ),
      };
    };
    /** Row format 2: the values a row holds inline, and their index keys, for the target thread. */
    const moveInline = async (
      row: CheckpointRow,
    ): Promise<Pick<CheckpointRow, "inline" | "inline_keys" | "absent_keys">> => {
      assertInlineWhole(row);
      // Schema version 5: the versions it lists as having no value, keyed by the target thread.
      const listed = absentKeysOf(row);
      const absent =
        listed.length === 0 ? undefined : { absent_keys: listed.map(([, ns, c, v]): ValueKey => [t, ns, c, v]) };
      if (row.inline === undefined) return absent ?? {};
      const moved = await Promise.all(inlineBlobs(row).map(moveBlob));
      return {
        ...absent,
        inline: Object.fromEntries(moved.map((blob) => [blob.channel, blob.value])),
        inline_keys: moved.map((blob) => [t, blob.checkpoint_ns, blob.channel, blob.version]),
      };
    };
    const moved = {
      checkpoints: await Promise.all(
        source.checkpoints.map(async (row): Promise<CheckpointRow> => {
          const inline = await moveInline(row);
          if (!rebind) return { ...row, ...inline, thread_id: t };
          const [checkpoint, metadata] = await Promise.all([decodeCheckpoint(serde, row), decodeMetadata(serde, row)]);
          // The copy re-seals the clear fields as they are: check them first.
          verifyCheckpointFields(row, checkpoint, metadata, true);
          return {
            ...row,
            ...inline,
            thread_id: t,
            checkpoint: await encode(
              serde,
              "re-encrypt a checkpoint",
              checkpoint,
              rowRef.checkpoint(t, row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id, row.chain),
            ),
            metadata: await encode(
              serde,
              "re-encrypt metadata",
              metadata,
              rowRef.metadata(t, row.checkpoint_ns, row.checkpoint_id),
            ),
          };
        }),
      ),
      blobs: await Promise.all(source.blobs.map(moveBlob)),
      writes: await Promise.all(
        source.writes.map(async (write): Promise<WriteRow> => {
          if (!rebind) return { ...write, thread_id: t };
          const [, , value] = await decodeWrite(serde, write);
          return {
            ...write,
            thread_id: t,
            value: await encode(
              serde,
              "re-encrypt a write",
              value,
              rowRef.write(
                t,
                write.checkpoint_ns,
                write.checkpoint_id,
                write.task_id,
                write.idx,
                write.channel,
                write.task_path ?? "",
              ),
            ),
          };
        }),
      ),
    };
    const latest = latestOf(moved.checkpoints);
    /** The one transaction of the copy, once the target's lock is held. */
    const writeCopy = () =>
      ctx.writes.write(
        THREAD_STORES,
        async (tx) => {
          const bounds = prefixBounds(t);
          const [key, existing] = await Promise.all([
            tx.objectStore("meta").get("key"),
            tx.objectStore("checkpoints").count(ranges.bound(bounds.lower, bounds.upper)),
          ]);
          // Re-encrypted under a key another tab retired: roll back, bind again.
          checkKeyRow(ctx, bound, key);
          if (existing > 0) {
            throw new Error(
              `copyThread: the target thread "${t}" already has ${existing} checkpoints; delete it first or choose another id.`,
            );
          }
          // Stamped as new rows in this transaction, so sync finds the copy (sync/changes.ts).
          const now = ctx.now();
          for (const row of moved.checkpoints)
            issue(storePut(tx.objectStore("checkpoints"), { ...row, created_at: now }));
          for (const blob of moved.blobs) issue(storePut(tx.objectStore("blobs"), blob));
          for (const write of moved.writes) issue(storePut(tx.objectStore("writes"), { ...write, written_at: now }));
          if (latest) {
            await storePut(tx.objectStore("threads"), threadSummary(t, ctx.now(), latest));
          }
        },
        "copy thread",
        false,
      );
    // The target's run lock (runOnThread's, as importThread holds it): a run
    // that read the target empty and has not written yet would otherwise put
    // its root beside the copied history, a fork that hides the copy.
    // Through runOnThread's own lock managers too, when a run was given one.
    const runLock = crossTabName({ kind: "run", dbName: ctx.db.name, threadId: t });
    const copied = await holdIfFree(ctx.db.name, runLock, writeCopy);
    if (copied === undefined) {
      throw new Error(`copyThread: thread "${t}" is running (runOnThread holds it); nothing was copied.`);
    }
  });
  ctx.feed.emit({ threadId: targetThreadId, kind: "copy" });
}

/**
 * The values `row` holds inline (row format 2) are whole: a map by channel
 * of `[type, bytes]` values, each at a version the row has, listed exactly
 * by `inline_keys`. A row edited outside the saver may hold anything there,
 * and a copy built from it would lack such a value (or carry a broken one)
 * without a word: a `SerializationError` naming the row instead.
 */
function assertInlineWhole(row: CheckpointRow): void {
  assertRowFields(row);
  const inline: Record<string, unknown> = row.inline ?? {};
  const listed: unknown = row.inline_keys ?? [];
  const held = Object.keys(inline).map((channel) => [
    row.thread_id,
    row.checkpoint_ns,
    channel,
    row.channel_versions[channel],
  ]);
  // Keys as one sorted string: two lists give the same one only if they hold the same keys as often.
  const names = (keys: unknown[]) =>
    keys
      .map((key) => (Array.isArray(key) && key.length === 4 ? blobKey(...(key as ValueKey)) : ""))
      .sort()
      .join("\n");
  const whole =
    Object.entries(inline).every(
      ([channel, value]) => Object.hasOwn(row.channel_versions, channel) && isTypedBytes(value),
    ) &&
    Array.isArray(listed) &&
    names(listed) === names(held);
  if (!whole) throw alteredRow(row, INLINE_SHAPE);
}

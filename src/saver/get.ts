/**
 * Reading one checkpoint: `getTuple`, and the decoding of a stored row with
 * its channel values and pending writes into a `CheckpointTuple`.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  TASKS,
  maxChannelVersion,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import { configIds } from "../rows/ids.js";
import { checkpointKey, prefixBounds } from "./keys.js";
import { blobKey, latestRow, readDetails, type BlobReads, type ReadTx } from "./reads.js";
import { changeMark, keptValues, recentPut, rememberPut } from "./recent.js";
import { freshModule } from "./fresh.js";
import {
  decodeBlob,
  decodeCheckpoint,
  decodeMetadata,
  decodeWrite,
  sameVersions,
  sortWrites,
  type RawTuple,
} from "../rows/codec.js";
import { absentKeysOf, isAbsent, isTypedBytes, type CheckpointRow } from "../rows/shapes.js";
import { authenticates, verifyCheckpointFields } from "./verify.js";
import { nextChannelVersion } from "../rows/versions.js";

/**
 * The checkpoint `config` names (or the namespace's latest), with its values and pending writes.
 * `read` sees the rows it is decoded from (the export takes its writes' task paths there).
 */
export async function getTuple(
  ctx: SaverContext,
  config: RunnableConfig,
  read?: (raw: RawTuple) => void,
): Promise<CheckpointTuple | undefined> {
  // As every LangGraph saver: no thread, no checkpoint (not an error).
  if (config.configurable?.thread_id === undefined) return undefined;
  const { threadId, checkpointNs, checkpointId } = configIds(config, "get checkpoint");
  // Bind first: a wrong passphrase fails before any row is read.
  const serde = await ctx.serde();
  const fresh = checkpointId === undefined ? freshModule() : undefined;
  // Provably current (fresh-cache.ts): no other saver can have written since.
  const kept = fresh?.freshLatest(ctx, threadId, checkpointNs, serde);
  if (kept) return decodeTuple(ctx, serde, kept);
  const ticket = fresh?.ticket(ctx, threadId, checkpointNs, false);
  const mark = checkpointId === undefined ? changeMark(ctx) : 0;
  const raw = await ctx.db.read(
    ["checkpoints", "blobs", "writes"],
    async (tx) => {
      if (checkpointId === undefined) return readLatest(tx, ctx, serde, threadId, checkpointNs);
      const row = await tx
        .objectStore("checkpoints")
        .get(checkpointKey(threadId, checkpointNs, checkpointId) as [string, string, string]);
      return row ? readDetails(tx, ctx.db.ranges, row) : undefined;
    },
    "get checkpoint",
  );
  // Kept before decoding, as copies: a decoder may write into the bytes it reads. None stored: an
  // empty window, complete, which this saver's next put of the namespace fills (fresh-cache.ts).
  // Only rows as the saver writes them: decoding an edited one is a clear error, copying it a TypeError.
  const asWritten = raw !== undefined && storedAsWritten(raw);
  if (!raw || asWritten) fresh?.keepPage(ctx, ticket, serde, threadId, checkpointNs, raw ? [raw] : [], undefined, !raw);
  if (!raw) return undefined;
  read?.(raw);
  if (checkpointId === undefined && asWritten) {
    const { row, blobs } = raw;
    rememberPut(
      ctx,
      threadId,
      checkpointNs,
      {
        checkpointId: row.checkpoint_id,
        createdAt: row.created_at,
        channelVersions: row.channel_versions,
        values: keptValues(serde, row.channel_versions, blobs),
        absentKeys: absentKeysOf(row),
      },
      mark,
    );
  }
  return decodeTuple(ctx, serde, raw);
}

/** True when every value `raw` holds is a `[type, bytes]` pair (what the read caches copy). @internal */
export function storedAsWritten(raw: RawTuple): boolean {
  const { row, blobs, writes } = raw;
  return (
    isTypedBytes(row.checkpoint) &&
    isTypedBytes(row.metadata) &&
    blobs.every((blob) => blob === undefined || isTypedBytes(blob.value)) &&
    writes.every((write) => isTypedBytes(write.value))
  );
}

/**
 * A namespace's newest row with its blobs and writes. When this saver put
 * (or read) that namespace's last checkpoint, its details are asked for
 * together with the row, in one round trip instead of two, and the values it
 * kept are not asked for at all; they are used only if the row found is that
 * very row (id, stamp and versions).
 */
async function readLatest(
  tx: ReadTx,
  ctx: SaverContext,
  serde: SerializerProtocol,
  threadId: string,
  checkpointNs: string,
): Promise<RawTuple | undefined> {
  const ranges = ctx.db.ranges;
  const guess = recentPut(ctx, threadId, checkpointNs);
  const kept: BlobReads = new Map();
  if (guess?.values?.serde === serde) {
    for (const [channel, blob] of guess.values.blobs) {
      kept.set(blobKey(threadId, checkpointNs, channel, guess.channelVersions[channel]!), Promise.resolve(blob));
    }
  }
  const guessed =
    guess &&
    readDetails(
      tx,
      ranges,
      {
        thread_id: threadId,
        checkpoint_ns: checkpointNs,
        checkpoint_id: guess.checkpointId,
        channel_versions: guess.channelVersions,
        absent_keys: guess.absentKeys,
      } as CheckpointRow,
      kept,
    );
  // Both settle before deciding, so neither is left to reject unheard.
  const [row, details] = await Promise.all([latestRow(tx, ranges, threadId, checkpointNs), guessed]);
  if (!row) return undefined;
  if (
    details &&
    row.checkpoint_id === guess?.checkpointId &&
    row.created_at === guess.createdAt &&
    sameVersions(row.channel_versions, guess.channelVersions) &&
    // The versions skipped as absent on the guess are still listed (prune or sync may have stored one since).
    (guess.absentKeys ?? []).every(([, , channel, version]) => isAbsent(row, channel, version))
  ) {
    return { ...details, row };
  }
  return readDetails(tx, ranges, row);
}

/** A stored checkpoint row, its blobs and writes, decoded into a tuple. */
export async function decodeTuple(
  ctx: SaverContext,
  serde: SerializerProtocol,
  raw: RawTuple,
  knownMetadata?: CheckpointMetadata,
): Promise<CheckpointTuple> {
  const { row } = raw;
  const { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } = row;
  const [stored, metadata, blobValues, pendingWrites] = await Promise.all([
    decodeCheckpoint(serde, row),
    knownMetadata ?? decodeMetadata(serde, row),
    Promise.all(raw.blobs.map((blob) => (blob ? decodeBlob(serde, blob) : undefined))),
    Promise.all(sortWrites(raw.writes).map((write) => decodeWrite(serde, write))),
  ]);
  const channelValues: Record<string, unknown> = {};
  const channels = Object.keys(row.channel_versions);
  channels.forEach((channel, i) => {
    if (raw.blobs[i]) channelValues[channel] = blobValues[i];
  });
  const checkpoint: Checkpoint = { ...stored, channel_values: channelValues } as Checkpoint;
  verifyCheckpointFields(row, checkpoint, metadata, authenticates(serde));
  if (checkpoint.v < 4 && row.parent_checkpoint_id !== undefined) {
    await migratePendingSends(ctx, serde, checkpoint, row);
  }
  const tuple: CheckpointTuple = {
    config: { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } },
    checkpoint,
    metadata,
    pendingWrites,
  };
  if (row.parent_checkpoint_id !== undefined) {
    tuple.parentConfig = {
      configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: row.parent_checkpoint_id },
    };
  }
  return tuple;
}

/**
 * Checkpoints before format v4 kept pending `Send`s as writes to TASKS on
 * the parent; v4 keeps them as a channel value. Rebuild that value on read.
 */
async function migratePendingSends(
  ctx: SaverContext,
  serde: SerializerProtocol,
  checkpoint: Checkpoint,
  row: CheckpointRow,
): Promise<void> {
  const parentId = row.parent_checkpoint_id!;
  const parentWrites = await ctx.db.read(
    ["writes"],
    (tx) => {
      const bounds = prefixBounds(row.thread_id, row.checkpoint_ns, parentId);
      return tx.objectStore("writes").getAll(ctx.db.ranges.bound(bounds.lower, bounds.upper));
    },
    "read pending sends",
  );
  const sends = sortWrites(parentWrites.filter((write) => write.channel === TASKS));
  const values = await Promise.all(sends.map(async (write) => (await decodeWrite(serde, write))[2]));
  checkpoint.channel_values[TASKS] = values;
  const versions = Object.values(checkpoint.channel_versions);
  checkpoint.channel_versions[TASKS] =
    versions.length > 0 ? maxChannelVersion(...versions) : nextChannelVersion(undefined);
}

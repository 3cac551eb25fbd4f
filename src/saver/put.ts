/**
 * `put`: a checkpoint with the channel values it changed (put-writes.ts
 * stores pending writes). Everything is serialized before the transaction
 * opens; the transaction only issues requests, its reads first (the key
 * record, the parent checkpoint's key), so a put costs one round trip, and
 * none when this saver proves both from memory (put-proof.ts). Only a put
 * whose parent is missing reads the thread's tombstone (a run still in
 * flight on a deleted thread is dropped); unless the tombstone drops it, it
 * stores every value it has, not only the changed ones, since the parent's
 * may have gone with the parent.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type { ChannelVersions, Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { putQuietly } from "../idb/requests.js";
import { checkKeyRow, type SaverContext } from "./context.js";
import { maintenance } from "./lazy.js";
import { encode, rowRef } from "../rows/codec.js";
import { withCurrentKey, type BoundSerializer } from "../serde/protocol.js";
import { INLINE_MAX, INLINE_ROW_MAX, SAVER_FORMAT } from "./schema.js";
import { isAbsent, isDeadCheckpoint, threadSummary, type BlobRow, type CheckpointRow } from "../rows/shapes.js";
import { checkVersions, putInput, serializeValues, type PutInput } from "../rows/put-input.js";
import { changeMark, keptValues, recentPut, rememberPut } from "./recent.js";
import { listAbsent } from "./absent-list.js";
import { freshModule } from "./fresh.js";
import type { PutProof } from "./put-proof.js";
import { namespaceMapKey, prefixBounds } from "./keys.js";
import { authenticates } from "./verify.js";
import { LateWrite, readTombstone, type WriteTx } from "./tombstones.js";
import { loadOnce } from "../core/tasks.js";
import { noteSealing } from "./pending-seals.js";

/** The encryption-only chunk (sealed.ts: the hash chain), loaded by the first encrypted put and kept: `import()` costs a few hops each time. */
const sealedModule = loadOnce(() => import("./sealed.js"));
/** The same, once loaded: putWrites notes the writes it committed there, for the next put's `parent_writes`. */
let sealedLoaded: typeof import("./sealed.js") | undefined;

/** The encryption-only chunk if a put has loaded it (put-writes.ts notes its writes there). @internal */
export function sealedIfLoaded(): typeof import("./sealed.js") | undefined {
  return sealedLoaded;
}

/** Stores a checkpoint and the channel values in `newVersions`; resolves once committed. */
export async function put(
  ctx: SaverContext,
  config: RunnableConfig,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  newVersions: ChannelVersions,
): Promise<RunnableConfig> {
  // Copy synchronously: the caller may reuse these objects once we await.
  const input = putInput(config, checkpoint, metadata);
  const { threadId, checkpointNs, checkpointId, parentId, withoutValues } = input;
  const storedMetadata = input.metadata;
  const versions = { ...newVersions };
  checkVersions("newVersions", versions);
  const mark = changeMark(ctx);
  const ticket = freshModule()?.ticket(ctx, threadId, checkpointNs, true);
  const token = freshModule()?.proofToken(ctx);
  // This saver's puts to the namespace in flight, this one among them (put-proof.ts).
  const nsId = namespaceMapKey(threadId, checkpointNs);
  const ownPuts = inFlight(ctx);
  ownPuts.set(nsId, (ownPuts.get(nsId) ?? 0) + 1);
  // Noted before the first await: a child put started after this one waits for this row's seal (chain.ts).
  const sealing = noteSealing(ctx, threadId, checkpointNs, checkpointId);
  // Set once the checkpoint is committed (a late write rolled back leaves it unset).
  let written: { serde: BoundSerializer["serde"]; blobs: BlobRow[]; row: CheckpointRow } | undefined;
  // On any failure, what this saver keeps of the namespace goes: the checkpoint may have committed.
  const dropKept = (error: unknown) => {
    freshModule()?.keepPut(ctx, ticket, undefined, threadId, checkpointNs);
    freshModule()?.forgetPut(ctx, threadId, checkpointNs);
    throw error;
  };
  await withCurrentKey(ctx.db.name, ctx.bind, ctx.stale, async (bound) => {
    const serde = bound.serde;
    // Binding versions 3 and 4 (chain.ts): only rows an encrypting serializer seals have a chain to check.
    const chains = authenticates(serde) ? (sealedLoaded ??= await sealedModule()) : undefined;

    // Serialize everything before the transaction opens.
    const [checkpointBytes, metadataBytes, blobs] = await Promise.all([
      // withoutValues holds a copy made before any await (putInput).
      chains
        ? undefined
        : encode(
            serde,
            "serialize the checkpoint",
            withoutValues,
            rowRef.checkpoint(threadId, checkpointNs, checkpointId, parentId),
          ),
      encode(
        serde,
        "serialize the checkpoint metadata",
        storedMetadata,
        rowRef.metadata(threadId, checkpointNs, checkpointId),
      ),
      serializeValues(serde, input, versions),
    ]);

    const row: CheckpointRow = {
      thread_id: threadId,
      checkpoint_ns: checkpointNs,
      checkpoint_id: checkpointId,
      checkpoint: checkpointBytes!,
      metadata: metadataBytes,
      channel_versions: withoutValues.channel_versions,
      created_at: 0,
    };
    if (parentId !== undefined) row.parent_checkpoint_id = parentId;
    if (typeof storedMetadata.run_id === "string") row.run_id = storedMetadata.run_id;
    // Its chain, the parent's writes it lists, and its checkpoint sealed with them.
    await chains?.seal(ctx, serde, row, withoutValues, false, sealing);
    sealing.done();
    // Set once a row found stored under another chain is sealed again over that chain (Rechain).
    let resealed = false;
    // Row format 2: small values ride in the row; the others get blob rows.
    const outside = inlineSmall(row, blobs);
    // Schema version 5: the versions it has with no stored value, its parent's (as this saver last saw
    // that row: checked against the row itself below) among them.
    const remembered = recentPut(ctx, threadId, checkpointNs);
    let carried =
      parentId !== undefined && remembered?.checkpointId === parentId
        ? ({
            thread_id: threadId,
            checkpoint_ns: checkpointNs,
            channel_versions: remembered.channelVersions,
            absent_keys: remembered.absentKeys,
          } as CheckpointRow)
        : undefined;
    // Every value this put stores, inline or not.
    let storedValues = blobs;
    listAbsent(row, input, versions, storedValues, carried);
    const markFormat = row.inline !== undefined && ctx.rowFormat !== SAVER_FORMAT;

    // What the last transaction could skip (put-proof.ts), and what it read to let later puts skip more.
    let proof: PutProof = NO_PROOF;
    let learned: Learned = {};
    /** Writes the checkpoint with `stored`; a missing parent rolls it back with ParentGone unless `everyValue`. */
    const writeCheckpoint = (stored: BlobRow[], everyValue: boolean) =>
      ctx.writes.write(
        ["checkpoints", "blobs", "threads", "meta"],
        async (tx) => {
          const checkpoints = tx.objectStore("checkpoints");
          // The versions listed as carried over from the parent without a value.
          const listed = (carried && row.absent_keys?.filter(([, , c]) => !Object.hasOwn(versions, c))) || [];
          // What the guard reads below would find and whether the summary needs writing, when this saver
          // can prove it from memory as the transaction is created: then the put issues its writes only.
          const fresh = freshModule();
          const kept =
            parentId === undefined ? undefined : fresh?.windowParent(ctx, threadId, checkpointNs, serde, parentId);
          proof = fresh?.provePut(ctx, serde, bound.keyId, row, listed, kept, (ownPuts.get(nsId) ?? 0) > 1) ?? NO_PROOF;
          const proven = proof.guard;
          // Every request goes out in this tick, the reads first: in the
          // common case (the parent there) the put costs one round trip.
          const keyRead = proven ? undefined : tx.objectStore("meta").get("key");
          // The parent's row when this one lists versions carried over from it without a value, to check them
          // against it (no request more: its result is awaited anyway); else only its key.
          const parentRead =
            parentId === undefined || proven
              ? undefined
              : checkpoints[listed.length > 0 ? "get" : "getKey"]([threadId, checkpointNs, parentId]);
          // Version 4: a row put again keeps its chain, which its children hash (chain.ts).
          const selfRead =
            row.parent_writes && !resealed ? checkpoints.get([threadId, checkpointNs, checkpointId]) : undefined;
          const blobStore = tx.objectStore("blobs");
          for (const blob of stored) putQuietly(blobStore, blob);
          // Stamped once the transaction exists: a sync round that reads after
          // it was created sees the row, and one that read before it finds a
          // later stamp (sync/changes.ts).
          const now = ctx.now();
          row.created_at = now;
          putQuietly(checkpoints, row);
          // The first format 2 row marks the database so, in its own transaction.
          if (markFormat) putQuietly(tx.objectStore("meta"), { name: "format", value: SAVER_FORMAT });
          // A stamp ahead of the clock (two within a millisecond) could be passed by another saver's summary
          // written after this put: then this one is written too, or that thread would list above this one.
          if (checkpointNs === "" && (!proof.summary || now > Date.now())) {
            putQuietly(tx.objectStore("threads"), threadSummary(threadId, now, row));
          }
          // Read after the writes, not awaited here: what later puts need to skip the summary.
          learned = learn(ctx, tx, proof, threadId);
          if (proven && !selfRead) return;
          const [key, parent, self] = await Promise.all([keyRead, parentRead, selfRead]);
          if (self && self.chain !== row.chain) throw new Rechain();
          if (proven) return;
          // Sealed under a key another tab retired: roll back, bind again.
          checkKeyRow(ctx, bound, key);
          // Listed as carried over without a value while the parent row no longer lists it: list again from it.
          if (listed.length > 0 && parent && !listed.every(([, , c, v]) => isAbsent(parent as CheckpointRow, c, v))) {
            carried = parent as CheckpointRow;
            throw new Relist();
          }
          if (parentId === undefined || parent !== undefined) return;
          // The parent is missing: deleted with its thread (then this may be a late write of a run still
          // in flight, or a child of one), with its run, or pruned; or it never existed here.
          const tombstone = await readTombstone(tx, threadId);
          if (tombstone && isDeadCheckpoint(tombstone, parentId, false)) throw new LateWrite(tombstone);
          if (!everyValue) throw new ParentGone();
        },
        "put checkpoint",
        true,
        false,
        // Its key and parent checks (made or proven) cover pending writes to the parent in its transaction (PutChecks).
        parentId === undefined ? undefined : { threadId, checkpointNs, parentId, keyId: bound.keyId },
        // It removes nothing: a put's parent and the key stay as they were (idb/database.ts).
        true,
      );

    /**
     * The same; a row stored already under another chain is sealed again over that chain, then written;
     * a row listing versions its parent row no longer lists lists them again from that row (once: then
     * none of the parent's, which is always true).
     */
    const writeRow = async (stored: BlobRow[], everyValue: boolean): Promise<void> => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await writeCheckpoint(stored, everyValue).catch(async (error: unknown) => {
            if (!(error instanceof Rechain)) throw error;
            await chains!.seal(ctx, serde, row, withoutValues, (resealed = true));
            await writeCheckpoint(stored, everyValue);
          });
        } catch (error) {
          if (!(error instanceof Relist)) throw error;
          // `carried` is now the parent row read; a second mismatch lists without the parent's.
          if (attempt > 0) carried = undefined;
          listAbsent(row, input, versions, storedValues, carried);
        }
      }
    };

    try {
      // The values this put stores: those of the channels it changed...
      let stored = outside;
      let unchanged: BlobRow[] = [];
      try {
        await writeRow(stored, false);
      } catch (error) {
        if (!(error instanceof ParentGone)) throw error;
        // ...unless its parent checkpoint is gone (another tab's deleteForRuns between this run's read
        // and this put, say), and with it maybe the values this put did not change: then all of them.
        unchanged = await serializeValues(serde, input, unchangedVersions(input, versions));
        stored = [...outside, ...unchanged];
        // The parent's list went with it: only the versions this put introduced without a value.
        carried = undefined;
        storedValues = [...blobs, ...unchanged];
        listAbsent(row, input, versions, storedValues, undefined);
        await writeRow(stored, true);
      }
      if (markFormat) ctx.rowFormat = SAVER_FORMAT;
      const fresh = freshModule();
      // Its transaction read the key record: later puts under the same lease need not.
      if (!proof.guard) fresh?.noteKey(ctx, token, serde, bound.keyId);
      const { newest, top } = await settled(learned);
      const summaryTime = checkpointNs === "" && !proof.summary ? row.created_at : undefined;
      fresh?.notePut(ctx, token, row, proof.seq, summaryTime, newest, top);
      written = { serde, blobs: [...blobs, ...unchanged], row };
    } catch (error) {
      if (!(error instanceof LateWrite)) throw error;
      // A run still in flight on a deleted thread: its checkpoint was rolled back.
      await (await maintenance()).recordLatePut(ctx, threadId, checkpointNs, checkpointId, error.tombstone);
    }
  })
    .catch(dropKept)
    .finally(() => {
      sealing.done();
      const left = (ownPuts.get(nsId) ?? 1) - 1;
      if (left > 0) ownPuts.set(nsId, left);
      else ownPuts.delete(nsId);
    });
  // Before the change notice, which would otherwise drop the namespace's entry (fresh-cache.ts).
  freshModule()?.keepPut(ctx, ticket, written, threadId, checkpointNs);
  if (written) {
    const channelVersions = withoutValues.channel_versions;
    rememberPut(
      ctx,
      threadId,
      checkpointNs,
      {
        checkpointId,
        createdAt: written.row.created_at,
        channelVersions,
        values: keptValues(written.serde, channelVersions, written.blobs),
        absentKeys: written.row.absent_keys,
      },
      mark,
    );
    ctx.feed.emit({ threadId, checkpointNs, checkpointId, kind: "put" });
  }
  return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } };
}

/** Nothing proven: every guard read made, the summary written. */
const NO_PROOF: PutProof = { guard: false, summary: false, learnNewest: false, learnTop: false, seq: undefined };

/** Reads a put's transaction issued after its writes, for later puts (see {@link learn}). */
interface Learned {
  newest?: Promise<string | undefined>;
  top?: Promise<{ threadId: string; time: number } | undefined>;
}

/**
 * Issues, after the put's writes in `tx`, the reads `proof` asks for: the
 * root namespace's newest checkpoint id and the first thread summary by
 * update time. Not awaited in the transaction (their results come before it
 * commits); a failure reads as nothing learned.
 */
function learn(ctx: SaverContext, tx: WriteTx, proof: PutProof, threadId: string): Learned {
  const learned: Learned = {};
  if (proof.learnNewest) {
    const { lower, upper } = prefixBounds(threadId, "");
    learned.newest = tx
      .objectStore("checkpoints")
      .openKeyCursor(ctx.db.ranges.bound(lower, upper), "prev")
      .then((cursor) => (cursor ? (cursor.primaryKey as string[])[2] : undefined), NOTHING);
  }
  if (proof.learnTop) {
    learned.top = tx
      .objectStore("threads")
      .index("by_updated")
      .openKeyCursor(null, "prev")
      .then((cursor) => (cursor ? { threadId: cursor.primaryKey, time: cursor.key } : undefined), NOTHING);
  }
  return learned;
}

const NOTHING = () => undefined;

/** What `learned` read (its transaction has committed, so both have settled). */
async function settled(learned: Learned) {
  const [newest, top] = await Promise.all([learned.newest, learned.top]);
  return { newest, top };
}

/** This saver's puts in flight, by namespace. */
const puts = new WeakMap<SaverContext, Map<string, number>>();
function inFlight(ctx: SaverContext): Map<string, number> {
  let map = puts.get(ctx);
  if (!map) puts.set(ctx, (map = new Map()));
  return map;
}

/**
 * Moves into `row` the values of `blobs` at the row's own versions that are
 * small (INLINE_MAX each, INLINE_ROW_MAX in all, smallest first); returns
 * the others, which keep blob rows.
 */
function inlineSmall(row: CheckpointRow, blobs: BlobRow[]): BlobRow[] {
  const outside: BlobRow[] = [];
  const inline: Record<string, BlobRow["value"]> = {};
  const keys: NonNullable<CheckpointRow["inline_keys"]> = [];
  let room = INLINE_ROW_MAX;
  for (const blob of [...blobs].sort((a, b) => a.value[1].byteLength - b.value[1].byteLength)) {
    const size = blob.value[1].byteLength;
    if (size > INLINE_MAX || size > room || row.channel_versions[blob.channel] !== blob.version) {
      outside.push(blob);
      continue;
    }
    room -= size;
    inline[blob.channel] = blob.value;
    keys.push([row.thread_id, row.checkpoint_ns, blob.channel, blob.version]);
  }
  if (keys.length > 0) {
    row.inline = inline;
    row.inline_keys = keys;
  }
  return outside;
}

/** Aborts a put listing versions its parent row no longer lists as without a value, to list again (see `put`). */
class Relist extends Error {}

/** Aborts a put whose parent checkpoint is gone, to store again with every value (see `put`). */
class ParentGone extends Error {}

/** Aborts a put of a row stored already under another chain, to seal it again over that chain (see `put`). */
class Rechain extends Error {}

/** The versions of the channels the checkpoint has but `newVersions` does not: those it carries over. */
function unchangedVersions(input: PutInput, newVersions: ChannelVersions): ChannelVersions {
  return Object.fromEntries(
    Object.entries(input.withoutValues.channel_versions).filter(([channel]) => !Object.hasOwn(newVersions, channel)),
  );
}

/**
 * `putWrites`: a task's pending writes, one row each, in a `writes`-only
 * transaction that never waits for a put. Its guards (the thread's
 * tombstone copy, the key-id copy) are rows of the same store, read in the
 * same round trip; a put sharing the transaction that checks this
 * checkpoint as its parent covers them (PutChecks, context.ts), and a saver
 * that proves them from memory skips them (put-proof.ts `proveWrites`).
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { WRITES_IDX_MAP, type PendingWrite } from "@langchain/langgraph-checkpoint";
import { issue } from "../idb/requests.js";
import type { SaverContext } from "./context.js";
import { storeWrites, type WritesStore } from "./write-rows.js";
import { maintenance } from "./lazy.js";
import { assertStorableId, configIds, missingThreadIdMessage } from "../rows/ids.js";
import { encode, rowRef } from "../rows/codec.js";
import { StaleKeyWrite, checkKeyId, withCurrentKey, type BoundSerializer } from "../serde/protocol.js";
import { KEY_ID_WRITE_KEY, tombstoneWriteKey, type WriteRow } from "../rows/shapes.js";
import { freshModule } from "./fresh.js";
import { LateWrite, asTombstone } from "./tombstones.js";
import { sealedIfLoaded } from "./put.js";

/** Stores a task's pending writes (first wins, special channels replace); resolves once committed. */
export async function putWrites(
  ctx: SaverContext,
  config: RunnableConfig,
  writes: PendingWrite[],
  taskId: string,
  taskPath = "",
): Promise<void> {
  const configurable = config.configurable ?? {};
  if (configurable.thread_id === undefined) throw new Error(missingThreadIdMessage("put writes"));
  if (configurable.checkpoint_id === undefined) {
    throw new Error(
      `Failed to put writes. The passed RunnableConfig is missing a required "checkpoint_id" field in its "configurable" property.`,
    );
  }
  const { threadId, checkpointNs, checkpointId } = configIds(config, "put writes");
  if (checkpointId === undefined) throw new Error(`Failed to put writes: "checkpoint_id" is empty.`);
  assertStorableId("thread_id", threadId);
  assertStorableId("checkpoint_ns", checkpointNs, { allowEmpty: true });
  assertStorableId("checkpoint_id", checkpointId);
  assertStorableId("task_id", taskId);
  if (typeof taskPath !== "string") throw new Error(`Invalid task path: expected a string, got ${typeof taskPath}.`);
  assertStorableId("task_path", taskPath, { allowEmpty: true });
  if (writes.length === 0) return;
  const ticket = freshModule()?.ticket(ctx, threadId, checkpointNs, true);
  const token = freshModule()?.proofToken(ctx);
  await withCurrentKey(ctx.db.name, ctx.bind, ctx.stale, async (bound) => {
    const serde = bound.serde;

    const rows = await Promise.all(
      writes.map(async ([channel, value], position): Promise<WriteRow> => {
        assertStorableId("channel", channel);
        const idx = WRITES_IDX_MAP[channel] ?? position;
        return {
          thread_id: threadId,
          checkpoint_ns: checkpointNs,
          checkpoint_id: checkpointId,
          task_id: taskId,
          idx,
          channel,
          task_path: taskPath,
          value: await encode(
            serde,
            `serialize a write to "${channel}"`,
            value,
            rowRef.write(threadId, checkpointNs, checkpointId, taskId, idx, channel, taskPath),
          ),
        };
      }),
    );
    // Set when the last run of the transaction's work read the tombstone copy (and found none, or it threw).
    let checked = false;
    // Runs of the work so far: the first commits without waiting for the adds (see `settled`).
    let runs = 0;
    // Fast path: the writes store alone, so this never waits for a put.
    const write = () =>
      ctx.writes.write(
        ["writes"],
        async (tx, notes) => {
          const early = !runs++;
          const store = tx.objectStore("writes");
          // A put in this transaction checks the key and this checkpoint as its parent (PutChecks).
          const covered = notes.some(
            (put) =>
              put?.parentId === checkpointId &&
              put.threadId === threadId &&
              put.checkpointNs === checkpointNs &&
              put.keyId === bound.keyId,
          );
          checked = false;
          if (covered || proven(ctx, bound, threadId, checkpointNs, checkpointId)) {
            return settled(storeWrites(store, rows, ctx.writeTime()), early);
          }
          checked = true;
          const guardRead = readGuards(tx, store, threadId);
          const stored = storeWrites(store, rows, ctx.writeTime());
          issue(stored); // awaited below, unless the key or the tombstone aborts first
          const [tombstoneRow, keyCopy] = await guardRead;
          checkWriteKey(bound, keyCopy);
          const tombstone = asTombstone(tombstoneRow?.tombstone, threadId);
          // A deleted thread: roll back and take the careful path.
          if (tombstone) throw new LateWrite(tombstone);
          return settled(stored, early);
        },
        "put writes",
        true,
        // The checkpoint of this superstep usually follows: share its commit.
        true,
        undefined,
        // Pending writes remove no checkpoint and leave the key as it is.
        true,
      );
    try {
      // A first attempt that failed, maybe for its early commit (see `settled`), runs once more, waiting;
      // so does one that failed before its work ran (no transaction: `runs` is set for the retry). Not
      // retried: a rerun by the batcher (its shared transaction failed; the rerun waited already), and a
      // deleted thread or a key change that the write's own transaction found (the careful path below).
      // Its results are settled with the transaction, which has committed.
      const [stored] = await write().catch((error: unknown) => {
        if (runs > 1 || error instanceof LateWrite || error instanceof StaleKeyWrite) throw error;
        runs = 1;
        return write();
      });
      const added = await stored;
      freshModule()?.keepWrites(ctx, ticket, rows, true);
      // No tombstone of the thread: later writes to it need not read again (put-proof.ts).
      if (checked) freshModule()?.noteLive(ctx, token, threadId);
      // For the `parent_writes` of its children (binding version 4, encrypting savers: only they load
      // sealed.ts): the writes stored, not those a first write kept out.
      sealedIfLoaded()?.noteWrites(ctx, rows, added);
    } catch (error) {
      // The key-id copy disagreed (another tab changed the key, or the copy
      // was altered): the careful path asks the key record itself.
      if (!(error instanceof LateWrite) && !(error instanceof StaleKeyWrite)) throw error;
      // Rare: a deleted thread, a key change.
      await (await maintenance()).putWritesCarefully(ctx, bound, rows);
      // Maybe dropped (a deleted thread's): the entry is dropped rather than guessed.
      freshModule()?.keepWrites(ctx, ticket, rows, false);
    }
  }).catch((error: unknown) => {
    // The writes may have committed all the same.
    freshModule()?.forgetFailed(ctx, threadId, checkpointNs, checkpointId);
    throw error;
  });
}

/**
 * The end of putWrites' work in the transaction: its rows' results (one
 * each, `false` for a write a first one kept out), boxed so that the work
 * does not wait for them. A first run ends as soon as its requests are out
 * (after the guard reads' answers, when it makes them), so the transaction
 * commits without a round trip to the main thread for the adds' results (in
 * a graph run that thread is busy, and the put sharing the transaction waits
 * too; see docs/benchmarks.md, "The tool loop against sqlite-wasm"). A retry
 * waits for them: Chromium aborts a transaction committed while an add is in
 * flight that it then refuses (its key taken: a regular write kept out by
 * the first one), though the refusal's error event is prevented
 * (UnknownError, seen with Chromium 156). So a first attempt that failed
 * runs once more, waiting.
 */
function settled(stored: Promise<unknown[]>, early: boolean): [Promise<unknown[]>] | Promise<[Promise<unknown[]>]> {
  issue(stored);
  return early ? [stored] : stored.then(() => [stored]);
}

/** Whether this saver proves the guards from memory as the transaction is created (put-proof.ts `proveWrites`). */
function proven(ctx: SaverContext, bound: BoundSerializer, threadId: string, ns: string, checkpointId: string) {
  const fresh = freshModule();
  const inWindow = () => fresh?.windowParent(ctx, threadId, ns, bound.serde, checkpointId) !== undefined;
  return fresh?.proveWrites(ctx, bound.serde, bound.keyId, threadId, ns, checkpointId, inWindow) ?? false;
}

/** The guard reads issued in each transaction, by thread (see {@link readGuards}). */
const guardReads = new WeakMap<object, Map<string, Promise<[WriteRow | undefined, WriteRow | undefined]>>>();

/**
 * The thread's tombstone copy and the key-id copy, read in one round trip
 * (neither rejection left unhandled), once for every putWrites sharing `tx`:
 * no write the batcher merges changes either copy (those writes run in
 * transactions of their own), so a second read would return the same rows.
 */
function readGuards(tx: object, store: WritesStore, threadId: string) {
  let reads = guardReads.get(tx);
  if (!reads) guardReads.set(tx, (reads = new Map()));
  let read = reads.get(threadId);
  if (!read) {
    read = Promise.all([store.get(tombstoneWriteKey(threadId)), store.get(KEY_ID_WRITE_KEY)]);
    reads.set(threadId, read);
  }
  return read;
}

/**
 * Checks the key-id copy read in a `writes`-only transaction. A database
 * without one (written by an older version, no key change since) is taken
 * as is: `put` checks the key record itself.
 */
function checkWriteKey(bound: BoundSerializer, copy: WriteRow | undefined): void {
  checkKeyId(bound, copy ? copy.key_id : bound.keyId);
}

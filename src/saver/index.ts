/**
 * `IndexedDBSaver`: LangGraph's checkpoint saver on IndexedDB, as a thin
 * facade. Every method is a short delegate to a function of this folder that
 * takes the saver's context (database, write batcher, change feed, bound
 * serializer); those functions never call back into the class.
 *
 * What lives here: the saver (get, list, put, tombstones, threads, delta
 * history, prune, runs, copy, rekey), its schema, keys and row codecs. It may
 * import idb/, serde/, journal/ (types; the journal itself loads on demand),
 * core/, and portable/ only through `import()`.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type DeltaChannelHistory,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { JournalSeam, RecoveryReport } from "../journal/index.js";
import type { ExportThreadOptions } from "../portable/index.js";
import { MsgpackSerializer } from "../serde/msgpack/index.js";
import type { ChangeKeyOptions } from "../serde/rekey.js";
import { createSaverDatabase } from "./database.js";
import { registerContext } from "./registry.js";
import { createSaverContext, type SaverContext } from "./context.js";
import type { ChangeListener } from "./events.js";
import { getTuple } from "./get.js";
import { put } from "./put.js";
import { putWrites } from "./put-writes.js";
import { forgetRecent } from "./recent.js";
import { closeLease, freshModule } from "./fresh.js";
import type {
  DeleteForRunsOptions,
  IndexedDBSaverParams,
  ListThreadsOptions,
  ListedThread,
  PruneOptions,
  ThreadInfo,
} from "./types.js";
import { nextChannelVersion } from "../rows/versions.js";
import { loadOnce } from "../core/tasks.js";
import { list } from "./list.js";
import { maintenance } from "./lazy.js";
import { offerTaskPaths } from "../core/task-paths.js";

/** A checkpoint of a thread: its namespace and id. */
type Checkpointed = readonly [checkpointNs: string, checkpointId: string];

/** The delta-channel walk, loaded by the first walk of any saver and kept. */
const deltaModule = loadOnce(() => import("./delta-history.js"));
const exportModule = loadOnce(() => import("../portable/export.js"));

export type {
  IndexedDBSaverParams,
  DeltaChannelLike,
  PruneOptions,
  DeleteForRunsOptions,
  ListThreadsOptions,
  ListedThread,
  ThreadInfo,
} from "./types.js";

/**
 * A LangGraph.js checkpoint saver that persists in the browser's IndexedDB.
 *
 * Checkpoints are keyed `[thread_id, checkpoint_ns, checkpoint_id]`, channel
 * values are stored once per version, and pending writes are indexed by
 * channel for a fast delta-channel history walk.
 *
 * @example
 * ```ts
 * import { StateGraph, MessagesAnnotation } from "@langchain/langgraph/web";
 * import { IndexedDBSaver } from "langgraph-checkpoint-indexeddb";
 *
 * const checkpointer = new IndexedDBSaver({ dbName: "my-app" });
 * const graph = new StateGraph(MessagesAnnotation)
 *   .addNode("agent", callModel)
 *   .addEdge("__start__", "agent")
 *   .compile({ checkpointer });
 * await graph.invoke({ messages: [new HumanMessage("hi")] }, { configurable: { thread_id: "t1" } });
 * ```
 */
export class IndexedDBSaver extends BaseCheckpointSaver<number> {
  readonly #journal: JournalSeam;
  readonly #ctx: SaverContext;
  /** The serializer as given (`serde` becomes the database's once open): exports use it. */
  #given: SerializerProtocol | undefined;

  constructor(params: IndexedDBSaverParams = {}) {
    super(params.serde ?? new MsgpackSerializer());
    this.#given = params.serde;
    const { db, journal } = createSaverDatabase(params);
    this.#journal = journal;
    this.#ctx = createSaverContext(db, { get: () => this.serde, set: (serde) => (this.serde = serde) });
    registerContext(this, this.#ctx);
    if (params.journal !== undefined && params.journal !== "off") {
      // What another tab deletes or re-encrypts must leave this journal too, as this saver's own deletes and key
      // changes do: a restore after a wipe would bring it back, and the retired key's ciphertext would stay.
      const purge = () => void journal.purge();
      this.#ctx.feed.subscribe((change) => change.remote && change.kind !== "put" && change.kind !== "copy" && purge());
      this.#ctx.feed.onKeyChange(purge);
    }
    offerTaskPaths(this, [
      async (threadId) => (await maintenance()).taskPathReader(this.#ctx, threadId),
      IndexedDBSaver.prototype.getTuple,
    ]);
  }

  /** The IndexedDB database name. */
  get dbName(): string {
    return this.#ctx.db.name;
  }

  /**
   * Opens the database (restoring it from the journal if it lost writes) and
   * tells what was found: `"restored"`, `"wiped"` (emptied, nothing to
   * restore from), `"ok"`, or `"journal-unavailable"`.
   */
  recovery(): Promise<RecoveryReport> {
    return this.#journal.recovery();
  }

  /** Rewrites the journal as one snapshot of the database (it also compacts itself as it grows). */
  compactJournal(): Promise<void> {
    return this.#journal.compact();
  }

  /**
   * Opens the database and checks the serializer against it now, instead of
   * on first use: with an EncryptedSerializer, a wrong passphrase or key
   * rejects here with `DecryptionError` ("Wrong passphrase or key"), before
   * any row is read. For unlock screens.
   */
  async unlock(): Promise<void> {
    await this.#ctx.serde();
  }

  /**
   * Changes the passphrase or key of an encrypted database: `next` (an
   * EncryptedSerializer with the new passphrase or key) takes over, and the
   * data key is rotated: a fresh one, wrapped only under `next`'s key, and
   * every stored value re-encrypted under it (as {@link rekey} does). So
   * neither the old passphrase nor any old copy of the key record (a
   * backup, the journal, disk residue) decrypts the database's values
   * afterwards, including any written later. Takes time in proportion to the
   * database's size; if interrupted, every value still reads with `next`,
   * and calling `changeKey(next)` (or `rekey()` on a saver opened with
   * `next`) again finishes the job.
   *
   * `{ rewrapOnly: true }` only re-wraps the data key (instant whatever the
   * size): the old passphrase no longer opens the database's current key
   * record, but with an old copy of that record it still decrypts every
   * value, old and new. Other tabs must reopen with the new passphrase: their writes fail with
   * `KeyChangedError`, nothing written under a retired key.
   *
   * @example
   * await saver.changeKey(await EncryptedSerializer.fromPassphrase(newPassphrase, { salt }));
   */
  async changeKey(next: SerializerProtocol, options?: ChangeKeyOptions): Promise<void> {
    const { changeKey } = await maintenance();
    await changeKey(this.#ctx, next, options);
    this.#given = next;
  }

  /**
   * Re-encrypts every stored value under a fresh random data key (the key
   * rows are sealed with; the passphrase is unchanged). With
   * `allowPlaintext: true`, it also encrypts values stored before encryption
   * was turned on, finishing a migration. Safe to interrupt: every value
   * stays readable, and a second call finishes the job. One key change runs
   * at a time (a Web Lock); other tabs' savers re-encrypt their next writes
   * under the new key (docs/encryption.md, "Other tabs during a key change").
   */
  async rekey(): Promise<void> {
    const { rekey } = await maintenance();
    return rekey(this.#ctx);
  }

  /**
   * Channel versions unique across forks: the integer part counts, a random
   * fraction tells branches apart (see rows/versions.ts).
   */
  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current as number | string | undefined);
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return getTuple(this.#ctx, config);
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    // In the saver's first chunk: a chat lists its history before its first answer.
    yield* list(this.#ctx, config, options);
  }

  override put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    return put(this.#ctx, config, checkpoint, metadata, newVersions);
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    return putWrites(this.#ctx, config, writes, taskId, taskPath);
  }

  override async deleteThread(threadId: string): Promise<void> {
    return (await maintenance()).deleteThread(this.#ctx, threadId);
  }

  /**
   * The thread as a versioned, self-describing file (every namespace,
   * checkpoint, channel value and pending write), for `importThread` into
   * this or any other `BaseCheckpointSaver`. See docs/export-format.md.
   * Encoded with the saver's own serializer unless `serde` says otherwise:
   * an encrypted saver writes an encrypted file (import it with the same
   * `EncryptedSerializer`); `unencrypted: true` writes plaintext instead.
   */
  exportThread(threadId: string, options: ExportThreadOptions & { as: "bytes" }): Promise<Uint8Array>;
  exportThread(threadId: string, options?: ExportThreadOptions & { as?: "blob" }): Promise<Blob>;
  async exportThread(
    threadId: string,
    options: ExportThreadOptions & { as?: "blob" | "bytes" } = {},
  ): Promise<Blob | Uint8Array> {
    // The export format loads on demand: apps that never export don't ship it.
    const { exportThread } = await exportModule();
    // An encrypted saver exports encrypted unless told otherwise, explicitly.
    options = { ...options, serde: options.serde ?? (options.unencrypted ? undefined : this.#given) };
    return options.as === "bytes"
      ? exportThread(this, threadId, { ...options, as: "bytes" })
      : exportThread(this, threadId, { ...options, as: "blob" });
  }

  /**
   * Forgets that `threadId` was deleted: writes whose parents predate the
   * delete are accepted again. `importThread` calls it to restore a thread
   * (a pruned thread's oldest checkpoint points to a parent that is gone).
   * Only call it when no run of the deleted thread is still going.
   */
  async clearTombstone(threadId: string): Promise<void> {
    return (await maintenance()).clearTombstone(this.#ctx, threadId);
  }

  /**
   * `importThread`'s replace (saver/replace-marks.ts): without `replaced`,
   * the checkpoints (namespace, id) `threadId` holds, read before the
   * delete; with it, once the import is written, marks removed those the
   * import did not write again, as `prune` does, so that neither another
   * tab's crash journal nor sync brings them back. @internal
   */
  async markReplaced(threadId: string, replaced?: readonly Checkpointed[]): Promise<Checkpointed[]> {
    return (await maintenance()).markReplaced(this.#ctx, threadId, replaced);
  }

  /**
   * Copies a whole thread (every namespace, checkpoint, channel value and
   * pending write) to `targetThreadId`, keeping checkpoint ids, parent links
   * and metadata. The source is untouched; an unknown source copies nothing.
   * The target must not have checkpoints yet. Values bound to their row (an
   * encrypting serializer) are re-encrypted for the target's rows first; the
   * copy itself is one transaction.
   */
  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    const { copyThread } = await maintenance();
    return copyThread(this.#ctx, sourceThreadId, targetThreadId);
  }

  /**
   * Shrinks threads. `"keep_latest"` (the default) keeps the newest
   * checkpoint of every namespace (or the newest `keepLast`), with its
   * pending writes and the channel values it uses, and deletes the rest;
   * `"delete"` deletes the threads (`deleteThread`).
   *
   * Delta channels (`MessagesDeltaValue`) are never emptied: their value
   * lives in ancestors' writes. Pass the graph's channels (`{ channels:
   * graph.channels }`) and the kept checkpoint gets a `DeltaSnapshot` of the
   * rebuilt value, so its ancestors can go; without them the ancestors back
   * to the nearest snapshot are kept.
   */
  async prune(threadIds: string[], options?: PruneOptions): Promise<void> {
    const { prune } = await maintenance();
    return prune(this.#ctx, threadIds, options);
  }

  /**
   * Deletes the checkpoints whose `metadata.run_id` is one of `runIds`, in
   * every thread and namespace, with their pending writes and the channel
   * values only they use. Finds them through the run index (no scan).
   *
   * @param options.threadId Only this thread's checkpoints (run ids may repeat across threads).
   * @param options.channels The graph's channels: checkpoints left after the deleted ones keep their delta
   *   channels' history from before them (a `DeltaSnapshot` each).
   */
  async deleteForRuns(runIds: string[], options?: DeleteForRunsOptions): Promise<void> {
    const { deleteForRuns } = await maintenance();
    return deleteForRuns(this.#ctx, runIds, options);
  }

  /**
   * The threads of this database, most recently updated first, one entry
   * each, from the `threads` store: the cost is the page and the checkpoints
   * of the threads on it (each `checkpointCount` counts its thread's rows),
   * not the rest of the database.
   *
   * @param options.limit At most this many threads.
   * @param options.offset Skip this many first.
   * @param options.before Only threads last updated strictly before this time (ms).
   * @param options.filter Strict equality on the latest checkpoint's metadata.
   * @param options.count `false`: without `checkpointCount`, so the cost is the page alone.
   */
  listThreads(options?: ListThreadsOptions & { count?: true }): AsyncGenerator<ThreadInfo>;
  listThreads(options: ListThreadsOptions): AsyncGenerator<ListedThread>;
  async *listThreads(options?: ListThreadsOptions): AsyncGenerator<ListedThread> {
    const { listThreads } = await maintenance();
    yield* listThreads(this.#ctx, options);
  }

  /**
   * The delta-channel history walk in one read-only transaction: parent links
   * from the checkpoint rows, seeds from the blobs, and each channel's writes
   * in one range read of the writes index.
   */
  override async getDeltaChannelHistory(options: {
    config: RunnableConfig;
    channels: string[];
  }): Promise<Record<string, DeltaChannelHistory>> {
    // Lazy: only graphs with delta channels walk (and keep walks). Imported once: getStateHistory asks
    // for every snapshot, and importing at each call took half of a 100-turn history (97 -> 48 ms).
    const { getDeltaChannelHistory } = await deltaModule();
    return getDeltaChannelHistory(this.#ctx, options);
  }

  /** Closes the database connection; the next call reopens it. */
  async close(): Promise<void> {
    this.#ctx.feed.close();
    // Other tabs' notices no longer arrive: what the latest reads kept may go stale.
    forgetRecent(this.#ctx);
    // Nothing answered from memory once the lease is let go (another saver may write).
    freshModule()?.closeFresh(this.#ctx);
    closeLease(this.#ctx.db);
    // Bind again on reopen (and listen for key changes again).
    this.#ctx.unbind();
    await this.#ctx.db.close();
  }

  /**
   * Listens to changes of this database: every put, delete, copy, prune and
   * deleteForRuns, made by this saver, another saver on the same database in
   * this page, or another tab of the same origin (over a BroadcastChannel).
   *
   * @returns A function that stops listening.
   */
  subscribe(listener: ChangeListener): () => void {
    return this.#ctx.feed.subscribe(listener);
  }
}

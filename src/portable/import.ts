/** Importing (and validating) a thread file into any saver. */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  writesSortKey,
  type BaseCheckpointSaver,
  type Checkpoint,
  type CheckpointPendingWrite,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { MsgpackSerializer } from "../serde/msgpack/index.js";
import { type BlobRecord, type CheckpointRecord, KIND, readAll } from "./format.js";
import type { IfThreadExists, ImportThreadOptions, ImportThreadResult, ThreadExportInput } from "./options.js";
import { ThreadImportError } from "./errors.js";
import { decodeRecord } from "./frames.js";
import { checkTargetThreadId, validate, type ValidFile } from "./validate.js";
import { holdingThread } from "./thread-lock.js";
import { exportThread, isChangedDuringExport } from "./export.js";
import { errorMessage } from "../core/guards.js";
import { blobIdentity, checkpointIdentity } from "../core/identity.js";
// ------------------------------------------------------------------ import

/**
 * Imports an exported thread into any checkpoint saver.
 *
 * The whole file is read and validated first (signature, format and
 * version, CRC, every record decoded, every reference resolved); a file that
 * fails is rejected with a `ThreadFileError` before anything is
 * written. Then each checkpoint is `put` in file order (parent first), with
 * `newVersions` naming the channel versions not written before (so
 * blob-per-version savers such as Postgres store every value once; a fork's
 * value under a version another branch used for another value gets a version
 * of its own, see reversion.ts), followed by its pending writes, one `putWrites` per task in the order the source
 * returned them. If a write fails, the thread is deleted again when the
 * import created it (or replaced it) and a {@link ThreadImportError} is thrown.
 *
 * Into an IndexedDBSaver, the import holds the thread's run lock (runOnThread's)
 * from its first read of the thread to its last write: a thread running in a
 * tab or worker is refused (ThreadImportError, nothing changed), and a run
 * started meanwhile waits (`"enqueue"`) or is refused (`"reject"`).
 *
 * Pending writes keep their source order: when that order is not the task-id
 * order, each task's writes are given a task path (`"~import:000001"`, ...)
 * that sorts like the source, which savers ordering by `(task_path, task_id, idx)`
 * (IndexedDBSaver, MemorySaver) honour; SQLite and Postgres order by task id.
 *
 * @param saver The target saver.
 * @param file The file, as a Blob, bytes or a stream.
 * @param options `targetThreadId`, `ifExists`, `serde`, `onProgress`, `signal`.
 * @returns The thread id written and the counts.
 */
export async function importThread(
  saver: BaseCheckpointSaver,
  file: ThreadExportInput,
  options: ImportThreadOptions = {},
): Promise<ImportThreadResult> {
  const serde = options.serde ?? new MsgpackSerializer();
  const ifExists = options.ifExists ?? "error";
  if (!["error", "replace", "merge"].includes(ifExists)) {
    throw new TypeError(
      `importThread: ifExists must be "error", "replace" or "merge", not ${JSON.stringify(ifExists)}.`,
    );
  }
  options.signal?.throwIfAborted();
  const valid = await validate(await readAll(file), serde, options.signal, options.refuseJson);
  const threadId = options.targetThreadId ?? valid.header.threadId;
  checkTargetThreadId(threadId, "importThread");
  return holdingThread(
    saver,
    threadId,
    () => writeThread(saver, valid, threadId, { ...options, serde, ifExists }),
    () => {
      throw new ThreadImportError(
        `importThread: thread "${threadId}" is running in a tab or worker (runOnThread holds it). Nothing was changed: import again when the run has ended.`,
        { threadId, written: 0, rolledBack: false },
      );
    },
  );
}

/** The import of a validated file, the thread held. */
async function writeThread(
  saver: BaseCheckpointSaver,
  valid: ValidFile,
  threadId: string,
  options: ImportThreadOptions & { serde: SerializerProtocol; ifExists: IfThreadExists },
): Promise<ImportThreadResult> {
  const { serde, ifExists, signal, onProgress } = options;
  const { header, counts } = valid;
  const exists = await threadExists(saver, threadId);
  if (exists && ifExists === "error") {
    throw new ThreadImportError(
      `importThread: thread "${threadId}" already has checkpoints in the target saver. Pass targetThreadId to import under another id, or ifExists: "replace" | "merge".`,
      { threadId, written: 0, rolledBack: false },
    );
  }
  // A replace keeps a copy of the thread it replaces (in memory, as an export), to put it back
  // if a write fails or the import is stopped midway. A thread that cannot be exported (values
  // `serde` cannot encode, rows altered outside its saver) is replaced without one, as before.
  let replaced: Uint8Array | undefined;
  // An IndexedDBSaver marks the replaced checkpoints the file does not hold removed once the import is
  // written (see below): the delete's tombstone is lifted next, and nothing else would tell of the delete.
  const marking = saver as BaseCheckpointSaver & Partial<ReplaceMarks>;
  let previous: (readonly [string, string])[] = [];
  if (exists && ifExists === "replace") {
    replaced = await exportThread(saver, threadId, { as: "bytes", serde }).catch((error: unknown) => {
      // Another writer (a run in another tab) is busy on the thread: replacing it now would delete
      // its writes without a copy, and that run would go on writing into the imported thread.
      if (!isChangedDuringExport(error)) return undefined;
      throw new ThreadImportError(
        `importThread: thread "${threadId}" changed while it was copied before being replaced (a run is writing to it?). Nothing was changed: import again when no run writes to it.`,
        { threadId, written: 0, rolledBack: false, cause: error },
      );
    });
    // Stopped while the copy was read: nothing is deleted yet, so nothing needs putting back.
    signal?.throwIfAborted();
    if (typeof marking.markReplaced === "function") previous = await marking.markReplaced(threadId);
    await saver.deleteThread(threadId);
  }
  const owned = !exists || ifExists === "replace";
  // A saver that keeps tombstones of deleted threads (IndexedDBSaver) would
  // drop checkpoints whose parents predate the delete: a restore is not a
  // late write of a run in flight, so lift the tombstone first.
  const revivable = saver as BaseCheckpointSaver & { clearTombstone?: (threadId: string) => Promise<void> };
  if (typeof revivable.clearTombstone === "function") await revivable.clearTombstone(threadId);

  let written = 0;
  try {
    onProgress?.({ checkpoints: 0, total: counts.checkpoints });
    /** The last checkpoint written in each namespace. */
    const lastInNamespace = new Map<string, string>();
    /** Last decoded value of each `(ns, channel)`: consecutive checkpoints share most values. */
    const recent = new Map<string, { key: string; value: unknown }>();
    for (const ref of valid.frames) {
      if (ref.kind !== KIND.CHECKPOINT) continue;
      signal?.throwIfAborted();
      const record = (await decodeRecord(serde, header, ref)) as CheckpointRecord;
      const { ns, id } = record;
      const fileVersions = record.checkpoint.channel_versions ?? {};
      const values: Record<string, unknown> = {};
      for (const channel of record.blobs) {
        const key = blobIdentity(ns, channel, fileVersions[channel]!);
        const slot = `${ns}\u0000${channel}`;
        let cached = recent.get(slot);
        if (cached?.key !== key) {
          const blob = (await decodeRecord(serde, header, valid.blobs.get(key)!)) as BlobRecord;
          cached = { key, value: blob.value };
          recent.set(slot, cached);
        }
        values[channel] = cached.value;
      }
      for (const channel of Object.keys(record.values)) values[channel] = record.values[channel];

      // The target's versions, planned by validation: a fork's value under a version another
      // branch used gets its own (reversion.ts).
      const planned = valid.plans.get(checkpointIdentity(ns, id))!;
      const config: RunnableConfig = {
        configurable: {
          thread_id: threadId,
          checkpoint_ns: ns,
          ...(record.parent !== null ? { checkpoint_id: record.parent } : {}),
        },
      };
      const checkpoint = {
        ...record.checkpoint,
        channel_versions: planned.channelVersions,
        versions_seen: planned.versionsSeen,
        channel_values: values,
      } as Checkpoint;
      await saver.put(config, checkpoint, record.metadata, planned.newVersions);

      const target: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } };
      for (const group of taskGroups(record.writes, valid.taskPaths.get(checkpointIdentity(ns, id)))) {
        await saver.putWrites(target, group.writes, group.taskId, group.taskPath);
      }
      written += 1;
      lastInNamespace.set(ns, id);
      onProgress?.({ checkpoints: written, total: counts.checkpoints });
    }
    // A saver may drop a checkpoint without failing (IndexedDBSaver ignores
    // late writes to a deleted thread, and then their descendants): check that
    // the last one of each namespace arrived.
    for (const [ns, id] of lastInNamespace) {
      const tuple = await saver.getTuple({
        configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id },
      });
      if (!tuple) {
        throw new Error(
          `the target saver did not keep checkpoint ${id} (namespace "${ns}") although put() succeeded; a saver that drops late writes to a deleted thread does this`,
        );
      }
    }
  } catch (error) {
    let rolledBack = false;
    if (owned) {
      try {
        await saver.deleteThread(threadId);
        rolledBack = true;
      } catch {
        // Reported through rolledBack: the original failure matters more.
      }
    }
    let restored = false;
    let putBackError = "";
    if (rolledBack && replaced) {
      try {
        // Not importThread: this import holds the thread, and would refuse itself.
        const copy = await validate(replaced, serde);
        await writeThread(saver, copy, threadId, { serde, ifExists: "error" });
        restored = true;
      } catch (putBack) {
        putBackError = errorMessage(putBack);
      }
    }
    const reason = errorMessage(error);
    // A copy not put back stays on the error (`replaced`): dropping it would lose the thread.
    const keptCopy = " Its copy is the error's `replaced` (an export file): import or save it, or it is lost.";
    const replacedText = !exists
      ? ""
      : restored
        ? " The thread it replaced was put back as it was."
        : replaced
          ? ` Putting back the thread it replaced failed (${putBackError}).${keptCopy}`
          : " The thread it replaced could not be copied first (it did not export) and is lost.";
    throw new ThreadImportError(
      `importThread: writing thread "${threadId}" failed after ${written} of ${counts.checkpoints} checkpoints: ${reason}. ` +
        (rolledBack
          ? `The partly imported thread was deleted again.${replacedText}`
          : owned
            ? `Deleting the partly imported thread failed too: delete it before retrying.${replaced ? ` The thread it replaced was not put back.${keptCopy}` : ""}`
            : 'The thread existed before (ifExists: "merge") and may now be partly imported.'),
      { threadId, written, rolledBack, restored, ...(replaced && !restored ? { replaced } : {}), cause: error },
    );
  }
  // After the last write: a failed import puts the replaced thread back, which must keep no mark.
  if (previous.length > 0) await marking.markReplaced!(threadId, previous);
  return { threadId, header, ...counts };
}

/** What an IndexedDBSaver offers an import that replaces a thread (its @internal methods). */
interface ReplaceMarks {
  markReplaced(
    threadId: string,
    replaced?: readonly (readonly [string, string])[],
  ): Promise<(readonly [string, string])[]>;
}

/** One `putWrites` call: a task's writes, regular ones first so their idx stays their position. */
export interface TaskGroup {
  taskId: string;
  taskPath: string;
  writes: PendingWrite[];
}

/**
 * Groups pending writes by task, in the order they came. A task gets its
 * writes' path from the file (`paths`, parallel to `writes`: its first
 * write's, since one `putWrites` carries one path). Without paths, when the
 * order is not the task-id order, each group gets a task path that sorts like it.
 */
export function taskGroups(writes: CheckpointPendingWrite[], paths?: string[]): TaskGroup[] {
  const byTask = new Map<string, CheckpointPendingWrite[]>();
  const pathOf = new Map<string, string>();
  for (const [i, write] of writes.entries()) {
    const list = byTask.get(write[0]);
    if (list) list.push(write);
    else byTask.set(write[0], [write]);
    if (paths && !pathOf.has(write[0])) pathOf.set(write[0], paths[i]!);
  }
  const taskIds = [...byTask.keys()];
  const inIdOrder = taskIds.every(
    (taskId, i) => i === 0 || compareWritesSortKeys(writesSortKey("", taskIds[i - 1]!), writesSortKey("", taskId)) < 0,
  );
  const width = Math.max(6, String(taskIds.length).length);
  return taskIds.map((taskId, i) => {
    const list = byTask.get(taskId)!;
    const special = (write: CheckpointPendingWrite) => Object.hasOwn(WRITES_IDX_MAP, write[1]);
    const ordered = [...list.filter((write) => !special(write)), ...list.filter(special)];
    return {
      taskId,
      taskPath: pathOf.get(taskId) ?? (inIdOrder ? "" : `~import:${String(i).padStart(width, "0")}`),
      writes: ordered.map(([, channel, value]): PendingWrite => [channel, value]),
    };
  });
}

/** True when the saver has any checkpoint of the thread, in any namespace. */
export async function threadExists(saver: BaseCheckpointSaver, threadId: string): Promise<boolean> {
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } }, { limit: 1 })) {
    void tuple;
    return true;
  }
  return false;
}

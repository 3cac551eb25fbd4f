/** Copying threads between any two savers. */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { CopyThreadsOptions, CopyThreadsResult } from "./options.js";
import { exportThread } from "./export.js";
import { importThread } from "./import.js";
// ------------------------------------------------------------------ copy

/**
 * Copies threads from one saver to another, each through the export format
 * (so the copy is exactly what an export and import would give), one after
 * the other. Checkpoint ids, namespaces, parent links and metadata are kept.
 *
 * @example
 * ```ts
 * // The user outgrew the browser: move every thread to the server's Postgres.
 * await copyThreads(new IndexedDBSaver({ dbName: "my-app" }), postgresSaver);
 * ```
 * @throws ThreadImportError (the failing thread is removed from the target;
 *   threads copied before it stay) or ThreadExportError.
 */
export async function copyThreads(
  from: BaseCheckpointSaver,
  to: BaseCheckpointSaver,
  options: CopyThreadsOptions = {},
): Promise<CopyThreadsResult> {
  const threadIds = options.threadIds ?? (await allThreadIds(from, options.signal));
  const result: CopyThreadsResult = { threads: [] };
  for (const [index, sourceThreadId] of threadIds.entries()) {
    options.signal?.throwIfAborted();
    const file = await exportThread(from, sourceThreadId, {
      as: "bytes",
      serde: options.serde,
      signal: options.signal,
    });
    const imported = await importThread(to, file, {
      targetThreadId: options.mapThreadId?.(sourceThreadId) ?? sourceThreadId,
      ifExists: options.ifExists,
      serde: options.serde,
      signal: options.signal,
      onProgress: (progress) =>
        options.onProgress?.({ ...progress, threadId: sourceThreadId, threads: index, totalThreads: threadIds.length }),
    });
    result.threads.push({
      sourceThreadId,
      threadId: imported.threadId,
      checkpoints: imported.checkpoints,
      blobs: imported.blobs,
      writes: imported.writes,
    });
    options.onProgress?.({
      threadId: sourceThreadId,
      threads: index + 1,
      totalThreads: threadIds.length,
      checkpoints: imported.checkpoints,
      total: imported.checkpoints,
    });
  }
  return result;
}

/** Every thread id of a saver: its own `listThreads` when it has one, else from `list({})`. */
export async function allThreadIds(saver: BaseCheckpointSaver, signal?: AbortSignal): Promise<string[]> {
  const ids = new Set<string>();
  const listThreads = (saver as { listThreads?: unknown }).listThreads;
  if (typeof listThreads === "function") {
    for await (const thread of (listThreads as () => AsyncIterable<{ threadId: string }>).call(saver)) {
      ids.add(thread.threadId);
    }
    return [...ids];
  }
  for await (const tuple of saver.list({})) {
    signal?.throwIfAborted();
    const threadId: unknown = tuple.config.configurable?.thread_id;
    if (typeof threadId === "string") ids.add(threadId);
  }
  return [...ids];
}

/**
 * The thread's run lock (runOnThread's, `runLockName` in ./runs), held by an
 * import into a saver that has one: a run going on in another tab or worker
 * would otherwise write its next checkpoint on top of the imported thread,
 * and a run starting midway would read a half-written one.
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { crossTabName } from "../core/channel.js";
import { holdIfFree } from "../core/run-locks.js";

/**
 * Calls `work` holding the run lock of `threadId` in the saver's database,
 * or `busy()` (which throws) when a run holds it or waits for it. A saver
 * without a `dbName` (not an IndexedDBSaver: no run of runOnThread can be on
 * it) is written without a lock. Never waits: an import called from inside
 * a run of that thread is refused instead of waiting for itself.
 */
export async function holdingThread<T>(
  saver: BaseCheckpointSaver,
  threadId: string,
  work: () => Promise<T>,
  busy: () => never,
): Promise<T> {
  const dbName: unknown = (saver as { dbName?: unknown }).dbName;
  if (typeof dbName !== "string") return work();
  // Through runOnThread's own lock managers too, when a run was given one.
  const held = await holdIfFree(dbName, crossTabName({ kind: "run", dbName, threadId }), work);
  if (!held) busy();
  return held.value;
}

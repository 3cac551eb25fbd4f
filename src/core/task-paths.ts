/**
 * The task paths of pending writes, offered by savers that keep them, for
 * `exportThread`: `getTuple` returns writes without their path, and the export
 * reads no saver's rows itself (portable/ never imports saver/), so a saver
 * offers a reader here when it is constructed. The reader gives the tuple
 * too, decoded from the same rows, so that the export reads them once.
 */
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";

/**
 * One checkpoint as `getTuple` gives it, and each of its pending writes as
 * `[taskId, channel, taskPath]` in the tuple's order; undefined when the
 * checkpoint is gone.
 * @internal
 */
export type TaskPathSource = (
  ns: string,
  checkpointId: string,
) => Promise<{ tuple: CheckpointTuple; writes: [string, string, string][] } | undefined>;

/**
 * What a saver offers: a reader of a thread's checkpoints with their task
 * paths, and the `getTuple` whose tuples the reader gives. @internal
 */
export type TaskPathOffer = [reader: (threadId: string) => Promise<TaskPathSource>, getTuple: unknown];

/** Offers by saver; a saver that is garbage-collected drops out. */
const offered = new WeakMap<object, TaskPathOffer>();

/** Records how to read `saver`'s checkpoints with their task paths. @internal */
export function offerTaskPaths(saver: object, offer: TaskPathOffer): void {
  offered.set(saver, offer);
}

/** What `saver` offered, if anything (the export makes what it needs of it, in its own chunk). @internal */
export function offeredTaskPaths(saver: object): TaskPathOffer | undefined {
  return offered.get(saver);
}

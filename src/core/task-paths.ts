/**
 * The task paths of pending writes, offered by savers that keep them, for
 * `exportThread`: `getTuple` returns writes without their path, and the export
 * reads no saver's rows itself (portable/ never imports saver/), so a saver
 * offers a reader here when it is constructed.
 */

/**
 * Each pending write of a checkpoint as `[taskId, channel, taskPath]`, in the
 * order `getTuple` returns them, or undefined when the saver cannot tell.
 * @internal
 */
export type TaskPathSource = (ns: string, checkpointId: string) => Promise<[string, string, string][] | undefined>;

/** Readers by saver; a saver that is garbage-collected drops out. */
const offered = new WeakMap<object, (threadId: string) => Promise<TaskPathSource>>();

/** Records how to read the task paths of `saver`'s threads. @internal */
export function offerTaskPaths(saver: object, reader: (threadId: string) => Promise<TaskPathSource>): void {
  offered.set(saver, reader);
}

/** The task path reader of `saver`'s thread, when the saver offered one. @internal */
export function offeredTaskPaths(saver: object, threadId: string): Promise<TaskPathSource> | undefined {
  return offered.get(saver)?.(threadId);
}

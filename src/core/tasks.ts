/** Scheduling helpers shared by the write batcher and the change feed. */

/** Resolves in a later task: `scheduler.postTask` where there is one (no timer clamping), else a timer. */
export function nextTask(): Promise<void> {
  const scheduler = (globalThis as { scheduler?: { postTask?(callback: () => void): Promise<void> } }).scheduler;
  if (scheduler?.postTask) return scheduler.postTask(() => undefined);
  return new Promise((resolve) => setTimeout(resolve, 0));
}

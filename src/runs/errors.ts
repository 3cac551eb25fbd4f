/** Errors of the run coordinator (`runOnThread`). */
import { IndexedDBCheckpointError, nameErrors } from "../core/errors.js";

/**
 * `runOnThread` with `multitask: "reject"` found the thread running, in this
 * tab or another tab or worker of the origin. Nothing was written.
 */
export class ThreadBusyError extends IndexedDBCheckpointError {
  /** The thread that is running. */
  readonly threadId: string;
  /** The database whose thread it is. */
  readonly dbName: string;

  constructor(threadId: string, dbName: string) {
    super(
      `Thread "${threadId}" of database "${dbName}" is already running (in this or another tab or worker); nothing was written. ` +
        `Wait until isThreadRunning() is false, or pass multitask: "enqueue" | "interrupt" | "rollback" to runOnThread.`,
    );
    this.threadId = threadId;
    this.dbName = dbName;
  }
}

/**
 * A run was stopped because a newer run on its thread asked for it
 * (`multitask: "interrupt"` or `"rollback"`). With "interrupt" what it
 * committed stays on the thread (its last checkpoint may have `next` tasks);
 * with "rollback" its checkpoints were deleted. The cause is what the graph
 * threw when it was aborted.
 */
export class RunInterruptedError extends IndexedDBCheckpointError {
  /** The thread of the stopped run. */
  readonly threadId: string;
  /** The stopped run's id (`metadata.run_id` of its checkpoints). */
  readonly runId: string;
  /** What the newer run asked for. */
  readonly strategy: "interrupt" | "rollback";

  constructor(threadId: string, runId: string, strategy: "interrupt" | "rollback", options?: { cause?: unknown }) {
    super(
      strategy === "rollback"
        ? `Run ${runId} on thread "${threadId}" was stopped and rolled back by a newer run (multitask: "rollback"): its checkpoints were deleted.`
        : `Run ${runId} on thread "${threadId}" was stopped by a newer run (multitask: "interrupt"): what it committed stays on the thread.`,
      options,
    );
    this.threadId = threadId;
    this.runId = runId;
    this.strategy = strategy;
  }
}

nameErrors({ ThreadBusyError, RunInterruptedError });

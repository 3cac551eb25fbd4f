/**
 * A run as the routes hold it (RunHandle): this server's, over its state as
 * it goes, or another tab's, over the run log and the run channel (see
 * remote-run.ts); and how each is cancelled.
 */
import type { RunRecord, SentEvent } from "./records.js";
import { followRemote, type RemoteContext } from "./remote-run.js";
import { followRun, type RunState } from "./run-state.js";

/**
 * How long deleting a thread waits for its runs to stop before it deletes
 * anyway: a tab frozen in the background, or a node that ignores the abort,
 * never answers, and the delete must.
 */
export const CANCEL_WAIT_MS = 2_000;

/** A run, of this server or of another tab's: its record when found, its events, and how to cancel it. */
export interface RunHandle {
  readonly record: RunRecord;
  /** The run's events after `afterId` (all with -1), then each as it comes, until the run ends. */
  follow(afterId?: number): AsyncGenerator<SentEvent>;
  /** Stops the run (`"rollback"` also deletes its checkpoints); resolves once it has ended. */
  cancel(action: "interrupt" | "rollback"): Promise<void>;
}

/** Stops this server's run `state` with `action`; resolves once it has ended. */
export async function cancelLocal(state: RunState, action: "interrupt" | "rollback"): Promise<void> {
  // A run that has ended is left as it is, as the Agent Server does: a late or repeated
  // cancel with "rollback" would otherwise delete a finished run's checkpoints.
  if (state.finished) return;
  // Its graph is done and its end is being written (status, final record): nothing to stop,
  // but a caller that deletes the thread next must find that end written (helper-56).
  if (state.settled) return state.done;
  // The run rolls itself back while it still holds its thread (see executeRun): deleted after it
  // let go, a run enqueued behind it would already have started from its input (helper-54).
  if (action === "rollback") state.rollback = true;
  state.controller.abort(new Error(`Run ${state.record.run_id} was cancelled.`));
  await state.done;
}

/** This server's run `state` as a handle. */
export function localHandle(state: RunState): RunHandle {
  return {
    record: state.record,
    follow: (afterId = -1) => followRun(state, afterId),
    cancel: (action) => cancelLocal(state, action),
  };
}

/** Another server's run, found in the run log as `record`, as a handle: cancelled through the run channel. */
export function remoteHandle(remote: RemoteContext, record: RunRecord): RunHandle {
  const runId = record.run_id;
  return {
    record,
    follow: (afterId = -1) => followRemote(remote, runId, afterId),
    cancel: async (action) => {
      remote.channel.post({ type: "cancel", runId, action, threadId: record.thread_id });
      const ending = followRemote(remote, runId, Number.MAX_SAFE_INTEGER);
      while (!(await ending.next()).done);
    },
  };
}

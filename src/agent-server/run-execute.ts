/**
 * Running one run of this server: it goes through `runOnThread`, so a thread
 * runs one graph at a time across every tab and worker of the origin and a
 * second run follows its multitask strategy (reject, enqueue, interrupt,
 * rollback); its events go to the run log and to the servers of other tabs
 * that follow it, and it holds the run's Web Lock until its final record is
 * written. Functions over a {@link RunContext}; the registry (runs.ts) holds it.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { runOnThread, type RunSaver } from "../runs/coordinator.js";
import { RunInterruptedError, ThreadBusyError } from "../runs/errors.js";
import type { RunLockManager } from "../runs/locks.js";
import type { Listeners } from "../core/listeners.js";
import type { RunRecord } from "./records.js";
import type { AgentRunChannel } from "./run-channel.js";
import {
  finishRun,
  newRunState,
  pushEvent,
  saveRun,
  setRunStatus,
  strategyOf,
  type RunOutput,
  type RunSpec,
  type RunState,
} from "./run-state.js";
import type { RunLog } from "./run-log.js";
import { runnerLockName } from "./remote-run.js";
import { errorData, streamRunEvents } from "./stream.js";
import { shapeEvent } from "./event-shapes.js";
import { localHandle, type RunHandle } from "./run-handles.js";

/** What the registry reports to the server as runs start and end. */
export interface RunHooks {
  /**
   * The run is recorded and about to be answered, waiting for its thread or
   * not: the thread is busy from now (the Agent Server sets it with the run).
   */
  accepted(run: RunRecord): Promise<void>;
  /**
   * The run holds its thread and starts; false when the thread is gone (deleted
   * after the request was checked): the run then stops before its graph runs.
   */
  started(run: RunRecord): Promise<boolean>;
  /** The run has ended (its checkpoints are committed), or was found cut short. */
  ended(run: RunRecord, error: unknown): Promise<void>;
}

/** What running this server's runs needs: the registry's parts. */
export interface RunContext {
  readonly saver: RunSaver;
  readonly locks: RunLockManager;
  readonly hooks: RunHooks;
  readonly log: RunLog;
  readonly channel: AgentRunChannel;
  /** Where a run's events and record go: the run log, and the channel to other tabs' servers. */
  readonly out: RunOutput;
  /** This server's runs not ended, by id. */
  readonly runs: Map<string, RunState>;
  /** Told the id of a thread with a new run in the log, or deleted (onThreadChange). */
  readonly changes: Listeners<string>;
}

/** Tells this server's listeners and the other servers' that `threadId` changed (onThreadChange). */
export function notifyChanged(context: RunContext, threadId: string): void {
  context.changes.deliver(threadId);
  context.channel.post({ type: "changed", threadId });
}

/**
 * Starts a run; it waits for its thread as its strategy says. Resolves once
 * its record is in the run log (another tab's server can find it).
 */
export async function startRun(context: RunContext, spec: RunSpec): Promise<RunHandle> {
  const runId = crypto.randomUUID();
  const state = newRunState(spec, runId);
  context.runs.set(runId, state);
  pushEvent(context.out, state, "metadata", { run_id: runId, attempt: 1 });
  let recorded!: () => void;
  const inLog = new Promise<void>(
    (resolve) =>
      (recorded = () => {
        resolve();
        notifyChanged(context, spec.threadId);
      }),
  );
  // A `reject` run is recorded once it holds its thread, so that one refused (another run
  // took the thread after the route's check) leaves no record and is answered 409, as the
  // Agent Server answers; the others are recorded at once, pending while they wait.
  const recordFirst = state.logged;
  // The lock first, then the record: a record not final whose lock is free is a run cut short.
  const held = context.locks.request(runnerLockName(context.saver.dbName, runId), {}, async () => {
    if (recordFirst) {
      await saveRun(context.out, state);
      await accepted(context, state);
      recorded();
    }
    await executeRun(context, state, spec, recordFirst ? undefined : recorded);
  });
  state.done = held.catch(() => endRun(context, state));
  await Promise.race([inLog, held]);
  if (state.refused) throw new ThreadBusyError(spec.threadId, context.saver.dbName);
  return localHandle(state);
}

/** Reports the run accepted before it is answered; a failed status write does not fail the run. */
async function accepted(context: RunContext, state: RunState): Promise<void> {
  await context.hooks.accepted(state.record).catch(() => undefined);
}

/** Runs `spec`; `record`, when given, is called once the run holds its thread and is in the log. */
async function executeRun(context: RunContext, state: RunState, spec: RunSpec, record?: () => void): Promise<void> {
  const { out, hooks, saver, log } = context;
  const runner = {
    invoke: async (input: unknown, config: RunnableConfig) => {
      state.logged = true;
      setRunStatus(out, state, "running");
      if (record) {
        await state.saving;
        await accepted(context, state);
        record();
      }
      if (!(await hooks.started(state.record))) {
        state.orphaned = true;
        throw new Error(`The thread of run ${state.record.run_id} was deleted before it started.`);
      }
      const options = { modes: spec.modes, subgraphs: spec.subgraphs, runId: state.record.run_id };
      try {
        for await (const { event, data } of streamRunEvents(spec.graph, input, { ...config }, options)) {
          pushEvent(out, state, event, shapeEvent(event, data));
        }
      } catch (error) {
        // Stopped by a cancel with rollback: its checkpoints go now, with the thread still held
        // (the graph's saver calls have settled once the stream ends).
        if (state.rollback && state.controller.signal.aborted) {
          await saver.deleteForRuns([state.record.run_id], { threadId: state.record.thread_id });
        }
        throw error;
      }
    },
  };
  // The run's id in its configurable too, as the Agent Server (and LangGraph's embed server) gives it
  // the graph: a node reading config.configurable.run_id found none here.
  const config = {
    ...spec.config,
    configurable: { ...spec.config.configurable, run_id: state.record.run_id },
    metadata: { ...spec.config.metadata, run_id: state.record.run_id },
  };
  let failure: unknown;
  let rolledBack = false;
  try {
    await runOnThread(runner, spec.input, config, {
      multitask: strategyOf(spec, state, context.runs.values()),
      saver,
      signal: state.controller.signal,
      locks: context.locks,
    });
    state.settled = true;
    setRunStatus(out, state, "success");
  } catch (error) {
    state.settled = true;
    if (state.orphaned) {
      // Deleted with its thread: no status to set, and no record to leave behind; those who
      // follow it (a wait, a stream) are told, not answered as if it had run.
      pushEvent(out, state, "error", errorData(error));
      endRun(context, state);
      await state.saving.catch(() => undefined);
      await log.deleteRun(state.record.run_id);
      return;
    }
    if (record && error instanceof ThreadBusyError) {
      // Refused before it held the thread: nothing was written, and no one follows it.
      state.refused = true;
      endRun(context, state);
      return;
    }
    const stopped = error instanceof RunInterruptedError || state.controller.signal.aborted;
    // Rolled back, by a newer run's rollback strategy or a runs.cancel with action rollback: its
    // checkpoints are gone, and the run goes too, as the Agent Server's worker deletes a run rolled back.
    rolledBack = stopped && (state.rollback || (error instanceof RunInterruptedError && error.strategy === "rollback"));
    // The error event before the final status: a final record always comes with all its events.
    if (!stopped) {
      failure = error;
      pushEvent(out, state, "error", errorData(error));
    }
    setRunStatus(out, state, stopped ? "interrupted" : "error");
  }
  try {
    await hooks.ended(state.record, failure);
  } finally {
    try {
      await saveRun(out, state);
    } finally {
      // Before those following it here and in other tabs are told it ended (a thread-less run's thread
      // deleted: a join answers once it is gone).
      state.closing = spec.afterRun !== undefined;
      try {
        await spec.afterRun?.(rolledBack ? undefined : state.record);
      } catch (error) {
        // Said, not dropped: an error before its end, and its record says so (its thread left behind
        // would otherwise go unseen).
        pushEvent(out, state, "error", errorData(error));
        setRunStatus(out, state, "error");
      }
      endRun(context, state);
    }
  }
  // As the Agent Server's rollback (the strategy, or a cancel with action rollback): the run is deleted with
  // its checkpoints ("completely deleted from the database"), once its followers have had its end; a get or
  // join of it then answers 404.
  if (rolledBack) {
    await state.saving.catch(() => undefined);
    await log.deleteRun(state.record.run_id);
  }
}

/**
 * Marks the run ended and forgets it: its record and events are in the run
 * log, where `find` reads them as it reads other tabs' runs (a registry
 * that kept every run held every token of every run for the server's life).
 */
function endRun(context: RunContext, state: RunState): void {
  finishRun(context.out, state);
  context.runs.delete(state.record.run_id);
}

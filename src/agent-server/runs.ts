/**
 * The runs of one server: each goes through `runOnThread`, so a thread runs
 * one graph at a time across every tab and worker of the origin and a second
 * run follows its multitask strategy (reject, enqueue, interrupt, rollback).
 * A run's events are kept in order with their ids, so a client that joins
 * late, or reconnects with `Last-Event-ID`, reads them all from where it was;
 * they are written to the run log and sent to the servers of other tabs that
 * follow the run (see remote-run.ts), and the server holds the run's Web
 * Lock until its final record is written.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { isThreadRunning, runOnThread, type RunSaver } from "../runs/coordinator.js";
import { RunInterruptedError, ThreadBusyError } from "../runs/errors.js";
import { defaultLockManager, type RunLockManager } from "../runs/locks.js";
import type { RunRecord, SentEvent } from "./records.js";
import { AgentRunChannel } from "./run-channel.js";
import {
  finishRun,
  followRun,
  newRunState,
  pushEvent,
  saveRun,
  setRunStatus,
  strategyOf,
  type RunOutput,
  type RunSpec,
  type RunState,
} from "./run-state.js";

export type { RunSpec } from "./run-state.js";
import { isFinal, type RunLog } from "./run-log.js";
import { followRemote, remoteRecord, runnerLockName, RunLostError, type RemoteContext } from "./remote-run.js";
import { errorData, streamRunEvents } from "./stream.js";
import { shapeEvent } from "./event-shapes.js";
import { holdThread, IdleHolds } from "./thread-holds.js";
import { Listeners } from "../core/listeners.js";
import { unlessAborted } from "../core/tasks.js";

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

/** Runs of one server, by id, and the runs of other servers found in the run log. */
export class RunRegistry {
  readonly #saver: RunSaver;
  readonly #locks: RunLockManager;
  readonly #hooks: RunHooks;
  readonly #log: RunLog;
  readonly #channel: AgentRunChannel;
  readonly #remote: RemoteContext;
  readonly #runs = new Map<string, RunState>();
  /** Threads this server holds through {@link whileIdle} (a run delete, a state update). */
  readonly #idle: IdleHolds;
  /** Where a run's events and record go: the run log, and the channel to other tabs' servers. */
  readonly #out: RunOutput;
  readonly #offChannel: () => void;
  /** Told the id of a thread with a new run in the log, or deleted (onThreadChange). */
  readonly #changes = new Listeners<string>();

  constructor(saver: RunSaver, log: RunLog, hooks: RunHooks, locks?: RunLockManager) {
    this.#saver = saver;
    this.#hooks = hooks;
    this.#log = log;
    this.#locks = locks ?? defaultLockManager();
    this.#idle = new IdleHolds({ saver, locks: this.#locks });
    this.#channel = new AgentRunChannel(saver.dbName);
    this.#out = { log, channel: this.#channel };
    this.#remote = {
      dbName: saver.dbName,
      log,
      channel: this.#channel,
      locks: this.#locks,
      lost: (record) => hooks.ended(record, new RunLostError(record.run_id)),
    };
    this.#offChannel = this.#channel.listen((message) => {
      if (message.type === "changed") return this.#changes.deliver(message.threadId);
      const state = this.#runs.get(message.runId);
      if (!state) return;
      if (message.type === "replay") {
        state.shared = true;
        const events = state.events.filter((event) => event.id > message.after);
        this.#channel.post({
          type: "events",
          runId: message.runId,
          to: message.from,
          events,
          finished: state.finished,
        });
      } else if (message.type === "cancel" && !state.finished) {
        this.#cancel(state, message.action).catch(() => undefined);
      }
    });
  }

  /**
   * Starts a run; it waits for its thread as its strategy says. Resolves once
   * its record is in the run log (another tab's server can find it).
   */
  async start(spec: RunSpec): Promise<RunHandle> {
    const runId = crypto.randomUUID();
    const state = newRunState(spec, runId);
    this.#runs.set(runId, state);
    pushEvent(this.#out, state, "metadata", { run_id: runId, attempt: 1 });
    let recorded!: () => void;
    const inLog = new Promise<void>(
      (resolve) =>
        (recorded = () => {
          resolve();
          this.#changed(spec.threadId);
        }),
    );
    // A `reject` run is recorded once it holds its thread, so that one refused (another run
    // took the thread after the route's check) leaves no record and is answered 409, as the
    // Agent Server answers; the others are recorded at once, pending while they wait.
    const recordFirst = state.logged;
    // The lock first, then the record: a record not final whose lock is free is a run cut short.
    const held = this.#locks.request(runnerLockName(this.#saver.dbName, runId), {}, async () => {
      if (recordFirst) {
        await saveRun(this.#out, state);
        await this.#accepted(state);
        recorded();
      }
      await this.#execute(state, spec, recordFirst ? undefined : recorded);
    });
    state.done = held.catch(() => this.#end(state));
    await Promise.race([inLog, held]);
    if (state.refused) throw new ThreadBusyError(spec.threadId, this.#saver.dbName);
    return this.#handle(state);
  }

  /**
   * Runs `work` while holding `threadId` as a run would (`runOnThread`,
   * strategy `reject`), so no run starts meanwhile, here or in another tab;
   * after this server's other such holds of the thread, in turn.
   * @throws {ThreadBusyError} a run holds the thread.
   */
  whileIdle<T>(threadId: string, work: () => Promise<T>): Promise<T> {
    return this.#idle.run(threadId, work);
  }

  /**
   * Resolves once the {@link whileIdle} holds of `threadId` under way now
   * (a run delete, a state update) have let the thread go: a run asked with
   * strategy `reject` meanwhile waits for them, where it took one for a run.
   */
  idleHoldsDone(threadId: string): Promise<void> {
    return this.#idle.done(threadId);
  }

  /**
   * Whether a run of `threadId` other than `runId` is going or waiting:
   * this server's (pending or running), or any tab's holding the thread.
   */
  async threadBusy(threadId: string, runId: string): Promise<boolean> {
    for (const state of this.#runs.values()) {
      // A `reject` run not holding its thread yet (`logged` false) neither goes nor waits: it runs at once
      // and says busy itself, or is refused and says nothing; counted, a run's end left the status to it.
      const other = state.record.thread_id === threadId && state.record.run_id !== runId;
      if (other && state.logged && !state.settled) return true;
    }
    const running = await isThreadRunning(threadId, { dbName: this.#saver.dbName, locks: this.#locks });
    // Held by a delete or an update of this server (whileIdle), which no run holds with: not busy. Read
    // after the locks, so a hold let go meanwhile is not taken for a run's.
    return running && !this.#idle.holds(threadId);
  }

  /**
   * Stops every run of `threadId` that has not ended, this server's and
   * other tabs' (found in the run log), and waits for them to end: a thread
   * deleted under a run would otherwise get its checkpoints and record back.
   */
  async cancelThread(threadId: string, within = AbortSignal.timeout(CANCEL_WAIT_MS)): Promise<void> {
    // Not a run in its afterRun: its end is written, and that work may be this very delete.
    const own = [...this.#runs.values()].filter((s) => s.record.thread_id === threadId && !s.finished && !s.closing);
    const others = (await this.#log.list(threadId)).filter(
      (record) => !isFinal(record) && !this.#runs.has(record.run_id),
    );
    const remote = await Promise.all(others.map((record) => this.find(threadId, record.run_id)));
    const runs = [...own.map((state) => this.#handle(state)), ...remote.filter((run) => run !== undefined)];
    await this.cancelRuns(runs, "interrupt", within);
  }

  /**
   * Cancels each of `runs` with `action`, as one cancel each, and waits for
   * them to end, at most until `within` aborts (a frozen tab never answers);
   * true when every one has ended, false when the wait was cut short.
   */
  cancelRuns(
    runs: readonly RunHandle[],
    action: "interrupt" | "rollback",
    within = AbortSignal.timeout(CANCEL_WAIT_MS),
  ): Promise<boolean> {
    return unlessAborted(Promise.all(runs.map((run) => run.cancel(action))), within);
  }

  /**
   * The runs not ended of every thread, newest first: this server's as they
   * stand, others' from the run log (`runs.cancelMany` by status).
   */
  async unfinished(): Promise<RunHandle[]> {
    const stored = await this.#log.unfinished();
    const runs = await Promise.all(stored.map((record) => this.find(record.thread_id, record.run_id)));
    return runs.filter((run) => run !== undefined && !isFinal(run.record)) as RunHandle[];
  }

  /**
   * Deletes a thread: stops its runs ({@link cancelThread}), then runs
   * `erase` holding the thread's run lock, so no run starts on it meanwhile,
   * here or in another tab (one enqueued, or on a thread created again under
   * the same id, waits, and stops at its start if the record is gone). A run
   * that never lets the thread go (a frozen tab) is waited for at most
   * CANCEL_WAIT_MS, then `erase` runs all the same.
   */
  async deleteThread(threadId: string, erase: () => Promise<void>): Promise<void> {
    // One deadline for both waits (the runs' stop, then the lock): at most CANCEL_WAIT_MS in all.
    const signal = AbortSignal.timeout(CANCEL_WAIT_MS);
    await this.cancelThread(threadId, signal);
    try {
      await holdThread({ saver: this.#saver, locks: this.#locks }, threadId, erase, "enqueue", signal);
    } catch (error) {
      // The deadline passed before the lock came (a frozen tab): erased all the same.
      if (!signal.aborted) throw error;
      await erase();
    }
    this.#changed(threadId);
  }

  /**
   * Calls `listener` each time a run of `threadId` is in the run log or the
   * thread is deleted, by this server or another on the database (a tab, a
   * worker); returns the function that stops. A notice can be missed (from
   * a build that sends none): a listener looks now and then all the same.
   */
  onThreadChange(threadId: string, listener: () => void): () => void {
    return this.#changes.add((changed) => {
      if (changed === threadId) listener();
    });
  }

  /** Tells this server's listeners and the other servers' that `threadId` changed (onThreadChange). */
  #changed(threadId: string): void {
    this.#changes.deliver(threadId);
    this.#channel.post({ type: "changed", threadId });
  }

  /** The run `runId` of `threadId`: this server's, or another's from the run log. */
  async find(threadId: string, runId: string): Promise<RunHandle | undefined> {
    const state = this.#runs.get(runId);
    if (state) return state.record.thread_id === threadId ? this.#handle(state) : undefined;
    const record = await remoteRecord(this.#remote, runId);
    if (record?.thread_id !== threadId) return undefined;
    return {
      record,
      follow: (afterId = -1) => followRemote(this.#remote, runId, afterId),
      cancel: async (action) => {
        this.#channel.post({ type: "cancel", runId, action });
        const ending = followRemote(this.#remote, runId, Number.MAX_SAFE_INTEGER);
        while (!(await ending.next()).done);
      },
    };
  }

  /**
   * The runs of `threadId`, newest first: this server's as they stand, others' from the run log;
   * without those in `except` (a thread's stream, which looks again at each run recorded on its
   * thread, reads only runs it has not had: each other run's record is a read of its own).
   */
  async list(threadId: string, except?: ReadonlySet<string>): Promise<RunRecord[]> {
    const stored = (await this.#log.list(threadId)).filter((record) => !except?.has(record.run_id));
    return Promise.all(
      stored.map(async (record) => {
        const own = this.#runs.get(record.run_id);
        return own ? own.record : ((await remoteRecord(this.#remote, record.run_id)) ?? record);
      }),
    );
  }

  /** Cancels every run that has not ended and waits for them. */
  async close(): Promise<void> {
    const open = [...this.#runs.values()].filter((run) => !run.finished);
    for (const run of open) run.controller.abort(new Error("The agent server was closed."));
    await Promise.all(open.map((run) => run.done));
    this.#offChannel();
    this.#channel.close();
  }

  #handle(state: RunState): RunHandle {
    return {
      record: state.record,
      follow: (afterId = -1) => followRun(state, afterId),
      cancel: (action) => this.#cancel(state, action),
    };
  }

  /** Reports the run accepted before it is answered; a failed status write does not fail the run. */
  async #accepted(state: RunState): Promise<void> {
    await this.#hooks.accepted(state.record).catch(() => undefined);
  }

  async #cancel(state: RunState, action: "interrupt" | "rollback"): Promise<void> {
    // A run that has ended is left as it is, as the Agent Server does: a late or repeated
    // cancel with "rollback" would otherwise delete a finished run's checkpoints.
    if (state.finished) return;
    // Its graph is done and its end is being written (status, final record): nothing to stop,
    // but a caller that deletes the thread next must find that end written (helper-56).
    if (state.settled) return state.done;
    // The run rolls itself back while it still holds its thread (see #execute): deleted after it
    // let go, a run enqueued behind it would already have started from its input (helper-54).
    if (action === "rollback") state.rollback = true;
    state.controller.abort(new Error(`Run ${state.record.run_id} was cancelled.`));
    await state.done;
  }

  /** Runs `spec`; `record`, when given, is called once the run holds its thread and is in the log. */
  async #execute(state: RunState, spec: RunSpec, record?: () => void): Promise<void> {
    const runner = {
      invoke: async (input: unknown, config: RunnableConfig) => {
        state.logged = true;
        setRunStatus(this.#out, state, "running");
        if (record) {
          await state.saving;
          await this.#accepted(state);
          record();
        }
        if (!(await this.#hooks.started(state.record))) {
          state.orphaned = true;
          throw new Error(`The thread of run ${state.record.run_id} was deleted before it started.`);
        }
        const options = { modes: spec.modes, subgraphs: spec.subgraphs, runId: state.record.run_id };
        try {
          for await (const { event, data } of streamRunEvents(spec.graph, input, { ...config }, options)) {
            pushEvent(this.#out, state, event, shapeEvent(event, data));
          }
        } catch (error) {
          // Stopped by a cancel with rollback: its checkpoints go now, with the thread still held
          // (the graph's saver calls have settled once the stream ends).
          if (state.rollback && state.controller.signal.aborted) {
            await this.#saver.deleteForRuns([state.record.run_id], { threadId: state.record.thread_id });
          }
          throw error;
        }
      },
    };
    const config = { ...spec.config, metadata: { ...spec.config.metadata, run_id: state.record.run_id } };
    let failure: unknown;
    let rolledBack = false;
    try {
      await runOnThread(runner, spec.input, config, {
        multitask: strategyOf(spec, state, this.#runs.values()),
        saver: this.#saver,
        signal: state.controller.signal,
        locks: this.#locks,
      });
      state.settled = true;
      setRunStatus(this.#out, state, "success");
    } catch (error) {
      state.settled = true;
      if (state.orphaned) {
        // Deleted with its thread: no status to set, and no record to leave behind; those who
        // follow it (a wait, a stream) are told, not answered as if it had run.
        pushEvent(this.#out, state, "error", errorData(error));
        this.#end(state);
        await state.saving.catch(() => undefined);
        await this.#log.deleteRun(state.record.run_id);
        return;
      }
      if (record && error instanceof ThreadBusyError) {
        // Refused before it held the thread: nothing was written, and no one follows it.
        state.refused = true;
        this.#end(state);
        return;
      }
      const stopped = error instanceof RunInterruptedError || state.controller.signal.aborted;
      // Rolled back, by a newer run's rollback strategy or a runs.cancel with action rollback: its
      // checkpoints are gone, and the run goes too, as the Agent Server's worker deletes a run rolled back.
      rolledBack =
        stopped && (state.rollback || (error instanceof RunInterruptedError && error.strategy === "rollback"));
      // The error event before the final status: a final record always comes with all its events.
      if (!stopped) {
        failure = error;
        pushEvent(this.#out, state, "error", errorData(error));
      }
      setRunStatus(this.#out, state, stopped ? "interrupted" : "error");
    }
    try {
      await this.#hooks.ended(state.record, failure);
    } finally {
      try {
        await saveRun(this.#out, state);
      } finally {
        // Before those following it here and in other tabs are told it ended (a thread-less run's thread
        // deleted: a join answers once it is gone).
        state.closing = spec.afterRun !== undefined;
        try {
          await spec.afterRun?.(rolledBack ? undefined : state.record);
        } catch (error) {
          // Said, not dropped: an error before its end, and its record says so (its thread left behind
          // would otherwise go unseen).
          pushEvent(this.#out, state, "error", errorData(error));
          setRunStatus(this.#out, state, "error");
        }
        this.#end(state);
      }
    }
    // As the Agent Server's rollback (the strategy, or a cancel with action rollback): the run is deleted with
    // its checkpoints ("completely deleted from the database"), once its followers have had its end; a get or
    // join of it then answers 404.
    if (rolledBack) {
      await state.saving.catch(() => undefined);
      await this.#log.deleteRun(state.record.run_id);
    }
  }

  /**
   * Marks the run ended and forgets it: its record and events are in the run
   * log, where `find` reads them as it reads other tabs' runs (a registry
   * that kept every run held every token of every run for the server's life).
   */
  #end(state: RunState): void {
    finishRun(this.#out, state);
    this.#runs.delete(state.record.run_id);
  }
}

/**
 * The runs of one server (RunRegistry): started through run-execute.ts, so a
 * thread runs one graph at a time across every tab and worker of the origin
 * and a second run follows its multitask strategy; found by id here or, for
 * another tab's, in the run log (run-handles.ts); a thread's runs cancelled
 * and waited for before it is deleted. A run's events are kept in order with
 * their ids, so a client that joins late, or reconnects with `Last-Event-ID`,
 * reads them all from where it was.
 */
import { isThreadRunning, type RunSaver } from "../runs/coordinator.js";
import { defaultLockManager, type RunLockManager } from "../runs/locks.js";
import type { RunRecord } from "./records.js";
import { AgentRunChannel } from "./run-channel.js";
import type { RunSpec, RunState } from "./run-state.js";
import { isFinal, type RunLog } from "./run-log.js";
import { remoteRecord, RunLostError, type RemoteContext } from "./remote-run.js";
import { holdThread, IdleHolds } from "./thread-holds.js";
import { Listeners } from "../core/listeners.js";
import { unlessAborted } from "../core/tasks.js";
import { CANCEL_WAIT_MS, cancelLocal, localHandle, remoteHandle, type RunHandle } from "./run-handles.js";
import { notifyChanged, startRun, type RunContext, type RunHooks } from "./run-execute.js";

export type { RunSpec } from "./run-state.js";

/** Runs of one server, by id, and the runs of other servers found in the run log. */
export class RunRegistry {
  readonly #context: RunContext;
  readonly #remote: RemoteContext;
  /** Threads this server holds through {@link whileIdle} (a run delete, a state update). */
  readonly #idle: IdleHolds;
  readonly #offChannel: () => void;

  constructor(saver: RunSaver, log: RunLog, hooks: RunHooks, locks?: RunLockManager) {
    const channel = new AgentRunChannel(saver.dbName);
    const lockManager = locks ?? defaultLockManager();
    const runs = new Map<string, RunState>();
    this.#context = {
      saver,
      locks: lockManager,
      hooks,
      log,
      channel,
      out: { log, channel },
      runs,
      changes: new Listeners<string>(),
    };
    this.#idle = new IdleHolds({ saver, locks: lockManager });
    this.#remote = {
      dbName: saver.dbName,
      log,
      channel,
      locks: lockManager,
      lost: (record) => hooks.ended(record, new RunLostError(record.run_id)),
    };
    this.#offChannel = channel.listen((message) => {
      if (message.type === "changed") return this.#context.changes.deliver(message.threadId);
      const state = runs.get(message.runId);
      if (!state) return;
      if (message.type === "replay") {
        state.shared = true;
        const events = state.events.filter((event) => event.id > message.after);
        channel.post({
          type: "events",
          runId: message.runId,
          to: message.from,
          events,
          finished: state.finished,
        });
      } else if (message.type === "cancel" && !state.finished) {
        // A cancel asked through a record that names another thread (edited on disk) is not this run's.
        if ((message.threadId ?? state.record.thread_id) !== state.record.thread_id) return;
        cancelLocal(state, message.action).catch(() => undefined);
      }
    });
  }

  /**
   * Starts a run; it waits for its thread as its strategy says. Resolves once
   * its record is in the run log (another tab's server can find it).
   */
  start(spec: RunSpec): Promise<RunHandle> {
    return startRun(this.#context, spec);
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
    for (const state of this.#context.runs.values()) {
      // A `reject` run not holding its thread yet (`logged` false) neither goes nor waits: it runs at once
      // and says busy itself, or is refused and says nothing; counted, a run's end left the status to it.
      const other = state.record.thread_id === threadId && state.record.run_id !== runId;
      if (other && state.logged && !state.settled) return true;
    }
    const running = await isThreadRunning(threadId, { dbName: this.#context.saver.dbName, locks: this.#context.locks });
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
    const own = [...this.#context.runs.values()].filter(
      (s) => s.record.thread_id === threadId && !s.finished && !s.closing,
    );
    const others = (await this.#context.log.list(threadId)).filter(
      (record) => !isFinal(record) && !this.#context.runs.has(record.run_id),
    );
    const remote = await Promise.all(others.map((record) => this.find(threadId, record.run_id)));
    const runs = [...own.map((state) => localHandle(state)), ...remote.filter((run) => run !== undefined)];
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
    const stored = await this.#context.log.unfinished();
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
      await holdThread({ saver: this.#context.saver, locks: this.#context.locks }, threadId, erase, "enqueue", signal);
    } catch (error) {
      // The deadline passed before the lock came (a frozen tab): erased all the same.
      if (!signal.aborted) throw error;
      await erase();
    }
    notifyChanged(this.#context, threadId);
  }

  /**
   * Calls `listener` each time a run of `threadId` is in the run log or the
   * thread is deleted, by this server or another on the database (a tab, a
   * worker); returns the function that stops. A notice can be missed (from
   * a build that sends none): a listener looks now and then all the same.
   */
  onThreadChange(threadId: string, listener: () => void): () => void {
    return this.#context.changes.add((changed) => {
      if (changed === threadId) listener();
    });
  }

  /**
   * Resolves once the run log's events can be read; rejects with the saver's
   * `KeyChangedError` when another tab changed its key and this tab's no
   * longer opens the database. Asked before a replay is answered: the
   * client is told at once (409), not by a stream that fails part-way and
   * is asked again for 20 s. A run's record, in clear, still answers.
   */
  eventsReadable(): Promise<void> {
    return this.#context.log.readable();
  }

  /** The run `runId` of `threadId`: this server's, or another's from the run log. */
  async find(threadId: string, runId: string): Promise<RunHandle | undefined> {
    const state = this.#context.runs.get(runId);
    if (state) return state.record.thread_id === threadId ? localHandle(state) : undefined;
    const record = await remoteRecord(this.#remote, runId);
    if (record?.thread_id !== threadId) return undefined;
    return remoteHandle(this.#remote, record);
  }

  /**
   * The runs of `threadId`, newest first: this server's as they stand, others' from the run log;
   * without those in `except` (a thread's stream, which looks again at each run recorded on its
   * thread, reads only runs it has not had: each other run's record is a read of its own).
   */
  async list(threadId: string, except?: ReadonlySet<string>): Promise<RunRecord[]> {
    const stored = (await this.#context.log.list(threadId)).filter((record) => !except?.has(record.run_id));
    return Promise.all(
      stored.map(async (record) => {
        const own = this.#context.runs.get(record.run_id);
        return own ? own.record : ((await remoteRecord(this.#remote, record.run_id)) ?? record);
      }),
    );
  }

  /** Cancels every run that has not ended and waits for them. */
  async close(): Promise<void> {
    const open = [...this.#context.runs.values()].filter((run) => !run.finished);
    for (const run of open) run.controller.abort(new Error("The agent server was closed."));
    await Promise.all(open.map((run) => run.done));
    this.#offChannel();
    this.#context.channel.close();
  }
}

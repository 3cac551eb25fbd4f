/**
 * One run per thread across tabs and workers: `runOnThread` runs a graph on a
 * thread while holding that thread's Web Lock, and decides what a second run
 * does when it finds the lock taken, after LangGraph Platform's double-texting
 * `multitask_strategy`. `isThreadRunning`/`watchThreadRunning` tell a UI that
 * a thread is busy elsewhere. See README, "One run per thread".
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type { CheckpointChange } from "../saver/events.js";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { RunInterruptedError, ThreadBusyError } from "./errors.js";
import { defaultLockManager, runLockName, type RunLockManager } from "./locks.js";
import { RunChannel, type StopStrategy } from "./signals.js";

/** What a run does when another run holds its thread. */
export type MultitaskStrategy = "reject" | "enqueue" | "interrupt" | "rollback";

const STRATEGIES: readonly MultitaskStrategy[] = ["reject", "enqueue", "interrupt", "rollback"];

/** The database name `IndexedDBSaver` uses when none is given. */
const DEFAULT_DB_NAME = "langgraph";

/**
 * How the stop reaches the graph. Not `config.signal`: LangChain races the
 * run's promise against that signal, so `invoke` rejects at once while the
 * graph's last saver calls are still on their way (measured: its checkpoints
 * land after the rejection), and a rollback or the next run would start under
 * them. LangGraph's runner takes its external abort signal from this
 * configurable key (its CONFIG_KEY_ABORT_SIGNALS), aborts the running tasks
 * (nodes see it as `config.signal`) and stops the loop, and `invoke` rejects
 * only once every saver call has settled. The tests of every strategy fail
 * if a LangGraph release stops honouring it.
 */
const ABORT_SIGNALS_KEY = "__pregel_abort_signals";

/**
 * LangGraph's strict resume (its CONFIG_KEY_STRICT_RESUME, 1.7 on): the root
 * graph refuses, with `UnknownInterruptError` and before writing anything, a
 * resume map naming an interrupt that is not pending. Set for resume maps:
 * the answer of a tab that waited for another tab's answer to the same
 * question would otherwise go to the node's next question. Earlier releases
 * ignore the key (and name all of a node's questions alike).
 */
const STRICT_RESUME_KEY = "__pregel_strict_resume";

/** The longest `config.timeout`: the largest delay a timer holds (a signed 32-bit count of ms). */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** How often a waiting run repeats its stop request until the holder answers. */
const STOP_RESEND_MS = 200;

/**
 * What `runOnThread` needs of the graph's saver: an `IndexedDBSaver` has all
 * of it. `dbName` scopes the lock; the change feed and `getTuple` tell when
 * the run's input is safely in the state; `deleteForRuns` rolls a run back.
 */
export interface RunSaver {
  readonly dbName: string;
  subscribe(listener: (change: CheckpointChange) => void): () => void;
  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
  deleteForRuns(runIds: string[], options: { threadId: string }): Promise<void>;
}

/** A compiled LangGraph graph, as far as `runOnThread` uses it. */
export interface InvokableGraph<Input, Output> {
  invoke(input: Input, options?: RunnableConfig): Promise<Output>;
  readonly checkpointer?: unknown;
}

/** Options of {@link runOnThread}. */
export interface RunOnThreadOptions {
  /**
   * What to do when the thread is already running, here or in another tab or
   * worker of the origin. Default `"reject"`.
   * - `"reject"`: throw {@link ThreadBusyError} at once; nothing is written.
   * - `"enqueue"`: wait for the running one(s), first come first served, then
   *   run on their result.
   * - `"interrupt"`: ask the running one to stop; it stops at its next
   *   superstep boundary once its input is in the state, keeping what it
   *   committed, and this run starts from there.
   * - `"rollback"`: ask the running one to stop and delete its checkpoints
   *   (its input too); this run starts from the state before it began.
   */
  multitask?: MultitaskStrategy;
  /** The graph's IndexedDBSaver; default `graph.checkpointer`. */
  saver?: RunSaver;
  /**
   * Cancels this run at once (its nodes see it as `config.signal`; the promise
   * rejects once its saver calls have settled), or its wait for the thread.
   * The config's `signal` and `timeout` (from when the run holds the thread),
   * as `graph.invoke` takes them, do the same.
   */
  signal?: AbortSignal;
  /** Lock manager; default `navigator.locks`, or an in-process fallback where it is missing. */
  locks?: RunLockManager;
}

/** Options of {@link isThreadRunning} and {@link watchThreadRunning}. */
export interface ThreadRunningOptions {
  /** The database of the thread (the saver's `dbName`); default `"langgraph"`. */
  dbName?: string;
  /** Lock manager; default `navigator.locks`, or the in-process fallback. */
  locks?: RunLockManager;
}

/** Options of {@link watchThreadRunning}. */
export interface WatchThreadRunningOptions extends ThreadRunningOptions {
  /**
   * While the thread is running, re-check this often (ms, default 1000): a
   * tab that is closed or crashes sends no "ended" notice, but the browser
   * releases its lock.
   */
  pollMs?: number;
}

/**
 * Runs `graph.invoke(input, config)` on `config.configurable.thread_id` while
 * holding that thread's lock (Web Locks, shared by every tab and worker of the
 * origin), so two runs never start from the same checkpoint and fork the
 * thread. The run is tagged `metadata.run_id` (a fresh id unless
 * `config.metadata.run_id` is given). Resolves with the graph's output once
 * the run's checkpoints are committed and the lock is released.
 *
 * @throws {ThreadBusyError} `multitask: "reject"` and the thread is running.
 * @throws {RunInterruptedError} this run was stopped by a newer one.
 * @example
 * ```ts
 * const config = { configurable: { thread_id: "t1" } };
 * await runOnThread(graph, { messages: [new HumanMessage("hi")] }, config, { multitask: "enqueue" });
 * ```
 */
export async function runOnThread<Input, Output>(
  graph: InvokableGraph<Input, Output>,
  input: Input,
  config: RunnableConfig,
  options: RunOnThreadOptions = {},
): Promise<Output> {
  const strategy = options.multitask ?? "reject";
  if (!STRATEGIES.includes(strategy)) {
    throw new Error(
      `runOnThread: multitask must be one of ${STRATEGIES.map((s) => `"${s}"`).join(", ")}; got ${String(strategy)}.`,
    );
  }
  const threadId: unknown = config.configurable?.thread_id;
  if (typeof threadId !== "string" || threadId === "") {
    throw new Error(
      `runOnThread: config.configurable.thread_id must be a non-empty string, e.g. runOnThread(graph, input, { configurable: { thread_id: "t1" } }).`,
    );
  }
  const saver = resolveSaver(graph, options.saver);
  // `signal` and `timeout` of the config, as graph.invoke takes them, cut the
  // run as `options.signal` does, through the runner's abort key: left in the
  // config, LangChain would race invoke against them, and the lock would be
  // released while the cut run's last checkpoints were still being written.
  const { signal: configSignal, timeout, ...runConfig } = config;
  // Checked before anything is asked: a timeout AbortSignal.timeout refuses (Infinity, past 2^32 - 1 in
  // Node, a fraction there too) threw once the thread was held, after a running run had been stopped or
  // rolled back for it, and Node fires one past 2^31 - 1 after 1 ms.
  if (timeout !== undefined && !(typeof timeout === "number" && timeout > 0 && timeout <= MAX_TIMEOUT_MS)) {
    throw new Error(
      `runOnThread: config.timeout must be a positive number of milliseconds up to ${MAX_TIMEOUT_MS} (about 24.8 days); got ${String(timeout)}.`,
    );
  }
  const signal = anySignal([options.signal, configSignal]);
  // Cancelled before it began: nothing is asked of a running run, nothing written.
  signal?.throwIfAborted();
  const given: unknown = config.metadata?.run_id;
  const runId = typeof given === "string" && given !== "" ? given : crypto.randomUUID();
  const locks = options.locks ?? defaultLockManager();
  const name = runLockName(saver.dbName, threadId);
  const channel = new RunChannel(saver.dbName);
  let ran = false;
  const hold = () => {
    ran = true;
    channel.post({ type: "started", threadId, runId });
    // The run's own lock, held inside the thread's: a waiting run believes a
    // "stopping" answer only from the run id this lock names.
    return locks.request(holderLockName(name, runId), {}, () =>
      runHolding(graph, input, runConfig, { saver, threadId, runId, channel, signal, timeout }),
    );
  };
  try {
    if (strategy === "enqueue") return await locks.request(name, withSignal(signal), hold);
    const now = await locks.request(name, { ifAvailable: true }, async (lock) =>
      lock ? { output: await hold() } : undefined,
    );
    if (now) return now.output;
    if (strategy === "reject") throw new ThreadBusyError(threadId, saver.dbName);
    const stopping = askToStop(channel, { threadId, runId, strategy, lockName: name, locks });
    try {
      return await locks.request(name, withSignal(signal), async () => {
        stopping.cancel();
        // The holder rolls itself back before releasing; this covers a holder
        // that answered and then died before it could.
        if (strategy === "rollback" && stopping.runIds.size > 0) {
          await saver.deleteForRuns([...stopping.runIds], { threadId });
        }
        return hold();
      });
    } finally {
      stopping.cancel();
    }
  } finally {
    // After the release, so that a watcher re-checking on "ended" sees it free.
    if (ran) channel.post({ type: "ended", threadId, runId });
    channel.close();
  }
}

/**
 * True while any tab or worker of this origin (or, on the fallback, this
 * realm) runs `threadId` of database `dbName` through {@link runOnThread}:
 * whether the thread's lock is held, from the lock manager's `query()`.
 */
export async function isThreadRunning(threadId: string, options: ThreadRunningOptions = {}): Promise<boolean> {
  const locks = options.locks ?? defaultLockManager();
  const { held } = await locks.query();
  return held.includes(runLockName(options.dbName ?? DEFAULT_DB_NAME, threadId));
}

/**
 * Calls `listener` with whether `threadId` is running (as
 * {@link isThreadRunning}) now and each time that changes: on the
 * "started"/"ended" notices runs send on the database's run channel, and,
 * while it runs, every `pollMs` (a closed tab sends no notice).
 *
 * @returns A function that stops watching.
 */
export function watchThreadRunning(
  threadId: string,
  options: WatchThreadRunningOptions,
  listener: (running: boolean) => void,
): () => void {
  const dbName = options.dbName ?? DEFAULT_DB_NAME;
  const pollMs = options.pollMs ?? 1000;
  // 0, a negative number or NaN would re-query the lock manager back to back for as long as the thread runs.
  if (!(Number.isFinite(pollMs) && pollMs > 0)) {
    throw new Error(`watchThreadRunning: pollMs must be a positive number of milliseconds; got ${String(pollMs)}.`);
  }
  const channel = new RunChannel(dbName);
  let last: boolean | undefined;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let checking: Promise<void> = Promise.resolve();
  const check = () => {
    // One query at a time, in order, so answers cannot arrive swapped.
    checking = checking
      .then(async () => {
        if (stopped) return;
        const running = await isThreadRunning(threadId, { dbName, locks: options.locks });
        if (stopped) return;
        clearTimeout(timer);
        if (running) timer = setTimeout(check, pollMs);
        if (running !== last) {
          last = running;
          listener(running);
        }
      })
      .catch(() => undefined);
  };
  channel.listen((message) => {
    if ((message.type === "started" || message.type === "ended") && message.threadId === threadId) check();
  });
  check();
  return () => {
    stopped = true;
    clearTimeout(timer);
    channel.close();
  };
}

// ------------------------------------------------------------------ internals

/** One signal that aborts when any of `signals` does, or undefined for none. */
function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const given = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  return given.length > 1 ? AbortSignal.any(given) : given[0];
}

function withSignal(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal ? { signal } : {};
}

function resolveSaver(graph: InvokableGraph<unknown, unknown>, saver: RunSaver | undefined): RunSaver {
  const candidate = saver ?? graph.checkpointer;
  const ok =
    typeof candidate === "object" &&
    candidate !== null &&
    typeof (candidate as RunSaver).dbName === "string" &&
    typeof (candidate as RunSaver).subscribe === "function" &&
    typeof (candidate as RunSaver).getTuple === "function" &&
    typeof (candidate as RunSaver).deleteForRuns === "function";
  if (!ok) {
    throw new Error(
      `runOnThread needs the graph's IndexedDBSaver: compile the graph with { checkpointer: saver }, or pass runOnThread(graph, input, config, { saver }).`,
    );
  }
  return candidate as RunSaver;
}

/**
 * A LangGraph `Command` with a `resume` and nothing else (no `update`,
 * `goto` or `graph`): told apart by LangGraph's own `lg_name`, so that this
 * module does not import LangGraph.
 */
function isResumeOnly(input: unknown): boolean {
  if (typeof input !== "object" || input === null) return false;
  const command = input as { lg_name?: unknown; resume?: unknown; update?: unknown; goto?: unknown; graph?: unknown };
  const noGoto = command.goto === undefined || (Array.isArray(command.goto) && command.goto.length === 0);
  return (
    command.lg_name === "Command" &&
    command.resume !== undefined &&
    command.update === undefined &&
    command.graph === undefined &&
    noGoto
  );
}

/** A `Command` whose `resume` maps interrupt ids (LangGraph's 32-hex xxh3 ids) to answers. */
function isResumeMap(input: unknown): boolean {
  if (typeof input !== "object" || input === null) return false;
  const { lg_name, resume } = input as { lg_name?: unknown; resume?: unknown };
  if (lg_name !== "Command" || typeof resume !== "object" || resume === null || Array.isArray(resume)) return false;
  const ids = Object.keys(resume);
  return ids.length > 0 && ids.every((id) => /^[0-9a-f]{32}$/.test(id));
}

/** The lock a run holds, inside its thread's lock `threadLock`, for as long as it runs. */
function holderLockName(threadLock: string, runId: string): string {
  return `${threadLock}:holder:${encodeURIComponent(runId)}`;
}

interface StopRequest {
  threadId: string;
  runId: string;
  strategy: StopStrategy;
  lockName: string;
  locks: RunLockManager;
}

/**
 * Asks whoever holds the thread to stop, again every STOP_RESEND_MS until
 * this run has the lock (the request can reach a holder that has the lock but
 * is not yet listening, and a run queued before this one takes the lock when
 * the stopped holder releases it: that one is the running one now, and is
 * stopped too, as LangGraph Platform cancels pending runs as well as the
 * running one), and collects the ids of the runs that said they will stop.
 * An answer counts only from a run that holds this thread's holder lock: any
 * endpoint on the channel can post, and a rollback deletes what it names.
 */
function askToStop(channel: RunChannel, { threadId, runId, strategy, lockName, locks }: StopRequest) {
  const runIds = new Set<string>();
  const send = () => channel.post({ type: "stop", threadId, from: runId, strategy });
  const timer = setInterval(send, STOP_RESEND_MS);
  const off = channel.listen((message) => {
    if (message.type !== "stopping" || message.to !== runId || message.threadId !== threadId) return;
    const holder = holderLockName(lockName, message.runId);
    locks.query().then(
      ({ held }) => {
        if (held.includes(holder)) runIds.add(message.runId);
      },
      () => undefined,
    );
  });
  send();
  return {
    runIds,
    cancel() {
      clearInterval(timer);
      off();
    },
  };
}

interface Holding {
  saver: RunSaver;
  threadId: string;
  runId: string;
  channel: RunChannel;
  signal: AbortSignal | undefined;
  /** `config.timeout`: ms the run may take once it holds the thread. */
  timeout: number | undefined;
}

/** The run itself, with the lock held: answers stop requests from newer runs. */
async function runHolding<Input, Output>(
  graph: InvokableGraph<Input, Output>,
  input: Input,
  config: RunnableConfig,
  { saver, threadId, runId, channel, signal: cancel, timeout }: Holding,
): Promise<Output> {
  const stop = new AbortController();
  let asked: StopStrategy | undefined;
  // A run with input must not stop before that input is in the state: the
  // next run's input would replace it in the `__start__` channel and it would
  // be lost. It is once a "loop" checkpoint of this run is committed. A
  // resume (null input) has nothing to lose; a rollback deletes it anyway;
  // nor has a `Command` that only answers an interrupt: the newer run brings
  // its own answer, which replaces this one's (helper-57: a resume whose node
  // ran long could not be interrupted, and the newer answer was dropped).
  let armed = input === null || input === undefined || isResumeOnly(input);
  const act = () => {
    if (asked !== undefined && (armed || asked === "rollback") && !stop.signal.aborted) {
      stop.abort(new RunInterruptedError(threadId, runId, asked));
    }
  };
  const offStop = channel.listen((message) => {
    if (message.type !== "stop" || message.threadId !== threadId || message.from === runId) return;
    asked = asked === "rollback" ? "rollback" : message.strategy;
    channel.post({ type: "stopping", threadId, runId, to: message.from });
    act();
  });
  const offPuts = armed
    ? () => undefined
    : saver.subscribe((change) => {
        if (armed || change.kind !== "put" || change.threadId !== threadId || (change.checkpointNs ?? "") !== "")
          return;
        const at = { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: change.checkpointId } };
        saver.getTuple(at).then(
          (tuple) => {
            const metadata = tuple?.metadata as { run_id?: unknown; source?: unknown } | undefined;
            if (metadata?.run_id === runId && metadata.source === "loop") {
              armed = true;
              act();
            }
          },
          () => undefined,
        );
      });
  const signal = anySignal([cancel, timeout === undefined ? undefined : AbortSignal.timeout(Math.ceil(timeout))]);
  const signals = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  let output: Output;
  try {
    output = await graph.invoke(input, {
      ...config,
      metadata: { ...config.metadata, run_id: runId },
      configurable: {
        ...(isResumeMap(input) ? { [STRICT_RESUME_KEY]: true } : {}),
        ...config.configurable,
        [ABORT_SIGNALS_KEY]: { externalAbortSignal: signals },
      },
    });
  } catch (error) {
    // A rollback was promised to the newer run ("stopping"): keep the promise
    // whatever ended this one.
    if (asked === "rollback") await saver.deleteForRuns([runId], { threadId });
    if (!stop.signal.aborted || signal?.aborted) throw error;
    throw new RunInterruptedError(threadId, runId, asked!, { cause: error });
  } finally {
    offStop();
    offPuts();
  }
  // Stopped too late to abort (the graph had finished): a promised rollback
  // still happens; an interrupt has nothing left to stop.
  if (asked === "rollback") {
    await saver.deleteForRuns([runId], { threadId });
    throw new RunInterruptedError(threadId, runId, "rollback");
  }
  return output;
}

/**
 * One run per thread across tabs and workers: `runOnThread` runs a graph on a
 * thread while holding that thread's Web Lock, and decides what a second run
 * does when it finds the lock taken, after LangGraph Platform's double-texting
 * `multitask_strategy`. `isThreadRunning`/`watchThreadRunning` tell a UI that
 * a thread is busy elsewhere. See README, "One run per thread".
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { ThreadBusyError } from "./errors.js";
import { defaultLockManager, noteRunLocks, runLockName, type RunLockManager } from "./locks.js";
import { RunChannel } from "./signals.js";
import { anySignal, askToStop, holderLockName, runHolding, type InvokableGraph, type RunSaver } from "./holder.js";

export type { InvokableGraph, RunSaver } from "./holder.js";

export {
  isThreadRunning,
  watchThreadRunning,
  type ThreadRunningOptions,
  type WatchThreadRunningOptions,
} from "./watch.js";

/** What a run does when another run holds its thread. */
export type MultitaskStrategy = "reject" | "enqueue" | "interrupt" | "rollback";

const STRATEGIES: readonly MultitaskStrategy[] = ["reject", "enqueue", "interrupt", "rollback"];

/** The longest `config.timeout`: the largest delay a timer holds (a signed 32-bit count of ms). */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

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
  // copyThread and importThread must see this run through the same locks, until it lets the thread go.
  const release = options.locks ? noteRunLocks(saver.dbName, options.locks) : undefined;
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
    release?.();
  }
}

// ------------------------------------------------------------------ internals

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

/**
 * A run while it holds its thread (`runOnThread`'s holder side): it answers
 * newer runs' stop requests, stops only once its input is in the state, and
 * keeps a promised rollback; and the waiting side's stop requests, repeated
 * until the holder answers.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import type { CheckpointChange } from "../saver/events.js";
import { RunInterruptedError } from "./errors.js";
import type { RunLockManager } from "./locks.js";
import type { RunChannel, StopStrategy } from "./signals.js";

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
 * ignore the key (and name all of a node's questions alike). The agent server
 * sets it too, for a run asked with `strict_resume`.
 * @internal
 */
export const STRICT_RESUME_KEY = "__pregel_strict_resume";

/** How often a waiting run repeats its stop request until the holder answers. */
const STOP_RESEND_MS = 200;

/**
 * One signal that aborts when any of `signals` does, or undefined for none.
 * @internal
 */
export function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const given = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  return given.length > 1 ? AbortSignal.any(given) : given[0];
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

/**
 * The lock a run holds, inside its thread's lock `threadLock`, for as long as it runs.
 * @internal
 */
export function holderLockName(threadLock: string, runId: string): string {
  return `${threadLock}:holder:${encodeURIComponent(runId)}`;
}

/**
 * What {@link askToStop} asks for: the thread, the waiting run, its strategy and the thread's lock.
 * @internal
 */
export interface StopRequest {
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
 * @internal
 */
export function askToStop(channel: RunChannel, { threadId, runId, strategy, lockName, locks }: StopRequest) {
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

/**
 * What {@link runHolding} runs with: the saver, the ids, the run channel, the cancel signal and the timeout.
 * @internal
 */
export interface Holding {
  saver: RunSaver;
  threadId: string;
  runId: string;
  channel: RunChannel;
  signal: AbortSignal | undefined;
  /** `config.timeout`: ms the run may take once it holds the thread. */
  timeout: number | undefined;
}

/**
 * The run itself, with the lock held: answers stop requests from newer runs.
 * @internal
 */
export async function runHolding<Input, Output>(
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

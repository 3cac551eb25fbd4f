/**
 * The runs of a session, apart from the session: one queue per thread, what
 * runs, what was stopped or failed in this tab, and the run itself (streamed
 * under the thread's Web Lock). Functions over a {@link RunState} and the
 * saver and agent they are given, so they never reach back into `Session`.
 */
import type { BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { StateSnapshot } from "@langchain/langgraph/web";
import { APPROVAL_NODE, stoppedAnswer, type Agent, type TokenChunk } from "./agent.js";
import { errorText, isAbort } from "./errors.js";
import { runOnThread, type IndexedDBSaver } from "./lib.js";

/** What a run tells the page as it goes. */
export type RunEvent = { kind: "token"; text: string } | { kind: "values"; messages: BaseMessage[] };

/**
 * A run stopped while it still waited for the thread (another tab was
 * answering on it): nothing of it was written, its input never sent.
 */
export class RunNotStarted extends Error {
  override name = "RunNotStarted";
}

/**
 * How a thread's last turn ended when it has no answer: stopped here, failed
 * (the model's error), or interrupted (the page was closed mid-answer: the
 * saver holds a step that never finished, and no tab is running it).
 */
export type TurnProblem = { kind: "stopped" } | { kind: "failed"; message: string } | { kind: "interrupted" };

/** What a session knows of its runs, by thread id. */
export interface RunState {
  /** One run at a time per thread: sends queue behind the running one. */
  readonly queues: Map<string, Promise<void>>;
  readonly running: Set<string>;
  /**
   * Runs asked for and not ended, by thread: counted from the call, so a
   * run still waiting for its turn, or for what it does before it streams
   * (the title write of a send), is already one (see {@link enqueueRun}).
   */
  readonly asked: Map<string, number>;
  /** Threads whose run holds the thread's lock in this tab (the others may wait for another tab's). */
  readonly holding: Set<string>;
  /** The running run of each thread, to stop it. */
  readonly controllers: Map<string, AbortController>;
  /**
   * Threads whose run was stopped while asked for and not started yet (the
   * Stop button shows from the call, while the run still prepares: an edit
   * reads its fork point and retitles the thread first): it does not start.
   */
  readonly stopAsked: Set<string>;
  /** Threads whose last run was stopped in this tab (the saver can't tell a stop from a closed tab). */
  readonly stopped: Set<string>;
  /** The last error of each thread's run in this tab, for failures that left no task error in the saver. */
  readonly failed: Map<string, string>;
}

/** An empty {@link RunState}: nothing queued, nothing run yet. */
export function newRunState(): RunState {
  return {
    queues: new Map(),
    running: new Set(),
    asked: new Map(),
    holding: new Set(),
    controllers: new Map(),
    stopAsked: new Set(),
    stopped: new Set(),
    failed: new Map(),
  };
}

/** What a run needs of its session. */
export interface RunContext {
  readonly saver: IndexedDBSaver;
  readonly agent: Agent;
  /** The run's config: the thread (and the checkpoint to fork from). */
  config(threadId: string, checkpointId?: string): RunnableConfig;
}

/** Runs `work` after the thread's queued work (failed or not); resolves or fails with `work`. */
export function enqueue(state: RunState, threadId: string, work: () => Promise<void>): Promise<void> {
  const previous = state.queues.get(threadId) ?? Promise.resolve();
  const next = previous.then(work, work);
  const tail = next.catch(() => undefined);
  state.queues.set(threadId, tail);
  void tail.then(() => {
    if (state.queues.get(threadId) === tail) state.queues.delete(threadId);
  });
  return next;
}

/**
 * {@link enqueue} for a run: the thread counts as running from this call
 * until the run ends (`asked`). A read of the thread that finished in
 * between (a refresh timer, say) drew it idle: no Stop, the message just sent
 * gone, until the run's first event.
 */
export function enqueueRun(state: RunState, threadId: string, work: () => Promise<void>): Promise<void> {
  state.asked.set(threadId, (state.asked.get(threadId) ?? 0) + 1);
  const unlessStopped = () => (state.stopAsked.delete(threadId) ? Promise.reject(notStarted()) : work());
  return enqueue(state, threadId, unlessStopped).finally(() => {
    const left = (state.asked.get(threadId) ?? 1) - 1;
    if (left > 0) state.asked.set(threadId, left);
    else {
      state.asked.delete(threadId);
      state.stopAsked.delete(threadId);
    }
  });
}

function notStarted(): RunNotStarted {
  return new RunNotStarted("Stopped before it started.");
}

/** Resolves once every queued run has ended (before a lock change moves the databases). */
export async function allQueued(state: RunState): Promise<void> {
  await Promise.all([...state.queues.values()]);
}

/**
 * Stops the thread's running answer; the turn stays, marked stopped, with
 * Retry. A run asked for that has not started yet does not start.
 */
export function stopRun(state: RunState, threadId: string): void {
  const controller = state.controllers.get(threadId);
  if (controller) controller.abort(new DOMException("Stopped by the user.", "AbortError"));
  else if (state.asked.has(threadId)) state.stopAsked.add(threadId);
}

/**
 * Why the latest turn has no answer, or undefined when it has one (or is
 * paused for approval, or running). Read from the saver, so it survives a
 * reload: a step still due (`next`) that nothing runs was cut short, and a
 * task error saved with it says why.
 */
export function turnProblem(state: RunState, threadId: string, snapshot: StateSnapshot): TurnProblem | undefined {
  if (state.running.has(threadId) || snapshot.next.length === 0 || snapshot.next.includes(APPROVAL_NODE))
    return undefined;
  const failed = snapshot.tasks.find((task) => task.error !== undefined);
  if (failed) return isAbort(failed.error) ? { kind: "stopped" } : { kind: "failed", message: errorText(failed.error) };
  const message = state.failed.get(threadId);
  if (message) return { kind: "failed", message };
  return state.stopped.has(threadId) ? { kind: "stopped" } : { kind: "interrupted" };
}

/**
 * Keeps a stopped model call's text as the agent's answer, marked stopped
 * (see `stoppedAnswer`): the turn ends there, and Retry asks again. Only a
 * stop during the model's step: a stop in a tool step leaves that step due
 * (the turn shows it was stopped, and Retry runs it).
 */
async function keepStopped(context: RunContext, threadId: string, text: string): Promise<void> {
  const config = context.config(threadId);
  const snapshot = await context.agent.getState(config);
  if (!snapshot.next.includes("agent")) return;
  await context.agent.updateState(config, { messages: [stoppedAnswer(text)] }, "agent");
}

/** What a run starts with: a new message, an answer to the approval question, or nothing (go on). */
export type RunInput = Parameters<Agent["stream"]>[0];

/**
 * Streams one run (from `checkpointId` when given: a fork). A stop ends it
 * quietly (the turn shows it was stopped); any other error is thrown.
 */
export async function runThread(
  state: RunState,
  context: RunContext,
  threadId: string,
  input: RunInput,
  onEvent: (event: RunEvent) => void,
  checkpointId?: string,
): Promise<void> {
  // Stopped while it prepared (see RunState.stopAsked): never started, as one stopped while waiting for the lock.
  if (state.stopAsked.delete(threadId)) throw notStarted();
  const controller = new AbortController();
  state.running.add(threadId);
  state.controllers.set(threadId, controller);
  state.stopped.delete(threadId);
  state.failed.delete(threadId);
  /** The model's text of the step in progress: what a stop keeps. */
  let partial = "";
  // The run holds the thread's Web Lock: a send from another tab on the same
  // thread waits for it ("enqueue") and then runs on its answer, so two tabs
  // never answer from the same parent (no lost message, no hidden branch).
  const streamer = {
    checkpointer: context.saver,
    invoke: async (runInput: typeof input, options?: RunnableConfig): Promise<void> => {
      state.holding.add(threadId);
      const stream = await context.agent.stream(runInput, {
        ...options,
        streamMode: ["custom", "values"],
      });
      try {
        await forward(stream);
      } catch (error) {
        // Still holding the thread's lock: no other tab writes between the stop and its answer kept.
        if (controller.signal.aborted) await keepStopped(context, threadId, partial);
        throw error;
      }
    },
  };
  async function forward(stream: AsyncIterable<[string, unknown]>): Promise<void> {
    for await (const [mode, chunk] of stream) {
      if (mode === "custom") {
        partial += (chunk as TokenChunk).text;
        onEvent({ kind: "token", text: (chunk as TokenChunk).text });
      } else if ((chunk as { messages?: BaseMessage[] }).messages) {
        // A step ended: its text is in the messages now. (A pause streams only its `__interrupt__`.)
        partial = "";
        onEvent({ kind: "values", messages: (chunk as { messages: BaseMessage[] }).messages });
      }
    }
  }
  try {
    await runOnThread(streamer, input, context.config(threadId, checkpointId), {
      multitask: "enqueue",
      saver: context.saver,
      signal: controller.signal,
    });
  } catch (error) {
    if (!controller.signal.aborted) {
      state.failed.set(threadId, errorText(error));
      throw error;
    }
    // Not holding the thread yet: the run never started, so no turn of this tab was stopped.
    if (!state.holding.has(threadId)) throw notStarted();
    state.stopped.add(threadId);
  } finally {
    state.running.delete(threadId);
    state.holding.delete(threadId);
    state.controllers.delete(threadId);
  }
}

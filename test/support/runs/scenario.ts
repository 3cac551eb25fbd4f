/**
 * Shared by the run-coordinator tests (Node, Chromium pages and workers,
 * Firefox): a chat graph whose "model" takes `delay_ms` (from
 * `config.configurable`) and stops early when the run is aborted, plus
 * checks on what a thread looks like afterwards.
 */
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import type { LangGraphRunnableConfig } from "@langchain/langgraph/web";
import {
  END,
  MessagesDeltaValue,
  MessagesValue,
  START,
  StateGraph,
  StateSchema,
  type BaseCheckpointSaver,
} from "@langchain/langgraph/web";
import { plain } from "../chat-graph.js";
// runs/ and saver/ rather than the package's root: a tab of src/runs/runs.browser.test.ts loads
// what this imports into a realm of its own, and the root adds the store, export and encryption.
import { RunInterruptedError, ThreadBusyError, runOnThread, type MultitaskStrategy } from "../../../src/runs/index.js";
import type { IndexedDBSaver } from "../../../src/saver/index.js";

/** Waits `ms`, or until `signal` aborts (then rejects). */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/** How the slow model thinks: waits `ms`, or until `signal` aborts (then rejects). */
export type Think = (ms: number, signal: AbortSignal | undefined) => Promise<void>;

/**
 * The chat graph of test/support/chat-graph.ts with a slow `agent`, which
 * thinks `delay_ms` (from `config.configurable`) through `think`; `delta`
 * keeps messages on `MessagesDeltaValue`.
 */
export function slowChatGraph(saver: BaseCheckpointSaver, delta = false, think: Think = sleep) {
  const State = new StateSchema({ messages: delta ? MessagesDeltaValue : MessagesValue });
  return new StateGraph(State)
    .addNode("agent", async (state, config: LangGraphRunnableConfig) => {
      await think(Number(config.configurable?.delay_ms ?? 0), config.signal);
      const last = state.messages[state.messages.length - 1];
      return { messages: [new AIMessage(`echo ${String(last?.content)} (#${state.messages.length})`)] };
    })
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer: saver });
}

/** How one `runOnThread` call ended, as plain data (it crosses frames and workers). */
export interface Outcome {
  text: string;
  ok: boolean;
  error?: string;
  strategy?: string;
  ms: number;
  /** Whether its model finished a think (its whole delay, or ended early by another send's stop). */
  thoughtOut?: boolean;
}

/**
 * The model of one {@link send}. A stopped send (interrupt, rollback) says
 * so on a channel of its database and thread (BroadcastChannel: other
 * frames, workers and savers of this realm alike) once its outcome is
 * measured. With `answerAfterStop` (one of two sends at once) the model then
 * answers at once: only the stopped run's wait matters there (it must still
 * be thinking when the other send stops it), and the run that stopped it
 * waited out the same delay (1.5 s a test) for nothing. Without it (a third
 * send may have to stop this one) the model thinks its whole delay. A message
 * that comes late only leaves a model its whole delay, as before. The notice
 * leaves only after the stopped send's `ms` is taken: in the browsers
 * (src/runs/runs.browser.test.ts) the two frames share one event loop, and
 * a notice sent when the stopped model gave up let the stopping run's answer
 * delay the end of the stopped send past the delay (Firefox, loaded machine,
 * 3 runs in 4).
 */
function modelOfSend(dbName: string, threadId: string, answerAfterStop: boolean) {
  const channel = new BroadcastChannel(`runs-scenario-stopped:${dbName}:${threadId}`);
  const otherStopped = new AbortController();
  if (answerAfterStop) channel.onmessage = () => otherStopped.abort();
  let thoughtOut = false;
  const think: Think = async (ms, signal) => {
    const either = signal ? AbortSignal.any([signal, otherStopped.signal]) : otherStopped.signal;
    try {
      await sleep(ms, either);
    } catch (error) {
      // Only this run's own stop ends its run; another's stop ends the wait (its answer comes now).
      if (signal?.aborted) throw error;
    }
    thoughtOut = true;
  };
  return {
    think,
    thoughtOut: () => thoughtOut,
    stopped: () => channel.postMessage("stopped"),
    close: () => channel.close(),
  };
}

/**
 * Sends `text` on `threadId` through runOnThread and reports how it ended;
 * `answerAfterStop` for one of two sends at once (see `modelOfSend`).
 */
export async function send(
  saver: IndexedDBSaver,
  threadId: string,
  text: string,
  multitask: MultitaskStrategy,
  delayMs: number,
  delta = false,
  answerAfterStop = false,
): Promise<Outcome> {
  const started = performance.now();
  const config = { configurable: { thread_id: threadId, delay_ms: delayMs } };
  const model = modelOfSend(saver.dbName, threadId, answerAfterStop);
  try {
    const graph = slowChatGraph(saver, delta, model.think);
    await runOnThread(graph, { messages: [new HumanMessage(text)] }, config, { multitask });
    return { text, ok: true, ms: performance.now() - started };
  } catch (error) {
    const strategy = error instanceof RunInterruptedError ? error.strategy : undefined;
    const name =
      error instanceof ThreadBusyError || error instanceof RunInterruptedError
        ? error.name
        : `${(error as Error)?.name}: ${(error as Error)?.message}`;
    const outcome = {
      text,
      ok: false,
      error: name,
      ms: performance.now() - started,
      thoughtOut: model.thoughtOut(),
      ...(strategy ? { strategy } : {}),
    };
    if (strategy) model.stopped();
    return outcome;
  } finally {
    model.close();
  }
}

/** Runs one plain turn (no coordinator), so the thread has a history to keep. */
export async function seed(saver: IndexedDBSaver, threadId: string, text: string, delta = false): Promise<void> {
  await slowChatGraph(saver, delta).invoke(
    { messages: [new HumanMessage(text)] },
    { configurable: { thread_id: threadId } },
  );
}

/** The thread's messages and next nodes, as plain data. */
export async function threadState(saver: IndexedDBSaver, threadId: string, delta = false) {
  const state = await slowChatGraph(saver, delta).getState({ configurable: { thread_id: threadId } });
  return { messages: plain(state.values.messages), next: [...state.next] };
}

/**
 * Problems with the thread's history, or undefined: every root checkpoint but
 * the oldest has the next older one as parent, so no checkpoint has two
 * children (no hidden sibling branch). Also returns the run ids present.
 */
export async function historyReport(saver: IndexedDBSaver, threadId: string) {
  const rows: { id: string; parent?: string; runId?: string }[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) {
    rows.push({
      id: String(tuple.config.configurable?.checkpoint_id),
      parent: tuple.parentConfig?.configurable?.checkpoint_id as string | undefined,
      runId: (tuple.metadata as { run_id?: string } | undefined)?.run_id,
    });
  }
  const problems: string[] = [];
  rows.forEach((row, i) => {
    const older = rows[i + 1];
    if (older && row.parent !== older.id) problems.push(`${row.id} has parent ${row.parent}, not ${older.id}`);
    if (!older && row.parent !== undefined) problems.push(`oldest ${row.id} has parent ${row.parent}`);
  });
  return {
    checkpoints: rows.length,
    problem: problems[0],
    runIds: [...new Set(rows.flatMap((r) => (r.runId ? [r.runId] : [])))],
  };
}

/**
 * What the thread must hold after two sends at once under `strategy`, given
 * which send held the thread first: the seed turn, then
 * - reject: the first turn, answered (the second got ThreadBusyError);
 * - enqueue: both turns, each answered, first then second;
 * - interrupt: the first's message kept unanswered, then the second, answered;
 * - rollback: only the second turn, answered (the first's removed).
 */
export function expectedMessages(
  strategy: MultitaskStrategy,
  seedText: string,
  first: string,
  second: string,
): [string, string][] {
  const seeded: [string, string][] = [
    ["human", seedText],
    ["ai", `echo ${seedText} (#1)`],
  ];
  switch (strategy) {
    case "reject":
      return [...seeded, ["human", first], ["ai", `echo ${first} (#3)`]];
    case "enqueue":
      return [
        ...seeded,
        ["human", first],
        ["ai", `echo ${first} (#3)`],
        ["human", second],
        ["ai", `echo ${second} (#5)`],
      ];
    case "interrupt":
      return [...seeded, ["human", first], ["human", second], ["ai", `echo ${second} (#4)`]];
    case "rollback":
      return [...seeded, ["human", second], ["ai", `echo ${second} (#3)`]];
  }
}

/**
 * Which of two outcomes held the thread first: under reject the one that
 * succeeded; under interrupt and rollback the one that was stopped; under
 * enqueue the one that finished first.
 */
export function firstAndSecond(strategy: MultitaskStrategy, a: Outcome, b: Outcome): [Outcome, Outcome] {
  if (strategy === "enqueue") return a.ms <= b.ms ? [a, b] : [b, a];
  if (strategy === "reject") return a.ok ? [a, b] : [b, a];
  return a.ok ? [b, a] : [a, b];
}

/** The delay of the slow model per strategy: long where the first run must still be running when it is stopped. */
export const DELAY_MS: Record<MultitaskStrategy, number> = {
  reject: 300,
  enqueue: 300,
  interrupt: 1_500,
  rollback: 1_500,
};

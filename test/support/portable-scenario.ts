/**
 * The thread the portability tests move between savers: a chat on
 * `MessagesDeltaValue` (a delta channel), a subgraph that stops for approval
 * (an interrupt inside a namespace), a parallel sibling whose result waits as
 * a pending write, and `interruptBefore` on the last node. Plus helpers that
 * turn state, history and raw tuples into plain data to compare across savers.
 */
import { AIMessage, HumanMessage, isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  Annotation,
  Command,
  DeltaValue,
  END,
  MessagesDeltaValue,
  NodeInterrupt,
  ReducedValue,
  START,
  Send,
  StateGraph,
  StateSchema,
  interrupt,
  type BaseCheckpointSaver,
  type StateSnapshot,
} from "@langchain/langgraph/web";
import { isDeltaSnapshot } from "@langchain/langgraph-checkpoint";
import { z } from "zod";

/** A list of strings that grows: `["a"] + ["b"] = ["a", "b"]`. */
function notesValue() {
  return new ReducedValue(
    z.array(z.string()).default(() => []),
    { reducer: (a: string[], b: string[]) => a.concat(b) },
  );
}

/** A second delta channel that snapshots every 2 updates, so checkpoints hold `DeltaSnapshot`s. */
function logValue() {
  return new DeltaValue(
    z.array(z.string()).default(() => []),
    {
      reducer: (state: string[], writes: string[][]) => state.concat(...writes),
      snapshotFrequency: 2,
    },
  );
}

/**
 * The graph, per saver. `dynamic` uses `interrupt()` and resumes with a
 * `Command` (needs AsyncLocalStorage: Node only); otherwise the review node
 * throws a `NodeInterrupt` until {@link Scenario.approve} opens its gate, which
 * works in browsers too. Both store `__interrupt__` writes.
 */
export class Scenario {
  #gateOpen = false;

  constructor(readonly dynamic = false) {}

  /** The compiled graph on `saver`. */
  graph(saver: BaseCheckpointSaver) {
    const research = new StateGraph(new StateSchema({ report: z.string().default("") }))
      .addNode("draft", () => ({ report: "drafted" }))
      .addNode("review", (state) => {
        let answer: unknown = "gate";
        if (this.dynamic) answer = interrupt({ question: "publish the draft?" });
        else if (!this.#gateOpen) throw new NodeInterrupt({ question: "publish the draft?" });
        return { report: `${state.report}, approved (${String(answer)})` };
      })
      .addEdge(START, "draft")
      .addEdge("draft", "review")
      .addEdge("review", END)
      .compile();
    const State = new StateSchema({
      messages: MessagesDeltaValue,
      log: logValue(),
      notes: notesValue(),
      report: z.string().default(""),
    });
    return new StateGraph(State)
      .addNode("agent", (state) => {
        const last = state.messages[state.messages.length - 1];
        return {
          messages: [new AIMessage(`echo ${String(last?.content)} (#${state.messages.length})`)],
          log: ["agent"],
        };
      })
      .addNode("research", research)
      .addNode("side", (state) => ({ notes: [`side ${state.messages.length}`], log: [`side ${state.log.length}`] }))
      .addNode("finish", (state) => ({
        messages: [new AIMessage(`done: ${state.report}; ${state.notes.join(", ")}`)],
        log: [`finish ${state.log.length}`],
      }))
      .addEdge(START, "agent")
      .addEdge("agent", "research")
      .addEdge("agent", "side")
      .addEdge("research", "finish")
      .addEdge("side", "finish")
      .addEdge("finish", END)
      .compile({ checkpointer: saver, interruptBefore: ["finish"] });
  }

  /** A user message: runs until the subgraph asks for approval (`side` is then a pending write). */
  async ask(saver: BaseCheckpointSaver, threadId: string, text: string): Promise<void> {
    await this.graph(saver).invoke({ messages: [new HumanMessage(text)] }, config(threadId));
  }

  /** Approves: the subgraph resumes, the run stops before `finish`. */
  async approve(saver: BaseCheckpointSaver, threadId: string): Promise<void> {
    this.#gateOpen = true;
    try {
      await this.graph(saver).invoke(this.dynamic ? new Command({ resume: "yes" }) : null, config(threadId));
    } finally {
      this.#gateOpen = false;
    }
  }

  /** Lets `finish` run. */
  async finish(saver: BaseCheckpointSaver, threadId: string): Promise<void> {
    await this.graph(saver).invoke(null, config(threadId));
  }

  /** One full turn, then a second one left waiting for approval inside the subgraph. */
  async untilInterrupted(saver: BaseCheckpointSaver, threadId: string): Promise<void> {
    await this.ask(saver, threadId, "hello");
    await this.approve(saver, threadId);
    await this.finish(saver, threadId);
    await this.ask(saver, threadId, "again");
  }

  /** Finishes the waiting turn and runs one more full turn. */
  async continueRun(saver: BaseCheckpointSaver, threadId: string, text = "one more"): Promise<void> {
    await this.approve(saver, threadId);
    await this.finish(saver, threadId);
    await this.ask(saver, threadId, text);
    await this.approve(saver, threadId);
    await this.finish(saver, threadId);
  }

  /** The state (with subgraph states) and full history, as plain data with ids. */
  async view(saver: BaseCheckpointSaver, threadId: string) {
    const graph = this.graph(saver);
    const state = stateView(await graph.getState(config(threadId), { subgraphs: true }));
    const history = [];
    for await (const snapshot of graph.getStateHistory(config(threadId))) history.push(stateView(snapshot));
    return { state, history };
  }

  /** As {@link view} without checkpoint ids, task ids and timestamps (for runs made separately). */
  async shape(saver: BaseCheckpointSaver, threadId: string) {
    return withoutIds(await this.view(saver, threadId));
  }
}

/**
 * A fan-out: `Send`s to `research` for each topic, paused before `research`
 * runs (the pending `Send`s are a channel value of the checkpoint).
 */
export function fanOutGraph(saver: BaseCheckpointSaver) {
  const State = Annotation.Root({
    topics: Annotation<string[]>(),
    results: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  return new StateGraph(State)
    .addNode("plan", () => ({}))
    .addNode("research", (input: { topic: string }) => ({ results: [`notes on ${input.topic}`] }))
    .addEdge(START, "plan")
    .addConditionalEdges("plan", (state) => state.topics.map((topic) => new Send("research", { topic })))
    .addEdge("research", END)
    .compile({ checkpointer: saver, interruptBefore: ["research"] });
}

/** `{ configurable: { thread_id } }`. */
export function config(threadId: string): RunnableConfig {
  return { configurable: { thread_id: threadId } };
}

/** Any value as plain, comparable data: messages by their fields, DeltaSnapshots marked. */
export function plain(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (isBaseMessage(value)) return messageView(value);
  if (isDeltaSnapshot(value)) return { $deltaSnapshot: plain((value as { value: unknown }).value) };
  if (Array.isArray(value)) return value.map(plain);
  if (value instanceof Map) return { $map: [...value].map(([k, v]) => [plain(k), plain(v)]) };
  if (value instanceof Set) return { $set: [...value].map(plain) };
  if (value instanceof Date) return { $date: value.toISOString() };
  if (value instanceof Uint8Array) return { $bytes: [...value] };
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const item = (value as Record<string, unknown>)[key];
    if (typeof item !== "function") out[key] = plain(item);
  }
  return out;
}

/** A message's fields that matter. */
function messageView(message: BaseMessage) {
  const view: Record<string, unknown> = { type: message.getType(), content: plain(message.content), id: message.id };
  if (message.name !== undefined) view.name = message.name;
  const toolCalls = (message as { tool_calls?: unknown[] }).tool_calls;
  if (toolCalls?.length) view.tool_calls = plain(toolCalls);
  return view;
}

/** A StateSnapshot as plain data (subgraph states included). */
export function stateView(snapshot: StateSnapshot): Record<string, unknown> {
  return {
    values: plain(snapshot.values),
    next: [...snapshot.next],
    config: plain(snapshot.config.configurable),
    parentConfig: plain(snapshot.parentConfig?.configurable),
    metadata: plain(snapshot.metadata),
    createdAt: snapshot.createdAt,
    tasks: snapshot.tasks.map((task) => ({
      id: task.id,
      name: task.name,
      interrupts: plain(task.interrupts),
      error: plain(task.error),
      result: plain(task.result),
      state:
        task.state === undefined
          ? undefined
          : "values" in task.state
            ? stateView(task.state as StateSnapshot)
            : plain((task.state as RunnableConfig).configurable),
    })),
  };
}

/** Keys whose values are per-run identities. */
const ID_KEYS = new Set([
  "id",
  "checkpoint_id",
  "checkpoint_map",
  "createdAt",
  "thread_ts",
  "checkpoint_ns",
  "parents",
  "run_id",
]);

/** Plain data without per-run identities (ids, timestamps, namespaces carrying task ids). */
export function withoutIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutIds);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) if (!ID_KEYS.has(key)) out[key] = withoutIds(item);
  return out;
}

/**
 * Every tuple of a thread as plain data, sorted by (namespace, id), with
 * pending writes sorted by task id when `sortWrites` (savers order them differently).
 */
export async function rawThread(saver: BaseCheckpointSaver, threadId: string, options: { sortWrites?: boolean } = {}) {
  const rows = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    const writes = (tuple.pendingWrites ?? []).map(([taskId, channel, value]) => [taskId, channel, plain(value)]);
    if (options.sortWrites) writes.sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));
    rows.push({
      ns: tuple.config.configurable?.checkpoint_ns,
      id: tuple.config.configurable?.checkpoint_id,
      thread: tuple.config.configurable?.thread_id,
      parent: tuple.parentConfig?.configurable?.checkpoint_id,
      parentThread: tuple.parentConfig?.configurable?.thread_id,
      checkpoint: plain(tuple.checkpoint),
      metadata: plain(tuple.metadata),
      writes,
    });
  }
  return rows.sort((a, b) => (`${a.ns}\u0000${a.id}` < `${b.ns}\u0000${b.id}` ? -1 : 1));
}

/**
 * LangGraph's own interrupt scenarios, written once and run two ways: with
 * LangGraph's `interrupt()` (Node, AsyncLocalStorage) and with
 * `interruptWith(config, …)` (any runtime). Each scenario returns a trace of
 * what a user sees: every invoke's result, the state (values, next, tasks and
 * their interrupts) after it, and the history at the end. Ids (checkpoints,
 * tasks, interrupts) are random per run, so the trace names each by its order
 * of first appearance; a wrong interrupt id still shows, because a resume map
 * keyed by it then fails to answer and the trace diverges.
 */
import type * as LangGraph from "@langchain/langgraph/web";
import type { BaseCheckpointSaver, InterruptOptions, LangGraphRunnableConfig } from "@langchain/langgraph/web";
import type { ToolNode as ToolNodeType } from "@langchain/langgraph/prebuilt";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";

/** How a scenario asks: `interrupt(value, options)` or `interruptWith(config, value, options)`. */
export type Ask = (config: LangGraphRunnableConfig, value: unknown, options?: InterruptOptions) => unknown;

/** One LangGraph release to build the graphs with, and how its nodes ask. */
export interface ScenarioKit {
  /** The LangGraph module (its web entry, or the root one in Node). */
  lg: typeof LangGraph;
  ToolNode: typeof ToolNodeType;
  ask: Ask;
  saver: () => BaseCheckpointSaver;
}

/** A JSON-comparable trace of one scenario. */
export type Trace = unknown;

const ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}/g;

/** Replaces every uuid and 32-hex id by `<idN>`, N its order of first appearance. */
export function relabel(value: unknown): Trace {
  const labels = new Map<string, string>();
  // Absent and undefined are one here: savers differ in whether a round trip keeps an undefined key.
  const text = JSON.stringify(value) ?? "null";
  return JSON.parse(
    text.replace(ID, (id) => {
      if (!labels.has(id)) labels.set(id, `<id${labels.size + 1}>`);
      return labels.get(id)!;
    }),
  );
}

type Graph = {
  invoke(input: unknown, config: LangGraphRunnableConfig): Promise<unknown>;
  getState(config: LangGraphRunnableConfig): Promise<LangGraph.StateSnapshot>;
  getStateHistory(config: LangGraphRunnableConfig): AsyncIterableIterator<LangGraph.StateSnapshot>;
  updateState(config: LangGraphRunnableConfig, values: unknown): Promise<unknown>;
};

function snapshot(s: LangGraph.StateSnapshot): unknown {
  return {
    values: s.values,
    next: s.next,
    tasks: s.tasks.map((t) => ({ name: t.name, interrupts: t.interrupts, error: t.error ? String(t.error) : null })),
    step: s.metadata?.step ?? null,
    source: s.metadata?.source ?? null,
    hasParent: s.parentConfig !== undefined,
  };
}

/** A step that edits the state with `updateState` instead of invoking the graph. */
class Update {
  constructor(readonly values: unknown) {}
}

/** Runs `inputs` one after another on a fresh thread and traces each step, then the history. */
async function trace(graph: Graph, inputs: ((last: unknown) => unknown)[]): Promise<Trace> {
  const config = { configurable: { thread_id: "t" } };
  const steps: unknown[] = [];
  let last: unknown;
  for (const input of inputs) {
    try {
      const next = input(last);
      if (next instanceof Update) {
        await graph.updateState(config, next.values);
        steps.push({ updated: next.values, state: snapshot(await graph.getState(config)) });
        continue;
      }
      last = await graph.invoke(next, config);
      steps.push({ result: last, state: snapshot(await graph.getState(config)) });
    } catch (error) {
      const e = error as Error;
      steps.push({ error: e.name, message: e.message, state: snapshot(await graph.getState(config)) });
    }
  }
  const history: unknown[] = [];
  for await (const s of graph.getStateHistory(config)) history.push(snapshot(s));
  return relabel({ steps, history });
}

/** The ids of the pending interrupts in an invoke result, in order. */
function pendingIds(result: unknown): string[] {
  const pending = (result as { __interrupt__?: { id: string }[] }).__interrupt__ ?? [];
  return pending.map((i) => i.id);
}

/** Every scenario, by name, traced with the kit's LangGraph and way of asking. */
export async function runScenarios(kit: ScenarioKit): Promise<Record<string, Trace>> {
  const { lg, ask, saver, ToolNode } = kit;
  const { Annotation, Command, StateGraph, START, END, MessagesAnnotation } = lg;
  const State = Annotation.Root({
    log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  type S = typeof State.State;
  const resume = (value: unknown) => () => new Command({ resume: value });
  const start = () => ({ log: ["start"] });
  const asking = (name: string) => (_: S, config: LangGraphRunnableConfig) => ({
    log: [`${name}:${String(ask(config, { question: name }))}`],
  });
  const oneNode = () =>
    new StateGraph(State).addNode("ask", asking("ask")).addEdge(START, "ask").addEdge("ask", END).compile({
      checkpointer: saver(),
    });

  const out: Record<string, Trace> = {};
  out.single = await trace(oneNode(), [start, resume("yes")]);

  const twoQuestions = () =>
    new StateGraph(State)
      .addNode("ask", (_: S, config: LangGraphRunnableConfig) => {
        const first = ask(config, "first?");
        const second = ask(config, "second?");
        return { log: [`${String(first)}+${String(second)}`] };
      })
      .addEdge(START, "ask")
      .addEdge("ask", END)
      .compile({ checkpointer: saver() });
  out.several = await trace(twoQuestions(), [start, resume("a"), resume("b"), resume("extra")]);
  // The second question's id is where LangGraph releases differ (1.7 counts the answered ones).
  const byId = (answer: string) => (last: unknown) => new Command({ resume: { [pendingIds(last)[0]!]: answer } });
  out.severalByMap = await trace(twoQuestions(), [start, byId("a"), byId("b")]);

  const twoNodes = () =>
    new StateGraph(State)
      .addNode("left", asking("left"))
      .addNode("right", asking("right"))
      .addEdge(START, "left")
      .addEdge(START, "right")
      .compile({ checkpointer: saver() });
  out.parallel = await trace(twoNodes(), [
    start,
    (last) => {
      const [first, second] = pendingIds(last);
      return new Command({ resume: { [first!]: "one", [second!]: "two" } });
    },
  ]);
  out.parallelOneByOne = await trace(twoNodes(), [
    start,
    (last) => new Command({ resume: { [pendingIds(last)[1]!]: "second first" } }),
    (last) => new Command({ resume: { [pendingIds(last)[0]!]: "then first" } }),
  ]);

  const inner = new StateGraph(State).addNode("inner", asking("inner")).addEdge(START, "inner").compile();
  const outer = new StateGraph(State)
    .addNode("before", () => ({ log: ["before"] }))
    .addNode("sub", inner)
    .addNode("after", () => ({ log: ["after"] }))
    .addEdge(START, "before")
    .addEdge("before", "sub")
    .addEdge("sub", "after")
    .compile({ checkpointer: saver() });
  out.subgraph = await trace(outer, [start, resume("deep")]);

  const saveMemory = tool(
    (input: { text: string }, config: LangGraphRunnableConfig) => {
      const answer = ask(config, { tool: "save_memory", args: input });
      return `answer: ${JSON.stringify(answer)}`;
    },
    { name: "save_memory", description: "Saves a memory after approval.", schema: z.object({ text: z.string() }) },
  );
  const agent = new StateGraph(MessagesAnnotation)
    .addNode("agent", () => ({
      messages: [
        new AIMessage({
          id: "ai-1",
          content: "",
          tool_calls: [{ id: "call-1", name: "save_memory", args: { text: "likes tea" } }],
        }),
      ],
    }))
    .addNode("tools", new ToolNode([saveMemory]))
    .addEdge(START, "agent")
    .addEdge("agent", "tools")
    .addEdge("tools", END)
    .compile({ checkpointer: saver() });
  out.tool = await trace(agent, [
    () => ({ messages: [new HumanMessage({ id: "human-1", content: "remember I like tea" })] }),
    resume({ decision: "approve" }),
  ]);

  out.afterUpdateState = await trace(oneNode(), [start, () => new Update({ log: ["edited"] }), resume("after edit")]);

  out.secondResume = await trace(oneNode(), [start, resume("yes"), resume("again")]);

  const schema = z.object({ ok: z.boolean() });
  const typed = new StateGraph(State)
    .addNode("ask", (_: S, config: LangGraphRunnableConfig) => ({
      log: [JSON.stringify(ask(config, "ok?", { responseSchema: schema }))],
    }))
    .addEdge(START, "ask")
    .compile({ checkpointer: saver() });
  out.responseSchema = await trace(typed, [start, resume({ ok: true, dropped: 1 })]);
  return out;
}

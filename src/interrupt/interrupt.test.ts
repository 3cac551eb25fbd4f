import {
  Annotation,
  Command,
  MemorySaver,
  START,
  StateGraph,
  type LangGraphRunnableConfig,
} from "@langchain/langgraph/web";
import { describe, expect, it } from "vitest";
import { interruptWith, SUPPORTED_LANGGRAPH, UnsupportedLangGraphError } from "./interrupt.js";

const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });

/** A one-node graph whose node hands interruptWith the config `tamper` makes of its own. */
function graphWith(tamper: (config: LangGraphRunnableConfig) => LangGraphRunnableConfig) {
  return new StateGraph(State)
    .addNode("ask", (_: typeof State.State, config: LangGraphRunnableConfig) => ({
      log: [String(interruptWith(tamper(config), "go?"))],
    }))
    .addEdge(START, "ask")
    .compile({ checkpointer: new MemorySaver() });
}

const thread = { configurable: { thread_id: "t" } };

describe("interruptWith", () => {
  it("says where the config comes from when called outside a run", () => {
    expect(() => interruptWith({}, "go?")).toThrow(/without a running graph's config.*second argument/);
    expect(() => interruptWith({ configurable: { thread_id: "t" } }, "go?")).toThrow(/without a running graph/);
  });

  it("fails at once, naming the supported LangGraph, when the run internals are missing or changed", async () => {
    const changes: [string, (c: Record<string, unknown>) => Record<string, unknown>][] = [
      ["no scratchpad", (c) => ({ ...c, __pregel_scratchpad: undefined })],
      ["no send", (c) => ({ ...c, __pregel_send: undefined })],
      ["no resume list", (c) => ({ ...c, __pregel_scratchpad: { interruptCounter: -1, consumeNullResume: () => {} } })],
      [
        "counter renamed",
        (c) => ({ ...c, __pregel_scratchpad: { counter: -1, resume: [], consumeNullResume: () => {} } }),
      ],
    ];
    for (const [label, change] of changes) {
      const graph = graphWith((config) => ({ ...config, configurable: change(config.configurable ?? {}) }));
      const failure = graph.invoke({ log: ["start"] }, thread);
      await expect(failure, label).rejects.toThrow(UnsupportedLangGraphError);
      await expect(graph.invoke({ log: ["start"] }, { configurable: { thread_id: label } })).rejects.toThrow(
        SUPPORTED_LANGGRAPH,
      );
      // Nothing paused: no interrupt was recorded that a later resume could answer.
      const state = await graph.getState(thread);
      expect(
        state.tasks.flatMap((t) => t.interrupts),
        label,
      ).toEqual([]);
    }
  });

  it("needs a checkpointer, as LangGraph's interrupt() does", async () => {
    const graph = new StateGraph(State)
      .addNode("ask", (_: typeof State.State, config: LangGraphRunnableConfig) => ({
        log: [String(interruptWith(config, "go?"))],
      }))
      .addEdge(START, "ask")
      .compile();
    await expect(graph.invoke({ log: [] })).rejects.toThrow(/No checkpointer set/);
  });

  it("pauses with the question and returns the answer on resume", async () => {
    const graph = graphWith((config) => config);
    const paused = await graph.invoke({ log: ["start"] }, thread);
    expect((paused as { __interrupt__?: unknown }).__interrupt__).toEqual([
      { id: expect.stringMatching(/^[0-9a-f]{32}$/), value: "go?" },
    ]);
    const done = await graph.invoke(new Command({ resume: "yes" }), thread);
    expect(done.log).toEqual(["start", "yes"]);
  });
});

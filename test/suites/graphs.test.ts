/**
 * Real LangGraph.js graphs on IndexedDBSaver, each compared with the same
 * graph on MemorySaver: what users see (state, history, next nodes) must not
 * depend on which saver keeps it. Runs in Node (fake-indexeddb) and Chromium.
 */
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import {
  Annotation,
  END,
  MemorySaver,
  START,
  Send,
  StateGraph,
  type BaseCheckpointSaver,
} from "@langchain/langgraph/web";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { chat, chatGraph, plain } from "../support/chat-graph.js";

const track = trackSavers<IndexedDBSaver>();

/** A saver on a fresh database, closed and deleted after the test. */
function idbSaver(dbName = freshDbName("graphs")): IndexedDBSaver {
  return track(new IndexedDBSaver({ dbName }));
}

describe("graphs on IndexedDBSaver behave as on MemorySaver", () => {
  it("keeps conversation memory across a second saver instance (a reload)", async () => {
    const dbName = freshDbName("reload");
    const first = idbSaver(dbName);
    await chat(first, "t1", ["hello", "how are you"]);
    await first.close();
    const second = idbSaver(dbName);
    const afterReload = await chat(second, "t1", ["still there?"]);
    const reference = await chat(new MemorySaver(), "t1", ["hello", "how are you", "still there?"]);
    expect(afterReload).toEqual(reference);
    expect(afterReload).toHaveLength(6);
  });

  it("pauses with interruptBefore and resumes after a reopen", async () => {
    const run = async (makeSaver: () => BaseCheckpointSaver) => {
      const State = Annotation.Root({
        log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
      });
      const build = (saver: BaseCheckpointSaver) =>
        new StateGraph(State)
          .addNode("plan", () => ({ log: ["planned"] }))
          .addNode("act", () => ({ log: ["acted"] }))
          .addEdge(START, "plan")
          .addEdge("plan", "act")
          .addEdge("act", END)
          .compile({ checkpointer: saver, interruptBefore: ["act"] });
      const config = { configurable: { thread_id: "approval" } };
      const saver = makeSaver();
      await build(saver).invoke({ log: ["start"] }, config);
      const paused = await build(saver).getState(config);
      const reopened = saver instanceof IndexedDBSaver ? idbSaver(saver.dbName) : saver;
      if (saver instanceof IndexedDBSaver) await saver.close();
      const resumedGraph = build(reopened);
      expect((await resumedGraph.getState(config)).next).toEqual(paused.next);
      await resumedGraph.invoke(null, config);
      const done = await resumedGraph.getState(config);
      return { pausedNext: paused.next, pausedLog: paused.values.log, next: done.next, log: done.values.log };
    };
    const ours = await run(() => idbSaver());
    expect(ours.pausedNext).toEqual(["act"]);
    expect(ours).toEqual(await run(() => new MemorySaver()));
  });

  it("replays from an old checkpoint and forks with updateState", async () => {
    const run = async (saver: BaseCheckpointSaver) => {
      const graph = chatGraph(saver);
      const config = { configurable: { thread_id: "travel" } };
      for (const text of ["one", "two", "three"]) {
        await graph.invoke({ messages: [new HumanMessage(text)] }, config);
      }
      const history = [];
      for await (const snapshot of graph.getStateHistory(config)) history.push(snapshot);
      const twoMessages = history.find((s) => s.values.messages?.length === 2 && s.next.length === 0)!;
      // Fork: continue from the old checkpoint with another question.
      await graph.invoke({ messages: [new HumanMessage("branch")] }, twoMessages.config);
      const branch = plain((await graph.getState(config)).values.messages);
      // Edit history: a new branch whose last answer is replaced.
      const edited = await graph.updateState(twoMessages.config, { messages: [new AIMessage("edited")] });
      const editedState = plain((await graph.getState(edited)).values.messages);
      const allHistory = [];
      for await (const snapshot of graph.getStateHistory(config)) allHistory.push(plain(snapshot.values.messages));
      allHistory.push(editedState);
      return { historyLength: history.length, branch, allHistory };
    };
    const ours = await run(idbSaver());
    expect(ours.branch.map(([, text]) => text)).toEqual(["one", "echo one (#1)", "branch", "echo branch (#3)"]);
    expect(ours.allHistory.at(-1)?.map(([, text]) => text)).toEqual(["one", "echo one (#1)", "edited"]);
    expect(ours).toEqual(await run(new MemorySaver()));
  });

  it("keeps a successful sibling's writes when a parallel superstep fails, and does not re-run it", async () => {
    const run = async (saver: BaseCheckpointSaver) => {
      let okRuns = 0;
      let flakyRuns = 0;
      const State = Annotation.Root({
        done: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
      });
      const graph = new StateGraph(State)
        .addNode("ok", () => {
          okRuns += 1;
          return { done: ["ok"] };
        })
        .addNode("flaky", () => {
          flakyRuns += 1;
          if (flakyRuns === 1) throw new Error("transient failure");
          return { done: ["flaky"] };
        })
        .addEdge(START, "ok")
        .addEdge(START, "flaky")
        .addEdge("ok", END)
        .addEdge("flaky", END)
        .compile({ checkpointer: saver });
      const config = { configurable: { thread_id: "parallel" } };
      await expect(graph.invoke({ done: [] }, config)).rejects.toThrow("transient failure");
      await graph.invoke(null, config);
      const state = await graph.getState(config);
      return { okRuns, flakyRuns, done: [...state.values.done].sort() };
    };
    const ours = await run(idbSaver());
    expect(ours).toEqual({ okRuns: 1, flakyRuns: 2, done: ["flaky", "ok"] });
    expect(ours).toEqual(await run(new MemorySaver()));
  });

  it("stores subgraph checkpoints under their namespace", async () => {
    const run = async (saver: BaseCheckpointSaver) => {
      const State = Annotation.Root({
        trail: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
      });
      const child = new StateGraph(State)
        .addNode("inner", () => ({ trail: ["inner"] }))
        .addEdge(START, "inner")
        .addEdge("inner", END)
        .compile({ checkpointer: true });
      const parent = new StateGraph(State)
        .addNode("before", () => ({ trail: ["before"] }))
        .addNode("child", child)
        .addEdge(START, "before")
        .addEdge("before", "child")
        .addEdge("child", END)
        .compile({ checkpointer: saver });
      const config = { configurable: { thread_id: "nested" } };
      await parent.invoke({ trail: ["start"] }, config);
      const namespaces = new Set<string>();
      for await (const tuple of saver.list({ configurable: { thread_id: "nested" } })) {
        namespaces.add(String(tuple.config.configurable?.checkpoint_ns).split(":")[0]!);
      }
      const state = await parent.getState(config);
      return { namespaces: [...namespaces].sort(), trail: state.values.trail };
    };
    const ours = await run(idbSaver());
    expect(ours.namespaces).toEqual(["", "child"]);
    expect(ours).toEqual(await run(new MemorySaver()));
  });

  it("fans out with Send", async () => {
    const run = async (saver: BaseCheckpointSaver) => {
      const State = Annotation.Root({
        topics: Annotation<string[]>(),
        results: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
      });
      const graph = new StateGraph(State)
        .addNode("research", (input: { topic: string }) => ({ results: [`notes on ${input.topic}`] }))
        .addConditionalEdges(START, (state) => state.topics.map((topic) => new Send("research", { topic })))
        .addEdge("research", END)
        .compile({ checkpointer: saver });
      const config = { configurable: { thread_id: "fanout" } };
      await graph.invoke({ topics: ["ducks", "owls", "bees"] }, config);
      return [...(await graph.getState(config)).values.results].sort();
    };
    const ours = await run(idbSaver());
    expect(ours).toEqual(["notes on bees", "notes on ducks", "notes on owls"]);
    expect(ours).toEqual(await run(new MemorySaver()));
  });

  it("runs 45 turns on MessagesDeltaValue and rebuilds them after a reopen", async () => {
    const turns = Array.from({ length: 45 }, (_, i) => `message ${i}`);
    const dbName = freshDbName("delta");
    const saver = idbSaver(dbName);
    const ours = await chat(saver, "long", turns, true);
    const reference = await chat(new MemorySaver(), "long", turns, true);
    expect(ours).toHaveLength(90);
    expect(ours).toEqual(reference);
    await saver.close();
    const reopened = chatGraph(idbSaver(dbName), true);
    const again = plain((await reopened.getState({ configurable: { thread_id: "long" } })).values.messages);
    expect(again).toEqual(reference);
  });

  for (const durability of ["exit", "async", "sync"] as const) {
    it(`gives the same state and history with durability "${durability}"`, async () => {
      const run = async (saver: BaseCheckpointSaver) => {
        const graph = chatGraph(saver, true);
        const config = { configurable: { thread_id: `d-${durability}` } };
        for (const text of ["a", "b", "c"]) {
          await graph.invoke({ messages: [new HumanMessage(text)] }, { ...config, durability });
        }
        const history: [string, string][][] = [];
        for await (const snapshot of graph.getStateHistory(config)) history.push(plain(snapshot.values.messages));
        return { messages: plain((await graph.getState(config)).values.messages), history };
      };
      const ours = await run(idbSaver());
      expect(ours.messages).toHaveLength(6);
      expect(ours).toEqual(await run(new MemorySaver()));
    });
  }
});

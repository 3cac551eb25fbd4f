/**
 * Resuming through the local agent server (helper-57's findings, each failing
 * before its fix): a second answer sent with the interrupt strategy while a
 * resume runs replaces it, and a `goto` Send in the SDK's shape runs as on
 * LangGraph's embed server.
 */
import { afterEach, expect, it } from "vitest";
import { Client } from "@langchain/langgraph-sdk";
import { MemorySaver } from "@langchain/langgraph-checkpoint";
import { AIMessage } from "@langchain/core/messages";
import { createEmbedServer } from "@langchain/langgraph-api/experimental/embed";
import {
  END,
  MessagesValue,
  START,
  StateGraph,
  StateSchema,
  type LangGraphRunnableConfig,
} from "@langchain/langgraph/web";
import { interruptWith } from "../interrupt/index.js";
import { agentGraph } from "../../test/support/agent-server/graph.js";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { human, memoryThreads, texts, until, type Chat } from "../../test/support/agent-server/timing.js";
import { sleep as abortableSleep } from "../../test/support/runs/scenario.js";

afterEach(closeServers);

/** approve node: asks, then (after the answer) waits `after_ms`, then answers. */
function slowApproveGraph() {
  const State = new StateSchema({ messages: MessagesValue });
  return new StateGraph(State)
    .addNode("approve", async (_state, config: LangGraphRunnableConfig) => {
      const answer = interruptWith<{ question: string }, string>(config, { question: "ok?" });
      await abortableSleep(Number(config.configurable?.after_ms ?? 0), config.signal);
      return { messages: [new AIMessage(`approved: ${answer}`)] };
    })
    .addEdge(START, "approve")
    .addEdge("approve", END)
    .compile();
}

it("a second answer sent with the interrupt strategy while a resume runs replaces it", async () => {
  const { client } = await openServer<Chat>("resume", false, { graphs: { agent: slowApproveGraph() } });
  const { thread_id } = await client.threads.create();
  await client.runs.wait(thread_id, "agent", { input: human("go") });
  const first = await client.runs.create(thread_id, "agent", {
    command: { resume: "yes" },
    config: { configurable: { after_ms: 2000 } },
  });
  // The first resume going (a fixed 300 ms wait guessed when it started).
  await until(async () => (await client.runs.get(thread_id, first.run_id)).status === "running");
  const result = await client.runs.wait(thread_id, "agent", {
    command: { resume: "no" },
    multitaskStrategy: "interrupt",
  });
  expect(texts(result)).toEqual(["human: go", "ai: approved: no"]);
  expect((await client.threads.get(thread_id)).status).toBe("idle");
});

it("goto Send { node, input } (SDK shape) runs as on LangGraph's embed server", async () => {
  const embed = createEmbedServer({
    graph: { agent: agentGraph() },
    threads: memoryThreads(),
    checkpointer: new MemorySaver(),
  });
  const { server } = await openServer("hitl-goto");
  const outcome = async (fetch: typeof globalThis.fetch) => {
    const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch, maxRetries: 0 } });
    const { thread_id } = await client.threads.create();
    for await (const _ of client.runs.stream(thread_id, "agent", { input: human("approve: x") }));
    const events: unknown[] = [];
    for await (const part of client.runs.stream(thread_id, "agent", {
      command: { goto: { node: "agent", input: human("via send") } as never },
    }))
      // The stream's `end` the Agent Server sends (stream-end.node.test.ts), which the embed server does not.
      if (part.event !== "metadata" && part.event !== "end")
        events.push(part.event === "values" ? texts(part.data) : part);
    return events;
  };
  const theirs = await outcome((input, init) => Promise.resolve(embed.request(input as Request, init)));
  const ours = await outcome(server.fetch);
  expect(ours).toEqual(theirs);
});

/**
 * Differential test: the same graph and the same SDK calls against
 * LangGraph's own embeddable Agent Server (`@langchain/langgraph-api`'s
 * `createEmbedServer`, in Node on its MemorySaver) and against
 * `createLocalAgentServer` (on IndexedDBSaver, fake-indexeddb) give the same
 * sequence of event kinds, the same streamed values and updates, the same
 * states and the same history. Ids (threads, runs, checkpoints, tasks,
 * interrupts, messages) differ between servers, so each is replaced by its
 * order of first appearance (`relabel`).
 */
import { Client } from "@langchain/langgraph-sdk";
import { MemorySaver } from "@langchain/langgraph-checkpoint";
import { createEmbedServer } from "@langchain/langgraph-api/experimental/embed";
import { afterAll, expect, it } from "vitest";
import { agentGraph } from "../../test/support/agent-server/graph.js";
import { relabel } from "../../test/support/interrupt-scenarios.js";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { memoryThreads } from "../../test/support/agent-server/timing.js";

type Fetch = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

const human = (content: string) => ({ messages: [{ type: "human", content }] });

/** Everything a client sees of one conversation: events, states, history, a fork. */
async function conversation(fetch: Fetch) {
  const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch, maxRetries: 0 } });
  const { thread_id } = await client.threads.create({ metadata: { app: "diff" } });
  const streamed = async (payload: Parameters<typeof client.runs.stream>[2]) => {
    const parts = [];
    for await (const part of client.runs.stream(thread_id, "agent", payload)) parts.push(part);
    // The `end` the Agent Server ends a stream with, which the embed server does not send: the one
    // difference in the events, checked here and left out of the comparison.
    if (fetch !== embedFetch) expect(parts.pop()).toMatchObject({ event: "end", data: { status: expect.any(String) } });
    return parts.map(({ event, data }) => {
      if (event === "metadata") return { event };
      // The token text and node, not LangChain's callback metadata (the embed server adds its host's).
      if (event === "messages") {
        const [message, meta] = data as unknown as [{ content: string; type: string }, { langgraph_node: string }];
        return { event, data: [message.type, message.content, meta.langgraph_node] };
      }
      return { event, data };
    });
  };
  const state = async (checkpointId?: string) => {
    const s = await client.threads.getState(thread_id, checkpointId);
    // runOnThread tags each checkpoint with its run's id (what a rollback deletes by): the one difference kept.
    const { run_id: runId, ...metadata } = (s.metadata ?? {}) as Record<string, unknown>;
    expect(typeof runId).toBe(fetch === embedFetch ? "undefined" : "string");
    return { values: s.values, next: s.next, tasks: s.tasks, metadata, checkpoint: s.checkpoint };
  };
  const modes = ["values", "updates", "messages-tuple", "custom"] as const;
  const first = await streamed({ input: human("hello"), streamMode: [...modes] });
  const afterFirst = await state();
  const paused = await streamed({ input: human("approve: save?"), streamMode: [...modes] });
  const pausedState = await state();
  const resumed = await streamed({ command: { resume: "yes" }, streamMode: [...modes] });
  const history = (await client.threads.getHistory(thread_id, { limit: 20 })).map((s) => ({
    values: s.values,
    next: s.next,
    source: (s.metadata as { source?: string } | null)?.source,
    step: (s.metadata as { step?: number } | null)?.step,
    parent: s.parent_checkpoint?.checkpoint_id ?? null,
    checkpoint: s.checkpoint.checkpoint_id,
  }));
  const fork = await streamed({
    input: human("other"),
    checkpointId: afterFirst.checkpoint.checkpoint_id!,
    streamMode: ["values"],
  });
  const forkState = await state();
  return relabel({ first, afterFirst, paused, pausedState, resumed, history, fork, forkState });
}

let embedFetch: Fetch | undefined;
afterAll(closeServers);

/** A fetch on LangGraph's embed server serving `agentGraph()`, in memory. */
function embedServer(): Fetch {
  const embed = createEmbedServer({
    graph: { agent: agentGraph() },
    threads: memoryThreads(),
    checkpointer: new MemorySaver(),
  });
  return (input, init) => Promise.resolve(embed.request(input, init));
}

it("LangGraph's embed server and the local agent server answer the same conversation alike", async () => {
  const { server: local } = await openServer("agent-diff");
  embedFetch = embedServer();
  const theirs = await conversation(embedFetch);
  const ours = await conversation(local.fetch);
  expect(ours).toEqual(theirs);
});

// Once a stream of only `metadata` and `end` here: useStream sends `stream_mode: []` when the component reads
// no streamed values (only `interrupt`, say), and the Agent Server streams `values` then.
it("a run asked with an empty list of stream modes streams values, as the embed server does", async () => {
  const { server: local } = await openServer("agent-diff-modes");
  const kinds = async (fetch: Fetch) => {
    const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch, maxRetries: 0 } });
    const { thread_id } = await client.threads.create();
    const seen: string[] = [];
    for await (const part of client.runs.stream(thread_id, "agent", { input: human("hi"), streamMode: [] })) {
      // The `end` the embed server does not send (see above).
      if (part.event !== "end") seen.push(part.event);
    }
    return seen;
  };
  const theirs = await kinds(embedServer());
  expect(theirs).toEqual(["metadata", "values", "values"]);
  expect(await kinds(local.fetch)).toEqual(theirs);
});

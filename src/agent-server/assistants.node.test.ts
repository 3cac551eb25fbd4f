/**
 * The assistants of a local agent server (assistants.ts): one per served
 * graph, as the Agent Server makes a graph's default assistant, read through
 * the SDK's `assistants.search`, `count` and `get`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Annotation, START, StateGraph } from "@langchain/langgraph/web";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { agentGraph } from "../../test/support/agent-server/graph.js";
import { human, texts, type Chat } from "../../test/support/agent-server/timing.js";

afterEach(closeServers);

const setup = () => openServer<Chat>("assistants", false, { graphs: { agent: agentGraph(), helper: agentGraph() } });

describe("assistants", () => {
  // Once answered 404 (not served): an app listing the graphs it can run with assistants.search failed.
  it("search, count and get answer one assistant per graph, whose id runs it", async () => {
    const { client } = await setup();
    const all = await client.assistants.search({ sortBy: "graph_id", sortOrder: "asc" });
    expect(all.map((a) => [a.assistant_id, a.graph_id, a.name, a.version])).toEqual([
      ["agent", "agent", "agent", 1],
      ["helper", "helper", "helper", 1],
    ]);
    expect(all[0]).toMatchObject({ config: {}, context: {}, metadata: { created_by: "system" } });
    expect(await client.assistants.get("helper")).toEqual(all[1]);
    expect((await client.assistants.search({ graphId: "helper" })).map((a) => a.assistant_id)).toEqual(["helper"]);
    expect(await client.assistants.search({ metadata: { created_by: "user" } })).toEqual([]);
    expect(await client.assistants.search({ limit: 1, offset: 1, sortBy: "name", sortOrder: "desc" })).toEqual([
      all[0],
    ]);
    expect(await client.assistants.count({ name: "agent" })).toBe(1);
    await expect(client.assistants.get("missing")).rejects.toThrow(/404/);
    await expect(client.assistants.search({ sortBy: "nope" as never })).rejects.toThrow(/422.*sort_by/);

    const thread = await client.threads.create();
    const values = await client.runs.wait(thread.thread_id, all[1]!.assistant_id, { input: human("hi") });
    expect(texts(values)).toEqual(["human: hi", "ai: echo hi"]);
  });

  // Once an exact match: the Agent Server takes `name` as a part of the name, in any case, so an app's
  // assistant picker that searched as the user typed found nothing until the whole name was typed.
  it("search and count by name match a part of the name, in any case, as the Agent Server", async () => {
    const { client } = await setup();
    expect((await client.assistants.search({ name: "ELP" })).map((a) => a.assistant_id)).toEqual(["helper"]);
    expect(await client.assistants.count({ name: "Ag" })).toBe(1);
    expect(await client.assistants.count({ name: "e" })).toBe(2);
    expect(await client.assistants.search({ name: "nope" })).toEqual([]);
  });

  // Once a limit of 0 answered [] with X-Pagination-Next "0": an app paging while `next` is set asked the
  // same empty page for ever. The Agent Server refuses a limit under 1 (422).
  it("pages with X-Pagination-Next until the last page; a limit under 1 is refused (422)", async () => {
    const { client } = await setup();
    const first = await client.assistants.search({
      limit: 1,
      sortBy: "name",
      sortOrder: "asc",
      includePagination: true,
    });
    expect([first.assistants.map((a) => a.assistant_id), first.next]).toEqual([["agent"], "1"]);
    const last = await client.assistants.search({ limit: 1, offset: 1, sortBy: "name", includePagination: true });
    expect(last.next).toBeNull();
    await expect(client.assistants.search({ limit: 0, includePagination: true })).rejects.toThrow(/422.*limit/);
  });

  // Once answered 404 (not served): an app drawing its agent's graph (nodes, edges) had nothing to draw.
  it("getGraph answers the graph as LangGraph draws it, its subgraphs with xray; 404 for no assistant", async () => {
    const State = Annotation.Root({ n: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }) });
    // Two nodes: LangGraph draws a subgraph of one node as that node.
    const inner = new StateGraph(State)
      .addNode("step", (s) => ({ n: s.n + 1 }))
      .addNode("again", (s) => ({ n: s.n + 1 }))
      .addEdge(START, "step")
      .addEdge("step", "again")
      .compile();
    const outer = new StateGraph(State).addNode("sub", inner).addEdge(START, "sub").compile();
    const { client, server } = await openServer("assistants", false, { graphs: { agent: agentGraph(), outer } });
    const drawn = await client.assistants.getGraph("agent");
    expect(drawn.nodes.map((node) => node.id).sort()).toEqual(["__end__", "__start__", "agent", "approve"]);
    expect(drawn).toEqual(JSON.parse(JSON.stringify((await agentGraph().getGraphAsync()).toJSON())));
    const ids = async (xray?: boolean | number) =>
      (await client.assistants.getGraph("outer", { xray })).nodes.map((node) => String(node.id));
    expect(await ids()).not.toContain("sub:step");
    expect(await ids(true)).toContain("sub:step");
    expect(await ids(1)).toContain("sub:step");
    await expect(client.assistants.getGraph("missing")).rejects.toThrow(/404/);
    const bad = await server.fetch("http://local.invalid/assistants/outer/graph?xray=deep");
    expect([bad.status, ((await bad.json()) as { message: string }).message]).toEqual([
      422,
      expect.stringContaining("xray"),
    ]);
  });
});

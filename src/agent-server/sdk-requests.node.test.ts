/**
 * The local agent server's answers to what the SDK and `useStream` send, as
 * the Agent Server answers (helper-46's findings, each failing before its
 * fix; moved here from run-lifecycle.node.test.ts): `runs.wait`'s answer,
 * the request fields (`stream_mode: "tools"`, `config.recursion_limit`,
 * `ids`, run list paging), finished runs read from the run log, and the
 * thread fields and refusals (`supersteps`, `after_seconds`).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { Annotation, END, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph/web";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { letGo } from "../../test/support/agent-server/graph.js";
import { heldRun } from "../../test/support/agent-server/held-run.js";
import { human, texts, until, type Chat } from "../../test/support/agent-server/timing.js";
import { agentGraph } from "../../test/support/agent-server/graph.js";

const URL_BASE = "http://local.invalid";
const setup = () => openServer<Chat>("run-lifecycle", true);
afterEach(closeServers);

/** A server of its own on `graphs`, with `keepRunEvents`. */
const serverOf = (graphs: Record<string, unknown>, keepRunEvents?: number) =>
  openServer<Chat>("run-lifecycle-own", false, { graphs, keepRunEvents });

describe("runs.wait", () => {
  it("answers the run's last values, with __interrupt__ when it paused, as the stream ends", async () => {
    const { client } = await setup();
    const streamed = await client.threads.create();
    let last: unknown;
    for await (const part of client.runs.stream(streamed.thread_id, "agent", { input: human("approve: ok?") })) {
      if (part.event === "values") last = part.data;
    }
    const waited = await client.threads.create();
    const answer = await client.runs.wait(waited.thread_id, "agent", { input: human("approve: ok?") });
    expect(Object.keys(answer as object)).toEqual(Object.keys(last as object));
    expect(answer).toHaveProperty("__interrupt__");
  });

  it("answers its own run's values when another run was enqueued behind it", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    // first goes until the second is enqueued (a 150 ms run and a 50 ms wait could miss that under load).
    const hold = crypto.randomUUID();
    const first = client.runs.wait(t.thread_id, "agent", {
      input: human("first"),
      config: { configurable: { hold } },
    });
    await until(async () => (await client.runs.list(t.thread_id))[0]?.status === "running");
    await client.runs.create(t.thread_id, "agent", { input: human("second"), multitaskStrategy: "enqueue" });
    letGo(hold);
    expect(texts(await first)).toEqual(["human: first", "ai: echo first"]);
  });
});

describe("what the SDK and useStream send", () => {
  it("stream_mode 'tools' is served", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const events: string[] = [];
    const stream = client.runs.stream(t.thread_id, "agent", {
      input: human("x"),
      streamMode: ["values", "messages-tuple", "tools"],
    });
    for await (const part of stream) events.push(part.event);
    expect(events).toContain("values");
    expect(events).not.toContain("error");
  });

  it("config.recursion_limit is the run's recursion limit", async () => {
    const State = Annotation.Root({ n: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }) });
    const loop = new StateGraph(State)
      .addNode("step", (s) => ({ n: s.n + 1 }))
      .addEdge(START, "step")
      .addConditionalEdges("step", (s) => (s.n >= 40 ? END : "step"))
      .compile();
    const { client } = await serverOf({ loop });
    const t = await client.threads.create();
    await expect(
      client.runs.wait(t.thread_id, "loop", { input: { n: 0 }, config: { recursion_limit: 10 } }),
    ).rejects.toThrow(/Recursion limit of 10/);
    const u = await client.threads.create();
    expect(await client.runs.wait(u.thread_id, "loop", { input: { n: 0 }, config: { recursion_limit: 100 } })).toEqual({
      n: 40,
    });
  });

  it("threads.search by ids, runs.list with limit, offset and status, and 404 for a thread that is not there", async () => {
    const { client, server } = await setup();
    const a = await client.threads.create();
    const b = await client.threads.create();
    await client.threads.create();
    expect((await client.threads.search({ ids: [a.thread_id, b.thread_id] })).map((t) => t.thread_id).sort()).toEqual(
      [a.thread_id, b.thread_id].sort(),
    );
    for (const text of ["1", "2", "3"]) await client.runs.wait(a.thread_id, "agent", { input: human(text) });
    const all = await client.runs.list(a.thread_id);
    expect(all).toHaveLength(3);
    expect(await client.runs.list(a.thread_id, { limit: 1, offset: 1 })).toEqual([all[1]]);
    expect(await client.runs.list(a.thread_id, { status: "pending" })).toEqual([]);
    expect((await server.fetch(`${URL_BASE}/threads/${crypto.randomUUID()}/runs`)).status).toBe(404);
  });

  // Once a status that is none ("sucess") answered an empty list, as if no run had ended, and select was
  // dropped (every field answered).
  it("runs.list refuses a status that is none (422), and answers only the fields select names", async () => {
    const { client, server } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("1") });
    const res = await server.fetch(`${URL_BASE}/threads/${t.thread_id}/runs?status=sucess`);
    expect([res.status, ((await res.json()) as { message: string }).message]).toEqual([
      422,
      expect.stringContaining("status"),
    ]);
    expect(await client.runs.list(t.thread_id, { status: "timeout" })).toEqual([]);
    const [run] = await client.runs.list(t.thread_id);
    expect(await client.runs.list(t.thread_id, { select: ["run_id", "status"] })).toEqual([
      { run_id: run!.run_id, status: "success" },
    ]);
    const bad = await server.fetch(`${URL_BASE}/threads/${t.thread_id}/runs?select=nope`);
    expect([bad.status, ((await bad.json()) as { message: string }).message]).toEqual([
      422,
      expect.stringContaining("select"),
    ]);
  });

  // Once dropped: useStream's joinStream(runId, lastEventId, { streamMode }) got every mode the run streamed.
  it("joinStream's stream_mode sends only the events of those modes (and the run's metadata and error)", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const run = await client.runs.create(t.thread_id, "agent", {
      input: human("x"),
      streamMode: ["values", "updates", "messages-tuple", "custom"],
    });
    const events = async (streamMode?: ("updates" | "messages-tuple" | "custom")[]) => {
      const seen: string[] = [];
      for await (const part of client.runs.joinStream(t.thread_id, run.run_id, { streamMode })) seen.push(part.event);
      return [...new Set(seen)];
    };
    expect(await events(["updates", "custom"])).toEqual(["metadata", "custom", "updates", "end"]);
    expect(await events(["messages-tuple"])).toEqual(["metadata", "messages", "end"]);
    expect(await events()).toEqual(["metadata", "values", "custom", "messages", "updates", "end"]);
  });

  it("a command whose goto is not a node, a Send or a list of them is refused (422) before anything runs", async () => {
    const { client, server } = await setup();
    const t = await client.threads.create();
    const response = await server.fetch(`${URL_BASE}/threads/${t.thread_id}/runs/wait`, {
      method: "POST",
      body: JSON.stringify({ assistant_id: "agent", command: { goto: 42 } }),
    });
    expect(response.status).toBe(422);
    expect(await client.runs.list(t.thread_id)).toEqual([]);
    expect((await client.threads.get(t.thread_id)).metadata).toEqual({});
    // Nor is a thread created for a run refused for its input.
    const missing = crypto.randomUUID();
    for (const bad of [{ command: { goto: 42 } }, { on_disconnect: "later" }, { stream_mode: "nope" }]) {
      const refused = await server.fetch(`${URL_BASE}/threads/${missing}/runs/wait`, {
        method: "POST",
        body: JSON.stringify({ assistant_id: "agent", if_not_exists: "create", ...bad }),
      });
      expect(refused.status).toBe(422);
    }
    await expect(client.threads.get(missing)).rejects.toThrow(/404/);
  });
});

describe("options the SDK sends in the query or a header", () => {
  // Once dropped: the thread came back with every field, and returnMinimal resolved to the whole record.
  it("threads.update with returnMinimal answers 204 (the SDK resolves to nothing), the metadata updated", async () => {
    const { client } = await setup();
    const t = await client.threads.create({ metadata: { a: 1 } });
    expect(await client.threads.update(t.thread_id, { metadata: { b: 2 }, returnMinimal: true })).toBeUndefined();
    expect((await client.threads.get(t.thread_id)).metadata).toEqual({ a: 1, b: 2 });
    expect((await client.threads.update(t.thread_id, { metadata: { c: 3 } })).metadata).toEqual({ a: 1, b: 2, c: 3 });
  });

  // As LangGraph's server answers it: `include` asks for extra fields; a local thread has no TTL (refused at
  // create) and no config or context, so the record comes without them. Refused (422), a call asking for the
  // TTL failed where the Agent Server answers.
  it("threads.get's include answers the record, with no field a local thread has not", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    for (const include of [["values", "interrupts"], ["ttl"], ["config"]]) {
      const got = (await client.threads.get(t.thread_id, { include })) as unknown as Record<string, unknown>;
      expect(got.thread_id).toBe(t.thread_id);
      expect(got).not.toHaveProperty("ttl");
    }
  });

  // The SDK's reason ("taken", for steering) is not recorded (a local run has no cancel_reason), but the cancel
  // is made: refused (422), it left running the run the app asked to stop.
  it("runs.cancel with a reason cancels the run", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const { run, release } = await heldRun(client, t.thread_id, "x");
    await client.runs.cancel(t.thread_id, run.run_id, true, "interrupt", { reason: "taken" });
    release();
    expect((await client.runs.get(t.thread_id, run.run_id)).status).toBe("interrupted");
  });
});

// Once absent: the Agent Server gives a run's graph its run_id and assistant_id in its configurable (LangGraph's
// embed server the run_id), and the run's metadata in config.metadata (where LangChain's callbacks read it).
it("a run's graph finds run_id and assistant_id in config.configurable, and its metadata in config.metadata", async () => {
  const State = Annotation.Root({ seen: Annotation<unknown>({ reducer: (_a, b) => b, default: () => null }) });
  const graph = new StateGraph(State)
    .addNode("look", (_s, config: LangGraphRunnableConfig) => ({
      seen: {
        runId: config.configurable?.run_id,
        assistantId: config.configurable?.assistant_id,
        app: config.metadata?.app,
        mine: config.metadata?.mine,
      },
    }))
    .addEdge(START, "look")
    .compile();
  const { client } = await serverOf({ graph });
  const t = await client.threads.create();
  const answer = await client.runs.wait(t.thread_id, "graph", {
    input: {},
    metadata: { app: "chat" },
    // The SDK's Config type has no metadata; the server takes it (LangGraph's config has one).
    config: { metadata: { mine: 1 } } as never,
  });
  const [run] = await client.runs.list(t.thread_id);
  expect(answer).toEqual({ seen: { runId: run!.run_id, assistantId: "graph", app: "chat", mine: 1 } });
  expect(run!.metadata).toEqual({ app: "chat" });
});

it("a run's metadata reaches the metadata of its messages events, as LangChain's callbacks carry config.metadata", async () => {
  const { client } = await setup();
  const t = await client.threads.create();
  const metas: unknown[] = [];
  const stream = client.runs.stream(t.thread_id, "agent", {
    input: human("x"),
    streamMode: ["messages-tuple"],
    metadata: { app: "chat" },
  });
  for await (const part of stream) if (part.event === "messages") metas.push((part.data as unknown[])[1]);
  expect(metas.length).toBeGreaterThan(0);
  expect(metas.every((meta) => (meta as { app?: unknown }).app === "chat")).toBe(true);
});

describe("finished runs", () => {
  it("are read from the run log, so keepRunEvents applies to this server's own runs too", async () => {
    const { client } = await serverOf({ agent: agentGraph() }, 1);
    const t = await client.threads.create();
    const first = await client.runs.create(t.thread_id, "agent", { input: human("1") });
    const live: string[] = [];
    for await (const part of client.runs.joinStream(t.thread_id, first.run_id)) live.push(part.event);
    expect(live).toContain("values");
    await client.runs.wait(t.thread_id, "agent", { input: human("2") });
    const replayed: string[] = [];
    for await (const part of client.runs.joinStream(t.thread_id, first.run_id)) replayed.push(part.event);
    // Its events are gone; its end is not.
    expect(replayed).toEqual(["end"]);
    expect((await client.runs.get(t.thread_id, first.run_id)).status).toBe("success");
  });
});

it("threads.create with supersteps is refused (422), not created empty", async () => {
  const { client } = await setup();
  await expect(
    client.threads.create({
      graphId: "agent",
      supersteps: [{ updates: [{ values: human("seed"), asNode: "agent" }] }],
    }),
  ).rejects.toThrow(/422/);
  expect(await client.threads.search({})).toEqual([]);
});

// Once a dead end: the 422 for supersteps said "create the thread, then updateState", and the update of a
// thread created so (no graphId) answered 409 "The thread has no graph yet: start a run on it first".
it("a thread's state can be seeded as the supersteps refusal says: create it with its graphId, then updateState", async () => {
  const { client } = await setup();
  const refusal = await client.threads
    .create({ supersteps: [{ updates: [{ values: human("seed"), asNode: "agent" }] }] })
    .then(
      () => "",
      (error: Error) => error.message,
    );
  expect(refusal).toMatch(/graphId/);
  const bare = await client.threads.create();
  const busy = client.threads.updateState(bare.thread_id, { values: human("seed"), asNode: "agent" });
  await expect(busy).rejects.toThrow(/409.*graphId/);
  const t = await client.threads.create({ graphId: "agent" });
  await client.threads.updateState(t.thread_id, { values: human("seed"), asNode: "agent" });
  expect(texts((await client.threads.getState(t.thread_id)).values)).toEqual(["human: seed"]);
});

it("a run asked with after_seconds is refused (422), not started at once; 0 runs now", async () => {
  const { client } = await setup();
  const t = await client.threads.create();
  await expect(client.runs.create(t.thread_id, "agent", { input: human("later"), afterSeconds: 60 })).rejects.toThrow(
    /422.*after_seconds/,
  );
  expect(await client.runs.list(t.thread_id)).toEqual([]);
  expect(await client.threads.getHistory(t.thread_id)).toEqual([]);
  const now = await client.runs.wait(t.thread_id, "agent", { input: human("now"), afterSeconds: 0 });
  expect(texts(now)).toEqual(["human: now", "ai: echo now"]);
});

it("thread records carry the latest values and interrupts; search matches metadata by containment", async () => {
  const { client } = await setup();
  const t = await client.threads.create({ metadata: { user: { id: 1, name: "ann" }, tags: ["a", "b"] } });
  expect((await client.threads.get(t.thread_id)).values).toBeUndefined();
  await client.runs.wait(t.thread_id, "agent", { input: human("hello") });
  expect(texts((await client.threads.get(t.thread_id)).values)).toEqual(["human: hello", "ai: echo hello"]);
  await client.runs.wait(t.thread_id, "agent", { input: human("approve: send?") });
  const [found] = await client.threads.search({ metadata: { user: { id: 1 }, tags: ["b"] } });
  expect(found?.thread_id).toBe(t.thread_id);
  expect(Object.values(found!.interrupts).flat()).toEqual([
    expect.objectContaining({ value: { question: "approve: send?" } }),
  ]);
  expect(await client.threads.search({ metadata: { user: { id: 2 } } })).toEqual([]);
});

it("threads created in one millisecond are listed in the order they were created, not by their random ids", async () => {
  const { client } = await setup();
  vi.useFakeTimers({ toFake: ["Date"], now: Date.parse("2026-12-03T12:00:00Z") });
  try {
    const ids = ["f-second-by-id", "a-first-by-id", "m"];
    for (const threadId of ids) await client.threads.create({ threadId });
    const listed = await client.threads.search({ sortBy: "created_at", sortOrder: "asc" });
    expect(listed.map((thread) => thread.thread_id)).toEqual(ids);
  } finally {
    vi.useRealTimers();
  }
});

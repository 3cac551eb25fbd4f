/**
 * The local agent server through the LangGraph SDK's own `Client` (its
 * `fetch` is the server's), in Node on fake-indexeddb: every route the SDK
 * and `useStream` call, interrupts and resume, history, forks, cancel, and
 * the four multitask strategies.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { settles, until } from "../../test/support/agent-server/timing.js";
import { heldRun } from "../../test/support/agent-server/held-run.js";

type Chat = {
  messages: { type: string; content: string }[];
};

afterEach(closeServers);

const setup = () => openServer<Chat>("agent-server", true);

const human = (content: string) => ({ messages: [{ type: "human", content }] });
const texts = (values: unknown) => (values as Chat).messages.map((m) => `${m.type}: ${m.content}`);

async function collect<T extends { event: string }>(stream: AsyncIterable<T>): Promise<T[]> {
  const parts: T[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

describe("threads", () => {
  it("create, get, patch, search by metadata, delete (with the thread's checkpoints)", async () => {
    const { client, saver } = await setup();
    const a = await client.threads.create({ metadata: { user: "ann", topic: { id: 1 } } });
    const b = await client.threads.create({ metadata: { user: "bob" } });
    expect(a).toMatchObject({ metadata: { user: "ann" }, status: "idle" });
    expect(await client.threads.get(a.thread_id)).toEqual(a);
    await expect(client.threads.create({ threadId: a.thread_id })).rejects.toThrow(/409/);
    expect((await client.threads.create({ threadId: a.thread_id, ifExists: "do_nothing" })).thread_id).toBe(
      a.thread_id,
    );

    const patched = await client.threads.update(b.thread_id, { metadata: { tag: "x" } });
    expect(patched.metadata).toEqual({ user: "bob", tag: "x" });
    const found = await client.threads.search({ metadata: { topic: { id: 1 } } });
    expect(found.map((t) => t.thread_id)).toEqual([a.thread_id]);
    expect((await client.threads.search({ sortBy: "created_at", sortOrder: "asc" })).map((t) => t.thread_id)).toEqual([
      a.thread_id,
      b.thread_id,
    ]);
    expect(await client.threads.search({ limit: 1, offset: 1, sortOrder: "asc" })).toHaveLength(1);

    await client.runs.wait(a.thread_id, "agent", { input: human("hi") });
    expect(await saver.getTuple({ configurable: { thread_id: a.thread_id } })).toBeDefined();
    await client.threads.delete(a.thread_id);
    await expect(client.threads.get(a.thread_id)).rejects.toThrow(/404/);
    expect(await saver.getTuple({ configurable: { thread_id: a.thread_id } })).toBeUndefined();
  });

  // Once the search's records carried the store's internal creation counter (`seq`) beside the Agent
  // Server's fields (state_updated_at is one: the SDK's Thread has it).
  it("search answers each record as get does, with the Agent Server's fields only", async () => {
    const { client } = await setup();
    const thread = await client.threads.create({ metadata: { user: "ann" } });
    const [found] = await client.threads.search();
    expect(found).toEqual(await client.threads.get(thread.thread_id));
    expect(Object.keys(found!).sort()).toEqual([
      "created_at",
      "metadata",
      "state_updated_at",
      "status",
      "thread_id",
      "updated_at",
    ]);
  });

  // Once dropped: every field answered whatever select named, and extract was taken and never answered.
  it("search, state and history answer only the fields select names (values.<key>: that key); extract is refused", async () => {
    const { client, server } = await setup();
    const thread = await client.threads.create({ metadata: { user: "ann" } });
    await client.runs.wait(thread.thread_id, "agent", { input: human("hi") });
    expect(await client.threads.search({ select: ["thread_id", "status"] })).toEqual([
      { thread_id: thread.thread_id, status: "idle" },
    ]);
    const state = await client.threads.getState(thread.thread_id, undefined, { select: ["values.messages", "next"] });
    expect(Object.keys(state).sort()).toEqual(["next", "values"]);
    expect(texts(state.values)).toEqual(["human: hi", "ai: echo hi"]);
    const { checkpoint } = await client.threads.getState(thread.thread_id);
    for (const at of [checkpoint.checkpoint_id!, checkpoint]) {
      expect(await client.threads.getState(thread.thread_id, at, { select: ["next"] })).toEqual({ next: [] });
    }
    const history = await client.threads.getHistory(thread.thread_id, { select: ["metadata"] });
    expect(history.map((s) => Object.keys(s))).toEqual([["metadata"], ["metadata"], ["metadata"]]);
    for (const [route, json, field] of [
      ["threads/search", { select: ["nope"] }, "select"],
      ["threads/search", { extract: { last: "values.messages" } }, "extract"],
      [`threads/${thread.thread_id}/history`, { select: "metadata" }, "select"],
    ] as const) {
      const res = await server.fetch(`http://local.invalid/${route}`, { method: "POST", body: JSON.stringify(json) });
      expect([res.status, ((await res.json()) as { message: string }).message]).toEqual([
        422,
        expect.stringContaining(field),
      ]);
    }
  });

  it("refuses bad input with 422 and names the field, writing nothing", async () => {
    const { client, server } = await setup();
    await expect(client.threads.search({ limit: -1 })).rejects.toThrow(/422/);
    const bad = await server.fetch("http://local.invalid/threads", { method: "POST", body: "{not json" });
    expect(bad.status).toBe(422);
    expect(await client.threads.search()).toEqual([]);
    const thread = await client.threads.create();
    const res = await server.fetch(`http://local.invalid/threads/${thread.thread_id}/runs/stream`, {
      method: "POST",
      body: JSON.stringify({ assistant_id: "agent", stream_mode: ["nope"] }),
    });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ message: expect.stringContaining("stream_mode") });
    await expect(client.runs.wait(thread.thread_id, "missing", { input: human("x") })).rejects.toThrow(/404/);
  });
  // Once handed to LangGraph as they came: a checkpoint_ns of 5 answered 500 (a TypeError), a `before` of 5
  // was dropped (the whole history answered), a `before` checkpoint id of 5 answered 500.
  it("state, history and updates refuse a checkpoint or a before of the wrong type (422) naming it", async () => {
    const { client, server } = await setup();
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: human("hi") });
    const asks: [string, Record<string, unknown>, string][] = [
      ["history", { checkpoint: { checkpoint_ns: 5 } }, "checkpoint.checkpoint_ns"],
      ["history", { before: 5 }, "before"],
      ["history", { before: { configurable: { checkpoint_id: 5 } } }, "before"],
      ["state/checkpoint", { checkpoint: { checkpoint_id: 5 } }, "checkpoint.checkpoint_id"],
      ["state", { values: human("x"), checkpoint: { checkpoint_ns: [] } }, "checkpoint.checkpoint_ns"],
    ];
    for (const [route, json, field] of asks) {
      const res = await server.fetch(`http://local.invalid/threads/${thread.thread_id}/${route}`, {
        method: "POST",
        body: JSON.stringify(json),
      });
      expect([route, res.status, ((await res.json()) as { message: string }).message]).toEqual([
        route,
        422,
        expect.stringContaining(field),
      ]);
    }
    expect(await client.threads.getHistory(thread.thread_id)).toHaveLength(3);
    const [latest] = await client.threads.getHistory(thread.thread_id, { limit: 1 });
    const before = { configurable: { checkpoint_id: latest!.checkpoint.checkpoint_id } };
    expect(await client.threads.getHistory(thread.thread_id, { before: before as never })).toHaveLength(2);
  });
  it("search and count by state values (JSON containment, as the Agent Server), paged after the filter", async () => {
    const { client, server } = await setup();
    const [a, b, c] = [await client.threads.create(), await client.threads.create(), await client.threads.create()];
    await client.runs.wait(a.thread_id, "agent", { input: human("apples") });
    await client.runs.wait(b.thread_id, "agent", { input: human("pears") });
    await client.runs.wait(c.thread_id, "agent", { input: human("apples") });
    const apples = { messages: [{ content: "apples", type: "human" }] };
    const found = await client.threads.search({ values: apples, sortOrder: "asc" });
    expect(found.map((t) => t.thread_id)).toEqual([a.thread_id, c.thread_id]);
    expect((await client.threads.search({ values: apples, limit: 1, offset: 1 })).map((t) => t.thread_id)).toEqual([
      a.thread_id,
    ]);
    const res = await server.fetch("http://local.invalid/threads/search", {
      method: "POST",
      body: JSON.stringify({ values: apples, limit: 1 }),
    });
    expect(res.headers.get("X-Pagination-Total")).toBe("2");
    expect(await client.threads.search({ values: { messages: [{ content: "plums" }] } })).toEqual([]);
    await expect(client.threads.search({ values: [] as never })).rejects.toThrow(/422/);
    expect(await client.threads.count({ values: apples })).toBe(2);
    expect(await client.threads.count({ metadata: { graph_id: "agent" }, status: "idle" })).toBe(3);
  });

  it("a thread whose state cannot be read (its run failed on its input) leaves the thread list whole", async () => {
    const { client } = await setup();
    const good = await client.threads.create();
    await client.runs.wait(good.thread_id, "agent", { input: human("fine") });
    const bad = await client.threads.create();
    // A message type LangChain cannot coerce: the run fails, and the input stays in the thread's pending
    // writes, which LangGraph's getState applies (and throws on) for every read of the thread's state.
    const failed = await client.runs.wait(bad.thread_id, "agent", {
      input: { messages: [{ type: "humann", content: "typo" }] },
      raiseError: false,
    });
    expect(failed).toHaveProperty("__error__");
    // As the Agent Server answers (its records keep the values of the run's last checkpoint: none here):
    // the record without values, not a 500 for the whole list.
    expect((await client.threads.search()).map((t) => [t.thread_id, t.status])).toEqual([
      [bad.thread_id, "error"],
      [good.thread_id, "idle"],
    ]);
    const record = await client.threads.get(bad.thread_id);
    expect([record.status, record.values]).toEqual(["error", undefined]);
    expect(texts((await client.threads.get(good.thread_id)).values)).toEqual(["human: fine", "ai: echo fine"]);
  });
});

describe("runs", () => {
  it("stream values, updates, messages-tuple, custom and events; state, history, status", async () => {
    const { client } = await setup();
    const thread = await client.threads.create();
    const parts = await collect(
      client.runs.stream(thread.thread_id, "agent", {
        input: human("hello"),
        streamMode: ["values", "updates", "messages-tuple", "custom", "events"],
      }),
    );
    const kinds = new Set(parts.map((p) => p.event));
    expect([...kinds].sort()).toEqual(["custom", "end", "events", "messages", "metadata", "updates", "values"]);
    expect(parts[0]!.event).toBe("metadata");
    const tokens = parts
      .filter((p) => p.event === "messages")
      .map((p) => (p.data as unknown as [{ content: string }])[0].content);
    expect(tokens.join("")).toBe("echo hello");
    expect(tokens.length).toBeGreaterThan(1);
    expect(parts.find((p) => p.event === "custom")!.data).toEqual({ thinking: "hello" });
    expect(texts(parts.filter((p) => p.event === "values").at(-1)!.data)).toEqual(["human: hello", "ai: echo hello"]);

    const state = await client.threads.getState<Chat>(thread.thread_id);
    expect(texts(state.values)).toEqual(["human: hello", "ai: echo hello"]);
    expect(state.checkpoint.thread_id).toBe(thread.thread_id);
    const history = await client.threads.getHistory<Chat>(thread.thread_id, { limit: 10 });
    expect(history.map((s) => s.values.messages?.length ?? 0)).toEqual([2, 1, 0]);
    expect(history[0]!.parent_checkpoint?.checkpoint_id).toBe(history[1]!.checkpoint.checkpoint_id);
    expect((await client.threads.getState(thread.thread_id, history[1]!.checkpoint.checkpoint_id!)).values).toEqual(
      history[1]!.values,
    );
    expect(await client.threads.get(thread.thread_id)).toMatchObject({
      status: "idle",
      metadata: { graph_id: "agent" },
    });
    expect((await client.threads.search({ metadata: { graph_id: "agent" } })).map((t) => t.thread_id)).toEqual([
      thread.thread_id,
    ]);
  });

  it("pauses on interruptWith, shows the interrupt, and resumes with a Command", async () => {
    const { client } = await setup();
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: human("approve: save it?") });
    const paused = await client.threads.getState(thread.thread_id);
    expect(paused.next).toEqual(["approve"]);
    expect(paused.tasks[0]!.interrupts[0]).toMatchObject({ value: { question: "approve: save it?" } });
    expect((await client.threads.get(thread.thread_id)).status).toBe("interrupted");

    const parts = await collect(
      client.runs.stream(thread.thread_id, "agent", { command: { resume: "yes" }, streamMode: ["values"] }),
    );
    expect(texts(parts.at(-2)!.data)).toEqual(["human: approve: save it?", "ai: approved: yes"]);
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");
  });

  it("updates state, and forks from an earlier checkpoint", async () => {
    const { client } = await setup();
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: human("one") });
    await client.runs.wait(thread.thread_id, "agent", { input: human("two") });
    const history = await client.threads.getHistory<Chat>(thread.thread_id, { limit: 20 });
    const afterOne = history.find((s) => s.values.messages?.length === 2 && s.next.length === 0)!;

    const fork = await client.runs.wait(thread.thread_id, "agent", {
      input: human("other"),
      checkpointId: afterOne.checkpoint.checkpoint_id!,
    });
    expect(texts(fork)).toEqual(["human: one", "ai: echo one", "human: other", "ai: echo other"]);
    const forked = await client.threads.getState<Chat>(thread.thread_id);
    expect(texts(forked.values)).toEqual(texts(fork));

    const update = await client.threads.updateState(thread.thread_id, { values: human("added"), asNode: "agent" });
    // The Agent Server answers { checkpoint } (the SDK's type says { configurable }).
    expect((update as unknown as { checkpoint: { checkpoint_id: string } }).checkpoint.checkpoint_id).toBeTruthy();
    expect(texts((await client.threads.getState(thread.thread_id)).values).at(-1)).toBe("human: added");
  });

  // Once answered 500: LangGraph's InvalidUpdateError, the client's mistake, reported as the server's.
  it("an update as a node the graph does not have is refused (422) naming it, writing nothing", async () => {
    const { client } = await setup();
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: human("one") });
    await expect(
      client.threads.updateState(thread.thread_id, { values: human("x"), asNode: "nonode" }),
    ).rejects.toThrow(/422.*nonode/);
    expect(await client.threads.getHistory(thread.thread_id)).toHaveLength(3);
  });

  it("copies a thread: a new id with the same history, paused where the source is, each going on alone", async () => {
    const { client } = await setup();
    const source = await client.threads.create({ metadata: { user: "ann" } });
    await client.runs.wait(source.thread_id, "agent", { input: human("one") });
    await client.runs.wait(source.thread_id, "agent", { input: human("approve: save it?") });
    const history = async (threadId: string) =>
      (await client.threads.getHistory<Chat>(threadId, { limit: 50 })).map((s) => [s.checkpoint.checkpoint_id, s.next]);

    const copy = await client.threads.copy(source.thread_id);
    expect(copy.thread_id).not.toBe(source.thread_id);
    // As the Agent Server answers: the source's metadata with the copy's id, status idle, the copied values.
    expect(copy).toMatchObject({
      status: "idle",
      metadata: { user: "ann", graph_id: "agent", thread_id: copy.thread_id },
    });
    expect(texts(copy.values)).toEqual(texts((await client.threads.getState(source.thread_id)).values));
    expect(await history(copy.thread_id)).toEqual(await history(source.thread_id));
    expect((await client.threads.getState(copy.thread_id)).next).toEqual(["approve"]);

    // Each thread resumes on its own answer.
    await client.runs.wait(copy.thread_id, "agent", { command: { resume: "yes" } });
    await client.runs.wait(source.thread_id, "agent", { command: { resume: "no" } });
    expect(texts((await client.threads.getState(copy.thread_id)).values).at(-1)).toBe("ai: approved: yes");
    expect(texts((await client.threads.getState(source.thread_id)).values).at(-1)).toBe("ai: approved: no");

    await expect(client.threads.copy("00000000-0000-4000-8000-000000000000")).rejects.toThrow(/404/);
  });

  it("runs in the background: get, join, join the stream from the start and from an event id, cancel", async () => {
    const { client } = await setup();
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "agent", {
      input: human("slow"),
      config: { configurable: { delay_ms: 150 } },
      streamMode: ["values", "updates"],
    });
    expect(["pending", "running"]).toContain(run.status);
    const joined = await collect(client.runs.joinStream(thread.thread_id, run.run_id));
    expect(joined.map((p) => p.event)).toEqual(["metadata", "values", "updates", "values", "end"]);
    const resumed = await collect(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "1" }));
    expect(resumed.map((p) => p.event)).toEqual(["updates", "values", "end"]);
    expect(texts(await client.runs.join(thread.thread_id, run.run_id))).toEqual(["human: slow", "ai: echo slow"]);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
    expect((await client.runs.list(thread.thread_id)).map((r) => r.run_id)).toEqual([run.run_id]);

    // Held until the test lets it go, which it never does: only the cancel can end it, so the cancel's
    // answer says that it stopped the run and did not wait for its end. (Before, a 5 s run and a bound of
    // 4 s on the cancel, which a loaded machine overran.)
    const { run: long } = await heldRun(client, thread.thread_id, "never");
    await settles(client.runs.cancel(thread.thread_id, long.run_id, true, "rollback"), "the held run cancelled");
    // Deleted, as the Agent Server deletes a run rolled back.
    await expect(client.runs.get(thread.thread_id, long.run_id)).rejects.toThrow(/404/);
    expect(texts((await client.threads.getState(thread.thread_id)).values)).toEqual(["human: slow", "ai: echo slow"]);
  });
});

describe("fetch", () => {
  // Once the answer came only when the run ended: runs.join or runs.wait given a signal that aborted went
  // on waiting (the server saw the abort; the caller was never told), unlike a fetch.
  it("rejects with the abort as a fetch does when the request's signal aborts before the answer", async () => {
    const { client, server } = await setup();
    const thread = await client.threads.create();
    const controller = new AbortController();
    // A run held until the test lets it go (never): the answer can come only from the abort. Aborted once
    // the run is running, so the server has the request. (Before, a 1.5 s run, an abort after 50 ms and a
    // bound of 1 s on the answer, which a loaded machine overran.)
    const answer = server.fetch(`http://local.invalid/threads/${thread.thread_id}/runs/wait`, {
      method: "POST",
      body: JSON.stringify({
        assistant_id: "agent",
        input: human("slow"),
        config: { configurable: { hold: crypto.randomUUID() } },
      }),
      signal: controller.signal,
    });
    await until(async () => (await client.runs.list(thread.thread_id)).some((run) => run.status === "running"));
    controller.abort();
    await expect(settles(answer, "the answer to an aborted request")).rejects.toMatchObject({ name: "AbortError" });
    await expect(
      server.fetch("http://local.invalid/threads/search", { method: "POST", signal: controller.signal }),
    ).rejects.toMatchObject({ name: "AbortError" });
  });
});

describe("multitask strategies: a second message while the first runs", () => {
  async function doubleText(strategy: "reject" | "enqueue" | "interrupt" | "rollback") {
    const { client } = await setup();
    const thread = await client.threads.create();
    const first = await client.runs.create(thread.thread_id, "agent", {
      input: human("first"),
      config: { configurable: { delay_ms: 400 } },
    });
    await until(async () => (await client.runs.get(thread.thread_id, first.run_id)).status === "running");
    const second = client.runs.wait(thread.thread_id, "agent", { input: human("second"), multitaskStrategy: strategy });
    const outcome = await second.then(
      (values) => ({ values }),
      (error: Error) => ({ error }),
    );
    // A run rolled back is deleted, as at the Agent Server: its join and get answer 404.
    const firstStatus = await client.runs.join(thread.thread_id, first.run_id).then(
      async () => (await client.runs.get(thread.thread_id, first.run_id)).status,
      (error: { status?: number }) => error.status,
    );
    const final = texts((await client.threads.getState(thread.thread_id)).values);
    return { outcome, firstStatus, final };
  }

  it("reject: the second is refused (409), the first finishes", async () => {
    const { outcome, firstStatus, final } = await doubleText("reject");
    expect("error" in outcome && outcome.error.message).toMatch(/409/);
    expect(firstStatus).toBe("success");
    expect(final).toEqual(["human: first", "ai: echo first"]);
  });

  it("enqueue: the second runs after the first, on its result", async () => {
    const { firstStatus, final } = await doubleText("enqueue");
    expect(firstStatus).toBe("success");
    expect(final).toEqual(["human: first", "ai: echo first", "human: second", "ai: echo second"]);
  });

  it("interrupt: the first stops keeping its input, the second answers", async () => {
    const { firstStatus, final } = await doubleText("interrupt");
    expect(firstStatus).toBe("interrupted");
    expect(final).toEqual(["human: first", "human: second", "ai: echo second"]);
  });

  // Once answered 200 with status "interrupted": the Agent Server deletes the rolled-back run ("the first
  // run is completely deleted from the database", its how-to on rollback, which reads it back as a 404).
  it("rollback: the first is stopped and erased, its run deleted (404), the second answers alone", async () => {
    const { firstStatus, final } = await doubleText("rollback");
    expect(firstStatus).toBe(404);
    expect(final).toEqual(["human: second", "ai: echo second"]);
  });
});

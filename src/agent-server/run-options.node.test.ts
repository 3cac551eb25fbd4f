/**
 * A run request's options beyond its input (run-options.ts): its `config`
 * checked key by key, `durability` honoured, and the Agent Server options a
 * page cannot honour refused, each answered 422 naming the field before
 * anything runs or is written.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LangChainTracer } from "@langchain/core/tracers/tracer_langchain";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { human, texts, type Chat } from "../../test/support/agent-server/timing.js";

const URL_BASE = "http://local.invalid";
const setup = () => openServer<Chat>("run-options", true);
afterEach(closeServers);

/** Asks `runs/wait` on a new thread with `fields`: the answer's status and JSON, and the thread's runs after. */
async function askRun(fields: Record<string, unknown>) {
  const { client, server } = await setup();
  const t = await client.threads.create();
  const response = await server.fetch(`${URL_BASE}/threads/${t.thread_id}/runs/wait`, {
    method: "POST",
    body: JSON.stringify({ assistant_id: "agent", input: human("hi"), ...fields }),
  });
  const answer = (await response.json()) as { message?: string };
  return { status: response.status, answer, client, threadId: t.thread_id };
}

describe("config", () => {
  // Each once reached LangGraph: a signal or callbacks JSON cannot carry failed the run with a TypeError
  // (answered 200 with __error__, the thread left "error"), a maxConcurrency of 0 or "x" spun the page's
  // event loop for good (every later request hung), a timeout of "x" or a recursion_limit of 0 failed the run
  // after it was recorded.
  it.each([
    ["signal", { signal: {} }],
    ["callbacks", { callbacks: {} }],
    ["max_concurrency", { max_concurrency: 0 }],
    ["maxConcurrency", { maxConcurrency: "x" }],
    ["timeout", { timeout: "x" }],
    ["recursion_limit", { recursion_limit: 0 }],
    ["tags", { tags: "x" }],
    ["configurable", { configurable: 5 }],
  ])("config.%s that JSON cannot carry, or of the wrong type, is refused (422) naming it", async (key, config) => {
    const { status, answer, client, threadId } = await askRun({ config });
    expect(status).toBe(422);
    expect(answer.message).toContain(`config.${key}`);
    expect(await client.runs.list(threadId)).toEqual([]);
    expect((await client.threads.get(threadId)).status).toBe("idle");
  });

  it("tags, metadata, run_name, max_concurrency and timeout of the right type are taken", async () => {
    const config = { tags: ["a"], metadata: { m: 1 }, run_name: "r", max_concurrency: 2, timeout: 10_000 };
    const { status, answer } = await askRun({ config });
    expect(status).toBe(200);
    expect(texts(answer)).toEqual(["human: hi", "ai: echo hi"]);
  });
});

describe("LangGraph's own configurable keys", () => {
  // Once passed to LangGraph: `__pregel_resuming` made the run drop its input without a word (answered 200
  // with the state as it was), `__pregel_checkpointer: false` failed it with "Cannot read properties of
  // undefined", whether they came in config.configurable or in checkpoint (which the Agent Server reads
  // as a checkpoint's address only).
  it("are refused (422) in config.configurable, and are not taken from checkpoint", async () => {
    const { client, server } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    const ask = (fields: Record<string, unknown>) =>
      server.fetch(`${URL_BASE}/threads/${t.thread_id}/runs/wait`, {
        method: "POST",
        body: JSON.stringify({ assistant_id: "agent", input: human("two"), ...fields }),
      });
    const refused = await ask({ config: { configurable: { __pregel_resuming: true } } });
    expect([refused.status, ((await refused.json()) as { message: string }).message]).toEqual([
      422,
      expect.stringContaining("config.configurable.__pregel_resuming"),
    ]);
    expect(await client.runs.list(t.thread_id)).toHaveLength(1);
    const taken = await ask({ checkpoint: { checkpoint_ns: "", __pregel_resuming: true } });
    expect([taken.status, texts(await taken.json())]).toEqual([
      200,
      ["human: one", "ai: echo one", "human: two", "ai: echo two"],
    ]);
  });
});

describe("durability", () => {
  /** How many checkpoints a first run on a new thread leaves with `fields`. */
  async function checkpointsLeft(fields: Record<string, unknown>) {
    const { status, answer, client, threadId } = await askRun(fields);
    expect([status, texts(answer)]).toEqual([200, ["human: hi", "ai: echo hi"]]);
    return (await client.threads.getHistory(threadId, { limit: 10 })).length;
  }

  // Once dropped: every run checkpointed each step whatever it asked.
  it("is the run's LangGraph durability: 'exit' keeps only the run's last checkpoint, as checkpoint_during false", async () => {
    expect(await checkpointsLeft({})).toBe(3);
    expect(await checkpointsLeft({ durability: "sync" })).toBe(3);
    expect(await checkpointsLeft({ durability: "exit" })).toBe(1);
    expect(await checkpointsLeft({ checkpoint_during: false })).toBe(1);
    expect(await checkpointsLeft({ checkpoint_during: true })).toBe(3);
  });

  it.each([
    ["durability", { durability: "never" }],
    ["durability", { durability: "exit", checkpoint_during: true }],
    ["checkpoint_during", { checkpoint_during: "no" }],
  ])("%s that LangGraph cannot take is refused (422) naming it", async (key, fields) => {
    const { status, answer, client, threadId } = await askRun(fields);
    expect([status, answer.message]).toEqual([422, expect.stringContaining(key)]);
    expect(await client.runs.list(threadId)).toEqual([]);
  });
});

describe("what a page cannot do", () => {
  // Once accepted and dropped: the client waited for a call that never came.
  it.each([
    ["webhook", { webhook: "https://example.com/hook" }],
    ["feedback_keys", { feedback_keys: ["score"] }],
    ["on_completion", { on_completion: "later" }],
  ])("%s is refused (422) naming it, before anything runs", async (key, fields) => {
    const { status, answer, client, threadId } = await askRun(fields);
    expect([status, answer.message]).toEqual([422, expect.stringContaining(key)]);
    expect(await client.runs.list(threadId)).toEqual([]);
  });

  // As the Agent Server's RunCreate schema (zod, not strict) strips a field it does not know: a newer SDK's
  // field, or LangSmith tracing (`_langsmithTracer`, sent as `langsmith_tracer`: a page's run sends no
  // traces), runs as without it, not refused.
  it.each([
    ["langsmith_tracer", { langsmith_tracer: { project_name: "p" } }],
    ["a field no SDK sends", { some_future_option: ["agent"] }],
  ])("a body field the server does not read (%s) is ignored: the run goes as without it", async (_key, fields) => {
    const { status, answer } = await askRun(fields);
    expect([status, texts(answer)]).toEqual([200, ["human: hi", "ai: echo hi"]]);
  });

  it("the SDK's _langsmithTracer is ignored, on a thread's run and a thread-less one", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const tracer = { _langsmithTracer: new LangChainTracer({ projectName: "p", exampleId: "e" }) };
    await client.runs.wait(t.thread_id, "agent", { input: human("hi"), ...tracer });
    expect(await client.runs.list(t.thread_id)).toHaveLength(1);
    expect(await client.runs.wait(null, "agent", { input: human("hi"), ...tracer })).toBeTruthy();
  });

  it("what the SDK sends by default, or without effect on a thread's run, is taken", async () => {
    const fields = { stream_resumable: true, feedback_keys: [], on_completion: "keep", strict_resume: true };
    const { status, answer } = await askRun(fields);
    expect([status, texts(answer)]).toEqual([200, ["human: hi", "ai: echo hi"]]);
  });
});

describe("interrupt_before and interrupt_after", () => {
  // Once handed to LangGraph as they came: the run failed with "interruptNodes.includes is not a function"
  // after it was recorded (answered 200 with __error__, the thread left "error").
  it.each([
    ["interrupt_before", { interrupt_before: 5 }],
    ["interrupt_after", { interrupt_after: ["agent", 1] }],
    ["interrupt_after", { interrupt_after: "agent" }],
  ])("%s other than '*' or a list of node names is refused (422) naming it", async (key, fields) => {
    const { status, answer, client, threadId } = await askRun(fields);
    expect([status, answer.message]).toEqual([422, expect.stringContaining(key)]);
    expect(await client.runs.list(threadId)).toEqual([]);
    expect((await client.threads.get(threadId)).status).toBe("idle");
  });

  it("'*' and a list of node names are taken", async () => {
    const all = await askRun({ interrupt_before: "*" });
    expect([all.status, (await all.client.threads.getState(all.threadId)).next]).toEqual([200, ["agent"]]);
    const listed = await askRun({ interrupt_after: ["agent"] });
    const after = await listed.client.threads.getState(listed.threadId);
    expect([listed.status, texts(after.values)]).toEqual([200, ["human: hi", "ai: echo hi"]]);
  });
});

describe("checkpoint", () => {
  // Once handed to LangGraph as it came: a checkpoint_ns of 5 failed the run, or the read, with a TypeError.
  it.each([
    ["checkpoint.checkpoint_ns", { checkpoint: { checkpoint_ns: 5 } }],
    ["checkpoint.checkpoint_id", { checkpoint: { checkpoint_id: 7 } }],
    ["checkpoint", { checkpoint: "c1" }],
  ])("%s of the wrong type is refused (422) naming it", async (key, fields) => {
    const { status, answer, client, threadId } = await askRun(fields);
    expect([status, answer.message]).toEqual([422, expect.stringContaining(key)]);
    expect(await client.runs.list(threadId)).toEqual([]);
  });
});

/**
 * A run request's options beyond its input (run-options.ts): its `config`
 * checked key by key, `durability` honoured, and the Agent Server options a
 * page cannot honour refused, each answered 422 naming the field before
 * anything runs or is written.
 */
import { afterEach, describe, expect, it } from "vitest";
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
  // event loop for good (every later request hung), a timeout of "x" failed the run after it was recorded.
  it.each([
    ["signal", { signal: {} }],
    ["callbacks", { callbacks: {} }],
    ["max_concurrency", { max_concurrency: 0 }],
    ["maxConcurrency", { maxConcurrency: "x" }],
    ["timeout", { timeout: "x" }],
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

  it("what the SDK sends by default, or without effect on a thread's run, is taken", async () => {
    const fields = { stream_resumable: true, feedback_keys: [], on_completion: "keep", strict_resume: true };
    const { status, answer } = await askRun(fields);
    expect([status, texts(answer)]).toEqual([200, ["human: hi", "ai: echo hi"]]);
  });
});

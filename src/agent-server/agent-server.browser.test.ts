/**
 * The local agent server in the page: bundled by Vite for the browser (Hono,
 * LangGraph's web entry, the SDK's `Client`), on the browser's IndexedDB and
 * Web Locks. One pass over what a chat UI does: stream tokens, pause on an
 * approval and resume it, and a second message enqueued behind a running one.
 */
import { afterEach, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";

afterEach(closeServers);

type Chat = {
  messages: { type: string; content: string }[];
};
const human = (content: string) => ({ messages: [{ type: "human", content }] });
const texts = (values: unknown) => (values as Chat).messages.map((m) => `${m.type}: ${m.content}`);

it("serves the SDK Client in the page: tokens, an approval resumed, a second message enqueued", async () => {
  const { client } = await openServer<Chat>("agent-server-page");
  const thread = await client.threads.create({ metadata: { app: "page" } });

  const tokens: string[] = [];
  for await (const part of client.runs.stream(thread.thread_id, "agent", {
    input: human("hello"),
    streamMode: ["messages-tuple", "values"],
  })) {
    if (part.event === "messages") tokens.push((part.data as unknown as [{ content: string }])[0].content);
  }
  expect(tokens.join("")).toBe("echo hello");

  await client.runs.wait(thread.thread_id, "agent", { input: human("approve: ok?") });
  expect((await client.threads.get(thread.thread_id)).status).toBe("interrupted");
  const resumed = await client.runs.wait(thread.thread_id, "agent", { command: { resume: "yes" } });
  expect(texts(resumed).at(-1)).toBe("ai: approved: yes");

  const first = await client.runs.create(thread.thread_id, "agent", {
    input: human("first"),
    config: { configurable: { delay_ms: 300 } },
  });
  const second = await client.runs.wait(thread.thread_id, "agent", {
    input: human("second"),
    multitaskStrategy: "enqueue",
  });
  expect((await client.runs.get(thread.thread_id, first.run_id)).status).toBe("success");
  expect(texts(second).slice(-4)).toEqual(["human: first", "ai: echo first", "human: second", "ai: echo second"]);
  const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  expect(history.length).toBeGreaterThan(6);
  expect((await client.threads.search({ metadata: { app: "page" } })).map((t) => t.thread_id)).toEqual([
    thread.thread_id,
  ]);
});

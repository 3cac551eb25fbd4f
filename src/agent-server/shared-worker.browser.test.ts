/**
 * The worker mode in a shared worker (Chromium): one local agent server for
 * every connection (every tab of the origin), each on its own port. A run
 * started through one connection goes on once that connection is closed (as
 * a tab closing would), and another connection joins it to its end; a message
 * sent through the second while the first's run goes is enqueued behind it.
 * A tab that closes while it streams a run asked with `on_disconnect:
 * "cancel"` stops the run, as a closed connection does.
 */
import { Client } from "@langchain/langgraph-sdk";
import { expect, it } from "vitest";
import { connectLocalAgentServer } from "./port.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";
import { openIframeTab } from "../../test/support/iframe-tab.js";
import type { SharedTabApi } from "../../test/support/agent-server/shared-tab-page.js";

const human = (content: string) => ({ messages: [{ type: "human", content }] });

it("serves every connection of a shared worker from one server; a run outlives the connection that started it", async () => {
  const dbName = freshDbName("agent-shared-worker");
  const url = new URL("../../test/support/agent-server/server-shared-worker.ts", import.meta.url);
  const first = new SharedWorker(url, { type: "module" });
  const second = new SharedWorker(url, { type: "module" });
  const a = connectLocalAgentServer(first.port);
  const b = connectLocalAgentServer(second.port);
  try {
    first.port.postMessage({ dbName });
    const clientA = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: a.fetch, maxRetries: 0 } });
    const clientB = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: b.fetch, maxRetries: 0 } });
    const thread = await clientA.threads.create();
    const run = await clientA.runs.create(thread.thread_id, "agent", {
      input: human("first"),
      config: { configurable: { delay_ms: 400 } },
    });
    a.close();
    // The same server answers the second connection, which never named a database: were the worker
    // not shared, nothing would answer it.
    expect((await clientB.runs.get(thread.thread_id, run.run_id)).run_id).toBe(run.run_id);
    const second = await clientB.runs.wait(thread.thread_id, "agent", {
      input: human("second"),
      multitaskStrategy: "enqueue",
    });
    expect((await clientB.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
    const texts = (second as { messages: { type: string; content: string }[] }).messages.map(
      (m) => `${m.type}: ${m.content}`,
    );
    expect(texts).toEqual(["human: first", "ai: echo first", "human: second", "ai: echo second"]);
  } finally {
    a.close();
    b.close();
    for (const name of [dbName, `${dbName}-agent-threads`]) await deleteDatabase(name);
  }
});

it("stops a run streamed with on_disconnect 'cancel' when the tab streaming it closes (its port says nothing)", async () => {
  const dbName = freshDbName("agent-shared-worker-close");
  const url = new URL("../../test/support/agent-server/server-shared-worker.ts", import.meta.url);
  // A worker of its own (a name of its own): the one of the test above has its database.
  const worker = new SharedWorker(url, { type: "module", name: dbName });
  const page = connectLocalAgentServer(worker.port);
  const tab = await openIframeTab<SharedTabApi>(
    new URL("../../test/support/agent-server/shared-tab-page.ts", import.meta.url).href,
    "sharedTab",
  );
  try {
    worker.port.postMessage({ dbName });
    const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: page.fetch, maxRetries: 0 } });
    const thread = await client.threads.create();
    // Left alone, the run ends in 20 s with "success": the wait is for its end, whichever it is, not for
    // "interrupted" within 2 s (under load the worker took longer to see the tab's lock free).
    const runId = await tab.api.stream(dbName, thread.thread_id, "closing", 20_000);
    expect((await client.runs.get(thread.thread_id, runId)).status).not.toBe("interrupted");
    tab.frame.remove();
    const status = async () => (await client.runs.get(thread.thread_id, runId)).status;
    await expect.poll(status, { timeout: 40_000, interval: 50 }).not.toMatch(/^(pending|running)$/);
    expect(await status()).toBe("interrupted");
  } finally {
    tab.frame.remove();
    page.close();
    for (const name of [dbName, `${dbName}-agent-threads`]) await deleteDatabase(name);
  }
});

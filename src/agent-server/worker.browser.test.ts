/**
 * The worker mode in Chromium: a local agent server in a dedicated worker,
 * the page's SDK `Client` on `connectLocalAgentServer(worker)` (and a worker
 * whose script does not load failing the requests, not hanging them); and the
 * main thread's long tasks (PerformanceObserver "longtask") while a long
 * graph run (1.2 s of CPU work in 60 ms slices) streams, with the server in
 * the page and with it in the worker.
 */
import { Client } from "@langchain/langgraph-sdk";
import { afterEach, expect, it } from "vitest";
import { connectLocalAgentServer } from "./port.js";
import { busySlices } from "../../test/support/agent-server/graph.js";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";

type Fetch = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

afterEach(closeServers);

const BUSY_MS = 1_200;

/** Streams one long run through `fetch`; the main thread's long tasks meanwhile, and the answer's tokens. */
async function longRun(fetch: Fetch) {
  const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch, maxRetries: 0 } });
  const thread = await client.threads.create();
  const longTasks: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) longTasks.push(entry.duration);
  });
  observer.observe({ type: "longtask" });
  let tokens = "";
  for await (const part of client.runs.stream(thread.thread_id, "agent", {
    input: { messages: [{ type: "human", content: "long" }] },
    config: { configurable: { busy_ms: BUSY_MS } },
    streamMode: ["messages-tuple"],
  })) {
    if (part.event === "messages") tokens += (part.data as unknown as [{ content: string }])[0].content;
  }
  // The entries reported but not yet delivered to the callback, taken now rather than after a while.
  for (const entry of observer.takeRecords()) longTasks.push(entry.duration);
  observer.disconnect();
  return { tokens, count: longTasks.length, totalMs: Math.round(longTasks.reduce((a, b) => a + b, 0)) };
}

it("serves the SDK from a dedicated worker, leaving the main thread free of the run's long tasks", async () => {
  const dbName = freshDbName("agent-worker");
  const worker = new Worker(new URL("../../test/support/agent-server/server-worker.ts", import.meta.url), {
    type: "module",
  });
  const remote = connectLocalAgentServer(worker);
  try {
    worker.postMessage({ dbName });
    const slicesBefore = busySlices();
    const inWorker = await longRun(remote.fetch);
    const slicesInWorkerMode = busySlices() - slicesBefore;
    const { server } = await openServer("agent-worker-page");
    const inPage = await longRun(server.fetch);
    const slicesInPageMode = busySlices() - slicesBefore - slicesInWorkerMode;
    console.log(
      `main-thread long tasks during a ${BUSY_MS} ms run: page ${JSON.stringify(inPage)}, worker ${JSON.stringify(inWorker)}`,
    );
    expect(inWorker.tokens).toBe("echo long");
    expect(inPage.tokens).toBe("echo long");
    // The run's CPU work, counted where it ran: none of it on the page's thread in worker mode, all of it
    // in page mode. (Before, the worker mode's long tasks were bounded by a quarter of the page mode's,
    // which other work on a loaded machine's main thread overran.) The page mode's long tasks still show
    // that the observer sees such work.
    expect(slicesInWorkerMode).toBe(0);
    expect(slicesInPageMode).toBe(BUSY_MS / 60);
    expect(inPage.totalMs).toBeGreaterThanOrEqual(BUSY_MS * 0.8);
  } finally {
    remote.close();
    worker.terminate();
    for (const name of [dbName, `${dbName}-agent-threads`]) await deleteDatabase(name);
  }
});

it("fails the page's requests, not leaves them waiting, when the worker's script does not load", async () => {
  // A module the server cannot fetch (an offline app whose worker chunk was not precached, say).
  const missing = new URL("/no-such-agent-server-worker.js", location.href);
  const worker = new Worker(missing, { type: "module" });
  const remote = connectLocalAgentServer(worker);
  try {
    const request = remote.fetch("http://local.invalid/threads/search", { method: "POST", body: "{}" });
    const late = new Promise((resolve) => setTimeout(() => resolve("still waiting after 3 s"), 3_000));
    const outcome = await Promise.race([request.then(String, (error: Error) => error.message), late]);
    expect(outcome).toMatch(/worker.*failed to load/);
    await expect(remote.fetch("http://local.invalid/threads/search", { method: "POST", body: "{}" })).rejects.toThrow(
      /failed to load/,
    );
  } finally {
    remote.close();
    worker.terminate();
  }
});

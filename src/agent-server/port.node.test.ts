/**
 * The worker mode's transport over a real MessageChannel (Node's): the SDK
 * `Client` on `connectLocalAgentServer(port1)` talks to a server exposed on
 * `port2` with `exposeLocalAgentServer`: JSON answers, errors, a streamed
 * run whose events arrive before it ends, and a stream cancelled by the
 * page, which cancels the server's side.
 */
import { Client } from "@langchain/langgraph-sdk";
import { afterEach, expect, it } from "vitest";
import { connectLocalAgentServer, exposeLocalAgentServer } from "./port.js";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { letGo } from "../../test/support/agent-server/graph.js";
import { settles, sleep, until } from "../../test/support/agent-server/timing.js";
import type { LocalAgentServer } from "./index.js";

type Chat = { messages: { type: string; content: string }[] };
const human = (content: string) => ({ messages: [{ type: "human", content }] });

const closers: (() => void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) close();
  await closeServers();
});

async function overPort() {
  const { server } = await openServer<Chat>("agent-port");
  const { port1, port2 } = new MessageChannel();
  const stop = exposeLocalAgentServer(server, port2);
  const remote = connectLocalAgentServer(port1);
  closers.push(() => {
    remote.close();
    stop();
    port1.close();
    port2.close();
  });
  const client = new Client<Chat>({
    apiUrl: "http://local.invalid",
    callerOptions: { fetch: remote.fetch, maxRetries: 0 },
  });
  return { server, remote, client };
}

it("answers JSON and errors, and streams a run's events as they come", async () => {
  const { client, remote } = await overPort();
  const thread = await client.threads.create({ metadata: { via: "port" } });
  expect((await client.threads.get(thread.thread_id)).metadata).toEqual({ via: "port" });
  await expect(client.threads.get("missing")).rejects.toThrow(/404/);
  const bad = await remote.fetch("http://local.invalid/threads", { method: "POST", body: "{nope" });
  expect(bad.status).toBe(422);

  // The run is held until its first values have come through the port: streamed, not buffered to the end
  // (a stream buffered never gives them, and the held run never ends). Before, a 300 ms run and at least
  // 250 ms between the first event and the last, which a slow read of the first event shortened.
  const hold = crypto.randomUUID();
  const seen: string[] = [];
  const reading = (async () => {
    for await (const part of client.runs.stream(thread.thread_id, "agent", {
      input: human("hi"),
      config: { configurable: { hold } },
      streamMode: ["values", "messages-tuple"],
    })) {
      seen.push(part.event);
      if (part.event === "values" && !seen.includes("let go")) {
        seen.push("let go");
        letGo(hold);
      }
    }
  })();
  await settles(reading, "the run's first values, while it is held");
  expect(seen.slice(0, 3)).toEqual(["metadata", "values", "let go"]);
  expect(seen).toEqual(expect.arrayContaining(["messages"]));
  const deleted = await remote.fetch(`http://local.invalid/threads/${thread.thread_id}`, { method: "DELETE" });
  expect(deleted.status).toBe(204);
});

it("a stream the page cancels is cancelled in the server; the run goes on and can be joined", async () => {
  const { client, remote } = await overPort();
  const thread = await client.threads.create();
  const response = await remote.fetch(`http://local.invalid/threads/${thread.thread_id}/runs/stream`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ assistant_id: "agent", input: human("bye"), config: { configurable: { delay_ms: 200 } } }),
  });
  const reader = response.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  expect(first).toContain("event: metadata");
  await reader.cancel();
  const runId = /"run_id":"([^"]+)"/.exec(first)![1]!;
  const values = (await client.runs.join(thread.thread_id, runId)) as unknown as Chat;
  expect(values.messages.map((m) => m.content)).toEqual(["bye", "echo bye"]);

  const aborted = new AbortController();
  aborted.abort(new Error("the page gave up"));
  await expect(
    remote.fetch(`http://local.invalid/threads/${thread.thread_id}`, { signal: aborted.signal }),
  ).rejects.toThrow("the page gave up");
});

it("a stream asked with on_disconnect 'cancel' and cancelled by the page stops its run in the server", async () => {
  const { client, remote } = await overPort();
  const thread = await client.threads.create();
  const response = await remote.fetch(`http://local.invalid/threads/${thread.thread_id}/runs/stream`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      assistant_id: "agent",
      input: human("stop me"),
      on_disconnect: "cancel",
      // Held (never let go): only the cancel can end it. Before, a 3 s run and a bound of 2 s on the join.
      config: { configurable: { hold: crypto.randomUUID() } },
    }),
  });
  const reader = response.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  const runId = /"run_id":"([^"]+)"/.exec(first)![1]!;
  await reader.cancel();
  await settles(client.runs.join(thread.thread_id, runId), "the end of the run whose stream was cancelled");
  expect((await client.runs.get(thread.thread_id, runId)).status).toBe("interrupted");
});

it("a page gone (its connection closed) stops a run it streams with on_disconnect 'cancel', as a closed connection does", async () => {
  const { client, remote, server } = await overPort();
  const thread = await client.threads.create();
  let runId = "";
  const reading = (async () => {
    for await (const part of client.runs.stream(thread.thread_id, "agent", {
      input: human("long"),
      // Held (never let go): only the page going can end it (a 3 s run ended "success" on its own).
      config: { configurable: { hold: crypto.randomUUID() } },
      onDisconnect: "cancel",
      onRunCreated: (meta) => void (runId = meta.run_id),
    }))
      void part;
  })().catch(() => undefined);
  await until(async () => runId !== "");
  // A tab closing says nothing on its port (no cancel message, no close event): its lock goes.
  remote.close();
  await reading;
  const direct = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: server.fetch, maxRetries: 0 } });
  await until(async () => (await direct.runs.get(thread.thread_id, runId)).status === "interrupted");
});

it("a page's own request header of the client lock's name does not hide the page from the worker", async () => {
  const { remote, server } = await overPort();
  const direct = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: server.fetch, maxRetries: 0 } });
  const thread = await direct.threads.create();
  // An app's header of that name (a stale copy of another request's, or any value): the worker watched
  // the page it named, not the page that sent the request, and never saw this page go.
  const response = await remote.fetch(`http://local.invalid/threads/${thread.thread_id}/runs/stream`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-langgraph-local-agent-client": "not-a-page" },
    body: JSON.stringify({
      assistant_id: "agent",
      input: human("long"),
      on_disconnect: "cancel",
      // Held (never let go): only the page going can end it (a 3 s run ended "success" on its own).
      config: { configurable: { hold: crypto.randomUUID() } },
    }),
  });
  const first = new TextDecoder().decode((await response.body!.getReader().read()).value);
  const runId = /"run_id":"([^"]+)"/.exec(first)![1]!;
  remote.close();
  await until(async () => (await direct.runs.get(thread.thread_id, runId)).status === "interrupted");
});

it("takes the server's promise: a request sent while it opens waits for it; one it fails to open fails with its error", async () => {
  // A worker listens before it awaits anything, or it drops the page's first requests (docs/agent-server.md).
  let open!: (server: LocalAgentServer) => void;
  const opening = new Promise<LocalAgentServer>((resolve) => (open = resolve));
  const { port1, port2 } = new MessageChannel();
  const stop = exposeLocalAgentServer(opening, port2);
  const remote = connectLocalAgentServer(port1);
  const failing = new MessageChannel();
  const stopFailing = exposeLocalAgentServer(Promise.reject(new Error("no IndexedDB here")), failing.port2);
  const failed = connectLocalAgentServer(failing.port1);
  closers.push(() => {
    for (const close of [remote.close, stop, failed.close, stopFailing]) close();
    for (const port of [port1, port2, failing.port1, failing.port2]) port.close();
  });
  const search = (fetch: typeof remote.fetch) =>
    fetch("http://local.invalid/threads/search", { method: "POST", body: "{}" });
  const early = search(remote.fetch);
  await sleep(50);
  open((await openServer<Chat>("agent-port-promise")).server);
  const answer = await early;
  expect(answer.status).toBe(200);
  expect(await answer.json()).toEqual([]);
  await expect(search(failed.fetch)).rejects.toThrow(/no IndexedDB here/);
});

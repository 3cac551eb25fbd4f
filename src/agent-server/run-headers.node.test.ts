/**
 * The headers naming a run, as the Agent Server sends them (its runs.py):
 * `Content-Location`, the run's path (the SDK's `onRunCreated`), and
 * `Location`, where the answer goes on: `.../stream` for a run's stream,
 * where the SDK reconnects with `Last-Event-ID` when the stream breaks
 * before the run ends, and `.../join` for a run waited on.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@langchain/langgraph-sdk";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { human, type Chat } from "../../test/support/agent-server/timing.js";

const URL_BASE = "http://local.invalid";
afterEach(closeServers);

/** A run request's init: the test graph, and `json`. */
const post = (json: object): RequestInit => ({
  method: "POST",
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify({ assistant_id: "agent", ...json }),
});

/** The run routes' `Location` and `Content-Location` for `path`. */
async function headersOf(fetch: typeof globalThis.fetch, path: string, init?: RequestInit) {
  const response = await fetch(`${URL_BASE}${path}`, init);
  await response.body?.cancel();
  return [response.headers.get("Location"), response.headers.get("Content-Location")];
}

describe("run headers", () => {
  // Before: only Content-Location; the SDK's stream, without a Location, could not reconnect.
  it("stream, wait, join and the joined stream answer Location and Content-Location", async () => {
    const { server, client } = await openServer<Chat>("run-headers");
    const threadId = (await client.threads.create()).thread_id;
    const runs = `/threads/${threadId}/runs`;
    const streamed = await server.fetch(`${URL_BASE}${runs}/stream`, post({ input: human("one") }));
    const runId = /\/runs\/([^/]+)$/.exec(streamed.headers.get("Content-Location") ?? "")?.[1] ?? "";
    await streamed.text();
    expect([streamed.headers.get("Location"), streamed.headers.get("Content-Location")]).toEqual([
      `${runs}/${runId}/stream`,
      `${runs}/${runId}`,
    ]);
    expect(await headersOf(server.fetch, `${runs}/${runId}/join`)).toEqual([
      `${runs}/${runId}/join`,
      `${runs}/${runId}`,
    ]);
    expect(await headersOf(server.fetch, `${runs}/${runId}/stream`)).toEqual([
      `${runs}/${runId}/stream`,
      `${runs}/${runId}`,
    ]);
    const waited = await server.fetch(`${URL_BASE}${runs}/wait`, post({ input: human("two") }));
    const waitedId = /\/runs\/([^/]+)$/.exec(waited.headers.get("Content-Location") ?? "")?.[1] ?? "";
    await waited.text();
    expect(waited.headers.get("Location")).toBe(`${runs}/${waitedId}/join`);
  });

  it("a thread id a path segment cannot hold as it is is encoded in Location, where the SDK goes as it is", async () => {
    const { server, client } = await openServer<Chat>("run-headers-ids");
    const threadId = "会話 1/é";
    await client.threads.create({ threadId });
    const encoded = encodeURIComponent(threadId);
    const response = await server.fetch(`${URL_BASE}/threads/${encoded}/runs/stream`, post({ input: human("a") }));
    await response.text();
    const location = response.headers.get("Location") ?? "";
    expect(location.startsWith(`/threads/${encoded}/runs/`) && location.endsWith("/stream")).toBe(true);
    // The run it names is this thread's.
    expect((await server.fetch(`${URL_BASE}${location.replace(/\/stream$/, "")}`)).status).toBe(200);
  });

  // A stream that breaks mid-run (a dropped connection, a worker's port closed): the SDK reconnects to
  // Location with Last-Event-ID and reads the rest, each event once. Without Location it threw.
  it("the SDK's stream reconnects through Location after a break, each event once", async () => {
    const { server } = await openServer<Chat>("run-headers-reconnect");
    let broken = false;
    const requests: string[] = [];
    const breaking: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      requests.push(`${request.method} ${new URL(request.url).pathname}`);
      const response = await server.fetch(request);
      if (broken || request.method !== "POST" || !request.url.endsWith("/runs/stream")) return response;
      broken = true;
      // The first chunk (the metadata event) goes through, then the body fails as a dropped connection does.
      const reader = response.body!.getReader();
      const first = await reader.read();
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(first.value!);
          void reader.cancel();
          controller.error(new TypeError("network error"));
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const client = new Client<Chat>({ apiUrl: URL_BASE, callerOptions: { fetch: breaking, maxRetries: 0 } });
    const threadId = (await client.threads.create()).thread_id;
    const events: string[] = [];
    for await (const part of client.runs.stream(threadId, "agent", {
      input: human("again"),
      config: { configurable: { delay_ms: 300 } },
    })) {
      events.push(part.event);
    }
    expect(broken).toBe(true);
    expect(events).toEqual(["metadata", "values", "values", "end"]);
    expect(requests.filter((line) => line.startsWith("GET ") && line.endsWith("/stream"))).toHaveLength(1);
    const state = await client.threads.getState(threadId);
    expect((state.values as Chat).messages.map((m) => m.content)).toEqual(["again", "echo again"]);
  });
});

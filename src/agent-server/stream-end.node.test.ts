/**
 * A run's stream ends with an `end` event naming the run's final status, as
 * the Agent Server's does: the SDK takes it (or an `error`) as the run's end,
 * and without it asks the run's status once more (a GET of the run) before it
 * lets the stream go.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@langchain/langgraph-sdk";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });

/** A server, and an SDK client on it that notes each request it sends. */
async function counted() {
  const { server, client: plain } = await openServer("stream-end");
  const requests: string[] = [];
  const client = new Client({
    apiUrl: "http://local.invalid",
    callerOptions: {
      maxRetries: 0,
      fetch: (input: RequestInfo | URL, init?: RequestInit) => {
        const request = new Request(input, init);
        requests.push(`${request.method} ${new URL(request.url).pathname}`);
        return server.fetch(request);
      },
    },
  });
  return { client, plain, requests };
}

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const parts: T[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

describe("a run's stream ends with an end event", () => {
  // Once none was sent: after every stream the SDK sent one more request (GET the run) to learn it had ended.
  it("a stream answers its run's end, and the SDK sends no request after it", async () => {
    const { client, plain, requests } = await counted();
    const thread = await plain.threads.create();
    const parts = await collect(client.runs.stream(thread.thread_id, "agent", { input: human("hi") }));
    const runId = (parts[0]!.data as { run_id: string }).run_id;
    expect(parts.at(-1)).toMatchObject({ event: "end", data: { run_id: runId, status: "success" } });
    expect(parts.filter((part) => part.event === "end")).toHaveLength(1);
    expect(requests).toEqual([`POST /threads/${thread.thread_id}/runs/stream`]);

    // Joined after its end: its events again, then the same end, and no more requests.
    requests.length = 0;
    const joined = await collect(client.runs.joinStream(thread.thread_id, runId));
    expect(joined.at(-1)).toMatchObject({ event: "end", data: { run_id: runId, status: "success" } });
    expect(requests).toEqual([`GET /threads/${thread.thread_id}/runs/${runId}/stream`]);
  });

  it("a failed run's stream ends with its error, then its end", async () => {
    const { client, plain, requests } = await counted();
    const thread = await plain.threads.create();
    // A message type LangChain cannot coerce: the run fails.
    const parts = await collect(
      client.runs.stream(thread.thread_id, "agent", { input: { messages: [{ type: "humann", content: "typo" }] } }),
    );
    const runId = (parts[0]!.data as { run_id: string }).run_id;
    expect(parts.map((part) => part.event).slice(-2)).toEqual(["error", "end"]);
    expect(parts.at(-1)!.data).toEqual({ run_id: runId, status: "error" });
    expect(requests).toHaveLength(1);
  });
});

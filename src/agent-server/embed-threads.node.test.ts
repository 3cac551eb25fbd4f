/**
 * The "threads crud" scenarios of LangGraph's own embed-server tests
 * (the embed test file of the langgraph-api library in the langgraphjs
 * repository, read at commit f8bdf16d4, langgraph-api 1.4.5; the
 * snapshot holds no later tag than the npm 1.5.1 pinned here),
 * rewritten against createLocalAgentServer and its IndexedDB thread store:
 * the same SDK calls and the same expectations on ids, metadata, order and
 * paging. Their "runs" scenarios need their test graphs (not published) and
 * their debug/tasks/checkpoints event shapes; the differential test covers
 * the runs against their server instead.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";

afterEach(closeServers);

const client = async () => (await openServer("agent-embed-threads")).client;

describe("threads crud (LangGraph's embed-server scenarios)", () => {
  it("create, read, update, delete thread", async () => {
    const sdk = await client();
    const metadata = { name: "test_thread" };
    const threadOne = await sdk.threads.create({ metadata });
    expect(threadOne.metadata).toEqual(metadata);
    let get = await sdk.threads.get(threadOne.thread_id);
    expect(get.thread_id).toBe(threadOne.thread_id);
    expect(get.metadata).toEqual(metadata);

    await sdk.threads.update(threadOne.thread_id, { metadata: { modified: true } });
    get = await sdk.threads.get(threadOne.thread_id);
    expect(get.metadata).toEqual({ ...metadata, modified: true });

    const threadTwo = await sdk.threads.create({ metadata: { name: "another_thread" } });
    let search = await sdk.threads.search();
    expect(search.map((t) => t.thread_id)).toEqual([threadTwo.thread_id, threadOne.thread_id]);
    search = await sdk.threads.search({ metadata: { modified: true } });
    expect(search.map((t) => t.thread_id)).toEqual([threadOne.thread_id]);

    await sdk.threads.delete(threadOne.thread_id);
    search = await sdk.threads.search();
    expect(search.map((t) => t.thread_id)).toEqual([threadTwo.thread_id]);
  });

  it("list threads: filter, paging, sorting (threads created in one millisecond keep their order)", async () => {
    const sdk = await client();
    expect(await sdk.threads.search()).toHaveLength(0);
    const plain = await sdk.threads.create();
    expect((await sdk.threads.search()).map((t) => t.thread_id)).toEqual([plain.thread_id]);

    const metadata = { name: "test_thread" };
    const named = await sdk.threads.create({ metadata });
    expect((await sdk.threads.search()).map((t) => t.thread_id)).toEqual([named.thread_id, plain.thread_id]);
    expect((await sdk.threads.search({ metadata })).map((t) => t.thread_id)).toEqual([named.thread_id]);
    expect((await sdk.threads.search({ offset: 1, limit: 1 })).map((t) => t.thread_id)).toEqual([plain.thread_id]);
    expect((await sdk.threads.search({ sortBy: "created_at", sortOrder: "asc" })).map((t) => t.thread_id)).toEqual([
      plain.thread_id,
      named.thread_id,
    ]);
    expect((await sdk.threads.search({ sortBy: "created_at", sortOrder: "desc" })).map((t) => t.thread_id)).toEqual([
      named.thread_id,
      plain.thread_id,
    ]);
  });
});

/**
 * Thread routes against what the SDK's types promise and the Agent Server
 * answers: the search sorts it accepts, and the thread ids it refuses at
 * create rather than at the first run.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });

describe("thread search", () => {
  // Once answered 422: sort_by was checked against created_at, updated_at and thread_id only, though the
  // SDK's ThreadSortBy and the Agent Server take status too (a thread list grouped by status).
  it("sorts by status, as the Agent Server does (by name, either order; creation order breaks ties)", async () => {
    const { client } = await openServer("agent-thread-sort");
    const idle = await client.threads.create();
    const paused = await client.threads.create();
    await client.runs.wait(paused.thread_id, "agent", { input: human("approve: x") });
    const idleToo = await client.threads.create();
    const ids = async (sortOrder: "asc" | "desc") =>
      (await client.threads.search({ sortBy: "status", sortOrder })).map((t) => [t.thread_id, t.status]);
    expect(await ids("asc")).toEqual([
      [idle.thread_id, "idle"],
      [idleToo.thread_id, "idle"],
      [paused.thread_id, "interrupted"],
    ]);
    expect(await ids("desc")).toEqual([
      [paused.thread_id, "interrupted"],
      [idleToo.thread_id, "idle"],
      [idle.thread_id, "idle"],
    ]);
  });
});

describe("state_updated_at", () => {
  // Once missing: the SDK's Thread has state_updated_at (a thread list's "last activity"), and its
  // ThreadSortBy takes it; records had none (undefined in the UI) and the sort answered 422.
  it("each record has the time of its latest checkpoint (its creation before any), and search sorts by it", async () => {
    const { client } = await openServer("agent-thread-state-time");
    const older = await client.threads.create();
    const newer = await client.threads.create();
    await client.runs.wait(older.thread_id, "agent", { input: human("hi") });
    const state = await client.threads.getState(older.thread_id);
    expect((await client.threads.get(older.thread_id)).state_updated_at).toBe(state.created_at);
    expect((await client.threads.get(newer.thread_id)).state_updated_at).toBe(newer.created_at);
    expect(newer.state_updated_at).toBe(newer.created_at);
    const order = async (sortOrder: "asc" | "desc", page = {}) =>
      (await client.threads.search({ sortBy: "state_updated_at", sortOrder, ...page })).map((t) => t.thread_id);
    expect(await order("desc")).toEqual([older.thread_id, newer.thread_id]);
    expect(await order("asc")).toEqual([newer.thread_id, older.thread_id]);
    expect(await order("desc", { limit: 1, offset: 1 })).toEqual([newer.thread_id]);
    const [selected] = await client.threads.search({ select: ["thread_id", "state_updated_at"], limit: 1 });
    expect(Object.keys(selected!).sort()).toEqual(["state_updated_at", "thread_id"]);
  });
});

describe("thread ids", () => {
  // Once taken: the record was stored, and the thread failed at its first run (the saver's "reserved"
  // error, its status then `error`), or its runs answered 500 (a U+0000 in a response header).
  it("an id the saver would refuse is refused at create (422 naming thread_id), and nothing is stored", async () => {
    const { client, server } = await openServer("agent-thread-ids");
    for (const threadId of ["__proto__", "constructor", "prototype", "a\u0000b", "x\ud800y", ""]) {
      const answer = await server.fetch("http://local.invalid/threads", {
        method: "POST",
        body: JSON.stringify({ thread_id: threadId }),
      });
      expect(answer.status, JSON.stringify(threadId)).toBe(422);
      expect(await answer.json()).toMatchObject({ message: expect.stringContaining("thread_id") });
    }
    // A run that would create its thread (if_not_exists "create") checks the path's id the same way.
    for (const threadId of ["__proto__", "a\u0000b"]) {
      const run = client.runs.wait(threadId, "agent", { input: human("hi"), ifNotExists: "create" });
      await expect(run).rejects.toThrow(/422.*thread_id/);
    }
    expect(await client.threads.search()).toEqual([]);
    expect(await client.threads.count()).toBe(0);
  });

  // Once taken: threads.create({ threadId: "." }) answered 200 and stored the record, but the SDK refuses
  // "." and ".." as a path segment ("Invalid path segment"), so no get, run, update or delete could name it.
  it('"." and ".." are refused at create (422 naming thread_id): no SDK call could name the thread after', async () => {
    const { client } = await openServer("agent-thread-ids");
    for (const threadId of [".", ".."]) {
      await expect(client.threads.create({ threadId })).rejects.toThrow(/422.*thread_id/);
    }
    expect(await client.threads.count()).toBe(0);
    // An id holding dots otherwise is a plain id.
    expect((await client.threads.create({ threadId: "..." })).thread_id).toBe("...");
  });

  // Once answered 500 for every run ("Cannot convert argument to a ByteString": the id went raw into the
  // Content-Location header), with the run started all the same and the thread left busy.
  it("a thread whose id is not Latin-1 runs through stream, create and wait (Content-Location encoded)", async () => {
    const { client } = await openServer("agent-thread-ids");
    const threadId = "会話 1/é";
    await client.threads.create({ threadId });
    const parts = [];
    for await (const part of client.runs.stream(threadId, "agent", { input: human("one") })) parts.push(part.event);
    expect(parts).toEqual(["metadata", "values", "values", "end"]);
    const run = await client.runs.create(threadId, "agent", { input: human("two"), multitaskStrategy: "enqueue" });
    await client.runs.join(threadId, run.run_id);
    const answer = await client.runs.wait(threadId, "agent", { input: human("three") });
    expect((answer as { messages: unknown[] }).messages).toHaveLength(6);
    expect((await client.threads.get(threadId)).status).toBe("idle");
  });
});

describe("thread ttl", () => {
  // Once taken and dropped: threads.create({ ttl }) and threads.update({ ttl }) answered 200, and the
  // thread was kept for good (the page's records never expire), as the store's ttl is refused instead.
  it("a ttl at create or update is refused (422 naming it), and nothing is stored or changed", async () => {
    const { client } = await openServer("agent-thread-ttl");
    await expect(client.threads.create({ ttl: 60 })).rejects.toThrow(/422.*ttl/);
    expect(await client.threads.count()).toBe(0);
    const thread = await client.threads.create({ metadata: { a: 1 } });
    await expect(client.threads.update(thread.thread_id, { metadata: { a: 2 }, ttl: 60 })).rejects.toThrow(/422.*ttl/);
    expect((await client.threads.get(thread.thread_id)).metadata).toEqual({ a: 1 });
  });
});

describe("graph names", () => {
  // Once taken for served graphs: Object.prototype's names (constructor, toString, …) were read off the
  // graphs record, so a run asked with one failed (graph.streamEvents is not a function), wrote its name as
  // the thread's graph_id, and the thread's state and history answered 500 from then on.
  it("a name of Object.prototype is no graph: the run is answered 404 and the thread is left as it was", async () => {
    const { client } = await openServer("agent-graph-names");
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: human("hi") });
    const before = await client.threads.get(thread.thread_id);
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      await expect(client.runs.wait(thread.thread_id, name, { input: human("x") })).rejects.toThrow(/404/);
    }
    expect(await client.threads.get(thread.thread_id)).toEqual(before);
    expect((await client.threads.getState(thread.thread_id)).values).toEqual(before.values);
    // A thread created for such a "graph" reads as one without a graph yet.
    const other = await client.threads.create({ graphId: "toString" });
    expect((await client.threads.getState(other.thread_id)).values).toEqual({});
    expect(await client.threads.getHistory(other.thread_id)).toEqual([]);
  });
});

/**
 * `threads.prune` (POST /threads/prune) through the SDK's Client: "delete"
 * deletes whole threads (records, checkpoints, runs), "keep_latest" keeps
 * each thread and its latest state (values, a waiting interrupt) and drops
 * its older checkpoints; `pruned_count` counts the threads pruned.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer, statusOf as status } from "../../test/support/agent-server/server.js";
import { human, texts, until, type Chat } from "../../test/support/agent-server/timing.js";

afterEach(closeServers);
const server = () => openServer<Chat>("thread-prune");

describe("threads.prune", () => {
  it('"delete" deletes the threads named, their checkpoints and runs, and counts those that were there', async () => {
    const { client, saver } = await server();
    const a = await client.threads.create();
    const b = await client.threads.create();
    const kept = await client.threads.create();
    await client.runs.wait(a.thread_id, "agent", { input: human("one") });
    await client.runs.wait(b.thread_id, "agent", { input: human("two") });
    await client.runs.wait(kept.thread_id, "agent", { input: human("three") });

    const answer = await client.threads.prune([a.thread_id, b.thread_id, "no-such-thread"]);

    expect(answer).toEqual({ pruned_count: 2 });
    expect(await status(client.threads.get(a.thread_id))).toBe(404);
    expect(await status(client.threads.get(b.thread_id))).toBe(404);
    expect(await saver.getTuple({ configurable: { thread_id: a.thread_id } })).toBeUndefined();
    expect(texts((await client.threads.getState(kept.thread_id)).values)).toEqual(["human: three", "ai: echo three"]);
    expect((await client.threads.search()).map((t) => t.thread_id)).toEqual([kept.thread_id]);
  });

  it('"keep_latest" keeps the thread and its latest state, a waiting interrupt included, and drops the older checkpoints', async () => {
    const { client } = await server();
    const t = await client.threads.create({ metadata: { topic: "x" } });
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    await client.runs.wait(t.thread_id, "agent", { input: human("approve: two") });
    const before = await client.threads.getHistory(t.thread_id, { limit: 100 });
    expect(before.length).toBeGreaterThan(2);

    const answer = await client.threads.prune([t.thread_id], { strategy: "keep_latest" });

    expect(answer).toEqual({ pruned_count: 1 });
    const history = await client.threads.getHistory(t.thread_id, { limit: 100 });
    expect(history).toHaveLength(1);
    const thread = await client.threads.get(t.thread_id);
    expect({ status: thread.status, metadata: thread.metadata?.topic }).toEqual({
      status: "interrupted",
      metadata: "x",
    });
    const state = await client.threads.getState(t.thread_id);
    expect(texts(state.values)).toEqual(["human: one", "ai: echo one", "human: approve: two"]);
    expect(state.tasks[0]?.interrupts).toHaveLength(1);
    // The thread goes on from the state kept: the approval answered.
    const done = await client.runs.wait(t.thread_id, "agent", { command: { resume: "yes" } });
    expect(texts(done)).toEqual(["human: one", "ai: echo one", "human: approve: two", "ai: approved: yes"]);
  });

  it('"keep_latest" leaves a thread a run holds as it is, not counted, and the run ends whole', async () => {
    const { client } = await server();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    const run = await client.runs.create(t.thread_id, "agent", {
      input: human("two"),
      config: { configurable: { delay_ms: 400 } },
    });
    await until(async () => (await client.runs.get(t.thread_id, run.run_id)).status === "running");

    expect(await client.threads.prune([t.thread_id], { strategy: "keep_latest" })).toEqual({ pruned_count: 0 });

    await client.runs.join(t.thread_id, run.run_id);
    expect(texts((await client.threads.getState(t.thread_id)).values)).toEqual([
      "human: one",
      "ai: echo one",
      "human: two",
      "ai: echo two",
    ]);
    expect((await client.threads.getHistory(t.thread_id, { limit: 100 })).length).toBeGreaterThan(2);
  });

  it("refuses what it cannot read (422), before anything is deleted", async () => {
    const { client, server: local } = await server();
    const t = await client.threads.create();
    const post = async (json: unknown) =>
      (
        await local.fetch("http://local.invalid/threads/prune", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(json),
        })
      ).status;
    expect(await post({ thread_ids: t.thread_id })).toBe(422);
    expect(await post({ thread_ids: [t.thread_id, 7] })).toBe(422);
    expect(await post({ thread_ids: [t.thread_id], strategy: "keep_last" })).toBe(422);
    expect(await status(client.threads.get(t.thread_id))).toBe(200);
  });
});

/**
 * `threads.patchState` (`PATCH /threads/:id/state`): the thread's latest
 * checkpoint gets the metadata merged into its own, in place (same id,
 * values, parent, pending writes), as the Agent Server patches it; the
 * refusals (no thread, no checkpoint, a run holding the thread, no metadata)
 * write nothing. Each case answered 404 before the route was served.
 */
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { closeServers, openServer, statusOf as status } from "../../test/support/agent-server/server.js";
import { freshDbName } from "../../test/support/databases.js";

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });

describe("threads.patchState", () => {
  it("merges the metadata into the latest checkpoint's, in place: its id, values, history and waiting interrupt kept", async () => {
    const { client } = await openServer("agent-patch-state");
    const { thread_id } = await client.threads.create();
    await client.runs.wait(thread_id, "agent", { input: human("approve: x") });
    const before = await client.threads.getState(thread_id);
    const historyBefore = await client.threads.getHistory(thread_id);

    await client.threads.patchState(thread_id, { reviewed: "yes", source: "mine" });
    await client.threads.patchState({ configurable: { thread_id } }, { note: 1, reviewed: "twice" });

    const after = await client.threads.getState(thread_id);
    expect(after.checkpoint.checkpoint_id).toBe(before.checkpoint.checkpoint_id);
    expect(after.parent_checkpoint).toEqual(before.parent_checkpoint);
    expect(after.values).toEqual(before.values);
    expect(after.next).toEqual(["approve"]);
    expect(after.tasks.map((task) => task.interrupts)).toEqual(before.tasks.map((task) => task.interrupts));
    expect(after.metadata).toEqual({ ...before.metadata, reviewed: "twice", source: "mine", note: 1 });
    const historyAfter = await client.threads.getHistory(thread_id);
    expect(historyAfter.map((s) => s.checkpoint.checkpoint_id)).toEqual(
      historyBefore.map((s) => s.checkpoint.checkpoint_id),
    );
    expect(historyAfter.slice(1)).toEqual(historyBefore.slice(1));
    // The interrupt still waits and is answered on the patched checkpoint.
    const resumed = await client.runs.wait(thread_id, "agent", { command: { resume: "ok" } });
    expect(JSON.stringify(resumed)).toContain("approved: ok");
    expect((await client.threads.get(thread_id)).status).toBe("idle");
  });

  it("keeps an encrypted saver's checkpoint readable after the saver is opened again", async () => {
    const dbName = freshDbName("agent-patch-state-enc");
    const serde = () =>
      EncryptedSerializer.fromPassphrase("correct horse", {
        salt: "patch-state-salt",
        iterations: 1000,
        insecureTestOnlyWeakKdf: true,
      });
    const saver = new IndexedDBSaver({ dbName, serde: await serde() });
    const { client } = await openServer("agent-patch-state-enc", false, { saver });
    const { thread_id } = await client.threads.create();
    await client.runs.wait(thread_id, "agent", { input: human("one") });
    await client.threads.patchState(thread_id, { label: "kept" });
    await client.runs.wait(thread_id, "agent", { input: human("two") });
    await saver.close();
    const again = new IndexedDBSaver({ dbName, serde: await serde() });
    try {
      const states = [];
      for await (const tuple of again.list({ configurable: { thread_id } })) states.push(tuple);
      expect(states.map((tuple) => (tuple.metadata as Record<string, unknown> | undefined)?.label)).toContain("kept");
      const latest = await again.getTuple({ configurable: { thread_id } });
      expect(JSON.stringify(latest?.checkpoint.channel_values)).toContain("echo two");
    } finally {
      await again.close();
    }
  });

  it("refuses a missing thread (404), a thread with no checkpoint (404), bad metadata (422), writing nothing", async () => {
    const { client, saver, server } = await openServer("agent-patch-state-refused");
    expect(await status(client.threads.patchState(crypto.randomUUID(), { a: 1 }))).toBe(404);
    const empty = await client.threads.create({ graphId: "agent" });
    const refused = await status(client.threads.patchState(empty.thread_id, { a: 1 }));
    expect(refused).toBe(404);
    expect(await saver.getTuple({ configurable: { thread_id: empty.thread_id } })).toBeUndefined();

    const { thread_id } = await client.threads.create();
    await client.runs.wait(thread_id, "agent", { input: human("hi") });
    const before = await client.threads.getState(thread_id);
    const patch = async (body: unknown) => {
      const res = await server.fetch(`http://local.invalid/threads/${thread_id}/state`, {
        method: "PATCH",
        body: JSON.stringify(body),
      });
      return `${res.status} ${await res.text()}`;
    };
    for (const body of [{}, { metadata: null }, { metadata: [1] }, { metadata: "x" }]) {
      const answer = await patch(body);
      expect(answer).toMatch(/^422 /);
      expect(answer).toContain("metadata");
    }
    // What the checkpoint is read by: a step patched gave a waiting interrupt's task another id (lost).
    for (const key of ["step", "parents", "run_id"]) {
      const answer = await patch({ metadata: { [key]: 1, other: 2 } });
      expect(answer).toMatch(/^422 /);
      expect(answer).toContain(`metadata.${key}`);
    }
    expect((await client.threads.getState(thread_id)).metadata).toEqual(before.metadata);
  });

  it("answers 409 while a run holds the thread, as an update of the state does, and patches nothing", async () => {
    const { client } = await openServer("agent-patch-state-busy");
    const { thread_id } = await client.threads.create();
    await client.runs.wait(thread_id, "agent", { input: human("first") });
    const before = await client.threads.getState(thread_id);
    const run = await client.runs.create(thread_id, "agent", {
      input: human("slow"),
      config: { configurable: { delay_ms: 400 } },
    });
    expect(await status(client.threads.patchState(thread_id, { late: true }))).toBe(409);
    await client.runs.join(thread_id, run.run_id);
    const history = await client.threads.getHistory(thread_id, { limit: 20 });
    const patched = history.find((s) => s.checkpoint.checkpoint_id === before.checkpoint.checkpoint_id);
    expect(patched?.metadata).toEqual(before.metadata);
    expect(history.some((s) => s.metadata?.late !== undefined)).toBe(false);
  });
});

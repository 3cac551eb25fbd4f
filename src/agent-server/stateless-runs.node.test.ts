/**
 * Runs without a thread (POST /runs/stream, /runs/wait, /runs: the SDK's
 * `runs.stream(null, ...)` and the like), as the Agent Server serves them: on
 * a thread of their own, deleted once the run has ended (`on_completion`
 * "delete", the default for them) or kept ("keep").
 */
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it, vi } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { FailingDeleteSaver, human } from "../../test/support/agent-server/timing.js";
import { freshDbName } from "../../test/support/databases.js";

afterEach(closeServers);

type Chat = { messages: { type: string; content: string }[] };

// The Agent Server's values ("delete", its default for a run without a thread, and "keep"); the SDK's
// OnCompletionBehavior types them "complete" | "continue" (served too), though it sends the field as given.
const keep = "keep" as never;

const texts = (values: unknown) => (values as Chat).messages.map((m) => `${m.type}: ${m.content}`);

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const parts: T[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

describe("runs without a thread", () => {
  // Once each answered 404 (no such route).
  it("a stream runs on a thread of its own, deleted with its checkpoints once the run has ended", async () => {
    const { client, saver } = await openServer("stateless");
    let created: { run_id: string; thread_id?: string } | undefined;
    const parts = await collect(
      client.runs.stream(null, "agent", { input: human("hi"), onRunCreated: (run) => (created = run) }),
    );
    const threadId = created?.thread_id;
    expect(threadId).toEqual(expect.any(String));
    const values = parts.filter((part) => part.event === "values").at(-1)!.data;
    expect(texts(values)).toEqual(["human: hi", "ai: echo hi"]);
    expect(parts.at(-1)).toMatchObject({ event: "end", data: { run_id: created!.run_id, status: "success" } });
    // Deleted before the stream's end was sent: nothing of it is left.
    expect(await client.threads.search()).toEqual([]);
    await expect(client.threads.get(threadId!)).rejects.toThrow(/404/);
    expect(await saver.getTuple({ configurable: { thread_id: threadId! } })).toBeUndefined();
  });

  it('a wait answers the run\'s values; a run created with on_completion "keep" keeps its thread', async () => {
    const { client } = await openServer("stateless");
    const deleted = await client.runs.wait(null, "agent", { input: human("gone") });
    expect(texts(deleted)).toEqual(["human: gone", "ai: echo gone"]);
    expect(await client.threads.search()).toEqual([]);

    const run = await client.runs.create(null, "agent", { input: human("kept"), onCompletion: keep });
    expect(texts(await client.runs.join(run.thread_id, run.run_id))).toEqual(["human: kept", "ai: echo kept"]);
    const thread = await client.threads.get(run.thread_id);
    expect(texts(thread.values)).toEqual(["human: kept", "ai: echo kept"]);
    expect(thread).toMatchObject({ status: "idle", metadata: { graph_id: "agent" } });
    expect((await client.runs.get(run.thread_id, run.run_id)).status).toBe("success");
  });

  it("a run created in the background is answered at once; its thread goes once it has ended", async () => {
    const { client } = await openServer("stateless");
    const run = await client.runs.create(null, "agent", {
      input: human("later"),
      config: { configurable: { delay_ms: 200 } },
    });
    expect(run.assistant_id).toBe("agent");
    expect(["pending", "running"]).toContain(run.status);
    expect((await client.threads.get(run.thread_id)).status).toBe("busy");
    await vi.waitFor(async () => expect(await client.threads.search()).toEqual([]), { timeout: 5_000 });
  });

  it("refuses an on_completion it does not know, writing nothing", async () => {
    const { client } = await openServer("stateless");
    await expect(
      client.runs.create(null, "agent", { input: human("x"), onCompletion: "forget" as never }),
    ).rejects.toThrow(/422/);
    await expect(client.runs.wait(null, "nobody", { input: human("x") })).rejects.toThrow(/404/);
    expect(await client.threads.search()).toEqual([]);
  });

  // Once answered 422: the SDK's OnCompletionBehavior is "complete" | "continue", which it sends as given.
  it('takes the SDK\'s on_completion values: "continue" keeps the thread, "complete" deletes it', async () => {
    const { client } = await openServer("stateless-sdk-values");
    const kept = await client.runs.create(null, "agent", { input: human("kept"), onCompletion: "continue" });
    await client.runs.join(kept.thread_id, kept.run_id);
    expect(texts((await client.threads.get(kept.thread_id)).values)).toEqual(["human: kept", "ai: echo kept"]);
    const gone = await client.runs.create(null, "agent", { input: human("gone"), onCompletion: "complete" });
    expect(texts(await client.runs.join(gone.thread_id, gone.run_id))).toEqual(["human: gone", "ai: echo gone"]);
    await vi.waitFor(async () =>
      expect((await client.threads.search()).map((thread) => thread.thread_id)).toEqual([kept.thread_id]),
    );
  });
  // Once 404 "No graph named undefined": the Agent Server validates the body first, answering 422.
  it("a run request without an assistant_id is answered 422 on every route that starts a run, writing nothing", async () => {
    const { client, server } = await openServer("stateless-no-assistant");
    const thread = await client.threads.create();
    const paths = ["/runs/stream", "/runs/wait", "/runs"].flatMap((path) => [
      path,
      `/threads/${thread.thread_id}${path}`,
    ]);
    for (const path of paths) {
      for (const payload of ["", "{}", JSON.stringify({ input: human("x") })]) {
        const answer = await server.fetch(`http://local.invalid${path}`, { method: "POST", body: payload });
        expect([path, payload, answer.status]).toEqual([path, payload, 422]);
        expect(await answer.json()).toMatchObject({ message: expect.stringMatching(/assistant_id/) });
      }
    }
    expect((await client.threads.search()).map((t) => t.thread_id)).toEqual([thread.thread_id]);
    expect(await client.runs.list(thread.thread_id)).toEqual([]);
  });
  // Once a join's end came before the run's thread was deleted (15-150 ms): a list right after still had it.
  it("a join of a run whose thread goes answers once the thread is gone", async () => {
    const { client } = await openServer("stateless-join");
    const slow = { configurable: { delay_ms: 200 } };
    const streamed = await client.runs.create(null, "agent", { input: human("a"), config: slow });
    const joined = await collect(client.runs.joinStream(streamed.thread_id, streamed.run_id));
    expect(joined.map((part) => part.event)).toEqual(["metadata", "values", "values", "end"]);
    expect(await client.threads.search()).toEqual([]);

    const waited = await client.runs.create(null, "agent", { input: human("b"), config: slow });
    expect(texts(await client.runs.join(waited.thread_id, waited.run_id))).toEqual(["human: b", "ai: echo b"]);
    expect(await client.threads.search()).toEqual([]);
  });

  // Once told the run's end (the runner's "finished" on the run channel) before the first tab deleted the thread.
  it("a join from another tab answers once the thread is gone too", async () => {
    const first = await openServer("stateless-join-tab");
    const second = await openServer("stateless-join-tab", false, { dbName: first.saver.dbName });
    const run = await first.client.runs.create(null, "agent", {
      input: human("c"),
      config: { configurable: { delay_ms: 300 } },
    });
    const joined = await collect(second.client.runs.joinStream(run.thread_id, run.run_id));
    expect(joined.map((part) => part.event)).toEqual(["metadata", "values", "values", "end"]);
    expect(await second.client.threads.search()).toEqual([]);
  });

  // Once its stream ended with { status: "interrupted" } (its record read before the rollback deleted it),
  // where a thread's run rolled back ends with null: its record is gone.
  it("a run rolled back ends its stream with a null end, as a thread's run rolled back does", async () => {
    const { client } = await openServer("stateless-rollback");
    const thread = await client.threads.create();
    const ends: { event: string; data: unknown }[] = [];
    for (const threadId of [null, thread.thread_id]) {
      let created: { run_id: string; thread_id?: string } | undefined;
      const payload = {
        input: human("x"),
        config: { configurable: { delay_ms: 1_000 } },
        onRunCreated: (run: { run_id: string; thread_id?: string }) => void (created = run),
      };
      // The SDK's overloads: a thread-less run's payload has no multitaskStrategy, a thread's may.
      const stream =
        threadId === null ? client.runs.stream(null, "agent", payload) : client.runs.stream(threadId, "agent", payload);
      const parts = [];
      for await (const part of stream) {
        parts.push(part);
        if (part.event === "metadata")
          await client.runs.cancel(created!.thread_id!, created!.run_id, false, "rollback");
      }
      ends.push(parts.at(-1)!);
      await expect(client.runs.get(created!.thread_id!, created!.run_id)).rejects.toThrow(/404/);
    }
    expect(ends.map(({ event, data }) => ({ event, data }))).toEqual([
      { event: "end", data: null },
      { event: "end", data: null },
    ]);
    expect((await client.threads.search()).map((t) => t.thread_id)).toEqual([thread.thread_id]);
  });

  // Once the failed delete was dropped (.catch(() => undefined)): the stream ended "success" and the
  // thread stayed for good, its checkpoints with it.
  it("a run whose thread cannot be deleted says so before its end, and the thread is deleted again later", async () => {
    const saver = new FailingDeleteSaver({ dbName: freshDbName("stateless-delete-fails") });
    const { client } = await openServer("stateless-delete-fails", false, { saver });
    let created: { run_id: string; thread_id?: string } | undefined;
    const parts = await collect(
      client.runs.stream(null, "agent", { input: human("hi"), onRunCreated: (run) => (created = run) }),
    );
    expect(parts.slice(-2)).toMatchObject([
      { event: "error", data: expect.objectContaining({ message: expect.stringMatching(/refused the delete/) }) },
      { event: "end", data: { run_id: created!.run_id, status: "error" } },
    ]);
    const threadId = created!.thread_id!;
    expect((await client.runs.get(threadId, created!.run_id)).status).toBe("error");
    await vi.waitFor(async () => expect(await client.threads.search()).toEqual([]), { timeout: 5_000 });
    expect(await saver.getTuple({ configurable: { thread_id: threadId } })).toBeUndefined();
  });

  // Once deleted again a second later whatever became of it: a thread the user deleted and created
  // again under the same id in between lost its checkpoints to the retry.
  it("a leftover thread the user deleted, then created again under its id, is not deleted again", async () => {
    const saver = new FailingDeleteSaver({ dbName: freshDbName("stateless-delete-recreated") });
    const { client } = await openServer("stateless-delete-recreated", false, { saver });
    let created: { run_id: string; thread_id?: string } | undefined;
    await collect(client.runs.stream(null, "agent", { input: human("hi"), onRunCreated: (run) => (created = run) }));
    const threadId = created!.thread_id!;
    await client.threads.delete(threadId);
    await client.threads.create({ threadId });
    await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: "" } },
      { ...emptyCheckpoint(), id: uuid6(0) },
      { source: "input", step: -1, parents: {} },
      {},
    );
    // Past the first retry (1 s): the thread and its checkpoint are the user's.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await client.threads.search()).map((t) => t.thread_id)).toEqual([threadId]);
    expect(await saver.getTuple({ configurable: { thread_id: threadId } })).toBeDefined();
  });

  // Once answered {}: with no values event to answer, the wait read the state of a thread already deleted.
  it("a wait whose run streamed no values answers the run's final state, read before its thread went", async () => {
    const { client, server } = await openServer("stateless-wait-state");
    const payload = { assistant_id: "agent", input: human("quiet"), stream_mode: ["updates"] };
    const answer = await server.fetch("http://local.invalid/runs/wait", {
      method: "POST",
      body: JSON.stringify(payload),
    });
    expect(texts(await answer.json())).toEqual(["human: quiet", "ai: echo quiet"]);
    expect(await client.threads.search()).toEqual([]);
  });
});

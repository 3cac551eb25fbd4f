/**
 * The local agent server where runs meet the thread's life, as the Agent
 * Server behaves (helper-46's findings, each failing before its fix): a
 * cancel after the end, two tabs' `reject` runs at once, a client leaving
 * with `on_disconnect: "cancel"`, state updates and deletes under a run, the
 * thread status while runs follow each other. What the SDK and `useStream`
 * send is in sdk-requests.node.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Client } from "@langchain/langgraph-sdk";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { human, sleep, texts, until, type Chat } from "../../test/support/agent-server/timing.js";
import { heldRun } from "../../test/support/agent-server/held-run.js";

const URL_BASE = "http://local.invalid";
const setup = () => openServer<Chat>("run-lifecycle", true);
afterEach(closeServers);

/** Reads `stream` until its metadata event, then aborts the request (the SDK then ends the stream, or throws). */
async function leaveAtMetadata(stream: AsyncIterable<{ event: string }>, controller: AbortController): Promise<void> {
  try {
    for await (const part of stream) if (part.event === "metadata") controller.abort();
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  }
  expect(controller.signal.aborted).toBe(true);
}

/** A run of 400 ms queued on the thread, for a client to join and leave. */
function joinedRun(client: Client, threadId: string) {
  return client.runs.create(threadId, "agent", {
    input: human("joined"),
    config: { configurable: { delay_ms: 400 } },
    multitaskStrategy: "enqueue",
  });
}
describe("cancel", () => {
  it("of a run that has ended changes nothing, with rollback too", async () => {
    const { client, server } = await setup();
    const t = await client.threads.create();
    const run = await client.runs.create(t.thread_id, "agent", { input: human("keep me") });
    await client.runs.join(t.thread_id, run.run_id);
    await client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
    expect(texts((await client.threads.getState(t.thread_id)).values)).toEqual(["human: keep me", "ai: echo keep me"]);
    expect((await client.runs.get(t.thread_id, run.run_id)).status).toBe("success");
    // Answered as the Agent Server answers: 204 with wait, 202 without.
    const cancel = (wait: string) =>
      server.fetch(`${URL_BASE}/threads/${t.thread_id}/runs/${run.run_id}/cancel?wait=${wait}`, { method: "POST" });
    expect([(await cancel("true")).status, (await cancel("false")).status]).toEqual([204, 202]);
  });

  it("on_disconnect 'cancel' (useStream's Stop): a client leaving the stream stops the run", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const controller = new AbortController();
    let runId = "";
    const stream = client.runs.stream(t.thread_id, "agent", {
      input: human("long"),
      config: { configurable: { delay_ms: 3_000 } },
      onDisconnect: "cancel",
      signal: controller.signal,
      onRunCreated: (meta) => void (runId = meta.run_id),
    });
    await leaveAtMetadata(stream, controller);
    await until(async () => (await client.runs.get(t.thread_id, runId)).status === "interrupted");
    // The next message is not refused as "busy".
    expect(texts(await client.runs.wait(t.thread_id, "agent", { input: human("next") }))).toContain("ai: echo next");
  });

  it("a run stopped mid-node (useStream's Stop: runs.cancel) leaves its thread idle, not interrupted", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const run = await client.runs.create(t.thread_id, "agent", {
      input: human("stop me"),
      config: { configurable: { delay_ms: 3_000 } },
    });
    await until(async () => (await client.runs.get(t.thread_id, run.run_id)).status === "running");
    await client.runs.cancel(t.thread_id, run.run_id, true);
    // The last checkpoint is left with a task to run (`next`), but nothing waits for a human: the
    // Agent Server sets the thread idle after a cancel, and a list of the threads that wait for an
    // answer (status "interrupted") must not show it.
    expect((await client.threads.getState(t.thread_id)).next).not.toEqual([]);
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");
    expect(await client.threads.search({ status: "interrupted" })).toEqual([]);
  });

  it("a run rolled back onto a thread paused for an approval leaves it interrupted: the approval still waits", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("approve: keep?") });
    const run = await client.runs.create(t.thread_id, "agent", {
      input: human("never mind"),
      config: { configurable: { delay_ms: 3_000 } },
    });
    await until(async () => (await client.runs.get(t.thread_id, run.run_id)).status === "running");
    await client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
    expect((await client.threads.getState(t.thread_id)).tasks[0]?.interrupts).toHaveLength(1);
    expect((await client.threads.get(t.thread_id)).status).toBe("interrupted");
  });

  it("joinStream with cancelOnDisconnect: the joining client leaving stops the run; without it, it goes on", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const leave = async (cancelOnDisconnect: boolean) => {
      const run = await joinedRun(client, t.thread_id);
      const controller = new AbortController();
      const stream = client.runs.joinStream(t.thread_id, run.run_id, { signal: controller.signal, cancelOnDisconnect });
      await leaveAtMetadata(stream, controller);
      await client.runs.join(t.thread_id, run.run_id);
      return (await client.runs.get(t.thread_id, run.run_id)).status;
    };
    // As the Agent Server serves `cancel_on_disconnect` on a run's stream.
    expect(await leave(true)).toBe("interrupted");
    expect(await leave(false)).toBe("success");
  });

  it("joinStream's cancel_on_disconnect is read as the Agent Server reads it: 'True' and 'yes' stop the run too", async () => {
    const { client, server } = await setup();
    const t = await client.threads.create();
    for (const value of ["True", "yes"]) {
      const run = await client.runs.create(t.thread_id, "agent", {
        input: human("joined"),
        config: { configurable: { delay_ms: 3_000 } },
        multitaskStrategy: "enqueue",
      });
      const controller = new AbortController();
      const url = `${URL_BASE}/threads/${t.thread_id}/runs/${run.run_id}/stream?cancel_on_disconnect=${value}`;
      const response = await server.fetch(url, { signal: controller.signal });
      await response.body!.getReader().read();
      controller.abort();
      await until(async () => (await client.runs.get(t.thread_id, run.run_id)).status === "interrupted", 1_500);
    }
  });

  // Once ignored on join: the SDK sends it (runs.join's cancelOnDisconnect), and the run went on.
  it("runs.join with cancelOnDisconnect: the joining client leaving stops the run; without it, it goes on", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const leave = async (cancelOnDisconnect: boolean) => {
      const run = await joinedRun(client, t.thread_id);
      const controller = new AbortController();
      const joined = client.runs.join(t.thread_id, run.run_id, { signal: controller.signal, cancelOnDisconnect });
      await until(async () => (await client.runs.get(t.thread_id, run.run_id)).status === "running");
      controller.abort();
      await expect(joined).rejects.toThrow();
      await client.runs.join(t.thread_id, run.run_id);
      return (await client.runs.get(t.thread_id, run.run_id)).status;
    };
    expect(await leave(true)).toBe("interrupted");
    expect(await leave(false)).toBe("success");
  });

  it("without on_disconnect, a client leaving the stream leaves the run going", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const controller = new AbortController();
    let runId = "";
    const stream = client.runs.stream(t.thread_id, "agent", {
      input: human("goes on"),
      config: { configurable: { delay_ms: 200 } },
      signal: controller.signal,
      onRunCreated: (meta) => void (runId = meta.run_id),
    });
    await leaveAtMetadata(stream, controller);
    await client.runs.join(t.thread_id, runId);
    expect((await client.runs.get(t.thread_id, runId)).status).toBe("success");
  });
});

describe("a busy thread", () => {
  it("two reject runs at once: one answered 409 and never recorded, the thread busy with the other", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    const start = () =>
      client.runs.create(t.thread_id, "agent", { input: human("x"), config: { configurable: { delay_ms: 300 } } }).then(
        (run) => run.run_id,
        (error: Error) => error,
      );
    const outcomes = await Promise.all([start(), start()]);
    const refused = outcomes.filter((o) => o instanceof Error);
    expect(refused.map((error) => String(error))).toEqual([expect.stringMatching(/409/)]);
    expect((await client.threads.get(t.thread_id)).status).toBe("busy");
    const [accepted] = outcomes.filter((o): o is string => typeof o === "string");
    await client.runs.join(t.thread_id, accepted!);
    expect((await client.runs.list(t.thread_id)).map((run) => run.status)).toEqual(["success"]);
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");
  });

  it("an update of its state while a run goes is refused (409) and changes nothing", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    const run = await client.runs.create(t.thread_id, "agent", {
      input: human("two"),
      config: { configurable: { delay_ms: 300 } },
    });
    await until(async () => (await client.runs.get(t.thread_id, run.run_id)).status === "running");
    await expect(
      client.threads.updateState(t.thread_id, { values: human("from another tab"), asNode: "agent" }),
    ).rejects.toThrow(/409/);
    await client.runs.join(t.thread_id, run.run_id);
    const after = ["human: one", "ai: echo one", "human: two", "ai: echo two"];
    expect(texts((await client.threads.getState(t.thread_id)).values)).toEqual(after);
    await client.threads.updateState(t.thread_id, { values: human("now"), asNode: "agent" });
    expect(texts((await client.threads.getState(t.thread_id)).values)).toEqual([...after, "human: now"]);
  });

  it("deleted while its run goes, whenever the delete comes, leaves no checkpoint and no run", async () => {
    const { client, saver } = await setup();
    // The saver's maintenance code loaded already (a delete or rollback elsewhere in the app does that).
    await saver.deleteThread("warm-up");
    for (const delay of [0, 20, 120]) {
      const t = await client.threads.create();
      await client.runs.create(t.thread_id, "agent", {
        input: human("secret"),
        config: { configurable: { delay_ms: 150 } },
      });
      await sleep(delay);
      await client.threads.delete(t.thread_id);
      await sleep(250);
      expect(await saver.getTuple({ configurable: { thread_id: t.thread_id } })).toBeUndefined();
      await client.threads.create({ threadId: t.thread_id, graphId: "agent" });
      expect(texts((await client.threads.getState(t.thread_id)).values)).toEqual([]);
      expect(await client.runs.list(t.thread_id)).toEqual([]);
    }
  });
});

describe("thread status", () => {
  it("stays busy while an enqueued run follows, or while a run goes after a pending one was cancelled", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    // Each run goes until the test lets it go: timed ones (150 and 300 ms) ended early on a loaded machine,
    // b before the checks below (then idle, as it should be), a before b was enqueued behind it.
    const { run: a, release: releaseA } = await heldRun(client, t.thread_id, "a");
    const { run: b, release: releaseB } = await heldRun(client, t.thread_id, "b", { multitaskStrategy: "enqueue" });
    releaseA();
    // a's end wrote the thread's status before its join answers: what follows sees every write of it.
    await client.runs.join(t.thread_id, a.run_id);
    await until(async () => (await client.runs.get(t.thread_id, b.run_id)).status === "running");
    expect((await client.threads.get(t.thread_id)).status).toBe("busy");
    // A third, enqueued and cancelled while pending: b still runs, the thread stays busy.
    const c = await client.runs.create(t.thread_id, "agent", { input: human("c"), multitaskStrategy: "enqueue" });
    await client.runs.cancel(t.thread_id, c.run_id, true);
    expect((await client.threads.get(t.thread_id)).status).toBe("busy");
    releaseB();
    await client.runs.join(t.thread_id, b.run_id);
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");
  });

  it("a run stopped on a thread whose state cannot be read does not leave it busy", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    // A message type LangChain cannot coerce: the input stays in the pending writes, and getState throws.
    await client.runs.wait(t.thread_id, "agent", {
      input: { messages: [{ type: "humann", content: "typo" }] },
      raiseError: false,
    });
    await expect(client.threads.getState(t.thread_id)).rejects.toThrow();
    // The next run is rolled back: its checkpoints go, and the thread's state is the unreadable one again.
    const run = await client.runs.create(t.thread_id, "agent", {
      input: human("x"),
      config: { configurable: { delay_ms: 3_000 } },
    });
    await until(async () => (await client.runs.get(t.thread_id, run.run_id)).status === "running");
    await client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
    await expect(client.runs.get(t.thread_id, run.run_id)).rejects.toThrow(/404/);
    await expect(client.threads.getState(t.thread_id)).rejects.toThrow();
    // As it was before the rolled-back run: the failed run's state is back.
    expect((await client.threads.get(t.thread_id)).status).toBe("error");
  });

  it("a run rolled back onto a thread paused at a static breakpoint leaves it interrupted, as it found it", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("x"), interruptBefore: ["agent"] });
    expect((await client.threads.get(t.thread_id)).status).toBe("interrupted");
    const run = await client.runs.create(t.thread_id, "agent", {
      input: human("never mind"),
      config: { configurable: { delay_ms: 3_000 } },
    });
    await until(async () => (await client.runs.get(t.thread_id, run.run_id)).status === "running");
    await client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
    // No task holds an interrupt, but the thread still waits at the breakpoint (it was set idle).
    expect((await client.threads.getState(t.thread_id)).next).toEqual(["agent"]);
    expect((await client.threads.get(t.thread_id)).status).toBe("interrupted");
  });

  it("is interrupted at a static breakpoint (interrupt_before)", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("x"), interruptBefore: ["agent"] });
    expect((await client.threads.getState(t.thread_id)).next).toEqual(["agent"]);
    expect((await client.threads.get(t.thread_id)).status).toBe("interrupted");
  });

  // Once left as it was: a thread paused at a breakpoint and answered by an update (as_node: the node
  // skipped) was listed "interrupted" until its next run, with nothing left to run.
  it("follows the state after an update: idle once nothing is left to run, interrupted while a node waits", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("x"), interruptBefore: ["agent"] });
    await client.threads.updateState(t.thread_id, {
      values: { messages: [{ type: "ai", content: "by hand" }] },
      asNode: "agent",
    });
    expect([(await client.threads.getState(t.thread_id)).next, (await client.threads.get(t.thread_id)).status]).toEqual(
      [[], "idle"],
    );
    await client.threads.updateState(t.thread_id, { values: human("again"), asNode: "__start__" });
    expect([(await client.threads.getState(t.thread_id)).next, (await client.threads.get(t.thread_id)).status]).toEqual(
      [["agent"], "interrupted"],
    );
  });
});

/**
 * `runs.delete` (DELETE /threads/:thread_id/runs/:run_id), as LangGraph's
 * Agent Server (its `Runs.delete`): a finished run's record goes, with its
 * checkpoints; a run still going is refused.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { heldRun } from "../../test/support/agent-server/held-run.js";
import { human, texts, until, type Chat } from "../../test/support/agent-server/timing.js";

const setup = () => openServer<Chat>("run-delete", true);
afterEach(closeServers);

describe("runs.delete", () => {
  // Once answered 404 (the route was not served): the SDK's runs.delete failed.
  it("deletes a finished run: its record and its checkpoints go, the thread's other runs stay", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    await client.runs.wait(t.thread_id, "agent", { input: human("two") });
    const [second, first] = await client.runs.list(t.thread_id);
    await client.runs.delete(t.thread_id, second!.run_id);
    expect((await client.runs.list(t.thread_id)).map((run) => run.run_id)).toEqual([first!.run_id]);
    await expect(client.runs.get(t.thread_id, second!.run_id)).rejects.toThrow(/404/);
    expect(texts((await client.threads.getState(t.thread_id)).values)).toEqual(["human: one", "ai: echo one"]);
    const history = await client.threads.getHistory(t.thread_id, { limit: 20 });
    expect(history.map((state) => state.metadata?.run_id)).toEqual([first!.run_id, first!.run_id, first!.run_id]);
    // Not there (any more, or on another thread): 404, as the Agent Server answers.
    await expect(client.runs.delete(t.thread_id, second!.run_id)).rejects.toThrow(/404/);
    const other = await client.threads.create();
    await expect(client.runs.delete(other.thread_id, first!.run_id)).rejects.toThrow(/404/);
    expect(await client.runs.list(t.thread_id)).toHaveLength(1);
  });

  it("refuses a run still going (409), which goes on; once it has ended it is deleted", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    // Going until the test lets it go: a timed run (300 ms) could end before the delete on a loaded machine.
    const { run, release } = await heldRun(client, t.thread_id, "slow");
    await expect(client.runs.delete(t.thread_id, run.run_id)).rejects.toThrow(/409/);
    release();
    expect(texts(await client.runs.join(t.thread_id, run.run_id))).toEqual(["human: slow", "ai: echo slow"]);
    expect((await client.runs.get(t.thread_id, run.run_id)).status).toBe("success");
    await client.runs.delete(t.thread_id, run.run_id);
    expect(await client.runs.list(t.thread_id)).toEqual([]);
  });

  it("of the run that paused the thread: the thread is idle again, its state before the run", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    await client.runs.wait(t.thread_id, "agent", { input: human("approve: send?") });
    expect((await client.threads.get(t.thread_id)).status).toBe("interrupted");
    const [paused] = await client.runs.list(t.thread_id);
    await client.runs.delete(t.thread_id, paused!.run_id);
    const state = await client.threads.getState(t.thread_id);
    expect([texts(state.values), state.next]).toEqual([["human: one", "ai: echo one"], []]);
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");
  });

  // Once 'interrupted' with nothing waiting: the state left has a task to run (the stopped run's), and any
  // task left was taken for a pause, where a stopped run's thread is idle (thread-status.ts).
  it("back onto a run that was stopped (useStream's Stop): idle, as that run left it; a breakpoint stays a pause", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    // Stopped in its node, which it leaves only when stopped. A fixed 50 ms wait failed under load: the
    // stop came before the node's checkpoint, leaving only the input's (state [], next ["__start__"]).
    const { run: stopped } = await heldRun(client, t.thread_id, "one", { at: "node" });
    await client.runs.cancel(t.thread_id, stopped.run_id, true);
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");
    await client.runs.wait(t.thread_id, "agent", { input: human("two") });
    const [second] = await client.runs.list(t.thread_id);
    await client.runs.delete(t.thread_id, second!.run_id);
    const state = await client.threads.getState(t.thread_id);
    expect([texts(state.values), state.next]).toEqual([["human: one"], ["agent"]]);
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");

    const paused = await client.threads.create();
    await client.runs.wait(paused.thread_id, "agent", { input: human("x"), interruptBefore: ["agent"] });
    await client.runs.wait(paused.thread_id, "agent", { input: human("y") });
    const [next] = await client.runs.list(paused.thread_id);
    await client.runs.delete(paused.thread_id, next!.run_id);
    expect((await client.threads.getState(paused.thread_id)).next).toEqual(["agent"]);
    expect((await client.threads.get(paused.thread_id)).status).toBe("interrupted");
  });
});

describe("runs.cancel with action rollback", () => {
  // As the Agent Server's worker (a run rolled back is deleted, `Runs.delete`), and its cancel of a pending
  // run with rollback (deleted at once). Before, the record stayed, status `interrupted`, its events kept.
  it("deletes the run, running or waiting for the thread, with its checkpoints; the thread's other runs stay", async () => {
    const { client } = await setup();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("kept") });
    const running = await client.runs.create(t.thread_id, "agent", {
      input: human("undo me"),
      config: { configurable: { delay_ms: 3_000 } },
    });
    const waiting = await client.runs.create(t.thread_id, "agent", {
      input: human("never run"),
      multitaskStrategy: "enqueue",
    });
    await until(async () => (await client.runs.get(t.thread_id, running.run_id)).status === "running");
    await client.runs.cancel(t.thread_id, waiting.run_id, true, "rollback");
    await client.runs.cancel(t.thread_id, running.run_id, true, "rollback");
    for (const run of [running, waiting]) {
      await expect(client.runs.get(t.thread_id, run.run_id)).rejects.toThrow(/404/);
      await expect(client.runs.join(t.thread_id, run.run_id)).rejects.toThrow(/404/);
    }
    expect((await client.runs.list(t.thread_id)).map((run) => run.status)).toEqual(["success"]);
    expect(texts((await client.threads.getState(t.thread_id)).values)).toEqual(["human: kept", "ai: echo kept"]);
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");
  });
});

/**
 * The thread passing from one run to the next at a run's end (helper-54's
 * attack on run-races.node.test.ts's fixes, each failing before its fix): a
 * rollback with a run enqueued behind it, here and across tabs, and a
 * rollback cancel from another tab answered only once done; a delete racing a
 * re-create of the thread's id; a run starting while the last one's status is
 * written. Slow stores and savers widen windows that exist without them.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer, type ServerPlace } from "../../test/support/agent-server/server.js";
import { freshDbName } from "../../test/support/databases.js";
import { heldRun } from "../../test/support/agent-server/held-run.js";
import { defaultLockManager, runLockName } from "../runs/locks.js";

import {
  SlowSaver,
  SlowThreadStore,
  atNode,
  human,
  texts,
  until,
  type Chat,
} from "../../test/support/agent-server/timing.js";

afterEach(closeServers);
const server = (place: ServerPlace = {}) => openServer<Chat>("run-handover", false, place);

describe("the thread between runs", () => {
  it("a rollback cancel sent from another tab with wait answers once the rollback is done", async () => {
    const dbName = freshDbName("run-handover");
    const saverA = new SlowSaver({ dbName });
    const a = await server({ saver: saverA, dbName });
    const b = await server({ dbName });
    const t = await a.client.threads.create();
    // In its node until stopped (its input written, so a rollback has something to undo), where a
    // fixed 200 ms wait after "running" guessed it.
    const { run } = await heldRun(a.client, t.thread_id, "undo me", { at: "node", watcher: b.client });
    saverA.rollbackMs = 300; // a busy IndexedDB
    await b.client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
    const right = { values: texts((await b.client.threads.getState(t.thread_id)).values) };
    // Once no slowed rollback is under way (a fixed 600 ms wait counted on its 300 ms): a cancel answered
    // before its rollback shows the input `right`, and none `later`.
    const rollbacks = saverA.slowed.rollback;
    await until(async () => rollbacks.done === rollbacks.begun);
    const later = { values: texts((await b.client.threads.getState(t.thread_id)).values) };
    expect({ right, later }).toEqual({ right: { values: [] }, later: { values: [] } });
  });

  it("a delete racing a re-create of the same thread id (if_not_exists create) leaves the new thread whole", async () => {
    const { client } = await server();
    const threadId = crypto.randomUUID();
    await client.threads.create({ threadId });
    await client.runs.create(threadId, "agent", { input: human("old"), config: { configurable: { delay_ms: 1_500 } } });
    await until(async () => (await client.threads.get(threadId)).status === "busy");
    const deleting = client.threads.delete(threadId);
    await until(
      async () =>
        (await client.threads.get(threadId).then(
          () => 200,
          () => 404,
        )) === 404,
    );
    // The thread is gone for the client: it starts over under the same id.
    const answer = await client.runs.wait(threadId, "agent", {
      input: human("new"),
      ifNotExists: "create",
      multitaskStrategy: "enqueue",
    });
    await deleting;
    const left = {
      answer: texts(answer),
      thread: await client.threads.get(threadId).then(
        () => 200,
        () => 404,
      ),
      state: texts((await client.threads.getState(threadId)).values),
      runs: (await client.runs.list(threadId)).map((r) => r.status),
    };
    expect(left).toEqual({
      answer: ["human: new", "ai: echo new"],
      thread: 200,
      state: ["human: new", "ai: echo new"],
      runs: ["success"],
    });
  });

  it("a run started while the previous run's end is written leaves the thread busy", async () => {
    const dbName = freshDbName("run-handover");
    const threads = new SlowThreadStore({ dbName: `${dbName}-agent-threads` });
    threads.statusOf = (status) => status !== "busy";
    const { client } = await server({ threads, dbName });
    const t = await client.threads.create();
    threads.statusMs = 300;
    const a = await client.runs.create(t.thread_id, "agent", { input: human("a") });
    await until(async () => (await client.runs.get(t.thread_id, a.run_id)).status === "success");
    // Inside a's slowed end write (a fixed 30 ms wait guessed when it began).
    await until(async () => threads.slowed.status.begun === 1);
    // Still inside it: a wait that returned after the write landed would prove nothing below.
    expect(threads.slowed.status.done).toBe(0);
    // b goes until the test lets it go: a timed one (1.5 s) ended before the checks on a loaded machine.
    const { run: b, release } = await heldRun(client, t.thread_id, "b");
    // a's end written (its join answers after it), where a fixed 600 ms wait counted on the 300 ms write.
    await client.runs.join(t.thread_id, a.run_id);
    await until(async () => (await client.runs.get(t.thread_id, b.run_id)).status === "running");
    const bStatus = (await client.runs.get(t.thread_id, b.run_id)).status;
    const threadStatus = (await client.threads.get(t.thread_id)).status;
    expect({ bStatus, threadStatus }).toEqual({ bStatus: "running", threadStatus: "busy" });
    release();
    await client.runs.join(t.thread_id, b.run_id);
  });

  it("a rollback cancel of a run with a run enqueued behind it: the next run starts without the rolled-back input", async () => {
    const { client } = await server();
    const t = await client.threads.create();
    // a in its node until stopped, its input written (a fixed 200 ms wait after "running" guessed it).
    const { run: a } = await heldRun(client, t.thread_id, "a");
    const b = await client.runs.create(t.thread_id, "agent", { input: human("b"), multitaskStrategy: "enqueue" });
    await atNode(client, t.thread_id, a.run_id);
    await client.runs.cancel(t.thread_id, a.run_id, true, "rollback");
    const answer = texts(await client.runs.join(t.thread_id, b.run_id));
    const state = texts((await client.threads.getState(t.thread_id)).values);
    expect({ answer, state }).toEqual({ answer: ["human: b", "ai: echo b"], state: ["human: b", "ai: echo b"] });
  });

  it("the same across two tabs (the run enqueued on the other server)", async () => {
    const a = await server();
    const b = await server({ dbName: a.dbName });
    const t = await a.client.threads.create();
    const { run: ra } = await heldRun(a.client, t.thread_id, "a", { at: "node" });
    const rb = await b.client.runs.create(t.thread_id, "agent", { input: human("b"), multitaskStrategy: "enqueue" });
    // rb waiting for the thread's lock on b (a fixed 200 ms wait guessed when it asked).
    const lock = runLockName(a.dbName, t.thread_id);
    await until(async () => (await defaultLockManager().query()).pending.includes(lock));
    await b.client.runs.cancel(t.thread_id, ra.run_id, true, "rollback");
    await b.client.runs.join(t.thread_id, rb.run_id);
    // rb's end writes the thread's status on b: a fixed 200 ms wait guessed when a read would see it.
    await until(async () => (await a.client.threads.get(t.thread_id)).status !== "busy");
    const state = texts((await a.client.threads.getState(t.thread_id)).values);
    const status = (await a.client.threads.get(t.thread_id)).status;
    expect({ state, status }).toEqual({ state: ["human: b", "ai: echo b"], status: "idle" });
  });
});

/**
 * Deleting a thread and the ends of runs (helper-56's attack on
 * run-handover.node.test.ts's fixes, each failing before its fix): a delete
 * while a run's end is written, or while a rollback-strategy run asks for
 * the thread, or after an update was checked; a frozen tab's one deadline;
 * and two servers' status writes at a run's end. Slow stores widen windows.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  closeServers,
  openServer,
  statusOf as status,
  type ServerPlace,
} from "../../test/support/agent-server/server.js";
import { freshDbName } from "../../test/support/databases.js";
import { heldRun } from "../../test/support/agent-server/held-run.js";
import { CANCEL_WAIT_MS } from "./run-handles.js";

import {
  SlowSaver,
  SlowThreadStore,
  human,
  texts,
  until,
  type Chat,
  frozenTabRun,
  releaseFrozenTabs,
} from "../../test/support/agent-server/timing.js";

afterEach(async () => {
  releaseFrozenTabs();
  await closeServers();
});
const server = (place: ServerPlace = {}) => openServer<Chat>("thread-delete", false, place);

describe("deleting a thread, and the ends of runs", () => {
  it("a delete while this server's run writes its end leaves no run record behind", async () => {
    const dbName = freshDbName("h-agent4");
    const threads = new SlowThreadStore({ dbName: `${dbName}-agent-threads` });
    threads.statusOf = (status) => status !== "busy";
    const { client } = await server({ threads, dbName });
    const threadId = crypto.randomUUID();
    await client.threads.create({ threadId });
    threads.statusMs = 300;
    const run = await client.runs.create(threadId, "agent", { input: human("old") });
    await until(async () => (await client.runs.get(threadId, run.run_id)).status === "success");
    await client.threads.delete(threadId);
    // The run's slowed end write landed (a fixed 600 ms wait counted on its 300 ms).
    await until(
      async () => threads.slowed.status.begun > 0 && threads.slowed.status.done === threads.slowed.status.begun,
    );
    await client.threads.create({ threadId });
    const runs = (await client.runs.list(threadId)).map((r) => r.run_id === run.run_id);
    expect(runs).toEqual([]);
  });

  it("two servers: a run started on B while A writes its run's end leaves the thread busy", async () => {
    const dbName = freshDbName("h-agent4");
    const threads = new SlowThreadStore({ dbName: `${dbName}-agent-threads` });
    threads.statusOf = (status) => status !== "busy";
    const a = await server({ threads, dbName });
    const b = await server({ dbName });
    const t = await a.client.threads.create();
    threads.statusMs = 300;
    const ra = await a.client.runs.create(t.thread_id, "agent", { input: human("a") });
    await until(async () => (await a.client.runs.get(t.thread_id, ra.run_id)).status === "success");
    // Inside a's slowed end write (a fixed 30 ms wait guessed when it began).
    await until(async () => threads.slowed.status.begun > 0);
    // Still inside it: a wait that returned after the write landed would prove nothing below.
    expect(threads.slowed.status.done).toBe(0);
    // b goes until stopped: a timed one (1.5 s) could end before the checks on a loaded machine.
    const { run: rb } = await heldRun(b.client, t.thread_id, "b");
    // a's end written and b going (a fixed 600 ms wait counted on the 300 ms write).
    await until(async () => threads.slowed.status.done === threads.slowed.status.begun);
    await until(async () => (await b.client.runs.get(t.thread_id, rb.run_id)).status !== "pending");
    const bStatus = (await b.client.runs.get(t.thread_id, rb.run_id)).status;
    const threadStatus = (await b.client.threads.get(t.thread_id)).status;
    expect({ bStatus, threadStatus }).toEqual({ bStatus: "running", threadStatus: "busy" });
  });

  it("a delete answers 204 when a rollback-strategy run asks for the thread while it erases", async () => {
    const dbName = freshDbName("h-agent4");
    const saver = new SlowSaver({ dbName });
    const { client } = await server({ saver, dbName });
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("a") });
    saver.deleteMs = 500;
    const deleting = status(client.threads.delete(t.thread_id));
    // Inside the delete's slowed erase (a fixed 100 ms wait guessed when it began).
    await until(async () => saver.slowed.delete.begun > 0);
    await client.runs.create(t.thread_id, "agent", { input: human("b"), multitaskStrategy: "rollback" });
    const answer = await deleting;
    const thread = await status(client.threads.get(t.thread_id));
    console.log("D3", answer, "thread after:", thread);
    expect(answer).toBe(200);
  });

  it("an updateState checked before a delete does not write checkpoints on the deleted thread", async () => {
    const dbName = freshDbName("h-agent4");
    const threads = new SlowThreadStore({ dbName: `${dbName}-agent-threads` });
    const { client, saver } = await server({ threads, dbName });
    const threadId = crypto.randomUUID();
    await client.threads.create({ threadId });
    await client.runs.wait(threadId, "agent", { input: human("a") });
    threads.nextGetMs = 300;
    const updating = status(client.threads.updateState(threadId, { values: human("ghost") }));
    // The update checked the thread: inside its slowed read (a fixed 30 ms wait guessed when).
    await until(async () => threads.slowed.get.begun > 0);
    await client.threads.delete(threadId);
    const update = await updating;
    const tuple = await saver.getTuple({ configurable: { thread_id: threadId } });
    const thread = await status(client.threads.get(threadId));
    expect({ update, thread, checkpoints: texts(tuple?.checkpoint.channel_values ?? {}) }).toEqual({
      update: 404,
      thread: 404,
      checkpoints: [],
    });
  });

  it("a frozen tab holding the thread: the delete waits on one deadline of 2 s (docs: at most 2 s), then answers", async () => {
    const { client, saver } = await server();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    // The frozen tab's run: its runner lock and its thread's run lock, never let go during the delete.
    await frozenTabRun(saver.dbName, t.thread_id, true);
    // The deadlines the delete makes, counted, not timed (a bound of 2.5 s on the delete's answer failed
    // on a loaded machine): the real AbortSignal.timeout, each signal it gives noted.
    const deadlines: { ms: number; signal: AbortSignal }[] = [];
    const timeout = AbortSignal.timeout;
    AbortSignal.timeout = (ms: number) => {
      const signal = timeout.call(AbortSignal, ms);
      deadlines.push({ ms, signal });
      return signal;
    };
    try {
      await client.threads.delete(t.thread_id);
    } finally {
      AbortSignal.timeout = timeout;
    }
    // One deadline for both waits (the runs' stop, then the thread's lock), of the 2 s the docs give; and it
    // had passed when the delete answered: the frozen tab was waited for until then, not given up on sooner.
    expect(CANCEL_WAIT_MS).toBe(2_000);
    expect(deadlines.map(({ ms }) => ms)).toEqual([CANCEL_WAIT_MS]);
    expect(deadlines[0]!.signal.aborted).toBe(true);
    await expect(client.threads.get(t.thread_id)).rejects.toThrow(/404/);
  }, 10_000);
});

/**
 * Races of the local agent server's run lifecycle (helper-51's attack on the
 * fixes of run-lifecycle.node.test.ts, each failing before its fix): cancels
 * crossing a run's end, a delete crossing a run's start or waiting on a tab
 * that never answers, an update crossing a rollback run, a client leaving
 * before its run started, and two runs ending together. Slow stores and
 * savers widen windows that exist without them.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer, type ServerPlace } from "../../test/support/agent-server/server.js";
import { freshDbName } from "../../test/support/databases.js";
import { heldRun } from "../../test/support/agent-server/held-run.js";
import { RunLog } from "./run-log.js";
import { openAgentDatabase } from "./schema.js";
import { defaultLockManager, runLockName, type RunLockManager } from "../runs/locks.js";

import {
  SlowSaver,
  SlowThreadStore,
  human,
  sleep,
  texts,
  until,
  type Chat,
  frozenTabRun,
  releaseFrozenTabs,
} from "../../test/support/agent-server/timing.js";

const URL_BASE = "http://local.invalid";
afterEach(async () => {
  releaseFrozenTabs();
  await closeServers();
});
const ownServer = (place: ServerPlace = {}) => openServer<Chat>("run-races", false, place);

describe("cancel", () => {
  it("rollback of a run that has just succeeded (its end under way) changes nothing", async () => {
    const dbName = freshDbName("run-races");
    const threads = new SlowThreadStore({ dbName: `${dbName}-agent-threads` });
    const { client } = await ownServer({ threads, dbName });
    const t = await client.threads.create();
    threads.statusMs = 300;
    const run = await client.runs.create(t.thread_id, "agent", { input: human("keep me") });
    await until(async () => (await client.runs.get(t.thread_id, run.run_id)).status === "success");
    await client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
    expect((await client.runs.get(t.thread_id, run.run_id)).status).toBe("success");
    expect(texts((await client.threads.getState(t.thread_id)).values)).toEqual(["human: keep me", "ai: echo keep me"]);
  });

  it("rollback of a running run leaves the thread idle (its state rolled back), not interrupted", async () => {
    const { client } = await ownServer();
    const t = await client.threads.create();
    // In its node until stopped, its input written (a fixed 100 ms wait after "running" guessed it).
    const { run } = await heldRun(client, t.thread_id, "undo me", { at: "node" });
    await client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
    const state = await client.threads.getState(t.thread_id);
    expect(texts(state.values)).toEqual([]);
    expect(state.next).toEqual([]);
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");
  });
});

describe("cancel crossing the end, default store", () => {
  it("a rollback cancel sent as soon as runs.get says success keeps the run's checkpoints", async () => {
    const { client } = await ownServer();
    const lost: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t = await client.threads.create();
      const run = await client.runs.create(t.thread_id, "agent", { input: human("keep me") });
      for (;;) {
        const status = (await client.runs.get(t.thread_id, run.run_id)).status;
        if (status === "success") break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      await client.runs.cancel(t.thread_id, run.run_id, true, "rollback");
      if (texts((await client.threads.getState(t.thread_id)).values).length === 0) lost.push(i);
    }
    expect(lost).toEqual([]);
  });
});

describe("updateState", () => {
  it("crossing a rollback run is made and answered 200 (it was answered 500 though kept)", async () => {
    const dbName = freshDbName("run-races");
    const saver = new SlowSaver({ dbName });
    const { client, server } = await ownServer({ saver, dbName });
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    saver.putMs = 300;
    const update = server.fetch(`${URL_BASE}/threads/${t.thread_id}/state`, {
      method: "POST",
      body: JSON.stringify({ values: human("edit"), as_node: "agent" }),
    });
    // Inside the update's slowed put (a fixed 50 ms wait guessed when it began).
    await until(async () => saver.slowed.put.begun > 0);
    const run = client.runs.wait(t.thread_id, "agent", { input: human("two"), multitaskStrategy: "rollback" });
    const response = await update;
    saver.putMs = 0;
    await run;
    const state = texts((await client.threads.getState(t.thread_id)).values);
    const body = await response.text();
    // Made before the rollback run took the thread (it waits for it), so kept: 200.
    expect(response.status, `${body}; state after: ${JSON.stringify(state)}`).toBe(200);
    expect(state).toContain("human: edit");
  });
});

describe("on_disconnect cancel", () => {
  it("a client that leaves before the run started (its request aborted meanwhile) stops the run too", async () => {
    const dbName = freshDbName("run-races");
    const threads = new SlowThreadStore({ dbName: `${dbName}-agent-threads` });
    const { client, server } = await ownServer({ threads, dbName });
    const t = await client.threads.create();
    threads.metadataMs = 50; // the route's patch of graph_id: the run starts 50 ms after the request
    const controller = new AbortController();
    const request = server.fetch(`${URL_BASE}/threads/${t.thread_id}/runs/stream`, {
      method: "POST",
      body: JSON.stringify({
        assistant_id: "agent",
        input: human("stop me"),
        // Goes until stopped: only the disconnect can end it (a timed run ended "success" on its own).
        config: { configurable: { hold: crypto.randomUUID() } },
        on_disconnect: "cancel",
      }),
      signal: controller.signal,
    });
    // useStream's Stop, pressed right after submit: inside the route's slowed patch, before the run started
    // (a fixed 10 ms wait guessed when that was).
    await until(async () => threads.slowed.metadata.begun > 0);
    controller.abort();
    await request.then((response) => response.body?.cancel()).catch(() => undefined);
    await until(async () => (await client.runs.list(t.thread_id)).length === 1);
    const [run] = await client.runs.list(t.thread_id);
    // Its end, however long the stop takes on a loaded machine (a fixed 500 ms found it still pending or
    // running); a run never stopped times the wait out.
    const going = ["pending", "running"];
    await until(async () => !going.includes((await client.runs.get(t.thread_id, run!.run_id)).status));
    expect((await client.runs.get(t.thread_id, run!.run_id)).status).toBe("interrupted");
  });
});

describe("thread status", () => {
  it("is busy as soon as a run is answered (runs.create, or useStream's onCreated), its status write slow", async () => {
    const dbName = freshDbName("run-races");
    const threads = new SlowThreadStore({ dbName: `${dbName}-agent-threads` });
    const { client } = await ownServer({ threads, dbName });
    for (const multitaskStrategy of ["enqueue", "reject"] as const) {
      const t = await client.threads.create();
      threads.statusMs = 100;
      threads.statusOf = (status) => status === "busy";
      const run = await client.runs.create(t.thread_id, "agent", { input: human("list me"), multitaskStrategy });
      // As the Agent Server, which creates the run and sets its thread busy together: a thread list
      // read when the run is answered shows it running, not idle until its next read.
      expect((await client.threads.get(t.thread_id)).status, multitaskStrategy).toBe("busy");
      threads.statusMs = 0;
      await client.runs.join(t.thread_id, run.run_id);
      await until(async () => (await client.threads.get(t.thread_id)).status === "idle");
    }
  });

  it("is not left busy when a run and the one enqueued behind it are cancelled together", async () => {
    const { client } = await ownServer();
    const stuck: string[] = [];
    for (const order of ["ab", "ba", "ab", "ba"]) {
      const t = await client.threads.create();
      const { run: a } = await heldRun(client, t.thread_id, "a");
      const b = await client.runs.create(t.thread_id, "agent", { input: human("b"), multitaskStrategy: "enqueue" });
      await until(async () => (await client.runs.get(t.thread_id, a.run_id)).status === "running");
      const cancels = [...order].map((x) => client.runs.cancel(t.thread_id, x === "a" ? a.run_id : b.run_id, true));
      await Promise.all(cancels);
      // Its last status write landed, where a fixed 200 ms wait guessed when; one left busy stays busy.
      // 10 s each, so that four orders left busy fail here, naming them, within the test's timeout.
      await until(async () => (await client.threads.get(t.thread_id)).status !== "busy", 10_000).catch(() =>
        stuck.push(order),
      );
    }
    expect(stuck).toEqual([]);
  });
});

describe("thread status, a delete or update holding the thread", () => {
  it("is not left busy when runs.delete takes the thread as the last run ends", async () => {
    // The run's end asks the locks whether another run holds the thread; this answer is made slow, so
    // the delete (of an older run) takes the thread in between, as it did now and then without it.
    const inner = defaultLockManager();
    let nextQueryMs = 0;
    const locks: RunLockManager = {
      request: (name, options, callback) => inner.request(name, options, callback),
      query: async () => {
        const ms = nextQueryMs;
        nextQueryMs = 0;
        await sleep(ms);
        return inner.query();
      },
    };
    const dbName = freshDbName("run-races");
    const saver = new SlowSaver({ dbName });
    const { client } = await ownServer({ saver, locks });
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    const [older] = await client.runs.list(t.thread_id);
    const last = await client.runs.create(t.thread_id, "agent", { input: human("two"), multitaskStrategy: "enqueue" });
    nextQueryMs = 300;
    saver.rollbackMs = 400; // the delete holds the thread while the run's end reads the locks
    await until(async () => (await client.runs.get(t.thread_id, last.run_id)).status === "success");
    await client.runs.delete(t.thread_id, older!.run_id);
    await client.runs.join(t.thread_id, last.run_id);
    // The delete's status write after its slowed rollback (a fixed 50 ms wait guessed when it landed).
    await until(async () => (await client.threads.get(t.thread_id)).status !== "busy").catch(() => undefined);
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");
  });
});

describe("thread status, a reject run refused", () => {
  // Once left busy for good: the reject run had passed the route's check (the thread free) and was about
  // to try the thread's lock when another run ended; that end took it for a run going on and left the
  // status to it, and it was then refused (another tab took the thread first), writing none.
  it("is not left busy when the reject run a run's end waited for is refused", async () => {
    const dbName = freshDbName("run-races");
    const inner = defaultLockManager();
    const threadLock = (threadId: string) => runLockName(dbName, threadId);
    let gated: string | undefined;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let arrived!: () => void;
    const tried = new Promise<void>((resolve) => (arrived = resolve));
    const locks: RunLockManager = {
      request: async (name, options, callback) => {
        if (options.ifAvailable && name === gated) {
          gated = undefined;
          arrived();
          await gate;
        }
        return inner.request(name, options, callback);
      },
      query: () => inner.query(),
    };
    const { client } = await ownServer({ dbName, locks });
    const t = await client.threads.create();
    gated = threadLock(t.thread_id);
    const refused = client.runs.create(t.thread_id, "agent", { input: human("second") });
    await tried;
    await client.runs.wait(t.thread_id, "agent", { input: human("first"), multitaskStrategy: "enqueue" });
    // Another tab's run takes the thread before the reject run tries it.
    let release!: () => void;
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const other = inner.request(threadLock(t.thread_id), {}, () => {
      holding();
      return new Promise<void>((resolve) => (release = resolve));
    });
    await held;
    open();
    await expect(refused).rejects.toThrow(/409/);
    release();
    await other;
    expect((await client.threads.get(t.thread_id)).status).toBe("idle");
  });
});

describe("delete", () => {
  // Once answered 409 "busy with another run" (no run went): the delete holds the thread's run lock, which a
  // run with the default strategy (reject) took for a run's. The Agent Server's delete holds no thread.
  it("of an older run does not refuse a run started meanwhile (reject), which waits for it", async () => {
    const saver = new SlowSaver({ dbName: freshDbName("run-races") });
    const { client } = await ownServer({ saver });
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    await client.runs.wait(t.thread_id, "agent", { input: human("two") });
    const [, older] = await client.runs.list(t.thread_id);
    saver.rollbackMs = 200;
    const deleted = client.runs.delete(t.thread_id, older!.run_id);
    // Inside the delete's slowed rollback (a fixed 50 ms wait guessed when it began).
    await until(async () => saver.slowed.rollback.begun > 0);
    const values = await client.runs.wait(t.thread_id, "agent", { input: human("three") });
    await deleted;
    expect(texts(values)).toEqual(["one", "two", "three"].flatMap((x) => [`human: ${x}`, `ai: echo ${x}`]));
    expect((await client.runs.list(t.thread_id)).map((run) => run.status)).toEqual(["success", "success"]);
  });

  // Once both deletes answered 409 "busy with another run" (no run went): each hold of the thread took the
  // others for runs.
  it("crossing another delete and a state update: each is made, none refused", async () => {
    const { client } = await ownServer();
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    await client.runs.wait(t.thread_id, "agent", { input: human("two") });
    const [, older] = await client.runs.list(t.thread_id);
    const outcome = (request: Promise<unknown>) =>
      request.then(
        () => "done",
        (error: Error) => error.message.slice(0, 12),
      );
    const answers = await Promise.all([
      outcome(client.runs.delete(t.thread_id, older!.run_id)),
      outcome(client.runs.delete(t.thread_id, older!.run_id)),
      outcome(client.threads.updateState(t.thread_id, { values: human("three") })),
    ]);
    expect(answers.filter((answer) => answer.includes("409"))).toEqual([]);
    expect(await client.runs.list(t.thread_id)).toHaveLength(1);
    expect(texts((await client.threads.getState(t.thread_id)).values).at(-1)).toBe("human: three");
  });

  it("answers even when another tab's run never answers its cancel (a frozen or stalled tab)", async () => {
    const { client, saver } = await openServer<Chat>("run-races-frozen");
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, "agent", { input: human("one") });
    // Another tab's run: its record in the run log, its runner lock held, its tab not answering.
    await frozenTabRun(saver.dbName, t.thread_id);
    // It waits CANCEL_WAIT_MS (2 s) for that run, then deletes all the same.
    const deleted = client.threads.delete(t.thread_id).then(() => "answered");
    expect(await Promise.race([deleted, sleep(4_000).then(() => "still waiting after 4 s")])).toBe("answered");
    expect(await saver.getTuple({ configurable: { thread_id: t.thread_id } })).toBeUndefined();
  }, 10_000);

  it("crossing a run's start (request checked the thread before the delete) leaves no checkpoint behind", async () => {
    const dbName = freshDbName("run-races");
    const threads = new SlowThreadStore({ dbName: `${dbName}-agent-threads` });
    const { client, saver, server } = await ownServer({ threads, dbName });
    const t = await client.threads.create();
    threads.metadataMs = 100; // the route's patch of graph_id, between its thread check and runs.start
    const run = server.fetch(`${URL_BASE}/threads/${t.thread_id}/runs/wait`, {
      method: "POST",
      body: JSON.stringify({ assistant_id: "agent", input: human("secret") }),
    });
    // Inside the route's slowed patch (a fixed 20 ms wait guessed when it began).
    await until(async () => threads.slowed.metadata.begun > 0);
    await client.threads.delete(t.thread_id);
    const answer = await run;
    threads.metadataMs = 0;
    // Absence: a run that started all the same writes its first checkpoint within a few ms of its answer.
    await sleep(50);
    const log = new RunLog(openAgentDatabase(`${dbName}-agent-threads`, undefined));
    const left = {
      answer: answer.status,
      thread: (await server.fetch(`${URL_BASE}/threads/${t.thread_id}`)).status,
      checkpoint: (await saver.getTuple({ configurable: { thread_id: t.thread_id } })) !== undefined,
      runs: (await log.list(t.thread_id)).map((r) => r.status),
    };
    await log.close();
    expect(left).toMatchObject({ thread: 404, checkpoint: false, runs: [] });
  });
});

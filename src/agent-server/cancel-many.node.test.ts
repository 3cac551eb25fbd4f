/**
 * `runs.cancelMany` (POST /runs/cancel), through the SDK, with runs held in
 * two "tabs" (two servers on one database): by thread and run ids, or by
 * status across threads; each run ends as one cancel ends it (`interrupt`:
 * `interrupted`, its record kept; `rollback`: the run and its checkpoints
 * gone); bad input answered 422 naming the field, an unknown run 404, both
 * before any run is cancelled.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MAX_CANCEL_RUN_IDS } from "./cancel-runs.js";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import {
  frozenTabRun,
  human,
  releaseFrozenTabs,
  texts,
  until,
  type Chat,
} from "../../test/support/agent-server/timing.js";

afterEach(async () => {
  releaseFrozenTabs();
  await closeServers();
});

/** Two servers on one database (two tabs), and how to read a run's status from either. */
async function twoTabs() {
  const a = await openServer<Chat>("cancel-many");
  const b = await openServer<Chat>("cancel-many", false, { dbName: a.dbName });
  const status = (threadId: string, runId: string) =>
    a.client.runs.get(threadId, runId).then(
      (run) => run.status as string,
      (error: { status?: number }) => `${error.status}`,
    );
  return { a, b, status };
}
const slow = { config: { configurable: { delay_ms: 5_000 } } };

describe("runs.cancelMany", () => {
  it("cancels the runs named on a thread, the one running in one tab and the one waiting in the other", async () => {
    const { a, b, status } = await twoTabs();
    const t = await a.client.threads.create();
    const running = await a.client.runs.create(t.thread_id, "agent", { input: human("one"), ...slow });
    await until(async () => (await status(t.thread_id, running.run_id)) === "running");
    const waiting = await b.client.runs.create(t.thread_id, "agent", {
      input: human("two"),
      multitaskStrategy: "enqueue",
    });
    await b.client.runs.cancelMany({ threadId: t.thread_id, runIds: [running.run_id, waiting.run_id] });
    await until(async () => (await status(t.thread_id, waiting.run_id)) === "interrupted");
    expect(await status(t.thread_id, running.run_id)).toBe("interrupted");
    // The waiting one never ran: cancelled before the thread came to it.
    expect(texts((await b.client.threads.getState(t.thread_id)).values)).not.toContain("human: two");
  });

  it("with rollback, deletes each run and its checkpoints as one cancel's rollback does", async () => {
    const { a, b, status } = await twoTabs();
    const t = await a.client.threads.create();
    await a.client.runs.wait(t.thread_id, "agent", { input: human("kept") });
    const running = await a.client.runs.create(t.thread_id, "agent", { input: human("undo"), ...slow });
    await until(async () => (await status(t.thread_id, running.run_id)) === "running");
    await b.client.runs.cancelMany({ threadId: t.thread_id, runIds: [running.run_id], action: "rollback" });
    await until(async () => (await status(t.thread_id, running.run_id)) === "404");
    expect(texts((await a.client.threads.getState(t.thread_id)).values)).toEqual(["human: kept", "ai: echo kept"]);
  });

  it("by status, across threads and tabs: pending ones only, then all", async () => {
    const { a, b, status } = await twoTabs();
    const t1 = await a.client.threads.create();
    const t2 = await b.client.threads.create();
    const run1 = await a.client.runs.create(t1.thread_id, "agent", { input: human("1"), ...slow });
    const run2 = await b.client.runs.create(t2.thread_id, "agent", { input: human("2"), ...slow });
    await until(async () => (await status(t1.thread_id, run1.run_id)) === "running");
    await until(async () => (await status(t2.thread_id, run2.run_id)) === "running");
    const queued = await b.client.runs.create(t1.thread_id, "agent", {
      input: human("3"),
      multitaskStrategy: "enqueue",
    });
    await a.client.runs.cancelMany({ status: "pending" });
    await until(async () => (await status(t1.thread_id, queued.run_id)) === "interrupted");
    expect([await status(t1.thread_id, run1.run_id), await status(t2.thread_id, run2.run_id)]).toEqual([
      "running",
      "running",
    ]);
    await a.client.runs.cancelMany({ status: "all" });
    await until(async () => (await status(t2.thread_id, run2.run_id)) === "interrupted");
    expect(await status(t1.thread_id, run1.run_id)).toBe("interrupted");
  });

  it("answers 422 naming the field, 404 for a run it does not know, and cancels nothing then", async () => {
    const { a, status } = await twoTabs();
    const t = await a.client.threads.create();
    const run = await a.client.runs.create(t.thread_id, "agent", { input: human("stays"), ...slow });
    await until(async () => (await status(t.thread_id, run.run_id)) === "running");
    const answer = (body: unknown, query = "") =>
      a.server
        .fetch(`http://local.invalid/runs/cancel${query}`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(body),
        })
        .then(async (res) => `${res.status} ${await res.text()}`);
    const ids = { thread_id: t.thread_id, run_ids: [run.run_id] };
    expect(await answer({})).toMatch(/^422 .*status.*thread_id.*run_ids/);
    expect(await answer({ thread_id: t.thread_id })).toMatch(/^422 .*run_ids/);
    expect(await answer({ thread_id: t.thread_id, run_ids: run.run_id })).toMatch(/^422 .*run_ids/);
    expect(await answer({ status: "done" })).toMatch(/^422 .*status/);
    expect(await answer({ status: "all", ...ids })).toMatch(/^422 .*status/);
    expect(await answer(ids, "?action=stop")).toMatch(/^422 .*action/);
    expect(await answer({ ...ids, run_ids: [run.run_id, crypto.randomUUID()] })).toMatch(/^404 .*Run not found/);
    // Another thread's run is not this thread's: unknown there.
    const other = await a.client.threads.create();
    expect(await answer({ thread_id: other.thread_id, run_ids: [run.run_id] })).toMatch(/^404 /);
    expect(await status(t.thread_id, run.run_id)).toBe("running");
  });

  it("answers 422 to more run ids than it takes, before any run is cancelled; as many as it takes are looked up", async () => {
    const { a, status } = await twoTabs();
    const t = await a.client.threads.create();
    const run = await a.client.runs.create(t.thread_id, "agent", { input: human("stays"), ...slow });
    await until(async () => (await status(t.thread_id, run.run_id)) === "running");
    const answer = (runIds: string[]) =>
      a.server
        .fetch("http://local.invalid/runs/cancel", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ thread_id: t.thread_id, run_ids: runIds }),
        })
        .then(async (res) => `${res.status} ${await res.text()}`);
    const unknown = (n: number) => Array.from({ length: n }, () => crypto.randomUUID());
    // The running run named over and over: found each time, it would be cancelled; over the cap, it is not.
    const over = await answer(Array.from({ length: MAX_CANCEL_RUN_IDS + 1 }, () => run.run_id));
    expect(over).toMatch(
      new RegExp(`^422 .*run_ids takes at most ${MAX_CANCEL_RUN_IDS} run ids; got ${MAX_CANCEL_RUN_IDS + 1}`),
    );
    expect(await status(t.thread_id, run.run_id)).toBe("running");
    // At the cap the list is taken: its unknown ids are looked up and answered 404.
    expect(await answer(unknown(MAX_CANCEL_RUN_IDS))).toMatch(/^404 .*Run not found/);
    expect(await status(t.thread_id, run.run_id)).toBe("running");
  }, 20_000);

  it("answers 202, not 204, when a run has not ended within its wait (a frozen tab's)", async () => {
    const a = await openServer<Chat>("cancel-many");
    const t = await a.client.threads.create();
    // Another tab's run: its record in the run log, its runner lock held, its tab not answering.
    await frozenTabRun(a.saver.dbName, t.thread_id);
    const res = await a.server.fetch("http://local.invalid/runs/cancel", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ status: "running" }),
    });
    // As runs.cancel answers without wait: the cancel is under way, the run has not ended.
    expect(res.status).toBe(202);
  }, 10_000);
});

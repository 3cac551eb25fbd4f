/**
 * The run log's bound on stored events: when a run ends, only the thread's
 * newest `keepEventsOf` runs keep their events; older finished runs keep
 * their records, a run not finished keeps its events whatever its age, and
 * other threads are untouched. The runs not ended (`runs.cancelMany` by
 * status) are read through the status index, not by reading every record.
 */
import { afterEach, expect, it } from "vitest";
import { createLocalAgentServer } from "./index.js";
import type { RunRecord } from "./records.js";
import { RunLog } from "./run-log.js";
import { openAgentDatabase } from "./schema.js";
import { IndexedDBSaver } from "../saver/index.js";
import { agentGraph } from "../../test/support/agent-server/graph.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";
import { byDepth } from "../../test/support/depth.js";

const names: string[] = [];
afterEach(async () => {
  for (const name of names.splice(0)) await deleteDatabase(name);
});

function record(run: number, status: RunRecord["status"], thread = "t1"): RunRecord {
  const at = new Date(Date.UTC(2026, 0, 1, 0, 0, run)).toISOString();
  return {
    run_id: `run-${run}`,
    thread_id: thread,
    assistant_id: "agent",
    created_at: at,
    updated_at: at,
    status,
    metadata: {},
    multitask_strategy: "reject",
  };
}

const events = (n: number) => Array.from({ length: n }, (_, id) => ({ id, event: "values", data: "{}" }));

it("keeps the events of a thread's newest runs only, and every record", async () => {
  const name = freshDbName("run-log-prune");
  names.push(name);
  const log = new RunLog(openAgentDatabase(name, undefined), 2);
  try {
    await log.save(record(1, "running"), events(3));
    await log.save(record(2, "success"), events(3));
    await log.save({ ...record(1, "running", "t2"), run_id: "t2-running" }, events(3));
    await log.save({ ...record(9, "success", "t2"), run_id: "other-thread" }, events(3));
    await log.save(record(3, "error"), events(3));
    // Not final: nothing pruned yet.
    await log.save(record(4, "running"), events(2));
    expect((await log.stored("run-2")).events.length).toBe(3);
    await log.save(record(4, "success"), events(4));
    expect((await log.stored("run-4")).events.length).toBe(4);
    expect((await log.stored("run-3")).events.length).toBe(3);
    expect((await log.stored("run-2")).events).toEqual([]);
    // run-1 is not finished (a run still going, or cut short and not yet found so): its events stay.
    expect((await log.stored("run-1")).events.length).toBe(3);
    expect((await log.stored("other-thread")).events.length).toBe(3);
    expect((await log.stored("t2-running")).events.length).toBe(3);
    expect((await log.list("t1")).map((r) => r.run_id)).toEqual(["run-4", "run-3", "run-2", "run-1"]);
  } finally {
    await log.close();
  }
});

it("refuses a bound that is not a whole number of runs", async () => {
  const saver = new IndexedDBSaver({ dbName: freshDbName("run-log-bound") });
  for (const keepRunEvents of [0, -1, 1.5, Number.NaN]) {
    await expect(createLocalAgentServer({ graphs: { agent: agentGraph() }, saver, keepRunEvents })).rejects.toThrow(
      /keepRunEvents/,
    );
  }
});

it("reads only the runs not ended for runs.cancelMany by status, not every finished record", async () => {
  const name = freshDbName("run-log-unfinished");
  names.push(name);
  const db = openAgentDatabase(name, undefined);
  const log = new RunLog(db);
  // Records read, counted from what each getAll (of a store or of an index) answers.
  let read = 0;
  const counted = <T extends { getAll: (...args: never[]) => IDBRequest }>(proto: T) => {
    const getAll = proto.getAll;
    proto.getAll = function (this: T, ...args: never[]) {
      const request = getAll.apply(this, args);
      request.addEventListener("success", () => (read += (request.result as unknown[]).length));
      return request;
    };
    return () => void (proto.getAll = getAll);
  };
  try {
    // 2,000 finished runs on 50 threads, in one transaction (saved one by one, each would prune its thread).
    await db.write(
      ["runs"],
      (tx) => {
        const runs = tx.objectStore("runs");
        for (let i = 0; i < 2_000; i++) void runs.put({ ...record(i, "success", `t-${i % 50}`), run_id: `done-${i}` });
      },
      "seed finished runs",
    );
    await log.save({ ...record(1, "pending", "t2"), run_id: "waiting" }, []);
    await log.save({ ...record(2, "running", "t3"), run_id: "going" }, []);
    const restore = [counted(IDBObjectStore.prototype), counted(IDBIndex.prototype)];
    let unfinished: RunRecord[];
    try {
      unfinished = await log.unfinished();
    } finally {
      for (const undo of restore) undo();
    }
    expect(unfinished.map((r) => r.run_id).sort()).toEqual(["going", "waiting"]);
    // Before the status index: all 2,002 records read (20-75 ms here in Node; 20,000 runs: 270-380 ms).
    expect(read).toBe(2);
  } finally {
    await log.close();
  }
}, 30_000);

it("tells a replay the last id of a run with more events than one call takes as arguments", async () => {
  const name = freshDbName("run-log-long");
  names.push(name);
  const log = new RunLog(openAgentDatabase(name, undefined));
  try {
    // A long run streamed token by token: past about 125,000 ids, Math.max(...ids) overflowed V8's stack
    // ("Maximum call stack size exceeded"), and the replay of the run failed where it should have ended it.
    // 130,000 events take 8 s here (saved and read on fake-indexeddb): the full depth only (npm run test:full).
    const count = byDepth(2_000, 130_000);
    await log.save(record(1, "error"), events(count));
    const stored = await log.stored("run-1");
    expect(stored.events.length).toBe(count);
    expect(stored.lastId).toBe(count - 1);
    expect(stored.errorLeftOut).toBeUndefined();
  } finally {
    await log.close();
  }
}, 60_000);

/**
 * The run log's bound on stored events: when a run ends, only the thread's
 * newest `keepEventsOf` runs keep their events; older finished runs keep
 * their records, a run not finished keeps its events whatever its age, and
 * other threads are untouched.
 */
import { afterEach, expect, it } from "vitest";
import { createLocalAgentServer } from "./index.js";
import type { RunRecord } from "./records.js";
import { RunLog } from "./run-log.js";
import { openAgentDatabase } from "./schema.js";
import { IndexedDBSaver } from "../saver/index.js";
import { agentGraph } from "../../test/support/agent-server/graph.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";

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
    expect((await log.events("run-2", -1)).length).toBe(3);
    await log.save(record(4, "success"), events(4));
    expect((await log.events("run-4", -1)).length).toBe(4);
    expect((await log.events("run-3", -1)).length).toBe(3);
    expect(await log.events("run-2", -1)).toEqual([]);
    // run-1 is not finished (a run still going, or cut short and not yet found so): its events stay.
    expect((await log.events("run-1", -1)).length).toBe(3);
    expect((await log.events("other-thread", -1)).length).toBe(3);
    expect((await log.events("t2-running", -1)).length).toBe(3);
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

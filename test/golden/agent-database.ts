/**
 * The content of the agent server's database goldens (`agent-schema3.json`):
 * threads, run records of every status with their events, and a leftover
 * thread, written by the agent server's own classes (IndexedDBThreadStore,
 * RunLog, LeftoverRecords), and every answer those classes give on it.
 */
import { openAgentDatabase } from "../../src/agent-server/schema.js";
import { RunLog } from "../../src/agent-server/run-log.js";
import { LeftoverRecords } from "../../src/agent-server/leftover-threads.js";
import { IndexedDBThreadStore } from "../../src/agent-server/threads.js";
import type { RunRecord, RunStatus } from "../../src/agent-server/records.js";
import { encodeTagged, type Tagged } from "./shared.js";

/** The golden's threads: one with runs of every status, one with a run waiting, one left over. */
export const AGENT_THREADS = ["t-agent-1", "t-agent-2", "t-agent-left"] as const;

/** The golden's runs: [run id, thread, status, how many events]. */
const RUNS: [string, string, RunStatus, number][] = [
  ["run-a1", "t-agent-1", "success", 3],
  ["run-a2", "t-agent-1", "error", 2],
  ["run-a3", "t-agent-1", "interrupted", 2],
  ["run-a4", "t-agent-1", "running", 2],
  ["run-a5", "t-agent-1", "pending", 1],
  ["run-b1", "t-agent-2", "success", 2],
  ["run-b2", "t-agent-2", "pending", 0],
];

function record(runId: string, threadId: string, status: RunStatus, n: number): RunRecord {
  const at = `2026-12-05T00:00:0${n}.000Z`;
  return {
    run_id: runId,
    thread_id: threadId,
    assistant_id: "agent",
    created_at: at,
    updated_at: at,
    status,
    metadata: { golden: n },
    multitask_strategy: n % 2 === 0 ? "enqueue" : "reject",
  };
}

/** Writes the golden's content into the agent database `dbName`. */
export async function writeAgentDatabase(dbName: string): Promise<void> {
  const threads = new IndexedDBThreadStore({ dbName });
  for (const threadId of AGENT_THREADS) await threads.create(threadId, { golden: threadId });
  await threads.close();
  const db = openAgentDatabase(dbName, undefined);
  const log = new RunLog(db);
  for (const [i, [runId, threadId, status, events]] of RUNS.entries()) {
    const sent = Array.from({ length: events }, (_, id) => ({
      id,
      event: id === 0 ? "metadata" : status === "error" && id === events - 1 ? "error" : "values",
      data: JSON.stringify(id === 0 ? { run_id: runId, attempt: 1 } : { messages: [`${runId} ${id}`] }),
    }));
    await log.save(record(runId, threadId, status, i), sent);
  }
  await new LeftoverRecords(db).add("t-agent-left", "2026-12-05T00:00:09.000Z");
  await log.close();
}

/** Every answer the agent server's classes give on the golden's database `dbName`, tagged. */
export async function readAgentDatabase(dbName: string): Promise<Record<string, Tagged>> {
  const answers: Record<string, unknown> = {};
  const threads = new IndexedDBThreadStore({ dbName });
  for (const threadId of AGENT_THREADS) answers[`thread ${threadId}`] = await threads.get(threadId);
  answers["threads by creation"] = await threads.search({ limit: 10, offset: 0, sortBy: "created_at", sortOrder: "asc" });
  await threads.close();
  const db = openAgentDatabase(dbName, undefined);
  const log = new RunLog(db);
  for (const threadId of AGENT_THREADS) answers[`runs of ${threadId}`] = await log.list(threadId);
  answers["runs not ended"] = await log.unfinished();
  for (const [runId] of RUNS) {
    answers[`run ${runId}`] = await log.get(runId);
    const { events } = await log.stored(runId);
    answers[`events of ${runId}`] = events;
    // A replay from a Last-Event-ID of 0 (src/agent-server/remote-run.ts skips what the client had).
    answers[`events of ${runId} after 0`] = events.filter((event) => event.id > 0);
  }
  answers["leftover threads"] = await new LeftoverRecords(db).list();
  await log.close();
  return encodeTagged(answers) as Record<string, Tagged>;
}

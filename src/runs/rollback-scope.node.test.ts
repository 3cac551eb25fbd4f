/**
 * A rollback deletes the stopped run's checkpoints of its own thread, and
 * nothing of another thread: not when the app reused a run id across threads,
 * and not when some other endpoint on the run channel answers "stopping" with
 * another thread's run id (only the run holding the thread's lock is believed).
 */
import { HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { runOnThread } from "./coordinator.js";
import { RunChannel } from "./signals.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { historyReport, send, slowChatGraph } from "../../test/support/runs/scenario.js";

const track = trackSavers<IndexedDBSaver>();

/** Runs one message on `threadId` under run id `runId` (a slow model when `delayMs`). */
function runAs(saver: IndexedDBSaver, threadId: string, runId: string, delayMs = 0) {
  const config = { configurable: { thread_id: threadId, delay_ms: delayMs }, metadata: { run_id: runId } };
  return runOnThread(slowChatGraph(saver), { messages: [new HumanMessage(`on ${threadId}`)] }, config, {
    multitask: "rollback",
  }).then(
    () => "done",
    (error: Error) => error.name,
  );
}

/** Runs `runId` slowly on A from one tab, rolls it back from another; both must end as a rollback does. */
async function rollBackOnA(tabA: IndexedDBSaver, tabB: IndexedDBSaver, runId: string): Promise<void> {
  const first = runAs(tabA, "A", runId, 1_500);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(await send(tabB, "A", "newer", "rollback", 0)).toMatchObject({ ok: true });
  expect(await first).toBe("RunInterruptedError");
}

describe("a rollback on thread A", () => {
  it("keeps thread B's checkpoints when the app reused the run id on B", async () => {
    const dbName = freshDbName("rollback-reuse");
    const [tabA, tabB] = [track(new IndexedDBSaver({ dbName })), track(new IndexedDBSaver({ dbName }))];
    await runAs(tabA, "B", "shared");
    expect((await historyReport(tabA, "B")).checkpoints).toBe(3);
    await rollBackOnA(tabA, tabB, "shared");
    expect((await historyReport(tabB, "B")).checkpoints).toBe(3);
  }, 20_000);

  it("believes a 'stopping' answer only from the run holding A's lock", async () => {
    const dbName = freshDbName("rollback-forged");
    const [tabA, tabB] = [track(new IndexedDBSaver({ dbName })), track(new IndexedDBSaver({ dbName }))];
    await runAs(tabA, "B", "run-of-b");
    await runAs(tabA, "A", "earlier-on-a");
    // Another endpoint answers every stop request on A in the name of B's run and of A's finished one.
    const forger = new RunChannel(dbName);
    forger.listen((message) => {
      if (message.type !== "stop") return;
      for (const runId of ["run-of-b", "earlier-on-a"]) {
        forger.post({ type: "stopping", threadId: message.threadId, runId, to: message.from });
      }
    });
    try {
      await rollBackOnA(tabA, tabB, "run-of-a");
      expect((await historyReport(tabB, "B")).checkpoints).toBe(3);
      const a = await historyReport(tabB, "A");
      expect(a.runIds).toContain("earlier-on-a");
      expect(a.runIds).not.toContain("run-of-a");
    } finally {
      forger.close();
    }
  }, 20_000);
});

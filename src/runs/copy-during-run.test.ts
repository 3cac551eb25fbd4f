/**
 * copyThread into a thread that a run of runOnThread holds, from another
 * saver on the database (another tab; in Node the in-process lock stands in
 * for Web Locks). The run read the thread empty; a copy landing before its
 * first write would leave the copied history and the run's own root side by
 * side: a fork, with the copy hidden behind the run's newer checkpoints.
 */
import { HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { runOnThread } from "./coordinator.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { historyReport, seed, slowChatGraph } from "../../test/support/runs/scenario.js";

const track = trackSavers<IndexedDBSaver>();

/** A promise and its resolve (Node 20 has no Promise.withResolvers). */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** A saver whose first read of `threadId` waits for `gate` once it has read: the window before a run's first write. */
class PausingSaver extends IndexedDBSaver {
  readonly read = deferred();
  readonly gate = deferred();
  #paused = false;

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const tuple = await super.getTuple(config);
    if (!this.#paused && config.configurable?.thread_id === "target") {
      this.#paused = true;
      this.read.resolve();
      await this.gate.promise;
    }
    return tuple;
  }
}

describe("copyThread while a run holds the target thread", () => {
  it("is refused, and the run's thread stays one chain", async () => {
    const dbName = freshDbName("copy-during-run");
    const runner = new PausingSaver({ dbName });
    track(runner);
    const other = track(new IndexedDBSaver({ dbName }));
    await seed(other, "source", "copied");
    const run = runOnThread(
      slowChatGraph(runner),
      { messages: [new HumanMessage("mine")] },
      { configurable: { thread_id: "target" } },
      { saver: runner },
    );
    await runner.read.promise;
    const copy = await other.copyThread("source", "target").then(
      () => "copied",
      (error: unknown) => String(error),
    );
    runner.gate.resolve();
    await run;
    expect(copy).toMatch(/running/);
    const report = await historyReport(other, "target");
    expect(report.problem).toBeUndefined();
    expect(report.checkpoints).toBe(3); // input, loop, agent: the run's own, nothing copied beside it
  });
});

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
import { defaultLockManager, type RunLock, type RunLockManager, type RunLockOptions } from "./locks.js";
import { importThread } from "../portable/index.js";
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

/**
 * Seeds thread "source", starts a run on "target" (through `locks` when
 * given) and, while it holds the thread with nothing written yet, calls
 * `write` from another saver on the database; then lets the run finish.
 * What `write` came to, and the target's history.
 */
async function writeDuringRun(
  write: (other: IndexedDBSaver) => Promise<unknown>,
  locks?: RunLockManager,
): Promise<{ outcome: string; report: Awaited<ReturnType<typeof historyReport>> }> {
  const dbName = freshDbName("copy-during-run");
  const runner = new PausingSaver({ dbName });
  track(runner);
  const other = track(new IndexedDBSaver({ dbName }));
  await seed(other, "source", "copied");
  const run = runOnThread(
    slowChatGraph(runner),
    { messages: [new HumanMessage("mine")] },
    { configurable: { thread_id: "target" } },
    { saver: runner, ...(locks && { locks }) },
  );
  await runner.read.promise;
  const outcome = await write(other).then(
    () => "written",
    (error: unknown) => String(error),
  );
  runner.gate.resolve();
  await run;
  return { outcome, report: await historyReport(other, "target") };
}

describe("copyThread while a run holds the target thread", () => {
  it("is refused, and the run's thread stays one chain", async () => {
    const { outcome, report } = await writeDuringRun((other) => other.copyThread("source", "target"));
    expect(outcome).toMatch(/running/);
    expect(report.problem).toBeUndefined();
    expect(report.checkpoints).toBe(3); // input, loop, agent: the run's own, nothing copied beside it
  });
});

/**
 * A lock manager of the app's own (as `runOnThread`'s `locks` option takes):
 * here the default one under other names, so that a lock it holds is
 * invisible to anyone asking the default manager.
 */
class OwnLocks implements RunLockManager {
  readonly #inner = defaultLockManager();
  /** How many requests it was asked. */
  asked = 0;

  request<T>(name: string, options: RunLockOptions, callback: (lock: RunLock | null) => Promise<T>): Promise<T> {
    this.asked++;
    return this.#inner.request(`own:${name}`, options, callback);
  }

  async query(): Promise<{ held: string[]; pending: string[] }> {
    const { held, pending } = await this.#inner.query();
    const own = (names: string[]) => names.flatMap((n) => (n.startsWith("own:") ? [n.slice(4)] : []));
    return { held: own(held), pending: own(pending) };
  }
}

describe("copyThread and importThread while a run holds the target thread through custom locks", () => {
  for (const how of ["copyThread", "importThread"] as const) {
    it(`${how} is refused, and the run's thread stays one chain`, async () => {
      const { outcome, report } = await writeDuringRun(
        async (other) =>
          how === "copyThread"
            ? other.copyThread("source", "target")
            : importThread(other, await other.exportThread("source", { as: "bytes" }), { targetThreadId: "target" }),
        new OwnLocks(),
      );
      // Before: the custom locks were not asked, so the copy or import landed under the run.
      expect(outcome).toMatch(/running/);
      expect(report.problem).toBeUndefined();
      expect(report.checkpoints).toBe(3);
    });
  }
});

describe("the custom lock managers a copy asks", () => {
  it("no longer asks a manager once its runs have ended (an app making one per run)", async () => {
    const dbName = freshDbName("copy-after-run");
    const saver = track(new IndexedDBSaver({ dbName }));
    await seed(saver, "source", "copied");
    const locks = new OwnLocks();
    await runOnThread(
      slowChatGraph(saver),
      { messages: [new HumanMessage("mine")] },
      { configurable: { thread_id: "ran" } },
      { saver, locks },
    );
    locks.asked = 0;
    await saver.copyThread("source", "copy");
    // Before: every manager a run was ever given was kept for the realm's life, and asked at each copy.
    expect(locks.asked).toBe(0);
  });
});

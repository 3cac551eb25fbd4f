/**
 * importThread against a run of runOnThread on the same thread in another
 * tab (two savers on one database; in Node the in-process lock stand-in, in
 * Chromium Web Locks): an import must not interleave with the run, or the
 * run's late checkpoint lands on top of the imported thread.
 */
import { Annotation, START, StateGraph } from "@langchain/langgraph/web";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { runOnThread, isThreadRunning } from "../runs/coordinator.js";
import { ThreadBusyError } from "../runs/errors.js";
import { ThreadImportError, exportThread, importThread } from "./index.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

/** A graph whose one node waits for `gate` before it logs `word`. */
function gatedGraph(saver: IndexedDBSaver, gate: Promise<void>, entered: () => void) {
  return new StateGraph(State)
    .addNode("work", async (state: typeof State.State) => {
      entered();
      await gate;
      return { log: [`done after ${state.log.join(",")}`] };
    })
    .addEdge(START, "work")
    .compile({ checkpointer: saver });
}

/** A one-node graph that logs its input at once. */
function quickGraph(saver: IndexedDBSaver) {
  return new StateGraph(State)
    .addNode("work", () => ({ log: ["quick"] }))
    .addEdge(START, "work")
    .compile({ checkpointer: saver });
}

const config = { configurable: { thread_id: "t" } };

describe("importThread beside a run of runOnThread in another tab", () => {
  it("a replace while the thread runs elsewhere is refused, and the run's checkpoints stay one chain", async () => {
    const dbName = freshDbName("import-runs");
    const [tabA, tabB] = [track(new IndexedDBSaver({ dbName })), track(new IndexedDBSaver({ dbName }))];
    // The file: another conversation, exported from a database of its own.
    const other = track(new IndexedDBSaver({ dbName: freshDbName("import-runs-src") }));
    await quickGraph(other).invoke({ log: ["imported"] }, config);
    const file = await exportThread(other, "t", { as: "bytes" });

    // Tab A: a first turn, then a second whose node waits.
    await quickGraph(tabA).invoke({ log: ["first"] }, config);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let entered!: () => void;
    const inNode = new Promise<void>((resolve) => (entered = resolve));
    const run = runOnThread(gatedGraph(tabA, gate, entered), { log: ["second"] }, config, { saver: tabA });
    await inNode;
    expect(await isThreadRunning("t", { dbName })).toBe(true);

    // Tab B replaces the thread while A's node still works.
    const imported = await importThread(tabB, file, { ifExists: "replace" }).then(
      () => undefined,
      (error: unknown) => error,
    );
    open();
    await run;

    expect(imported).toBeInstanceOf(ThreadImportError);
    expect((imported as ThreadImportError).message).toMatch(/is running .*Nothing was changed/);
    // A's run ended on its own chain: the latest checkpoint's parents reach the first turn.
    const latest = await tabB.getTuple(config);
    expect(latest?.checkpoint.channel_values.log).toEqual([
      "first",
      "quick",
      "second",
      "done after first,quick,second",
    ]);
    const ids = new Set<string>();
    for await (const tuple of tabB.list(config)) ids.add(tuple.config.configurable!.checkpoint_id as string);
    for await (const tuple of tabB.list(config)) {
      const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
      if (parent !== undefined) expect(ids.has(parent)).toBe(true);
    }
  });

  it("a run started while an import replaces the thread waits for it, and runs on the imported thread", async () => {
    const dbName = freshDbName("import-runs-order");
    const [tabA, tabB] = [track(new IndexedDBSaver({ dbName })), track(new IndexedDBSaver({ dbName }))];
    const other = track(new IndexedDBSaver({ dbName: freshDbName("import-runs-src") }));
    await quickGraph(other).invoke({ log: ["imported"] }, config);
    const file = await exportThread(other, "t", { as: "bytes" });
    await quickGraph(tabA).invoke({ log: ["first"] }, config);

    // The import holds the thread from its first put on: a "reject" run is refused, an "enqueue" one waits.
    let queued: Promise<unknown> | undefined;
    let refused: unknown;
    await importThread(tabB, file, {
      ifExists: "replace",
      onProgress: ({ checkpoints }) => {
        if (checkpoints !== 1 || queued) return;
        queued = runOnThread(quickGraph(tabA), { log: ["after"] }, config, { saver: tabA, multitask: "enqueue" });
        void runOnThread(quickGraph(tabA), { log: ["x"] }, config, { saver: tabA }).catch((e: unknown) => {
          refused = e;
        });
      },
    });
    await queued;
    expect(refused).toBeInstanceOf(ThreadBusyError);
    const latest = await tabA.getTuple(config);
    expect(latest?.checkpoint.channel_values.log).toEqual(["imported", "quick", "after", "quick"]);
  });
});

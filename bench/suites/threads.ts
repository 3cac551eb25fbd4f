/**
 * Thread lifecycle figures, each at a large and a small database in the same
 * run: listThreads({limit: 20}) with 2,000 threads vs 20, and with threads of
 * 600 checkpoints vs 1 (the design contract: it costs what its page asks), and
 * deleteForRuns of one run among 10,000 checkpoints vs 100.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { IndexedDBSaver } from "../../src/index.js";
import { alternately, deleteDatabase, ms, msPerCall, row, type BenchRow, type Suite } from "../harness.js";

const SUITE = "threads";

/** `threads` threads of `perThread` checkpoints; every checkpoint its own run id. */
async function filled(label: string, threads: number, perThread: number) {
  const dbName = `bench-${label}-${Date.now()}`;
  const saver = new IndexedDBSaver({ dbName });
  for (let t = 0; t < threads; t++) {
    let config: RunnableConfig = { configurable: { thread_id: `thread-${t}`, checkpoint_ns: "" } };
    for (let c = 0; c < perThread; c++) {
      const versions = { value: saver.getNextVersion(c) };
      config = await saver.put(
        { ...config, metadata: { run_id: `run-${t}-${c}` } },
        { ...emptyCheckpoint(), id: uuid6(c), channel_values: { value: c }, channel_versions: versions },
        { source: "loop", step: c, parents: {} } as CheckpointMetadata,
        versions,
      );
    }
  }
  return { saver, done: async () => (await saver.close(), await deleteDatabase(dbName)) };
}

/** Ms per listThreads page of 20, counted and with `count: false`, in alternating rounds. */
async function listing(threads: number, perThread = 1) {
  const { saver, done } = await filled(`list-${threads}-${perThread}`, threads, perThread);
  const page = (count: boolean) => async () => {
    for await (const _ of saver.listThreads({ limit: 20, count })) void _;
  };
  const [counted, uncounted] = await alternately(page(true), page(false), { perRound: 10, rounds: 5, warmup: 5 });
  await done();
  return { counted, uncounted };
}

async function deletingRuns(threads: number, perThread: number) {
  const { saver, done } = await filled(`runs-${threads}`, threads, perThread);
  let next = 0;
  // Each call deletes a different single-checkpoint run, newest threads first.
  const time = await msPerCall(
    () => saver.deleteForRuns([`run-${threads - 1 - (next % threads)}-${Math.floor(next++ / threads) % perThread}`]),
    {
      perRound: 10,
      rounds: 3,
      warmup: 2,
    },
  );
  await done();
  return time;
}

/** The threads suite. */
export const threadsSuite: Suite = {
  name: SUITE,
  async run(): Promise<BenchRow[]> {
    const large = await listing(2000);
    const small = await listing(20);
    const longThreads = await listing(20, 600);
    const runsLarge = await deletingRuns(2000, 5);
    const runsSmall = await deletingRuns(20, 5);
    return [
      row(SUITE, "listThreads limit 20, 2,000 vs 20 threads", large.counted, small.counted, "ours at 20 threads", ms, {
        max: 1.5,
      }),
      row(
        SUITE,
        "listThreads limit 20, threads of 600 vs 1 checkpoints",
        longThreads.counted,
        small.counted,
        "ours, 1 each",
        ms,
        { max: 1.5 },
      ),
      row(
        SUITE,
        "listThreads limit 20, count: false, threads of 600 vs 1",
        longThreads.uncounted,
        small.uncounted,
        "ours, 1 each",
        ms,
        { max: 1.5 },
      ),
      row(SUITE, "deleteForRuns, 10,000 vs 100 checkpoints", runsLarge, runsSmall, "ours at 100", ms, { max: 1.5 }),
    ];
  },
};

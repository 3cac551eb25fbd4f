/**
 * What the row format 1 golden files (saver-plain-format1.json and
 * saver-encrypted-format1.json) add to the shared golden scenario: a thread
 * with checkpoints removed by `deleteForRuns` (so the dump holds `removed`
 * records in `meta`), and its reads.
 */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { checkpointId, collect, comparable, cp, type ReadableSaver, type Tagged, type WritableSaver } from "./shared.js";

/** The thread `deleteForRuns` removed a run of. */
export const FORMAT1_RUN_THREAD = "t-runs";

/** The run-scoped thread: run-r1 stays (a checkpoint and a pending write), run-r2's two checkpoints are removed. */
export async function writeRunsThread(saver: WritableSaver & { deleteForRuns(runIds: string[], options?: { threadId?: string }): Promise<void> }): Promise<void> {
  const thread = FORMAT1_RUN_THREAD;
  const at = (n: number) => ({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(n) } });
  const meta = (step: number, run: string) => ({ source: "loop", step, parents: {}, run_id: run }) as CheckpointMetadata;
  await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, cp(40, { n: 1 }, { n: 1 }), meta(-1, "run-r1"), { n: 1 });
  await saver.putWrites(at(40), [["n", 2]], "task-r1", "~__pregel_pull, r1");
  await saver.put(at(40), cp(41, { n: 2 }, { n: 2 }), meta(0, "run-r2"), { n: 2 });
  await saver.put(at(41), cp(42, { n: 3 }, { n: 3 }), meta(1, "run-r2"), { n: 3 });
  await saver.deleteForRuns(["run-r2"], { threadId: thread });
}

/** The reads of the run-scoped thread, in comparable form. */
export async function readFormat1Extras(saver: ReadableSaver): Promise<Record<string, Tagged>> {
  const config = { configurable: { thread_id: FORMAT1_RUN_THREAD } };
  return {
    [`latest:${FORMAT1_RUN_THREAD}`]: comparable(await saver.getTuple(config)),
    [`list:${FORMAT1_RUN_THREAD}`]: comparable(await collect(saver.list(config))),
  };
}

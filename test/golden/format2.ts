/**
 * What the row format 2 golden files (saver-plain-format2.json and
 * saver-encrypted-format2.json) hold beyond the size thread of
 * format1-sizes.ts: thread {@link INLINE_THREAD}, whose first checkpoint's
 * run is removed while its child still names the small values that
 * checkpoint held inline (they move to blob rows), plus a child on top.
 */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { IndexedDBSaver } from "../../src/saver/index.js";
import { readSizesThread } from "./format1-sizes.js";
import { checkpointId, collect, comparable, cp, type Tagged } from "./shared.js";

/** The thread whose removed run held values inline that its kept child names. */
export const INLINE_THREAD = "t-inline";

/** Writes thread {@link INLINE_THREAD} through `saver`. */
export async function writeInlineThread(saver: IndexedDBSaver): Promise<void> {
  const thread = INLINE_THREAD;
  const at = (n: number) => ({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(n) } });
  const meta = (step: number, run: string) => ({ source: "loop", step, parents: {}, run_id: run }) as CheckpointMetadata;
  const values = { x: "kept after its row went", y: 1, z: { nested: [1, 2, 3] } };
  const versions = { x: 1, y: 1, z: 1 };
  await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, cp(60, values, versions), meta(-1, "run-a"), versions);
  await saver.put(at(60), cp(61, { ...values, y: 2 }, { ...versions, y: 2 }), meta(0, "run-b"), { y: 2 });
  await saver.putWrites(at(61), [["y", 3]], "task-b", "~__pregel_pull, b");
  await saver.put(at(61), cp(62, { ...values, y: 3 }, { ...versions, y: 3 }), meta(1, "run-b"), { y: 3 });
  // 60's row goes; x and z, which it held inline, stay for 61 and 62.
  await saver.deleteForRuns(["run-a"], { threadId: thread });
}

/** Every answer about the format 2 goldens' threads, in comparable form. */
export async function readFormat2(saver: IndexedDBSaver): Promise<Record<string, Tagged>> {
  const thread = INLINE_THREAD;
  return {
    ...(await readSizesThread(saver)),
    "inline:latest": comparable(await saver.getTuple({ configurable: { thread_id: thread } })),
    "inline:list": comparable(await collect(saver.list({ configurable: { thread_id: thread } }))),
    "inline:by-id:61": comparable(await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(61) } })),
    "inline:delta-history": comparable(await saver.getDeltaChannelHistory({ config: { configurable: { thread_id: thread } }, channels: ["y", "x"] })),
  };
}

/**
 * What the schema version 5 golden files (saver-plain-schema5.json and
 * saver-encrypted-schema5.json) hold: thread {@link ABSENT_THREAD}, whose
 * checkpoints have channel versions without a stored value, listed in their
 * rows (`absent_keys`): introduced without a value, carried over from the
 * parent, and on a fork; plus a pending write.
 */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { IndexedDBSaver } from "../../src/saver/index.js";
import { checkpointId, collect, comparable, cp, type Tagged } from "./shared.js";

/** The thread whose rows list versions without a value. */
export const ABSENT_THREAD = "t-absent";

/**
 * The channels each checkpoint's row lists, by checkpoint number, as
 * written. 73 forks from 70, which the saver did not put last: it does not
 * know 70's list without reading it, so it carries nothing over (listing too
 * few only costs reads).
 */
export const ABSENT_LISTS: Record<number, string[]> = { 70: ["b", "c"], 71: ["b"], 72: ["b", "c"], 73: [] };

/** Writes thread {@link ABSENT_THREAD} through `saver`. */
export async function writeAbsentThread(saver: IndexedDBSaver): Promise<void> {
  const thread = ABSENT_THREAD;
  const at = (n: number) => ({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(n) } });
  const meta = (step: number) => ({ source: "loop", step, parents: {}, run_id: "run-absent" }) as CheckpointMetadata;
  // b and c have versions and no value (a trigger channel consumed, say).
  await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, cp(70, { a: "a0" }, { a: 1, b: 1, c: 1 }), meta(-1), { a: 1, b: 1, c: 1 });
  await saver.put(at(70), cp(71, { a: "a1", c: "c now" }, { a: 2, b: 1, c: 2 }), meta(0), { a: 2, c: 2 });
  await saver.putWrites(at(71), [["a", "pending"]], "task-a", "~__pregel_pull, a");
  await saver.put(at(71), cp(72, { a: "a2" }, { a: 3, b: 1, c: 3 }), meta(1), { a: 3, c: 3 });
  // A fork from 70: b gets a value, c carried over without one.
  await saver.put(at(70), cp(73, { a: "fork", b: "b on the fork" }, { a: 4, b: 2, c: 1 }), meta(1), { a: 4, b: 2 });
}

/** Every answer about {@link ABSENT_THREAD}, in comparable form. */
export async function readAbsentThread(saver: IndexedDBSaver): Promise<Record<string, Tagged>> {
  const thread = ABSENT_THREAD;
  const byId = (n: number) => saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(n) } });
  return {
    "absent:latest": comparable(await saver.getTuple({ configurable: { thread_id: thread } })),
    "absent:list": comparable(await collect(saver.list({ configurable: { thread_id: thread } }))),
    "absent:by-id:70": comparable(await byId(70)),
    "absent:by-id:71": comparable(await byId(71)),
    "absent:by-id:72": comparable(await byId(72)),
  };
}

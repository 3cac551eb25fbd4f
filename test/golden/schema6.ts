/**
 * What the schema version 6 golden files (saver-plain-schema6.json and
 * saver-encrypted-schema6.json) hold: thread {@link CARRIED_THREAD}, whose
 * later checkpoints name values their ancestors hold inline (row format 2,
 * found through `by_value`): carried over one and several steps, in a
 * subgraph namespace, on a fork, and after the run of the row holding some
 * of them was removed (those values moved to blob rows); plus a value too
 * large to be inline and a pending write. Written before schema step 7, so
 * every row holding values lists them in `inline_keys`.
 */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { IndexedDBSaver } from "../../src/saver/index.js";
import { checkpointId, collect, comparable, cp, type Tagged } from "./shared.js";

/** The thread whose checkpoints name values their ancestors hold inline. */
export const CARRIED_THREAD = "t-carried";

/** Writes thread {@link CARRIED_THREAD} through `saver`. */
export async function writeCarriedThread(saver: IndexedDBSaver): Promise<void> {
  const thread = CARRIED_THREAD;
  const at = (n: number, ns = "") => ({ configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: checkpointId(n) } });
  const root = (ns = "") => ({ configurable: { thread_id: thread, checkpoint_ns: ns } });
  const meta = (step: number, run: string) => ({ source: "loop", step, parents: {}, run_id: run }) as CheckpointMetadata;
  const big = "B".repeat(3000);
  const v80 = { a: "a0", b: "b0", c: { deep: [1, 2] } };
  // 80 holds a, b, c inline; 81 changes a; 82 changes b and adds a large d; 83 changes nothing.
  await saver.put(root(), cp(80, v80, { a: 1, b: 1, c: 1 }), meta(-1, "run-first"), { a: 1, b: 1, c: 1 });
  await saver.put(at(80), cp(81, { ...v80, a: "a1" }, { a: 2, b: 1, c: 1 }), meta(0, "run-main"), { a: 2 });
  await saver.putWrites(at(81), [["b", "b2"]], "task-b", "~__pregel_pull, b");
  await saver.put(at(81), cp(82, { ...v80, a: "a1", b: "b2", d: big }, { a: 2, b: 2, c: 1, d: 2 }), meta(1, "run-main"), { b: 2, d: 2 });
  await saver.put(at(82), cp(83, { ...v80, a: "a1", b: "b2", d: big }, { a: 2, b: 2, c: 1, d: 2 }), meta(2, "run-main"), {});
  // A fork from 81: c changes, a and b carried from 81 and 80.
  await saver.put(at(81), cp(84, { ...v80, a: "a1", c: "fork" }, { a: 2, b: 1, c: 3 }), meta(1, "run-fork"), { c: 3 });
  // A subgraph namespace: its values inline in its first row, carried by its second.
  await saver.put(root("sub"), cp(85, { s: "s0", t: "t0" }, { s: 1, t: 1 }), meta(0, "run-main"), { s: 1, t: 1 });
  await saver.put(at(85, "sub"), cp(86, { s: "s1", t: "t0" }, { s: 2, t: 1 }), meta(1, "run-main"), { s: 2 });
  // 80's row goes; b and c, which it held inline and 81-84 name, move to blob rows.
  await saver.deleteForRuns(["run-first"], { threadId: thread });
}

/** Every answer about {@link CARRIED_THREAD}, in comparable form. */
export async function readCarriedThread(saver: IndexedDBSaver): Promise<Record<string, Tagged>> {
  const thread = CARRIED_THREAD;
  const byId = (n: number, ns = "") => saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: checkpointId(n) } });
  const out: Record<string, Tagged> = {
    "carried:latest": comparable(await saver.getTuple({ configurable: { thread_id: thread } })),
    "carried:list": comparable(await collect(saver.list({ configurable: { thread_id: thread } }))),
    "carried:sub:latest": comparable(await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "sub" } })),
    "carried:sub:by-id:85": comparable(await byId(85, "sub")),
    "carried:delta-history": comparable(await saver.getDeltaChannelHistory({ config: { configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(83) } }, channels: ["b", "a"] })),
  };
  for (const n of [81, 82, 83, 84]) out[`carried:by-id:${n}`] = comparable(await byId(n));
  return out;
}

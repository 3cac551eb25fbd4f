/**
 * What the row format 1 size golden files (saver-plain-format1-sizes.json and
 * saver-encrypted-format1-sizes.json) hold: one thread whose channel values
 * sit on both sides of any inline threshold a later row format may pick
 * (1 KiB to 12 KiB; the shared scenario's values are all under 2 KiB), a
 * large value shared by checkpoints that did not change it (one blob, named
 * by several rows), a subgraph namespace, large pending writes, a fork, and
 * a run removed by `deleteForRuns` whose large value goes while the one its
 * kept ancestors share stays. A later format that inlines small values must
 * read these blobs forever, and count a shared blob right when it deletes.
 */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { IndexedDBSaver } from "../../src/saver/index.js";
import { checkpointId, collect, comparable, cp, type Tagged } from "./shared.js";

/** The thread of the size goldens. */
export const SIZES_THREAD = "t-sizes";

/** Its subgraph namespace. */
export const SIZES_NS = "child:1f0c0000-0000-6000-8000-00000000s050";

/** `length` characters of text that does not compress to nothing (a seeded pattern: the golden is deterministic). */
export function sizedText(length: number, seed: number): string {
  let x = seed;
  let out = "";
  while (out.length < length) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out += String.fromCharCode(33 + (x % 90));
  }
  return out;
}

/** Writes thread {@link SIZES_THREAD} through `saver`. */
export async function writeSizesThread(saver: IndexedDBSaver): Promise<void> {
  const thread = SIZES_THREAD;
  const at = (n: number, ns = "") => ({ configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: checkpointId(n) } });
  const meta = (step: number, run: string) => ({ source: "loop", step, parents: {}, run_id: run }) as CheckpointMetadata;
  const big = sizedText(12 * 1024, 1);
  const values = { k1: sizedText(1000, 2), k2: sizedText(2048, 3), k2plus: sizedText(2100, 4), k4: sizedText(4096, 5), k8: sizedText(8192, 6), big, small: { n: 1 } };
  const versions = { k1: 1, k2: 1, k2plus: 1, k4: 1, k8: 1, big: 1, small: 1 };
  // 50: every value new.
  await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, cp(50, values, versions), meta(-1, "run-s1"), versions);
  await saver.putWrites(at(50), [["big", sizedText(9000, 7)], ["small", { n: 2 }]], "task-s1", "~__pregel_pull, s1");
  // 51: only `small` changes; every other blob is shared with 50.
  await saver.put(at(50), cp(51, { ...values, small: { n: 2 } }, { ...versions, small: 2 }), meta(0, "run-s1"), { small: 2 });
  // A subgraph checkpoint under 51 with a large value and a small one.
  const sub = { sub_big: sizedText(6 * 1024, 8), sub_small: "s" };
  await saver.put({ configurable: { thread_id: thread, checkpoint_ns: SIZES_NS } }, cp(52, sub, { sub_big: 1, sub_small: 1 }), meta(1, "run-s1"), { sub_big: 1, sub_small: 1 });
  // 53, 54: run-s2 replaces `big` (53) and keeps it (54); removed below, with its big value.
  await saver.put(at(51), cp(53, { ...values, big: sizedText(10 * 1024, 9), small: { n: 2 } }, { ...versions, big: 2, small: 2 }), meta(1, "run-s2"), { big: 2 });
  await saver.put(at(53), cp(54, { ...values, big: sizedText(10 * 1024, 9), small: { n: 3 } }, { ...versions, big: 2, small: 3 }), meta(2, "run-s2"), { small: 3 });
  // 55: a fork from 51 that changes `k4` only, in run-s3 (kept).
  await saver.put(at(51), cp(55, { ...values, k4: sizedText(4096, 10), small: { n: 2 } }, { ...versions, k4: 2, small: 2 }), meta(1, "run-s3"), { k4: 2 });
  await saver.putWrites(at(55), [["k8", sizedText(8192, 11)]], "task-s3", "~__pregel_pull, s3");
  await saver.deleteForRuns(["run-s2"], { threadId: thread });
}

/** Every answer about thread {@link SIZES_THREAD}, in comparable form. */
export async function readSizesThread(saver: IndexedDBSaver): Promise<Record<string, Tagged>> {
  const thread = SIZES_THREAD;
  const out: Record<string, Tagged> = {
    latest: comparable(await saver.getTuple({ configurable: { thread_id: thread } })),
    "latest-subgraph": comparable(await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: SIZES_NS } })),
    list: comparable(await collect(saver.list({ configurable: { thread_id: thread } }))),
    "list-root-limit-2": comparable(await collect(saver.list({ configurable: { thread_id: thread, checkpoint_ns: "" } }, { limit: 2 }))),
  };
  for (const n of [50, 53, 55]) {
    out[`by-id:${n}`] = comparable(await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId(n) } }));
  }
  out["delta-history"] = comparable(await saver.getDeltaChannelHistory({ config: { configurable: { thread_id: thread, checkpoint_ns: "" } }, channels: ["big", "k8"] }));
  return out;
}

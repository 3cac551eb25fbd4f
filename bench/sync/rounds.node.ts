/**
 * What a sync round costs to find its changes at 10,000 threads (issue 23:
 * "a round costs what changed"), in Node on fake-indexeddb, no server: the
 * part of a round that reads the device's own database.
 *
 * Baseline, in the same run on the same database: a round with no scan
 * record, which reads every thread as every round did before schema
 * version 4 (src/sync/changes.ts). Figures: a round with nothing new, and a
 * round after one turn on one thread, each as medians of 5 and the
 * checkpoints read.
 *
 * Size: SYNC_BENCH_ROUND_THREADS (10,000).
 */
import { expect, it } from "vitest";
import { IDBFactory } from "fake-indexeddb";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { rawAccessOf } from "../../src/saver/raw-access.js";
import { pendingChanges } from "../../src/sync/engine.js";
import { SCAN_SLACK_MS, recordScan } from "../../src/sync/changes.js";
import { chat } from "../../test/support/chat-graph.js";
import { issue, storePut } from "../../src/idb/requests.js";
import { prefixBounds } from "../../src/saver/keys.js";

const THREADS = Number(process.env.SYNC_BENCH_ROUND_THREADS ?? 10_000);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

it(`a round's scan at ${THREADS} threads`, async () => {
  const saver = new IndexedDBSaver({ dbName: "bench-rounds", indexedDB: new IDBFactory() });
  const access = rawAccessOf(saver)!;
  await chat(saver, "seed", ["hello"]);
  // Copies of the seed's rows under other thread ids, many threads a transaction (plain rows bind no thread).
  const seed = await access.db.read(
    ["checkpoints", "blobs", "writes"],
    async (tx) => {
      const { lower, upper } = prefixBounds("seed");
      const range = access.db.ranges.bound(lower, upper);
      return {
        checkpoints: await tx.objectStore("checkpoints").getAll(range),
        blobs: await tx.objectStore("blobs").getAll(range),
        writes: await tx.objectStore("writes").getAll(range),
      };
    },
    "read the seed",
  );
  for (let start = 0; start < THREADS; start += 500) {
    await access.write(
      ["checkpoints", "blobs", "writes"],
      async (tx) => {
        for (let i = start; i < Math.min(THREADS, start + 500); i++) {
          const thread_id = `t${i}`;
          for (const row of seed.checkpoints) issue(storePut(tx.objectStore("checkpoints"), { ...row, thread_id }));
          for (const row of seed.blobs) issue(storePut(tx.objectStore("blobs"), { ...row, thread_id }));
          for (const row of seed.writes) issue(storePut(tx.objectStore("writes"), { ...row, thread_id }));
        }
      },
      "write the threads",
    );
  }
  const perThread = seed.checkpoints.length;
  // Past the slack, so the threads just written are not "recent".
  await new Promise((resolve) => setTimeout(resolve, SCAN_SLACK_MS + 100));

  const time = async (scope: string, rounds: number) => {
    const ms: number[] = [];
    let read = 0;
    for (let i = 0; i < rounds; i++) {
      const start = performance.now();
      read = (await pendingChanges(access, scope)).read;
      ms.push(performance.now() - start);
    }
    return { ms: median(ms), read };
  };
  // No record: every thread (the baseline); then a record made now.
  const full = await time("full-scan", 3);
  await recordScan(access, "incremental", undefined, { since: Date.now(), retry: [] }, {});
  const none = await time("incremental", 5);
  await chat(saver, "t5", ["again"]);
  const turn = await time("incremental", 5);
  expect(full.read).toBe((THREADS + 1) * perThread);
  expect(none.read).toBe(0);
  expect(turn.read).toBeGreaterThan(0);
  expect(turn.read).toBeLessThan(10);

  const row = (figure: string, ours: { ms: number; read: number }) =>
    console.log(
      `bench:sync  ${figure.padEnd(40)}  ${`${ours.ms.toFixed(1)} ms (${ours.read} read)`.padStart(22)}  ${`${full.ms.toFixed(0)} ms (${full.read} read)`.padStart(24)}  ${(ours.ms / full.ms).toFixed(4)}x`,
    );
  console.log(
    `bench:sync  ${`round's scan at ${THREADS} threads`.padEnd(40)}  ${"since the last round".padStart(22)}  ${"every thread (before)".padStart(24)}  ratio`,
  );
  row("nothing new", none);
  row("one turn on one thread", turn);
  await saver.close();
}, 600_000);

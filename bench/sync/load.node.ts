/**
 * Sync load bench (Node, loopback, bounded): N clients × M threads × K turns
 * through the sync server on the real PostgreSQL, against the same data moved
 * by the official savers alone (read from each IndexedDBSaver, `put` and
 * `putWrites` into the official PostgresSaver) as the baseline.
 *
 * Figures:
 * - incremental: each client adds one turn to each of its threads and syncs,
 *   K times: p50/p99 of one sync round (push + pull) vs. one baseline copy of
 *   the same new checkpoints; heap before and after (memory flat);
 * - bulk: N clients push everything at once, N fresh devices pull everything:
 *   checkpoints/s vs. `copyThreads` into PostgresSaver.
 *
 * Size: SYNC_BENCH_CLIENTS (4), SYNC_BENCH_THREADS (4), SYNC_BENCH_TURNS (4).
 * Run by `npm run bench` (or `npm run bench -- sync`) through bench/sync/vitest.config.ts.
 */
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { writeFileSync } from "node:fs";
import pg from "pg";
import { expect, it } from "vitest";
import { chat } from "../../test/support/chat-graph.js";
import { device, newUser, postgresUrl, startServer, type Device } from "../../test/support/sync/harness.js";
import { copyThreads } from "../../src/portable/index.js";

const N = Number(process.env.SYNC_BENCH_CLIENTS ?? 4);
const M = Number(process.env.SYNC_BENCH_THREADS ?? 4);
const K = Number(process.env.SYNC_BENCH_TURNS ?? 4);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

/** Copies the checkpoints of `threadId` newer than `after` (parent first) with put/putWrites: the baseline's unit of work. */
async function copyNew(
  from: BaseCheckpointSaver,
  to: BaseCheckpointSaver,
  threadId: string,
  targetThreadId: string,
  after: string,
): Promise<{ last: string; count: number }> {
  const tuples = [];
  for await (const tuple of from.list({ configurable: { thread_id: threadId } }))
    if (tuple.checkpoint.id > after) tuples.push(tuple);
  tuples.reverse();
  for (const tuple of tuples) {
    const ns = tuple.config.configurable?.checkpoint_ns ?? "";
    const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
    const config = {
      configurable: { thread_id: targetThreadId, checkpoint_ns: ns, ...(parent ? { checkpoint_id: parent } : {}) },
    };
    const saved = await to.put(config, tuple.checkpoint, tuple.metadata!, tuple.checkpoint.channel_versions);
    const byTask = new Map<string, [string, unknown][]>();
    for (const [task, channel, value] of tuple.pendingWrites ?? [])
      byTask.set(task, [...(byTask.get(task) ?? []), [channel, value]]);
    for (const [task, writes] of byTask) await to.putWrites(saved, writes, task);
  }
  return { last: tuples.at(-1)?.checkpoint.id ?? after, count: tuples.length };
}

it(`sync load: ${N} clients × ${M} threads × ${K} turns`, async () => {
  const { server, url } = await startServer();
  const pool = new pg.Pool({ connectionString: await postgresUrl(), max: N + 2 });
  const schema = `bench_${Date.now().toString(36)}`;
  const official = new PostgresSaver(pool as never, undefined, { schema });
  await official.setup();
  const rows: Record<string, string | number>[] = [];
  try {
    const users = Array.from({ length: N }, (_, i) => newUser(`bench${i}`));
    const clients: Device[] = users.map((u) => device(url, u.token));
    const threads = Array.from({ length: M }, (_, m) => `thread-${m}`);

    // Incremental: one turn per thread, then one sync round (timed), K times.
    const syncMs: number[] = [];
    const baselineMs: number[] = [];
    const copied = new Map<string, string>();
    let heapStart = 0;
    let moved = 0;
    for (let k = 0; k < K; k++) {
      await Promise.all(
        clients.map(async (client, c) => {
          for (const t of threads) await chat(client.saver, t, [`turn ${k} on ${t}`]);
          let start = performance.now();
          const round = await client.sync.syncNow();
          syncMs.push(performance.now() - start);
          moved += round.pushed;
          start = performance.now();
          for (const t of threads) {
            const key = `${c}/${t}`;
            const { last } = await copyNew(client.saver, official, t, `${users[c]!.user}-${t}`, copied.get(key) ?? "");
            copied.set(key, last);
          }
          baselineMs.push(performance.now() - start);
        }),
      );
      if (k === 0) heapStart = heapMb();
    }
    const heapEnd = heapMb();
    // Memory flat: rounds with nothing new to move (the data stays the same size), over and over,
    // through the same server and clients. What grows here is a leak, not data.
    const IDLE_ROUNDS = Number(process.env.SYNC_BENCH_IDLE_ROUNDS ?? 30);
    await Promise.all(clients.map((client) => client.sync.syncNow()));
    const idleStart = heapMb();
    for (let round = 0; round < IDLE_ROUNDS; round++) {
      await Promise.all(clients.map((client) => client.sync.syncNow()));
      if (process.env.SYNC_BENCH_TRACE && round % 10 === 9)
        console.log(`bench:sync  trace round ${round + 1}: ${heapMb().toFixed(2)} MB`);
    }
    const idleEnd = heapMb();
    rows.push(
      {
        figure: "sync round p50 (ms)",
        ours: percentile(syncMs, 50).toFixed(1),
        baseline: percentile(baselineMs, 50).toFixed(1),
      },
      {
        figure: "sync round p99 (ms)",
        ours: percentile(syncMs, 99).toFixed(1),
        baseline: percentile(baselineMs, 99).toFixed(1),
      },
      {
        figure: "heap after round 1 → K (MB, with the devices' data)",
        ours: `${heapStart.toFixed(1)} → ${heapEnd.toFixed(1)}`,
        baseline: "",
      },
      {
        figure: `heap over ${IDLE_ROUNDS} rounds, same data (MB)`,
        ours: `${idleStart.toFixed(1)} → ${idleEnd.toFixed(1)}`,
        baseline: "",
      },
    );

    // Bulk push: fresh users, everything written offline first, then all clients at once.
    const bulkUsers = Array.from({ length: N }, (_, i) => newUser(`bulk${i}`));
    const writers = bulkUsers.map((u) => device(url, u.token, { client: { batchSize: 128 } }));
    await Promise.all(
      writers.map(async (w) => {
        for (const t of threads)
          await chat(
            w.saver,
            t,
            Array.from({ length: K }, (_, k) => `bulk ${k}`),
          );
      }),
    );
    let start = performance.now();
    const pushed = (await Promise.all(writers.map((w) => w.sync.syncNow()))).reduce((n, r) => n + r.pushed, 0);
    const pushSeconds = (performance.now() - start) / 1000;
    const readers = bulkUsers.map((u) => device(url, u.token, { client: { pullLimit: 500 } }));
    start = performance.now();
    const pulled = (await Promise.all(readers.map((r) => r.sync.syncNow()))).reduce((n, r) => n + r.pulled, 0);
    const pullSeconds = (performance.now() - start) / 1000;
    expect(pulled).toBe(pushed);
    start = performance.now();
    await Promise.all(
      writers.map((w, i) =>
        copyThreads(w.saver, official, { threadIds: threads, mapThreadId: (t) => `${bulkUsers[i]!.user}-bulk-${t}` }),
      ),
    );
    const baselineSeconds = (performance.now() - start) / 1000;
    rows.push(
      {
        figure: `bulk push, ${pushed} checkpoints (cp/s)`,
        ours: (pushed / pushSeconds).toFixed(0),
        baseline: (pushed / baselineSeconds).toFixed(0),
      },
      {
        figure: `bulk pull, ${pulled} checkpoints (cp/s)`,
        ours: (pulled / pullSeconds).toFixed(0),
        baseline: (pushed / baselineSeconds).toFixed(0),
      },
      { figure: "incremental checkpoints moved", ours: moved, baseline: "" },
    );
    for (const d of [...clients, ...writers, ...readers]) {
      d.sync.close();
      await d.saver.close();
    }
  } finally {
    await server.close();
    await pool.query(`DROP SCHEMA "${schema}" CASCADE`).catch(() => undefined);
    await pool.end();
  }
  const table = rows.map(
    (r) =>
      `bench:sync  ${String(r.figure).padEnd(40)}  ${String(r.ours).padStart(14)}  ${String(r.baseline).padStart(10)}`,
  );
  const text = [
    `bench:sync  ${"figure".padEnd(40)}  ${"sync server".padStart(14)}  ${"PostgresSaver alone".padStart(10)}`,
    ...table,
  ].join("\n");
  console.log(`\n${text}\n`);
  if (process.env.SYNC_BENCH_OUT) writeFileSync(process.env.SYNC_BENCH_OUT, JSON.stringify(rows));
}, 300_000);

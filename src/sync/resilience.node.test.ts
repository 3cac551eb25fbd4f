/**
 * Sync under failure: connections cut at random bytes mid-batch (20+ times),
 * the server killed and restarted mid-sync, and two server processes' worth
 * of servers on one database serving both devices at once. Each ends with
 * both devices and the server holding exactly the same checkpoints: nothing
 * lost, nothing duplicated.
 */
import { afterAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { INTERRUPT, emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { chat } from "../../test/support/chat-graph.js";
import {
  checkpointIds,
  closeDevices,
  cuttingProxy,
  device,
  inspector,
  newUser,
  seeded,
  startServer,
  state,
  type Device,
} from "../../test/support/sync/harness.js";
import type { SyncServer } from "../sync-server.js";

let pool: pg.Pool | undefined;
const servers: SyncServer[] = [];

afterAll(async () => {
  for (const server of servers) await server.close().catch(() => undefined);
  await pool?.end();
}, 30_000);

/** What the server holds for a user: checkpoint keys and whether sequence numbers are unique. */
async function serverView(user: string) {
  pool ??= await inspector();
  const rows = await pool.query<{ key: string; writes: string }>(
    `SELECT c.checkpoint_ns || '|' || c.checkpoint_id AS key,
       (SELECT count(*) FROM lgsync_writes w WHERE w.user_id = c.user_id AND w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id) AS writes
     FROM lgsync_checkpoints c WHERE c.user_id = $1`,
    [user],
  );
  const seqs = await pool.query<{ n: string; d: string }>(
    "SELECT count(*) AS n, count(DISTINCT seq) AS d FROM lgsync_checkpoints WHERE user_id = $1",
    [user],
  );
  return { count: rows.rowCount ?? 0, uniqueSeq: seqs.rows[0]!.n === seqs.rows[0]!.d };
}

/** Retries a round until it succeeds (each failure is a cut mid-request). */
async function syncUntilDone(d: Device, attempts = 200): Promise<number> {
  for (let failures = 0; failures < attempts; failures++) {
    try {
      await d.sync.syncNow();
      return failures;
    } catch (error) {
      if (!(error as { retryable?: boolean }).retryable) throw error;
    }
  }
  throw new Error("sync never completed");
}

async function expectConverged(a: Device, b: Device, user: string, threads: string[]): Promise<void> {
  let total = 0;
  for (const t of threads) {
    const ids = await checkpointIds(a.saver, t);
    expect(new Set(ids).size).toBe(ids.length);
    expect(await checkpointIds(b.saver, t)).toEqual(ids);
    expect(await state(b.saver, t)).toEqual(await state(a.saver, t));
    total += ids.length;
  }
  const view = await serverView(user);
  expect(view.count).toBe(total);
  expect(view.uniqueSeq).toBe(true);
}

describe("sync under failure", () => {
  it("connections cut at random moments 20+ times: converges, nothing lost or duplicated", async () => {
    const { server, url } = await startServer();
    servers.push(server);
    const port = Number(new URL(url).port);
    const random = seeded(20261130);
    const proxy = await cuttingProxy(port, random);
    const { user, token } = newUser("cut");
    const small = { batchSize: 4, pullLimit: 5, timeoutMs: 5000 };
    const a = device(proxy.url, token, { client: small });
    const b = device(proxy.url, token, { client: small });
    const threads = ["c1", "c2", "c3"];
    for (const t of threads) await chat(a.saver, t, ["one", "two", "three"]);
    await chat(b.saver, "c2", ["b offline"]);

    let failures = 0;
    for (let round = 0; round < 20; round++) {
      // Both devices keep writing between cut-off rounds.
      if (round % 5 === 0) await chat(a.saver, threads[round % 3]!, [`more ${round}`]);
      if (round % 7 === 0) await chat(b.saver, threads[(round + 1) % 3]!, [`b more ${round}`]);
      for (const d of [a, b]) {
        try {
          await d.sync.syncNow();
        } catch (error) {
          expect((error as { retryable: boolean }).retryable).toBe(true);
          failures += 1;
        }
      }
    }
    expect(proxy.cuts.n).toBeGreaterThanOrEqual(20);
    expect(failures).toBeGreaterThanOrEqual(20);

    proxy.cutting.on = false;
    await syncUntilDone(a);
    await syncUntilDone(b);
    await syncUntilDone(a);
    await expectConverged(a, b, user, threads);
    for (const d of [a, b]) {
      d.sync.close();
      await d.saver.close();
    }
    await proxy.close();
  });

  it("the server killed and restarted mid-sync: converges", async () => {
    const first = await startServer();
    const port = Number(new URL(first.url).port);
    const { user, token } = newUser("restart");
    const a = device(first.url, token, { client: { batchSize: 2, pullLimit: 3, timeoutMs: 5000 } });
    const b = device(first.url, token, { client: { batchSize: 2, pullLimit: 3, timeoutMs: 5000 } });
    const threads = ["r1", "r2"];
    for (const t of threads) await chat(a.saver, t, ["a", "b", "c", "d"]);

    let current = first.server;
    let interrupted = 0;
    const random = seeded(7);
    for (let kill = 0; kill < 5; kill++) {
      const syncing = Promise.allSettled([a.sync.syncNow(), b.sync.syncNow()]);
      await new Promise((resolve) => setTimeout(resolve, 5 + random() * 40));
      // Kill: drop every open connection at once, then stop.
      current.app.server.closeAllConnections();
      await current.close();
      interrupted += (await syncing).filter((r) => r.status === "rejected").length;
      current = (await startServer({ port })).server;
    }
    servers.push(current);
    expect(interrupted).toBeGreaterThan(0);
    await syncUntilDone(a);
    await syncUntilDone(b);
    await syncUntilDone(a);
    await expectConverged(a, b, user, threads);
    for (const d of [a, b]) {
      d.sync.close();
      await d.saver.close();
    }
  });

  it("two servers on one database serve both devices at once: same result", async () => {
    const one = await startServer();
    const two = await startServer();
    servers.push(one.server, two.server);
    const { user, token } = newUser("two");
    const a = device(one.url, token, { client: { batchSize: 3 } });
    const b = device(two.url, token, { client: { batchSize: 3 } });
    const threads = ["s1", "s2", "s3"];
    await Promise.all([
      (async () => {
        for (let i = 0; i < 4; i++) {
          await chat(a.saver, threads[i % 3]!, [`a${i}`]);
          await a.sync.syncNow();
        }
      })(),
      (async () => {
        for (let i = 0; i < 4; i++) {
          await chat(b.saver, threads[(i + 1) % 3]!, [`b${i}`]);
          await b.sync.syncNow();
        }
      })(),
    ]);
    await a.sync.syncNow();
    await b.sync.syncNow();
    await a.sync.syncNow();
    await expectConverged(a, b, user, threads);
    for (const d of [a, b]) {
      d.sync.close();
      await d.saver.close();
    }
  });

  it("the server's database restored from a backup older than a device's cursor: the device sends and pulls again", async () => {
    const { url } = await startServer().then((started) => (servers.push(started.server), started));
    const { user, token } = newUser("restore");
    const a = device(url, token);
    const b = device(url, token);
    const c = device(url, token);
    try {
      await chat(a.saver, "mine", ["a", "b", "c"]);
      await a.sync.syncNow();
      // The operator restores PostgreSQL from a backup taken before this user's first push (or fails over
      // to a replica that had not caught up): the user's rows and sequence go back.
      pool ??= await inspector();
      for (const table of [
        "lgsync_checkpoints",
        "lgsync_blobs",
        "lgsync_writes",
        "lgsync_tombstones",
        "lgsync_removed",
      ])
        await pool.query(`DELETE FROM ${table} WHERE user_id = $1`, [user]);
      await pool.query("UPDATE lgsync_users SET seq = 0 WHERE user_id = $1", [user]);
      await chat(b.saver, "theirs", ["x"]);
      await b.sync.syncNow();
      // A's cursor is past the server's sequence now: A pulls B's thread and sends its own again.
      await a.sync.syncNow();
      expect(await state(a.saver, "theirs")).toEqual(await state(b.saver, "theirs"));
      await c.sync.syncNow();
      expect(await checkpointIds(c.saver, "mine")).toEqual(await checkpointIds(a.saver, "mine"));
      expect(await state(c.saver, "mine")).toEqual(await state(a.saver, "mine"));
    } finally {
      await closeDevices(a, b, c);
    }
  });

  it("the server's database restored from a backup: a pending __interrupt__ write is sent again with its checkpoint", async () => {
    const { url } = await startServer().then((started) => (servers.push(started.server), started));
    const { user, token } = newUser("restore-interrupt");
    const a = device(url, token);
    const c = device(url, token);
    try {
      const config = { configurable: { thread_id: "asked", checkpoint_ns: "" } };
      const stored = await a.saver.put(
        config,
        { ...emptyCheckpoint(), id: "1" },
        { source: "loop", step: 1, parents: {} },
        {},
      );
      await a.saver.putWrites(stored, [[INTERRUPT, "which colour?"]], "task");
      await a.sync.syncNow();
      pool ??= await inspector();
      for (const table of ["lgsync_checkpoints", "lgsync_blobs", "lgsync_writes"])
        await pool.query(`DELETE FROM ${table} WHERE user_id = $1`, [user]);
      await pool.query("UPDATE lgsync_users SET seq = 0 WHERE user_id = $1", [user]);
      await a.sync.syncNow();
      await c.sync.syncNow();
      const question = (await c.saver.getTuple(stored))?.pendingWrites?.map(([, channel, value]) => [channel, value]);
      expect(question).toEqual([[INTERRUPT, "which colour?"]]);
    } finally {
      await closeDevices(a, c);
    }
  });
});

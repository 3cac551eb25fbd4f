/**
 * A server starting on the database of a version before the thread order
 * index builds it concurrently, after its start committed: it serves at once
 * (pushes, and `/threads` in the same order without the index), one build
 * runs however many servers start, and an INVALID index an interrupted build
 * left is built again; a server closing mid-build stops it at once, fake
 * timers or not. A build is held by a transaction left open on the
 * checkpoints (the test sees the build wait on it), not by timing. Before,
 * the index was built inside the start's transaction: the start waited for
 * that transaction, and pushes waited for the start. In a database of its
 * own: a concurrent build waits out every transaction open in its database,
 * the other test files' too.
 */
import type pg from "pg";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { authenticate, newUser, wireCheckpoint } from "../../test/support/sync/harness.js";
import { schemaForFile } from "../../test/support/sync/own-schema.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody } from "../sync/protocol.js";
import type { ThreadsResponse } from "../sync/protocol.js";
import { setupSchema, setupTables } from "./schema.js";
import { createSyncServer, type SyncServer } from "./server.js";
import { UTF16_KEY_FUNCTION, utf16Key } from "./sql.js";
import { THREAD_ORDER_INDEX } from "./thread-order-index.js";

const schema = schemaForFile("thread_order", { ownDatabase: true });
let admin: pg.Pool;
const servers: { server: SyncServer; pool: pg.Pool }[] = [];

beforeAll(async () => {
  admin = await schema.pool(2);
  await setupSchema(admin);
}, 60_000);

// Each test's servers close after it: a server left running would build the next test's index.
afterEach(async () => {
  for (const { server, pool } of servers.splice(0)) {
    await server.close();
    await pool.end();
  }
}, 30_000);

/** A server on the schema, listening; closed after the file. */
async function startServer(settings?: string): Promise<{ server: SyncServer; url: string }> {
  // waitForDatabase: a start that cannot finish leaves the server answering 503, which the test sees.
  const pool = await schema.pool(4, settings);
  const server = await createSyncServer({ pool, authenticate, waitForDatabase: true });
  servers.push({ server, pool });
  return { server, url: await server.listen({ port: 0 }) };
}

/** The database as the version before left it: no thread order index, no key function. */
async function olderVersion(): Promise<void> {
  await admin.query(`DROP INDEX IF EXISTS ${THREAD_ORDER_INDEX}; DROP FUNCTION IF EXISTS ${UTF16_KEY_FUNCTION}(text)`);
}

/** A transaction writing to the checkpoints, left open: a concurrent build waits for it. */
async function holdBuilds(): Promise<pg.PoolClient> {
  const held = await (await schema.pool(1)).connect();
  await held.query("BEGIN");
  await held.query(
    `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, checkpoint_type, checkpoint,
       metadata_type, metadata, channel_versions, seq) VALUES ('holder', 't', '', '1', 'msgpack', '\\x80', 'msgpack', '\\x80', '{}', 1)`,
  );
  return held;
}

/** Polls `probe` until it gives something, failing after 20 s (a bound on failure, not what the test waits on). */
async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let tries = 0; tries < 400; tries++) {
    const found = await probe();
    if (found !== undefined) return found;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`Gave up waiting for ${what}.`);
}

/** The sessions building the index (or creating the schema that builds it) that wait on `held`. */
async function buildsWaitingOn(held: pg.PoolClient): Promise<number> {
  const pid = (await held.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  const { rows } = await admin.query<{ n: number }>(
    "SELECT count(*)::integer AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE $2",
    [pid, `%${THREAD_ORDER_INDEX}%`],
  );
  return rows[0]!.n;
}

/** The thread order index's state: undefined when absent. */
async function indexState(): Promise<{ valid: boolean; definition: string } | undefined> {
  const { rows } = await admin.query<{ valid: boolean; definition: string }>(
    "SELECT indisvalid AS valid, pg_get_indexdef(indexrelid) AS definition FROM pg_index WHERE indexrelid = to_regclass($1)",
    [THREAD_ORDER_INDEX],
  );
  return rows[0];
}

/**
 * {@link indexState} while a server may be dropping the index (a start drops an INVALID one before building
 * it again): `pg_get_indexdef` of an index dropped between the catalog's scan and the call fails with "cache
 * lookup failed" (XX000), which says only that it is not there now.
 */
async function indexStateInFlux(): Promise<{ valid: boolean; definition: string } | undefined> {
  try {
    return await indexState();
  } catch (error) {
    if ((error as { code?: string }).code === "XX000" && /cache lookup failed/.test(String(error))) return undefined;
    throw error;
  }
}

/** Waits until the index is there and valid; its definition. */
async function validIndex(): Promise<string> {
  return (await until("a valid thread order index", async () => {
    const state = await indexStateInFlux();
    return state?.valid ? state : undefined;
  }))!.definition;
}

/** `token`'s threads as `/threads` lists them, two a page. */
async function listed(url: string, token: string): Promise<string[]> {
  const threads: string[] = [];
  for (let after: string | undefined, page = 0; page === 0 || after !== undefined; page++) {
    const response = await fetch(
      `${url}/v1/threads?limit=2${after === undefined ? "" : `&after=${encodeURIComponent(after)}`}`,
      {
        headers: { authorization: `Bearer ${token}` },
      },
    );
    expect(response.status).toBe(200);
    const body = decodeBody(new Uint8Array(await response.arrayBuffer())) as unknown as ThreadsResponse;
    threads.push(...body.threads.map((thread) => thread.thread_id));
    after = body.next;
  }
  return threads;
}

/**
 * On the older version's database, a build held by a transaction left open
 * on the checkpoints: `start` (servers), then `body` once the build waits on
 * that transaction, which is rolled back after.
 */
async function whileBuildHeld<T>(
  start: () => Promise<T>,
  body: (started: T, held: pg.PoolClient) => Promise<void>,
): Promise<void> {
  await olderVersion();
  const held = await holdBuilds();
  try {
    const started = await start();
    await until("the build waiting on the open transaction", async () =>
      (await buildsWaitingOn(held)) === 1 ? true : undefined,
    );
    await body(started, held);
  } finally {
    await held.query("ROLLBACK");
    held.release();
  }
}

describe("sync server: the thread order index on a database of an older version", () => {
  it("is built while the server serves pushes and /threads, in the devices' order without it", async () => {
    await whileBuildHeld(startServer, async ({ url }, held) => {
      // Ids PostgreSQL's "C" order and the devices' (UTF-16 code units) put differently.
      const ids = ["b", "a\u{1F600}", "a\uE000", "A", "a"];
      const { token } = newUser("while-building");
      const pushed = await fetch(`${url}/v1/push`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
        body: encodeBody({
          v: SYNC_PROTOCOL_VERSION,
          checkpoints: ids.map((id) => wireCheckpoint(id)),
          deletes: [],
        }) as Uint8Array<ArrayBuffer>,
      });
      await pushed.arrayBuffer();
      // Before, the start waited for the open transaction, and the server answered 503.
      expect(pushed.status).toBe(200);
      const order = [...ids].sort();
      expect(await listed(url, token)).toEqual(order);
      // Still building: the push and the list did not wait for it.
      expect(await buildsWaitingOn(held)).toBe(1);
      expect((await indexState())?.valid).toBe(false);
      await held.query("ROLLBACK");
      expect(await validIndex()).toContain(utf16Key("thread_id"));
      expect(await listed(url, token)).toEqual(order);
    });
  }, 60_000);

  it("is built once by two servers starting at once", async () => {
    await whileBuildHeld(
      () => Promise.all([startServer(), startServer()]),
      async (started, held) => {
        // Before, both starts waited for the open transaction (one for the other): 503 until it ended.
        for (const { url } of started)
          await until("the server serving", async () => ((await fetch(`${url}/v1/health`)).ok ? true : undefined));
        await held.query("ROLLBACK");
        await validIndex();
        const { rows } = await admin.query<{ name: string; valid: boolean }>(
          `SELECT indexrelid::regclass::text AS name, indisvalid AS valid FROM pg_index
         WHERE indrelid = to_regclass('lgsync_checkpoints') AND indexprs IS NOT NULL`,
        );
        expect(rows).toEqual([{ name: THREAD_ORDER_INDEX, valid: true }]);
      },
    );
  }, 60_000);

  // Once its build took the pool's settings: with a lock_timeout (meant for requests), a build that waited
  // longer than it for an open transaction failed (55P03), left the index INVALID, and served without it.
  it("is built however long it waits, whatever lock_timeout and statement_timeout its pool sets", async () => {
    await whileBuildHeld(
      () => startServer("-c lock_timeout=300 -c statement_timeout=600"),
      async (_, held) => {
        // Past both timeouts: the build still waits.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        expect(await buildsWaitingOn(held)).toBe(1);
        await held.query("ROLLBACK");
        expect(await validIndex()).toContain(utf16Key("thread_id"));
      },
    );
  }, 60_000);

  it("is built again where an interrupted build left it INVALID", async () => {
    await admin.query(`DROP INDEX IF EXISTS ${THREAD_ORDER_INDEX}`);
    // A build interrupted (its process killed, say): cancelled while it waits on an open transaction.
    const held = await holdBuilds();
    const building = await (await schema.pool(1)).connect();
    try {
      const pid = (await building.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      const build = building
        .query(
          `CREATE INDEX CONCURRENTLY ${THREAD_ORDER_INDEX} ON lgsync_checkpoints (user_id, ${utf16Key("thread_id")})`,
        )
        .then(
          () => "built",
          (error: { code?: string }) => error.code,
        );
      await until("the build waiting on the open transaction", async () =>
        (await buildsWaitingOn(held)) === 1 ? true : undefined,
      );
      await admin.query("SELECT pg_cancel_backend($1)", [pid]);
      expect(await build).toBe("57014");
    } finally {
      await held.query("ROLLBACK");
      held.release();
      building.release();
    }
    expect((await indexState())?.valid).toBe(false);
    await startServer();
    // Before, the start found the index's name and left it INVALID: /threads read every checkpoint for ever.
    expect(await validIndex()).toContain(utf16Key("thread_id"));
  }, 60_000);

  it("is stopped by a server closing mid-build, under fake timers too, and built again at the next start", async () => {
    await whileBuildHeld(startServer, async ({ server }, held) => {
      // A test of the server's own timers closes it under fake timers: before, close() waited on a timer.
      vi.useFakeTimers();
      try {
        await server.close();
      } finally {
        vi.useRealTimers();
      }
      // Before (no cancel), the build's backend went on waiting on the open transaction.
      await until("no session building", async () => ((await buildsWaitingOn(held)) === 0 ? true : undefined));
    });
    // The build cut short leaves an INVALID index, which the next start builds again.
    expect((await indexState())?.valid).toBe(false);
    await startServer();
    expect(await validIndex()).toContain(utf16Key("thread_id"));
  }, 60_000);

  it("is built by the start itself where it creates the table: no concurrent build to wait for", async () => {
    await admin.query("DROP TABLE lgsync_checkpoints CASCADE");
    // A transaction open elsewhere in the database, which a concurrent build would wait out.
    const held = await (await schema.pool(1)).connect();
    try {
      await held.query("BEGIN");
      await held.query("SELECT txid_current()");
      await expect(setupTables(admin)).resolves.toBe(false);
      expect((await indexState())?.valid).toBe(true);
    } finally {
      await held.query("ROLLBACK");
      held.release();
    }
  }, 60_000);
});

/**
 * The sync server while its database restarts: it never exits, answers 503
 * (retryable) while PostgreSQL is down, and serves again once it is back.
 * On a PostgreSQL of its own, since this test stops and restarts it.
 */
import { once } from "node:events";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate, newUser } from "../../test/support/sync/harness.js";
import { startPostgres, type RunningPostgres } from "../../test/support/postgres.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody } from "../sync/protocol.js";
import { createSyncServer, type SyncServer } from "../sync-server.js";
import { transaction } from "./sql.js";
import { runSchemaStatements } from "./schema.js";
import { startHoldingProxy } from "../../test/support/sync/holding-proxy.js";
import { Reaper } from "../../test/support/reaper.js";
import { ServerProcess, bundleForNode, type ServerBundle } from "../../test/support/sync/convergence-server.js";
import { freePort } from "../../test/support/ports.js";

let postgres: RunningPostgres;
let server: SyncServer;
let url: string;
let pool: pg.Pool;

beforeAll(async () => {
  postgres = await startPostgres();
  pool = new pg.Pool({ connectionString: postgres.url, max: 4 });
  server = await createSyncServer({ pool, authenticate });
  url = await server.listen({ port: 0 });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await pool?.end().catch(() => undefined);
  await postgres?.stop();
}, 30_000);

async function hello(token: string, base = url) {
  const response = await fetch(`${base}/v1/hello`, { headers: { authorization: `Bearer ${token}` } });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const msgpack = (response.headers.get("content-type") ?? "").startsWith(SYNC_MEDIA_TYPE);
  const body = (msgpack ? decodeBody(bytes) : JSON.parse(new TextDecoder().decode(bytes))) as Record<string, unknown>;
  return { status: response.status, body, retryAfter: response.headers.get("retry-after") };
}

/** A pull of the user of `token`, as {@link hello} answers it. */
async function pull(token: string, base = url) {
  const response = await fetch(`${base}/v1/pull?since=0`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, retryAfter: response.headers.get("retry-after") };
}

/** Runs `body`, and returns the errors nobody caught meanwhile (a pg client's `error` event with no listener). */
async function uncaughtDuring(body: () => Promise<void>): Promise<unknown[]> {
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  process.on("uncaughtException", onUncaught);
  try {
    await body();
  } finally {
    process.off("uncaughtException", onUncaught);
  }
  return uncaught;
}

describe("sync server: its database restarting", () => {
  it("a connection dropped between two queries of a transaction rejects that transaction, and the process lives on", async () => {
    const other = new pg.Client({ connectionString: postgres.url });
    await other.connect();
    try {
      const failed = transaction(pool, "BEGIN", async (client) => {
        const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
        const ended = new Promise((resolve) => client.once("end", resolve));
        await other.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
        // No query is running while the connection goes: pg emits `error` on the client itself.
        await ended;
        await client.query("SELECT 1");
      });
      await expect(failed).rejects.toThrow();
      // The pool hands out a working connection next, not the broken one.
      expect(await transaction(pool, "BEGIN", async (client) => (await client.query("SELECT 1 AS one")).rows)).toEqual([
        { one: 1 },
      ]);
    } finally {
      await other.end();
    }
  });

  it("a connection the database ends as it passes to a request waiting for one: that request runs on a new one, and the process lives on", async () => {
    // pg reads a query's last answer and the termination notice after it in one chunk: the finished request's
    // connection went to the waiting one before pg read the notice, which it emitted with nobody listening.
    // The waiting request then finds it dead at its BEGIN, before anything of it ran: it runs again on a new
    // connection (the proxy holds only those open when it began to), where it answered 503.
    const proxy = await startHoldingProxy(postgres.url);
    const narrow = new pg.Pool({ connectionString: proxy.url, max: 1, application_name: "restart-narrow" });
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    const proxied = await createSyncServer({ pool: narrow, authenticate });
    try {
      const base = await proxied.listen({ port: 0 });
      const [first, second] = [newUser("first"), newUser("second")];
      expect((await hello(first.token, base)).status).toBe(200);
      const { rows } = await admin.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'restart-narrow' AND query LIKE '%has_data%'",
      );
      expect(rows).toHaveLength(1);
      const uncaught = await uncaughtDuring(async () => {
        proxy.hold();
        const answered = hello(first.token, base);
        await proxy.held; // its backend has answered (and waits for the next query)
        // A pull waits for the connection: a transaction, which listens to its connection once it has it.
        const waiting = pull(second.token, base);
        while (narrow.waitingCount === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        await admin.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
        expect((await answered).status).toBe(200);
        expect(await waiting).toEqual({ status: 200, retryAfter: null });
      });
      expect(uncaught).toEqual([]);
      proxy.hold(false);
      expect((await pull(second.token, base)).status).toBe(200);
    } finally {
      await proxied.close();
      await narrow.end().catch(() => undefined);
      await admin.end();
      await proxy.close();
    }
  });

  it("a connection dropped during the schema's setup rejects it, and the process lives on", async () => {
    // A start that waits for its database runs it again after such a failure: a restart meanwhile must not end it.
    // On a pool of its own, which no server has listened to.
    const own = new pg.Pool({ connectionString: postgres.url, max: 1 });
    try {
      const uncaught = await uncaughtDuring(async () => {
        const removed = once(own, "remove");
        await expect(runSchemaStatements(own, ["SELECT pg_terminate_backend(pg_backend_pid())"])).rejects.toThrow(
          /terminating connection/,
        );
        await removed; // the broken connection is gone: pg has read its close
      });
      expect(uncaught).toEqual([]);
    } finally {
      await own.end();
    }
  });

  it("a request that waits longer than its pool's connectionTimeoutMillis for a connection answers 503", async () => {
    // A deployer's pool may bound the wait (connections hang while a database host is down): before, pg-pool's
    // "timeout exceeded when trying to connect" answered 500, where one connecting too slowly answered 503.
    const narrow = new pg.Pool({ connectionString: postgres.url, max: 1 });
    const bounded = await createSyncServer({ pool: narrow, authenticate });
    try {
      const base = await bounded.listen({ port: 0 });
      const { token } = newUser("bounded");
      const taken = await narrow.connect();
      // The bound from here on, once the pool's one connection is made: pg-pool bounds a new connection's
      // connect by it too, which a loaded machine can take longer than 200 ms to finish (then the server's
      // start, or this connect, failed: not the wait under test). pg-pool reads it at each connect.
      narrow.options.connectionTimeoutMillis = 200;
      try {
        expect(await hello(token, base)).toMatchObject({
          status: 503,
          retryAfter: "1",
          body: { error: { code: "unavailable" } },
        });
      } finally {
        taken.release();
      }
      expect((await hello(token, base)).status).toBe(200);
    } finally {
      await bounded.close();
      await narrow.end();
    }
  });

  it("answers 503 with Retry-After while PostgreSQL is down, and serves again once it is back", async () => {
    const { token } = newUser("restart");
    expect((await hello(token)).status).toBe(200);
    await postgres.kill();
    const down = await hello(token);
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ error: { code: "unavailable" } });
    expect(down.retryAfter).toBe("1");
    await postgres.restart();
    const up = await hello(token);
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ v: SYNC_PROTOCOL_VERSION });
    // A push goes through on the new connections.
    const response = await fetch(`${url}/v1/push`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
      body: encodeBody({ v: SYNC_PROTOCOL_VERSION, checkpoints: [], deletes: [] }) as Uint8Array<ArrayBuffer>,
    });
    expect(response.status).toBe(200);
  });
});

describe("sync server: started while its database is down", () => {
  it("createSyncServer rejects by default, and with waitForDatabase answers 503 until PostgreSQL is up", async () => {
    await postgres.kill();
    try {
      await expect(createSyncServer({ connectionString: postgres.url, authenticate })).rejects.toThrow(/ECONNREFUSED/);
      const waits: string[] = [];
      const waiting = await createSyncServer({
        connectionString: postgres.url,
        authenticate,
        waitForDatabase: true,
        onDatabaseWait: (error) => waits.push(String((error as Error & { code?: string }).code)),
      });
      try {
        const base = await waiting.listen({ port: 0 });
        const { token } = newUser("waiting");
        const down = await hello(token, base);
        expect(down).toMatchObject({ status: 503, retryAfter: "1", body: { error: { code: "unavailable" } } });
        // Health too: a balancer should send requests to a process that can serve them.
        expect((await fetch(`${base}/v1/health`)).status).toBe(503);
        expect(waits.length).toBeGreaterThan(0);
        expect(waits[0]).toBe("ECONNREFUSED");
        await postgres.restart();
        await waiting.ready;
        expect(await hello(token, base)).toMatchObject({ status: 200, body: { v: SYNC_PROTOCOL_VERSION } });
      } finally {
        await waiting.close();
      }
    } finally {
      await postgres.restart().catch(() => undefined);
    }
  }, 30_000);

  describe("the CLI", () => {
    let bundle: ServerBundle;
    let reaper: Reaper;
    beforeAll(async () => {
      reaper = new Reaper();
      bundle = await bundleForNode("src/sync-server/cli.ts", "restart-cli");
    }, 60_000);
    afterAll(async () => {
      bundle?.remove();
      await reaper?.close();
    });

    it("started before PostgreSQL, it listens, answers 503, never exits, and serves once the database is up", async () => {
      await postgres.kill();
      const server = new ServerProcess(await freePort(), bundle, postgres.url, "restart", reaper);
      try {
        await server.start(["cli-user"]);
        const tryingAgain = /cannot reach the database \(.*ECONNREFUSED.*\); trying again/;
        await server.waitFor(tryingAgain, 5_000);
        const base = `http://127.0.0.1:${server.port}`;
        expect((await hello("token-of-cli-user", base)).status).toBe(503);
        // Several attempts later it is still there: two more "trying again" lines (the attempts 200 and 600 ms
        // after the first, the ones a fixed 1 s wait used to span); waitFor rejects if it exits before.
        const attempts = (n: number) => new RegExp(Array(n).fill(tryingAgain.source).join("[\\s\\S]*"));
        await server.waitFor(attempts(3), 5_000);
        expect(server.alive).toBe(true);
        await postgres.restart();
        await server.ready(10_000);
        expect(await hello("token-of-cli-user", base)).toMatchObject({
          status: 200,
          body: { v: SYNC_PROTOCOL_VERSION },
        });
        expect(await server.stop()).toBe(0);
      } finally {
        await server.kill();
        await postgres.restart().catch(() => undefined);
      }
    }, 40_000);

    it("logs a request it fails (500) with the reason, without SYNC_LOG", async () => {
      const server = new ServerProcess(await freePort(), bundle, postgres.url, "restart-errors", reaper);
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      try {
        await server.start(["cli-user"]);
        await server.ready(10_000);
        const base = `http://127.0.0.1:${server.port}`;
        expect((await hello("token-of-cli-user", base)).status).toBe(200);
        // Before, the operator saw nothing of it: the CLI's logger was off unless SYNC_LOG=1.
        await admin.query("ALTER TABLE lgsync_users RENAME TO lgsync_users_gone");
        expect((await hello("token-of-cli-user", base)).status).toBe(500);
        await server.waitFor(/lgsync_users.*does not exist/, 5_000);
        expect(await server.stop()).toBe(0);
      } finally {
        await admin.query("ALTER TABLE IF EXISTS lgsync_users_gone RENAME TO lgsync_users").catch(() => undefined);
        await admin.end();
        await server.kill();
      }
    }, 30_000);

    it("a failure waiting cannot mend (a database that does not exist) ends it with the reason", async () => {
      const noDatabase = postgres.url.replace(/\/[^/?]*(\?|$)/, "/no_such_database$1");
      const server = new ServerProcess(await freePort(), bundle, noDatabase, "restart-nodb", reaper);
      // It may exit before or after it says it listens: its output says why either way.
      await server.start(["cli-user"]).catch(() => undefined);
      await server.waitFor(/cannot set up the database: .*no_such_database[\s\S]*\[exited: 1\]/, 20_000);
      expect(server.alive).toBe(false);
    }, 30_000);
  });
});

/**
 * What a real outage of the database produces, as the sync server tells it
 * from a request's own failure: a lost connection is a 503 with
 * Retry-After (the request was not applied: send it again), anything else
 * a 500. Each error is produced for real where the throwaway PostgreSQL
 * and this machine can (a refused port, an unreachable host, an idle
 * session timed out, a backend terminated); the codes no local server
 * produces on demand (a crash, a database starting) are checked by shape.
 * Then a pooled connection the database dropped unheard (a restart whose
 * notice the network lost: a proxy stalls it) is found dead at the
 * request's first statement: the request runs again on a new connection
 * and answers 200, where it answered 503.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate, newUser, postgresUrl, pushThread } from "../../test/support/sync/harness.js";
import { startHoldingProxy, type HoldingProxy } from "../../test/support/sync/holding-proxy.js";
import { createSyncServer, type SyncServer } from "./server.js";
import { isConnectionLost } from "./sql.js";

/** A promise that never settles: the work whose failure comes as the client's `error` event. */
const never = new Promise<never>(() => undefined);

/** The error `work` rejects with, or that `client` emits first. */
async function failure(client: pg.Client, work: () => Promise<unknown>): Promise<Error & { code?: string }> {
  return new Promise((resolve, reject) => {
    client.once("error", resolve);
    work().then(() => reject(new Error("It did not fail.")), resolve);
  });
}

describe("sync server: the failures a database outage produces are lost connections (503)", () => {
  it("a refused port: ECONNREFUSED", async () => {
    const url = new URL(await postgresUrl());
    url.port = "1";
    const client = new pg.Client({ connectionString: url.href });
    const error = await failure(client, () => client.connect());
    expect(error.code).toBe("ECONNREFUSED");
    expect(isConnectionLost(error)).toBe(true);
  });

  it("a host with no route to it (a network down): EHOSTUNREACH, ENETUNREACH, or pg's connect timeout", async () => {
    // The documentation prefix, routed nowhere: the kernel refuses the route at once, or nothing answers.
    const client = new pg.Client({
      connectionString: "postgresql://x@[2001:db8::1]:1/x",
      // Short: where nothing answers, the test waits it out (2 s before).
      connectionTimeoutMillis: 500,
    });
    const error = await failure(client, () => client.connect());
    expect(error.code ?? error.message).toMatch(/^(EHOSTUNREACH|ENETUNREACH|timeout expired)$/);
    // Before, each of the three was a 500, as if the request were wrong.
    expect(isConnectionLost(error)).toBe(true);
  });

  it("a session ended by idle_session_timeout: 57P05", async () => {
    const client = new pg.Client({ connectionString: await postgresUrl(), options: "-c idle_session_timeout=100" });
    // Listened to before the connect: a client read late (a loaded machine) gets the session's start and its
    // end in one read, and pg emits the end before the connect's promise lets a listener be added after it.
    const error = await failure(client, () => client.connect().then(() => never));
    expect(error.code).toBe("57P05");
    // Before, a 500.
    expect(isConnectionLost(error)).toBe(true);
    await client.end().catch(() => undefined);
  });

  it("a backend terminated (a restart, a failover): 57P01", async () => {
    const admin = new pg.Client({ connectionString: await postgresUrl() });
    const client = new pg.Client({ connectionString: await postgresUrl() });
    await Promise.all([admin.connect(), client.connect()]);
    const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    const error = await failure(client, () => admin.query("SELECT pg_terminate_backend($1)", [pid]).then(() => never));
    expect(error.code).toBe("57P01");
    expect(isConnectionLost(error)).toBe(true);
    await Promise.all([admin.end(), client.end().catch(() => undefined)]);
  });

  it("the codes no local server produces on demand, by their shape", () => {
    const node = (code: string, message: string) => Object.assign(new Error(message), { code, syscall: "connect" });
    const postgres = (code: string, message: string) => Object.assign(new Error(message), { code, severity: "FATAL" });
    for (const error of [
      node("ETIMEDOUT", "connect ETIMEDOUT 10.0.0.7:5432"),
      node("EHOSTUNREACH", "connect EHOSTUNREACH 10.0.0.7:5432"),
      node("ENETUNREACH", "connect ENETUNREACH 10.0.0.7:5432"),
      node("EAI_AGAIN", "getaddrinfo EAI_AGAIN db.internal"),
      new Error("timeout expired"),
      postgres("57P02", "terminating connection because of crash of another server process"),
      postgres("57P03", "the database system is starting up"),
      postgres("57P05", "terminating connection due to idle-session timeout"),
    ])
      expect([error.message, isConnectionLost(error)]).toEqual([error.message, true]);
    // What is wrong with the request or the setup stays a 500: sent again, it fails again.
    for (const error of [
      postgres("57P04", 'database "sync" does not exist'),
      postgres("42P01", 'relation "lgsync_users" does not exist'),
      postgres("28P01", 'password authentication failed for user "sync"'),
      node("ENOTFOUND", "getaddrinfo ENOTFOUND db.internall"),
    ])
      expect([error.message, isConnectionLost(error)]).toEqual([error.message, false]);
  });
});

describe("sync server: a pooled connection the database dropped unheard", () => {
  let proxy: HoldingProxy;
  let admin: pg.Pool;
  let server: SyncServer;
  let url: string;
  const name = `lost-${Date.now().toString(36)}`;

  beforeAll(async () => {
    proxy = await startHoldingProxy(await postgresUrl());
    admin = new pg.Pool({ connectionString: await postgresUrl(), max: 1 });
    const pool = new pg.Pool({ connectionString: proxy.url, max: 1, application_name: name });
    server = await createSyncServer({ pool, authenticate });
    url = await server.listen({ port: 0 });
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    await proxy?.close();
    await admin?.end();
  }, 30_000);

  /** Ends the server's sessions as a restart does, its connections not told (the proxy stalls them). */
  async function dropUnheard(): Promise<void> {
    proxy.stall();
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [name]);
    for (let tries = 0; ; tries++) {
      const { rows } = await admin.query("SELECT 1 FROM pg_stat_activity WHERE application_name = $1", [name]);
      if (rows.length === 0) return;
      if (tries === 400) throw new Error("The server's sessions did not end.");
      await new Promise((done) => setTimeout(done, 25));
    }
  }

  async function push(token: string, thread: string): Promise<number> {
    const response = await pushThread(url, token, thread);
    await response.arrayBuffer();
    return response.status;
  }

  async function threads(token: string, app?: string): Promise<number> {
    const query = app === undefined ? "" : `&app=${app}`;
    const response = await fetch(`${url}/v1/threads?limit=5${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await response.arrayBuffer();
    return response.status;
  }

  it("a push runs again on a new connection: 200, stored once", async () => {
    const { user, token } = newUser("unheard-push");
    expect(await push(token, "before")).toBe(200);
    await dropUnheard();
    // Before, its BEGIN met the database's farewell (57P01): 503, though nothing of it had run.
    expect(await push(token, "after")).toBe(200);
    const { rows } = await admin.query("SELECT thread_id FROM lgsync_checkpoints WHERE user_id = $1 ORDER BY 1", [
      user,
    ]);
    expect(rows).toEqual([{ thread_id: "after" }, { thread_id: "before" }]);
  }, 30_000);

  it("a read runs again on a new connection: 200", async () => {
    const { token } = newUser("unheard-read");
    expect(await threads(token)).toBe(200);
    await dropUnheard();
    // Before, 503.
    expect(await threads(token)).toBe(200);
  }, 30_000);

  it("an app's first request, its claim of the user's own space, runs again on a new connection: 200", async () => {
    const { user, token } = newUser("unheard-claim");
    expect(await threads(token)).toBe(200); // no app: no claim, but the connection has answered
    await dropUnheard();
    // Before, the claim's INSERT (a plain pool.query) met the database's farewell (57P01): 503, though
    // a second run of it changes nothing.
    expect(await threads(token, "notes")).toBe(200);
    const { rows } = await admin.query("SELECT app FROM lgsync_users WHERE user_id = $1", [user]);
    expect(rows).toEqual([{ app: "notes" }]);
  }, 30_000);
});

/**
 * The sync server while its database restarts: it never exits, answers 503
 * (retryable) while PostgreSQL is down, and serves again once it is back.
 * On a PostgreSQL of its own, since this test stops and restarts it.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate, newUser } from "../../test/support/sync/harness.js";
import { startPostgres, type RunningPostgres } from "../../test/support/postgres.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody } from "../sync/protocol.js";
import { createSyncServer, type SyncServer } from "../sync-server.js";
import { transaction } from "./store.js";

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

async function hello(token: string) {
  const response = await fetch(`${url}/v1/hello`, { headers: { authorization: `Bearer ${token}` } });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const msgpack = (response.headers.get("content-type") ?? "").startsWith(SYNC_MEDIA_TYPE);
  const body = (msgpack ? decodeBody(bytes) : JSON.parse(new TextDecoder().decode(bytes))) as Record<string, unknown>;
  return { status: response.status, body, retryAfter: response.headers.get("retry-after") };
}

describe("sync server: its database restarting", () => {
  it("a connection dropped between two queries of a transaction rejects that transaction, and the process lives on", async () => {
    const other = new pg.Client({ connectionString: postgres.url });
    await other.connect();
    try {
      const failed = transaction(pool, "BEGIN", async (client) => {
        const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
        await other.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
        // No query is running while the connection goes: pg emits `error` on the client itself.
        await new Promise((resolve) => setTimeout(resolve, 300));
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

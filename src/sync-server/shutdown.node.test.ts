/**
 * A server closing while its database accepts connections and then never
 * answers (a hung backend, a network black hole: a proxy that falls silent)
 * in the middle of what makes a close wait: a concurrent index build (whose
 * stop cancels it from a new connection), the live-push listener, a pooled
 * connection, and a push in flight on it. `close()` ends within its bound
 * and answers that push 503; the CLI, sent SIGTERM, exits 0 by itself,
 * nothing left open to hold the process. Before, `close()` waited for ever
 * on the cancel's connection (pg's `connectionTimeoutMillis` is no bound by
 * default), then on the goodbyes of the other connections, and the CLI
 * never exited. In a database of its own: a concurrent build waits out
 * every transaction open in its database.
 */
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { authenticate, newUser, pushThread } from "../../test/support/sync/harness.js";
import { schemaForFile } from "../../test/support/sync/own-schema.js";
import { bundleServer, ServerProcess, type ServerBundle } from "../../test/support/sync/convergence-server.js";
import { freePort } from "../../test/support/ports.js";
import { startSilentProxy, type SilentProxy } from "../../test/support/sync/silent-proxy.js";
import { Reaper } from "../../test/support/reaper.js";
import { decodeBody } from "../sync/protocol.js";
import { setupSchema } from "./schema.js";
import { createSyncServer } from "./server.js";
import { CLOSE_CUT_MS, CLOSE_GRACE_MS } from "./shutdown.js";
import { THREAD_ORDER_INDEX } from "./thread-order-index.js";

const schema = schemaForFile("shutdown", { ownDatabase: true });
/** What a close may take beyond its bound on a loaded machine. */
const SLACK_MS = 3000;
let admin: pg.Pool;
let held: pg.PoolClient;
let proxy: SilentProxy | undefined;

beforeAll(async () => {
  admin = await schema.pool(2);
  await setupSchema(admin);
}, 60_000);

afterEach(async () => {
  await held?.query("ROLLBACK").catch(() => undefined);
  held?.release();
  await proxy?.close();
  proxy = undefined;
}, 30_000);

/** The database, the server's way to it through a proxy that can fall silent, and a build that will wait. */
async function silenceable(): Promise<string> {
  await admin.query(`DROP INDEX IF EXISTS ${THREAD_ORDER_INDEX}`);
  held = await (await schema.pool(1)).connect();
  await held.query("BEGIN");
  await held.query(
    `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, checkpoint_type, checkpoint,
       metadata_type, metadata, channel_versions, seq) VALUES ('holder', 't', '', '1', 'msgpack', '\\x80', 'msgpack', '\\x80', '{}', 1)`,
  );
  const own = new URL((admin.options as { connectionString: string }).connectionString);
  proxy = await startSilentProxy(own.href);
  const url = new URL(proxy.url);
  url.searchParams.set("options", `-c search_path=${schema.name}`);
  return url.href;
}

/** Waits until the server's index build waits on the held transaction. */
async function buildWaiting(): Promise<void> {
  const pid = (await held.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  for (let tries = 0; tries < 400; tries++) {
    const { rows } = await admin.query<{ n: number }>(
      "SELECT count(*)::integer AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE $2",
      [pid, `%${THREAD_ORDER_INDEX}%`],
    );
    if (rows[0]!.n > 0) return;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error("The index build never waited on the held transaction.");
}

/** A push of one thread; its status and error code. */
async function push(base: string, token: string, thread: string): Promise<{ status: number; code?: string }> {
  const response = await pushThread(base, token, thread);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (response.status === 200) return { status: 200 };
  const body = (response.headers.get("content-type") ?? "").includes("json")
    ? (JSON.parse(new TextDecoder().decode(bytes)) as { error: { code: string } })
    : (decodeBody(bytes) as unknown as { error: { code: string } });
  return { status: response.status, code: body.error.code };
}

describe("sync server: closing while its database never answers", () => {
  it("close() ends within its bound and answers the push in flight 503", async () => {
    const server = await createSyncServer({ connectionString: await silenceable(), authenticate });
    const base = await server.listen({ port: 0 });
    const { token } = newUser("close-silent");
    expect((await push(base, token, "before")).status).toBe(200);
    await buildWaiting();
    proxy!.silence();
    const inFlight = push(base, token, "during");
    inFlight.catch(() => undefined); // read below; a cut before then is a failure seen there
    await proxy!.heard; // the push's statement went out and will never be answered
    const started = performance.now();
    const closed = await Promise.race([
      server.close().then(() => "closed"),
      new Promise((done) => setTimeout(done, 20_000, "still waiting")),
    ]);
    // Before, "still waiting": on the build's cancel connection, which a silent database never lets in.
    expect(closed).toBe("closed");
    expect(performance.now() - started).toBeLessThan(CLOSE_GRACE_MS + CLOSE_CUT_MS + SLACK_MS);
    expect(await inFlight).toEqual({ status: 503, code: "unavailable" });
  }, 60_000);

  describe("the CLI", () => {
    let bundle: ServerBundle;
    const reaper = new Reaper();
    let child: ServerProcess | undefined;

    beforeAll(async () => {
      bundle = await bundleServer();
    }, 120_000);

    afterAll(async () => {
      await child?.kill();
      await reaper.close();
      bundle?.remove();
    }, 30_000);

    it("exits 0 by itself on SIGTERM within the bound, the push in flight answered 503", async () => {
      const { user, token } = newUser("cli-silent");
      child = new ServerProcess(await freePort(), bundle, await silenceable(), "shutdown", reaper);
      await child.start([user]);
      await child.ready();
      const base = `http://127.0.0.1:${child.port}`;
      expect((await push(base, token, "before")).status).toBe(200);
      await buildWaiting();
      proxy!.silence();
      const inFlight = push(base, token, "during");
      inFlight.catch(() => undefined);
      inFlight.catch(() => undefined); // read below; a cut before then is a failure seen there
      await proxy!.heard;
      const started = performance.now();
      const code = await Promise.race([child.stop(), new Promise((done) => setTimeout(done, 20_000, "still running"))]);
      // Before, "still running": close() never ended, so neither did the process.
      expect(code).toBe(0);
      // Nothing left open (a database socket half closed, waiting on the silent peer) kept the process alive.
      expect(child.output).not.toContain("still held the process open");
      expect(performance.now() - started).toBeLessThan(CLOSE_GRACE_MS + CLOSE_CUT_MS + SLACK_MS);
      expect(await inFlight).toEqual({ status: 503, code: "unavailable" });
    }, 120_000);
  });
});

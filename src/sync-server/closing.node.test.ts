/**
 * What a closing sync server answers and reports. A request in flight when
 * `close()` begins is answered with its connection closed (a device's agent
 * reuses its sockets), so the close need not cut it; one that reaches the
 * routes during `close()` is answered in the protocol's error shape, 503
 * `unavailable` with Retry-After, as every other refusal of the server; and
 * a failure of the close's own final work reaches the server's logger (the
 * one the CLI prints), while close() still resolves within its bound and
 * ends the pool all the same. Real server on loopback, real PostgreSQL.
 */
import { Agent, request } from "node:http";
import { connect, type Socket } from "node:net";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { authenticate, newUser, postgresUrl } from "../../test/support/sync/harness.js";
import { countCuts } from "../../test/support/sync/close-cuts.js";
import { SYNC_PATH } from "../sync/protocol.js";
import { createSyncServer } from "./server.js";
import { CLOSE_CUT_MS, CLOSE_GRACE_MS } from "./shutdown.js";

/** What a close may take beyond its bound on a loaded machine. */
const SLACK_MS = 3000;

/** An answer as a client reads it: status, headers, body, and the socket it came on. */
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  socket: Socket;
}

/** A GET of `path` through `agent`. */
function get(agent: Agent, base: string, path: string, token: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      const socket = res.socket; // detached once the answer ends
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, socket }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("sync server: closing", () => {
  it("a request in flight when close() begins is answered with its connection closed; one after it gets the protocol's 503", async () => {
    const { token } = newUser("close-keepalive");
    const { token: slowToken } = newUser("close-slow");
    // The first request waits in `authenticate` until let go: its connection is busy when close() begins, so
    // Fastify's close leaves it open (it ends only the idle ones), and the agent has the next request queued on it.
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    let entered!: () => void;
    const inAuthenticate = new Promise<void>((resolve) => (entered = resolve));
    const server = await createSyncServer({
      connectionString: await postgresUrl(),
      authenticate: async (t) => {
        if (t === slowToken) {
          entered();
          await held;
        }
        return authenticate(t);
      },
    });
    // The HTTP connections the close had to cut, after its grace and the answers' cut: none, since the answer
    // closes its own. Before, its connection was kept alive after the answer, and every close that raced a
    // request (a readiness probe, a long poll answered at once) waited for that cut, at its 3 s bound.
    const cuts = countCuts(server.app.server);
    const base = await server.listen({ port: 0 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = get(agent, base, `${SYNC_PATH}/hello`, slowToken);
      await inAuthenticate;
      const closed = server.close();
      const second = get(agent, base, `${SYNC_PATH}/hello`, token).then(
        (answer) => answer.status,
        (error: NodeJS.ErrnoException) => error.code,
      );
      // A request that reaches the routes during close() (one raced onto a connection, or pipelined) gets the
      // protocol's 503; before 195e43e, Fastify's own {"error":"Service Unavailable",...} on such a connection.
      const raced = await server.app.inject({
        url: `${SYNC_PATH}/hello`,
        headers: { authorization: `Bearer ${token}` },
      });
      expect(raced.statusCode).toBe(503);
      expect(raced.headers["retry-after"]).toBe("1");
      expect(raced.json()).toEqual({ error: { code: "unavailable", message: expect.any(String) } });
      letGo();
      const before = await first;
      expect(before.status).toBe(200);
      expect(before.headers.connection).toBe("close");
      // So the queued request goes on a new connection, refused (the server no longer listens): a client
      // tries again, or another server; it never reads an answer no client could parse.
      expect(await second).toBe("ECONNREFUSED");
      await closed;
      expect(cuts.count).toBe(0);
    } finally {
      letGo();
      agent.destroy();
      await server.close();
    }
  }, 30_000);

  it("a connection that has sent nothing is ended at once: the close need not cut it", async () => {
    // Node's close ends the connections idle after a request, and waits for one that never sent a byte: a
    // client's connection opened ahead of its request, or kept by Node's fetch after it aborted the request
    // it was for (a device's long poll stopped). Before, such a close took its whole bound, 3 s, to cut it.
    const server = await createSyncServer({ connectionString: await postgresUrl(), authenticate });
    const cuts = countCuts(server.app.server);
    const base = new URL(await server.listen({ port: 0 }));
    const silent = connect(Number(base.port), "127.0.0.1");
    silent.on("error", () => undefined);
    const ended = new Promise<void>((resolve) => silent.once("close", () => resolve()));
    try {
      await new Promise<void>((resolve) => silent.once("connect", () => resolve()));
      const http = server.app.server;
      await expect.poll(() => new Promise((resolve) => http.getConnections((_e, n) => resolve(n)))).toBe(1);
      const started = performance.now();
      await server.close();
      await ended;
      expect(cuts.count).toBe(0);
      expect(performance.now() - started).toBeLessThan(CLOSE_GRACE_MS);
    } finally {
      silent.destroy();
      await server.close();
    }
  }, 30_000);

  it("a failure of its final work is logged at error level; close() resolves in its bound and ends the pool", async () => {
    // The pool's sessions, told apart from every other test's by their application_name.
    const name = `close-fails-${Date.now().toString(36)}`;
    const url = new URL(await postgresUrl());
    url.searchParams.set("application_name", name);
    const admin = new pg.Client({ connectionString: await postgresUrl() });
    await admin.connect();
    const sessions = async () =>
      (
        await admin.query<{ n: number }>(
          "SELECT count(*)::integer AS n FROM pg_stat_activity WHERE application_name = $1",
          [name],
        )
      ).rows[0]!.n;
    const server = await createSyncServer({ connectionString: url.href, authenticate, logger: "errors" });
    // A real fault in the close's own work: a plugin of the deployer's whose onClose flushes to a
    // collector that is down (nothing listens on port 1), so Fastify's close rejects.
    server.app.addHook(
      "onClose",
      () =>
        new Promise<void>((_resolve, reject) => {
          const socket = connect(1, "127.0.0.1");
          socket.once("error", reject);
          socket.once("connect", () => reject(new Error("Something listens on port 1.")));
        }),
    );
    // What the server's logger (the CLI's: JSON lines on stdout) is asked to print at error level.
    const logged: unknown[][] = [];
    const log = server.app.log;
    const error = log.error.bind(log);
    log.error = ((...args: Parameters<typeof error>) => {
      logged.push(args);
      error(...args);
    }) as typeof log.error;
    try {
      const base = await server.listen({ port: 0 });
      const { token } = newUser("close-fails");
      const agent = new Agent();
      expect((await get(agent, base, `${SYNC_PATH}/hello`, token)).status).toBe(200);
      expect(await sessions()).toBeGreaterThan(0);
      const started = performance.now();
      await server.close();
      expect(performance.now() - started).toBeLessThan(CLOSE_GRACE_MS + CLOSE_CUT_MS + SLACK_MS);
      // Before, nothing: the failure was dropped, and the pool's end skipped with it.
      expect(logged).toEqual([
        [{ err: expect.objectContaining({ code: "ECONNREFUSED" }) }, expect.stringContaining("HTTP server")],
      ]);
      // The pool ended all the same (before, its idle sessions stayed until their idle timeout, 10 s).
      const deadline = performance.now() + 5000;
      while ((await sessions()) > 0 && performance.now() < deadline) await new Promise((done) => setTimeout(done, 50));
      expect(await sessions()).toBe(0);
      // A second close waits for the first, and reports nothing more (a pool ended twice would be a report).
      await server.close();
      expect(logged).toHaveLength(1);
    } finally {
      await admin.end();
      await server.close();
    }
  }, 30_000);
});

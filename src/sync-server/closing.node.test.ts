/**
 * What a closing sync server answers and reports. A request that arrives
 * during `close()` on a connection kept alive from before (a device's
 * agent reuses its sockets) is answered in the protocol's error shape, 503
 * `unavailable` with Retry-After, as every other refusal of the server.
 * Real server on loopback, real PostgreSQL.
 */
import { Agent, request } from "node:http";
import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { authenticate, newUser, postgresUrl } from "../../test/support/sync/harness.js";
import { SYNC_PATH } from "../sync/protocol.js";
import { createSyncServer } from "./server.js";

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
  it("a request arriving during close() on a kept-alive connection gets the protocol's 503", async () => {
    const { token } = newUser("close-keepalive");
    const { token: slowToken } = newUser("close-slow");
    // The first request waits in `authenticate` until let go: its connection is busy when close() begins,
    // so the server keeps it open, and the agent sends the next request on it once the first is answered.
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
    const base = await server.listen({ port: 0 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = get(agent, base, `${SYNC_PATH}/hello`, slowToken);
      await inAuthenticate;
      const closed = server.close();
      const second = get(agent, base, `${SYNC_PATH}/hello`, token); // queued behind the first, on its socket
      letGo();
      const before = await first;
      expect(before.status).toBe(200);
      const answer = await second;
      expect(answer.socket).toBe(before.socket);
      expect(answer.status).toBe(503);
      expect(answer.headers["retry-after"]).toBe("1");
      // Before, Fastify's own {"error":"Service Unavailable","message":"Service Unavailable","statusCode":503}.
      expect(JSON.parse(answer.body)).toEqual({ error: { code: "unavailable", message: expect.any(String) } });
      await closed;
    } finally {
      letGo();
      agent.destroy();
      await server.close();
    }
  }, 30_000);
});

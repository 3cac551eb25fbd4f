/**
 * Health and readiness against the users' requests-a-minute limit, in both
 * directions: a probe is never counted nor refused (a balancer polls from one
 * address, signed in or not, and a user past the limit still sees the server
 * alive), and no path beside them gets their pass (each is refused as an
 * unknown route, and the user's limited routes stay limited whatever their
 * query). Real server on loopback, real PostgreSQL.
 */
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { authenticate, newUser, postgresUrl } from "../../test/support/sync/harness.js";
import { SYNC_PATH } from "../sync/protocol.js";
import { createSyncServer } from "./server.js";

/** A GET of `path` exactly as written (fetch would resolve `..`), with `token` if given: status and body. */
function get(base: string, path: string, token?: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, headers }, (res) => {
      let body = "";
      res.setEncoding("latin1");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("sync server: health, readiness and the users' limit", () => {
  it("never counts nor refuses a probe, and lets no path beside one past the limit", async () => {
    const server = await createSyncServer({
      connectionString: await postgresUrl(),
      authenticate,
      limits: { requestsPerMinute: 2 },
    });
    try {
      const base = await server.listen({ port: 0 });
      const { token } = newUser("health-limit");
      // The user's two requests, then refused.
      for (let i = 0; i < 2; i++) expect((await get(base, `${SYNC_PATH}/hello`, token)).status).toBe(200);
      const refused = await get(base, `${SYNC_PATH}/hello`, token);
      expect(refused.status).toBe(429);
      expect(refused.body).toContain('"rate_limited"');
      // Probes, signed in as that user or not, as many as a balancer sends: all answered.
      for (const path of [`${SYNC_PATH}/health`, `${SYNC_PATH}/health?probe=1`, `${SYNC_PATH}/ready`]) {
        for (const who of [token, undefined]) {
          for (let i = 0; i < 3; i++) {
            const answer = await get(base, path, who);
            expect(answer.status, `${path} ${who ? "signed in" : "anonymous"} #${i}`).toBe(200);
            expect(JSON.parse(answer.body)).toMatchObject({ ok: true });
          }
        }
      }
      // Paths that begin like health: unknown routes, not health's answer and not a way around the limit.
      for (const path of ["/healthz", "/health/", "/health/x", "/health/../hello", "/health/%2e%2e/hello"]) {
        const answer = await get(base, `${SYNC_PATH}${path}`, token);
        expect(answer.status, path).toBe(404);
        expect(answer.body).toContain('"not_found"');
      }
      // A limited route naming health in its query is still limited.
      const named = await get(base, `${SYNC_PATH}/hello?next=${SYNC_PATH}/health`, token);
      expect(named.status).toBe(429);
      expect(named.body).toContain('"rate_limited"');
    } finally {
      await server.close();
    }
  }, 60_000);
});

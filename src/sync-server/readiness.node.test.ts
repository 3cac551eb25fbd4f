/**
 * `GET /v1/ready`, the readiness answer: 200 while the database answers,
 * 503 `unavailable` (Retry-After) while it is stopped or silent, never
 * later than its bound, one probe connection at a time however many probes
 * arrive, and 200 again once the database is back; `/v1/health`, the
 * liveness answer, stays 200 throughout. Real server, real PostgreSQL
 * behind proxies: one this file stops and starts again on the same port (a
 * database stopped), one that falls silent (a hung backend, a network
 * dropping packets).
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { authenticate, postgresUrl } from "../../test/support/sync/harness.js";
import { startSilentProxy, type SilentProxy } from "../../test/support/sync/silent-proxy.js";
import { SYNC_PATH, SYNC_PROTOCOL_VERSION } from "../sync/protocol.js";
import { READY_BOUND_MS } from "./readiness.js";
import { createSyncServer, type SyncServer } from "./server.js";

/** What an answer may take beyond its bound on a loaded machine. */
const SLACK_MS = 1500;

/** A proxy to the test database that can be stopped (connections refused) and started again on its port. */
class Door {
  readonly #target: URL;
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  port = 0;

  constructor(url: string) {
    this.#target = new URL(url);
  }

  /** The database's URL through the door. */
  get url(): string {
    const url = new URL(this.#target);
    url.hostname = "127.0.0.1";
    url.port = String(this.port);
    return url.href;
  }

  async open(): Promise<void> {
    const server = createServer((down) => {
      const up = connect(Number(this.#target.port), this.#target.hostname);
      for (const socket of [down, up]) {
        this.#sockets.add(socket);
        socket.on("close", () => this.#sockets.delete(socket));
        socket.on("error", () => undefined);
      }
      down.pipe(up).pipe(down);
      down.on("close", () => up.destroy());
      up.on("close", () => down.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Stops listening and cuts every connection: the database is gone. */
  async shut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => server?.close(() => resolve()) ?? resolve());
  }
}

/** A GET of `path`: its status, Retry-After, body, and how long it took. */
async function probe(base: string, path = `${SYNC_PATH}/ready`) {
  const started = performance.now();
  const response = await fetch(`${base}${path}`);
  const body = (await response.json()) as unknown;
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body,
    ms: performance.now() - started,
  };
}

/** The answer of a readiness probe refused. */
const unavailable = { error: { code: "unavailable", message: expect.any(String) } };

let server: SyncServer | undefined;
let door: Door | undefined;
let silent: SilentProxy | undefined;

afterEach(async () => {
  // The silent proxy first: it ends the server's connections to the database, which a silent database would
  // hold until the close cut them at its bound (3 s of each test's teardown before; closing while the
  // database is silent is shutdown.node.test.ts's to prove).
  await silent?.close();
  await server?.close();
  await door?.shut();
  server = door = silent = undefined;
}, 30_000);

describe("sync server: /v1/ready", () => {
  it("200 while the database answers, 503 at once while it is stopped, 200 again once it is back", async () => {
    door = new Door(await postgresUrl());
    await door.open();
    // A user's limit of 2 requests a minute: probes, from one address, are not counted against it.
    server = await createSyncServer({ connectionString: door.url, authenticate, limits: { requestsPerMinute: 2 } });
    const base = await server.listen({ port: 0 });
    for (let i = 0; i < 4; i++)
      expect(await probe(base)).toMatchObject({ status: 200, body: { ok: true, v: SYNC_PROTOCOL_VERSION } });
    await door.shut();
    const refused = await probe(base);
    expect(refused).toMatchObject({ status: 503, retryAfter: "1", body: unavailable });
    expect(refused.ms).toBeLessThan(READY_BOUND_MS + SLACK_MS);
    // Liveness stays ok: an orchestrator must not restart a server because its database blinked.
    expect(await probe(base, `${SYNC_PATH}/health`)).toMatchObject({ status: 200 });
    await door.open();
    expect(await probe(base)).toMatchObject({ status: 200, body: { ok: true } });
  }, 30_000);

  it("503 within its bound while the database is silent, with one probe connection for many probes", async () => {
    silent = await startSilentProxy(await postgresUrl());
    server = await createSyncServer({ connectionString: silent.url, authenticate });
    const base = await server.listen({ port: 0 });
    const started = silent.open(); // the pool's and the live-push listener's connections
    expect((await probe(base)).status).toBe(200);
    // Once that probe's connection has closed (its goodbye, at the latest cut at the bound): looked for, not
    // waited a fixed READY_BOUND_MS + 200 ms for.
    for (const deadline = performance.now() + 10_000; silent.open() > started;) {
      if (performance.now() > deadline) throw new Error("Not within 10 s: the first probe's connection closed.");
      await new Promise((done) => setTimeout(done, 5));
    }
    const before = silent.open();
    silent.silence();
    const probes = Array.from({ length: 20 }, () => probe(base));
    await silent.heard; // the probe's connection sent its first bytes, never to be answered
    await new Promise((done) => setTimeout(done, READY_BOUND_MS / 2));
    expect(silent.open()).toBeLessThanOrEqual(before + 1);
    for (const answer of await Promise.all(probes)) {
      expect(answer).toMatchObject({ status: 503, retryAfter: "1", body: unavailable });
      expect(answer.ms).toBeLessThan(READY_BOUND_MS + SLACK_MS);
    }
    // The probe's connection was cut at the bound: none is left waiting on the silent database.
    expect(silent.open()).toBe(before);
    // Later probes are bounded alike (one had opened a connection, cut, that a silent database never let in).
    const again = await probe(base);
    expect(again).toMatchObject({ status: 503, body: unavailable });
    expect(again.ms).toBeLessThan(READY_BOUND_MS + SLACK_MS);
    expect(await probe(base, `${SYNC_PATH}/health`)).toMatchObject({ status: 200 });
  }, 30_000);
});

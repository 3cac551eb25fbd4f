/**
 * How long a client may take to send a request: a body trickled in a byte
 * at a time (slowloris) is cut at `requestTimeoutMs`, while a long poll,
 * whose request arrives at once and whose answer waits, is not. Real
 * server on loopback, raw sockets, real PostgreSQL.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate, newUser, postgresUrl } from "../../test/support/sync/harness.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION } from "../sync/protocol.js";
import { SyncError, SyncTransport, type FetchLike } from "../sync/transport.js";
import { createSyncServer, type SyncServer } from "../sync-server.js";

/** Sends `head` on a socket of its own, then `drip` every 50 ms; says when and with what the server closed it. */
function rawRequest(port: number, head: string, drip?: string) {
  const started = Date.now();
  const socket = connect(port, "127.0.0.1");
  let answer = "";
  socket.on("data", (chunk: Buffer) => (answer += chunk.toString()));
  socket.on("error", () => undefined);
  socket.write(head);
  const trickle = drip === undefined ? undefined : setInterval(() => socket.write(drip), 50);
  const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now() - started)));
  return {
    /** Milliseconds until the server closed it, or undefined when still open after `ms`. */
    closedWithin: (ms: number) =>
      Promise.race([closed, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms))]),
    answer: () => answer,
    end: () => {
      clearInterval(trickle);
      socket.destroy();
    },
  };
}

/**
 * The limit of the server under test: short, as each test waits it out (1 s before: 0.5 s less for each of
 * three tests). The checks below are relative to it.
 */
const LIMIT_MS = 500;

describe("sync server: requestTimeoutMs", () => {
  let server: SyncServer;
  let port = 0;
  beforeAll(async () => {
    server = await createSyncServer({
      connectionString: await postgresUrl(),
      authenticate,
      requestTimeoutMs: LIMIT_MS,
    });
    port = Number(new URL(await server.listen({ port: 0 })).port);
  }, 60_000);
  afterAll(() => server?.close(), 30_000);

  it("cuts a signed-in push whose body trickles in, with 408, once the request has taken longer than the limit", async () => {
    // Before, Fastify's default (requestTimeout 0) let a body come a byte at a time for ever: each such
    // push held a socket and one of its user's four places for bodies in flight, with no end.
    const { token } = newUser("slowloris");
    const push = rawRequest(
      port,
      `POST /v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: ${SYNC_MEDIA_TYPE}\r\nContent-Length: 1000000\r\n\r\n`,
      "a",
    );
    try {
      const closedAfter = await push.closedWithin(4000);
      expect(closedAfter, "still open after 4 s").toBeDefined();
      expect(closedAfter!).toBeGreaterThanOrEqual(LIMIT_MS * 0.9);
      expect(push.answer()).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      push.end();
    }
  });

  it("answers a stalled body with the protocol's error body: a device reads a retryable request_timeout", async () => {
    // Before, the 408 carried Fastify's own body ({"error":"Request Timeout","statusCode":408}): the device read
    // code "http_error", not retryable, and showed the person "incompatible" (check the server's address).
    const { token } = newUser("stalled");
    /** The device's own request on a raw socket: its headers, then none of the body they announce. */
    const stalling: FetchLike = async (input, init) => {
      const body = init.body as Uint8Array;
      const headers = Object.entries(init.headers as Record<string, string>)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join("");
      const request = rawRequest(
        port,
        `${init.method} ${new URL(input).pathname} HTTP/1.1\r\nHost: x\r\n${headers}Content-Length: ${body.length}\r\n\r\n`,
      );
      try {
        expect(await request.closedWithin(4000), "still open after 4 s").toBeDefined();
      } finally {
        request.end();
      }
      const [head = "", text = ""] = request.answer().split("\r\n\r\n");
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
      return new Response(text, { status });
    };
    const transport = new SyncTransport({ url: `http://127.0.0.1:${port}`, token, fetch: stalling });
    const refused = await transport.push({ v: SYNC_PROTOCOL_VERSION, checkpoints: [], deletes: [] }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(SyncError);
    expect(refused).toMatchObject({ status: 408, code: "request_timeout", retryable: true });
  });

  it("cuts headers that never end, and a connection that sends nothing", async () => {
    const headers = rawRequest(port, "GET /v1/hello HTTP/1.1\r\nHost: x\r\n", "X-Slow: 1\r\n");
    const idle = rawRequest(port, "");
    try {
      expect(await headers.closedWithin(4000), "headers still open after 4 s").toBeDefined();
      expect(await idle.closedWithin(4000), "idle still open after 4 s").toBeDefined();
    } finally {
      headers.end();
      idle.end();
    }
  });

  it("does not cut a long poll, whose request came whole and whose answer waits longer than the limit", async () => {
    const { token } = newUser("poller");
    const poll = rawRequest(
      port,
      `GET /v1/pull?since=0&wait=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    try {
      // A wait of 1 s, twice the limit (2 s before, with a limit of 1 s): the answer came at the wait's end.
      const closedAfter = await poll.closedWithin(6000);
      expect(closedAfter).toBeGreaterThanOrEqual(950);
      expect(poll.answer()).toMatch(/^HTTP\/1\.1 200/);
    } finally {
      poll.end();
    }
  });

  it("bounds requests by default (60 s), and refuses a limit that is not a positive integer", async () => {
    const plain = await createSyncServer({ connectionString: await postgresUrl(), authenticate });
    try {
      expect(plain.app.server.requestTimeout).toBe(60_000);
      // Node checks a body against requestTimeout only while headersTimeout is no longer.
      expect(plain.app.server.headersTimeout).toBeLessThanOrEqual(60_000);
    } finally {
      await plain.close();
    }
    await expect(
      createSyncServer({ connectionString: await postgresUrl(), authenticate, requestTimeoutMs: 0 }),
    ).rejects.toThrow(/`requestTimeoutMs` must be a positive integer/);
  });
});

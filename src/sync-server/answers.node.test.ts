/**
 * A client that asks and never reads the answer: each answer the server
 * sends sits in its memory until the client takes it. Such an answer is cut
 * at `requestTimeoutMs`, and a user's reads are refused while several of its
 * answers wait to be taken. Real server on loopback, raw sockets, real
 * PostgreSQL.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate, newUser, postgresUrl, serverForFile, wireCheckpoint } from "../../test/support/sync/harness.js";
import { watchArrivals, type Arrival } from "../../test/support/sync/arrivals.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody, type PullResponse } from "../sync/protocol.js";
import { createSyncServer, type SyncServer } from "../sync-server.js";

/** Bytes of the one channel value pushed: far more than loopback's socket buffers take of an unread answer. */
const VALUE_BYTES = 8 * 1024 * 1024;

/** Pushes one checkpoint with a value of {@link VALUE_BYTES} for `token`'s user. */
async function pushLarge(url: string, token: string): Promise<void> {
  const checkpoint = wireCheckpoint("large");
  checkpoint.channel_versions = { value: 1 };
  checkpoint.blobs = [{ channel: "value", version: 1, value: ["bytes", new Uint8Array(VALUE_BYTES).fill(7)] }];
  const response = await fetch(`${url}/v1/push`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
    body: encodeBody({ v: SYNC_PROTOCOL_VERSION, checkpoints: [checkpoint], deletes: [] }) as Uint8Array<ArrayBuffer>,
  });
  expect(response.status).toBe(200);
}

/**
 * A pull on a socket of its own that reads the first bytes of its answer
 * and then nothing more: `started` resolves once the answer began to come.
 * `drain(ms)` reads the rest and says how many bytes came in all and
 * whether the server had closed the connection by then (a paused socket
 * cannot see its end until it reads again).
 */
function unreadPull(url: string, token: string) {
  const socket: Socket = connect(Number(new URL(url).port), "127.0.0.1");
  socket.on("error", () => undefined);
  let received = 0;
  const started = new Promise<string>((resolve) =>
    socket.once("data", (chunk: Buffer) => {
      socket.pause();
      resolve(chunk.subarray(0, 12).toString());
    }),
  );
  socket.on("data", (chunk: Buffer) => (received += chunk.length));
  const closed = new Promise<true>((resolve) => socket.once("close", () => resolve(true)));
  socket.write(`GET /v1/pull?since=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  return {
    started,
    drain: async (ms: number) => {
      socket.resume();
      const ended = await Promise.race([closed, new Promise<false>((resolve) => setTimeout(() => resolve(false), ms))]);
      return { closed: ended, received };
    },
    end: () => socket.destroy(),
  };
}

/**
 * Resolves once the next connection `server` accepts is closed on the
 * server's side (a paused client socket cannot see its end until it reads).
 */
function serverSideClose(server: SyncServer): Promise<void> {
  return new Promise((resolve) =>
    server.app.server.once("connection", (socket: Socket) => socket.once("close", resolve)),
  );
}

async function get(url: string, path: string, token: string) {
  const response = await fetch(`${url}/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const msgpack = (response.headers.get("content-type") ?? "").startsWith(SYNC_MEDIA_TYPE);
  return {
    status: response.status,
    body: (msgpack ? decodeBody(bytes) : JSON.parse(new TextDecoder().decode(bytes))) as Record<string, unknown>,
  };
}

/** The server pushes go through, with the default timeouts (a push of 8 MiB may take a loaded machine past a short one). */
const served = serverForFile();

describe("sync server: answers a client does not take", () => {
  let quick: SyncServer;
  let quickUrl = "";
  beforeAll(async () => {
    quick = await createSyncServer({ connectionString: await postgresUrl(), authenticate, requestTimeoutMs: 1000 });
    quickUrl = await quick.listen({ port: 0 });
  }, 60_000);
  afterAll(() => quick?.close(), 30_000);

  it("cuts an answer its client has not taken within requestTimeoutMs; one read at once comes whole", async () => {
    // Before, nothing bounded it: the 8 MiB answer stayed in the server's memory, and its connection open,
    // for as long as the client liked (40 unread pulls of a 7 MiB page held 280 MB, and never let go).
    const { token } = newUser("unread");
    await pushLarge(served.url, token);
    const cut = serverSideClose(quick);
    const unread = unreadPull(quickUrl, token);
    try {
      expect(await unread.started).toBe("HTTP/1.1 200");
      // Waits for the server to end the connection (due at requestTimeoutMs, 1 s; 2 s before), at most 6 times
      // that long: a fixed 4 s wait before. The drain below proves the cut from the client's side either way.
      await Promise.race([cut, new Promise((resolve) => setTimeout(resolve, 6000))]);
      // Read now, the answer comes cut short and the connection closed; before, it came whole, and stayed open.
      const { closed, received } = await unread.drain(3000);
      expect(closed, "the connection is still open").toBe(true);
      expect(received).toBeLessThan(VALUE_BYTES);
    } finally {
      unread.end();
    }
    const whole = await get(quickUrl, "/pull?since=0", token);
    expect(whole.status).toBe(200);
    expect((whole.body as unknown as PullResponse).changes).toHaveLength(1);
  });
});

describe("sync server: a user's answers not yet taken", () => {
  it("refuses the user's reads with 429 while 8 of its answers wait to be taken; others are served; freed as they end", async () => {
    // Before, each unread answer of a user held its bytes in the server's memory, with no bound on how many:
    // one token within its rate limit (1,200 requests a minute) could pin gigabytes.
    const { token } = newUser("hoarder");
    const { token: other } = newUser("neighbour");
    await pushLarge(served.url, token);
    const arrivals = watchArrivals(served.server);
    const unread = Array.from({ length: 8 }, () => unreadPull(served.url, token));
    const pulls: Arrival[] = [];
    try {
      expect(await Promise.all(unread.map((u) => u.started))).toEqual(Array(8).fill("HTTP/1.1 200"));
      pulls.push(...arrivals.arrived); // the eight, and nothing else yet
      for (const path of ["/pull?since=0", "/threads", "/hello"]) {
        const refused = await get(served.url, path, token);
        expect(refused.status, path).toBe(429);
        expect(refused.body).toMatchObject({ error: { code: "rate_limited" } });
        expect((refused.body.error as { message: string }).message).toMatch(/8 answers/);
      }
      expect((await get(served.url, "/hello", other)).status).toBe(200);
    } finally {
      unread.forEach((u) => u.end());
    }
    // Freed once the server saw the eight connections close (a fixed 200 ms before).
    await arrivals.closed(pulls).finally(arrivals.stop);
    const again = await get(served.url, "/pull?since=0", token);
    expect(again.status).toBe(200);
    expect((again.body as unknown as PullResponse).changes).toHaveLength(1);
  });
});

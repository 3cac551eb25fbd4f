/**
 * The sync server against requests meant to hurt it: a stranger's body is
 * never read, an authenticated body is bounded in decoding work as well as
 * in bytes, each route takes the body it needs, and a checkpoint that
 * several devices add writes to reaches every one of them. Real server on
 * loopback, real PostgreSQL.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import {
  authenticate,
  closeDevices,
  device,
  inspector,
  newUser,
  postgresUrl,
  seeded,
  serverForFile,
  storedBytes,
  startServer,
  wireCheckpoint,
} from "../../test/support/sync/harness.js";
import { watchArrivals } from "../../test/support/sync/arrivals.js";
import { byDepth } from "../../test/support/depth.js";
import {
  SYNC_MEDIA_TYPE,
  SYNC_PROTOCOL_VERSION,
  decodeBody,
  encodeBody,
  type PullResponse,
  type PushRequest,
  type WireCheckpoint,
  type WireWrite,
} from "../sync/protocol.js";
import { createSyncServer, type SyncServer } from "../sync-server.js";

const served = serverForFile();

async function call(method: string, path: string, token: string | undefined, body?: Uint8Array) {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = SYNC_MEDIA_TYPE;
  const response = await fetch(`${served.url}/v1${path}`, { method, headers, body: body as Uint8Array<ArrayBuffer> });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const parsed = (response.headers.get("content-type") ?? "").startsWith(SYNC_MEDIA_TYPE)
    ? decodeBody(bytes)
    : JSON.parse(new TextDecoder().decode(bytes));
  return { status: response.status, body: parsed as Record<string, unknown> };
}

/**
 * A push whose body of a megabyte trickles in, a byte every 50 ms, on a
 * socket of its own (`POST /v1/push` unless `route` names another method and
 * path): `closed(ms)` says whether the server closed it within `ms`,
 * `answer()` is what it sent, `end()` stops it.
 */
function trickled(token: string, route = "POST /v1/push") {
  const socket = connect(Number(new URL(served.url).port), "127.0.0.1");
  let answer = "";
  socket.on("data", (chunk: Buffer) => (answer += chunk.toString()));
  const gone = new Promise<true>((resolve) => socket.once("close", () => resolve(true)));
  socket.write(
    `${route} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: ${SYNC_MEDIA_TYPE}\r\nContent-Length: 1000000\r\n\r\n`,
  );
  const trickle = setInterval(() => socket.write("a"), 50);
  return {
    closed: (ms: number) =>
      Promise.race([gone, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]),
    answer: () => answer,
    end: () => {
      clearInterval(trickle);
      socket.destroy();
    },
  };
}

/**
 * A request through Fastify's `inject`, with no HTTP client in this process
 * to share the event loop with: what {@link longestStall} sees is the
 * server's own work.
 */
async function inject(method: "POST" | "PUT", path: string, token: string | undefined, body: Uint8Array) {
  const headers: Record<string, string> = { "content-type": SYNC_MEDIA_TYPE };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const response = await served.server.app.inject({ method, url: `/v1${path}`, headers, payload: Buffer.from(body) });
  const msgpack = String(response.headers["content-type"] ?? "").startsWith(SYNC_MEDIA_TYPE);
  const parsed: unknown = msgpack ? decodeBody(response.rawPayload) : response.json();
  return { status: response.statusCode, body: parsed as Record<string, unknown> };
}

/** A MessagePack map32 of `count` distinct short keys, each to 0: cheap to send, costly to decode. */
function manyKeys(count: number): Uint8Array {
  const out = new Uint8Array(5 + count * 8);
  const view = new DataView(out.buffer);
  out[0] = 0xdf;
  view.setUint32(1, count);
  let at = 5;
  for (let i = 0; i < count; i++) {
    const key = i.toString(36);
    out[at++] = 0xa0 | key.length;
    for (let j = 0; j < key.length; j++) out[at++] = key.charCodeAt(j);
    out[at++] = 0;
  }
  return out.subarray(0, at);
}

/**
 * Runs `work` and returns the CPU time this process spent meanwhile, in ms:
 * the work a request costs the server (the event loop is held for as long),
 * measured so that other processes taking the cores do not count.
 */
async function cpuSpent<T>(work: () => Promise<T>): Promise<{ result: T; cpuMs: number }> {
  const before = process.cpuUsage();
  const result = await work();
  const used = process.cpuUsage(before);
  return { result, cpuMs: (used.user + used.system) / 1000 };
}

describe("sync server: requests meant to stall it", () => {
  const body = manyKeys(2_000_000); // about 14 MiB, under the 16 MiB body limit

  it("answers a stranger's huge body with 401 without decoding it", async () => {
    const { result, cpuMs } = await cpuSpent(() => inject("POST", "/push", undefined, body));
    expect(result.status).toBe(401);
    expect(result.body).toMatchObject({ error: { code: "unauthorized" } });
    // Decoding it took 7.7-8.7 s; unread, it costs what `inject` takes to hand it over (about 70 ms here).
    expect(cpuMs).toBeLessThan(200);
  });

  it("closes a stranger's connection with its 401, not reading a body it trickles in for ever", async () => {
    // The server has no time limit on receiving a body: before, it kept discarding these bytes as long as
    // they came, one connection (a file descriptor) per stranger, for as many strangers as connected.
    const stranger = trickled("nope");
    try {
      expect(await stranger.closed(1500)).toBe(true);
      expect(stranger.answer()).toMatch(/^HTTP\/1\.1 401/);
    } finally {
      stranger.end();
    }
  });

  it("closes the connection of any answer sent before the body is read: no route, the health check", async () => {
    // Neither asks for a token: before, a stranger's body trickled to a path with no route (404) or to the
    // health check was read and discarded for as long as its bytes came, a connection held per stranger.
    for (const [route, status] of [
      ["POST /v1/nope", 404],
      ["POST /v1/health", 404],
      ["GET /v1/health", 200],
    ] as const) {
      const stranger = trickled("nope", route);
      try {
        expect(await stranger.closed(1500), route).toBe(true);
        expect(stranger.answer(), route).toMatch(new RegExp(`^HTTP/1\\.1 ${status}`));
      } finally {
        stranger.end();
      }
    }
  });

  it("closes a user's connection with a 429 refused before its body is read, not only a stranger's", async () => {
    const { token } = newUser("trickler");
    // Four bodies in flight, each trickling in: the user's every place.
    const arrivals = watchArrivals(served.server);
    const held = Array.from({ length: 4 }, () => trickled(token));
    try {
      // The four hold their places once the server reads their bodies (a fixed 200 ms before).
      await arrivals.admitted(4);
      const fifth = trickled(token);
      try {
        expect(await fifth.closed(1500)).toBe(true);
        expect(fifth.answer()).toMatch(/^HTTP\/1\.1 429/);
      } finally {
        fifth.end();
      }
    } finally {
      arrivals.stop();
      for (const request of held) request.end();
    }
  });

  it("answers a stranger's malformed body with 401, not 400", async () => {
    const { status } = await call("POST", "/push", "nope", new Uint8Array([0xc1, 0xc1]));
    expect(status).toBe(401);
    expect((await call("PUT", "/key", undefined, new Uint8Array([0xc1]))).status).toBe(401);
  });

  it("bounds an authenticated body's decoding work, not only its bytes", async () => {
    const { token } = newUser("stall");
    const { result, cpuMs } = await cpuSpent(() => inject("POST", "/push", token, body));
    expect(result.status).toBe(400);
    expect(String((result.body.error as { message: string }).message)).toMatch(/within the protocol's limits/);
    // Reading 14 MiB and refusing its first token: about 220 ms here, where decoding it took seconds.
    expect(cpuMs).toBeLessThan(1000);
    // Nesting is bounded too.
    const deep = new Uint8Array(200).fill(0x91); // 200 one-item arrays, one in another
    expect((await call("POST", "/push", token, deep)).status).toBe(400);
  });

  it("gives the key route the body it needs: kilobytes", async () => {
    const { token } = newUser("key");
    const record = encodeBody({ v: SYNC_PROTOCOL_VERSION, keyRecord: new Uint8Array(100 * 1024) });
    const { status, body: error } = await call("PUT", "/key", token, record);
    expect(status).toBe(413);
    expect(error).toMatchObject({ error: { code: "too_large" } });
  });
});

/** A checkpoint bundle with the given writes (one task each, idx 0). */
function bundle(threadId: string, tasks: string[]): WireCheckpoint {
  const writes: WireWrite[] = tasks.map((task) => ({
    task_id: task,
    idx: 0,
    channel: "results",
    task_path: `~__pregel_pull, ${task}`,
    value: ["msgpack", new Uint8Array([0xa1, task.charCodeAt(task.length - 1)])],
  }));
  return wireCheckpoint(threadId, writes);
}

describe("sync server: writes several devices add to one checkpoint", () => {
  it("a device's pull still brings the writes another device added before its own push", async () => {
    const { token } = newUser("origin");
    const push = async (device: string, tasks: string[]) => {
      const request: PushRequest = { v: SYNC_PROTOCOL_VERSION, device, checkpoints: [bundle("t", tasks)], deletes: [] };
      const { status } = await call("POST", "/push", token, encodeBody(request));
      expect(status).toBe(200);
    };
    const pull = async (device: string, since: number) =>
      (await call("GET", `/pull?since=${since}&device=${device}`, token)).body as unknown as PullResponse;

    await push("A", ["t1", "t2"]); // a failed step: two pending writes
    const first = await pull("A", 0);
    expect(first.changes).toEqual([]); // its own
    await pull("B", 0);
    await push("B", ["t1", "t2", "t3"]); // B resumes: one more write
    await push("A", ["t1", "t2", "t4"]); // A resumes without having pulled

    const page = await pull("A", first.cursor);
    const writes = page.changes.flatMap((c) => (c.kind === "checkpoint" ? c.checkpoint.writes : []));
    expect(writes.map((w) => w.task_id).sort()).toEqual(["t1", "t2", "t3", "t4"]);

    // Once A holds everything and pushes it, its own row is skipped again.
    await push("A", ["t1", "t2", "t3", "t4"]);
    const after = await pull("A", page.cursor);
    expect(after.changes).toEqual([]);
    // B still gets A's write.
    const forB = await pull("B", 0);
    const bWrites = forB.changes.flatMap((c) => (c.kind === "checkpoint" ? c.checkpoint.writes : []));
    expect(bWrites.map((w) => w.task_id).sort()).toEqual(["t1", "t2", "t3", "t4"]);
  });
});

describe("sync server: a checkpoint with many pending writes", () => {
  it("stores thousands of writes of one checkpoint, whole for another device, refused whole when sent again", async () => {
    // A fan-out of thousands of tasks (Send) gives one checkpoint thousands of writes. That the work is
    // linear in them (a nested loop, every stored write against every pushed one, took 45 s for 20,000)
    // is counted in plan rows in pending-writes.node.test.ts: a time bound here failed under load.
    const { token } = newUser("fan-out");
    const writes: WireWrite[] = Array.from({ length: 6000 }, (_, i) => ({
      task_id: `task-${i}`,
      idx: 0,
      channel: "results",
      task_path: "",
      value: ["msgpack", new Uint8Array([i & 0x7f])],
    }));
    const request: PushRequest = {
      v: SYNC_PROTOCOL_VERSION,
      device: "fan-out-device",
      checkpoints: [wireCheckpoint("t", writes)],
      deletes: [],
    };
    const { status, body } = await call("POST", "/push", token, encodeBody(request));
    expect({ status, changed: body.changed }).toEqual({ status: 200, changed: 1 });
    // The row is this device's whole: its own pull skips it, another device's brings every write.
    const pull = async (device: string) =>
      (await call("GET", `/pull?since=0&device=${device}`, token)).body as unknown as PullResponse;
    expect((await pull("fan-out-device")).changes).toEqual([]);
    const other = await pull("other-device");
    expect(other.changes.flatMap((c) => (c.kind === "checkpoint" ? c.checkpoint.writes : []))).toHaveLength(6000);
    // The same push again (a retry after a cut): every write refused, each compared with the stored one.
    const second = await call("POST", "/push", token, encodeBody(request));
    expect({ status: second.status, changed: second.body.changed }).toEqual({ status: 200, changed: 0 });
  });
});

describe("sync server: ids that PostgreSQL cannot hold", () => {
  it("refuses a thread id with U+0000 with a clear 400, not a 500", async () => {
    const { token } = newUser("ids");
    const request = (threadId: string): PushRequest => ({
      v: SYNC_PROTOCOL_VERSION,
      checkpoints: [bundle(threadId, [])],
      deletes: [],
    });
    const { status, body } = await call("POST", "/push", token, encodeBody(request("x\u0000y")));
    expect(status).toBe(400);
    expect((body.error as { message: string }).message).toMatch(/must not contain U\+0000/);
    // Lone surrogates never reach the server: MessagePack's UTF-8 turns them
    // into U+FFFD, so the protocol's parser refuses them before sending
    // (src/sync/protocol.test.ts). A well-formed pair is an id like any other.
    expect((await call("POST", "/push", token, encodeBody(request("x\ud83d\ude00")))).status).toBe(200);
  });

  // Ids PostgreSQL holds but cannot index (a key over 2704 bytes after compression: 1,000 random
  // CJK characters are 3,000 bytes), and values its columns refuse: each was a 500 "try again",
  // which a device takes as the server failing and so stops its whole round, every thread with it.
  const cjk = (n: number, seed: number) =>
    Array.from({ length: n }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919 + seed * 104729) % 20000))).join("");

  it("refuses what its columns and keys cannot hold with a 400 naming it, not a 500, and stores nothing", async () => {
    const { user, token } = newUser("cols");
    const huge = bundle("t", ["a"]);
    huge.writes[0]!.idx = 2 ** 31;
    const tagged = bundle("t", []);
    tagged.checkpoint = ["msg\u0000pack", new Uint8Array([0x80])];
    const versioned = bundle("t", []);
    versioned.blobs = [{ channel: "c", version: "1\u0000", value: ["msgpack", new Uint8Array([1])] }];
    const push = (checkpoints: WireCheckpoint[], deletes: PushRequest["deletes"] = []): PushRequest => ({
      v: SYNC_PROTOCOL_VERSION,
      checkpoints,
      deletes,
    });
    const cases: [string, PushRequest, RegExp][] = [
      ["idx", push([huge]), /writes\[0\]\.idx must be an integer from -2147483648 to 2147483647/],
      ["type", push([tagged]), /checkpoints\[0\]\.checkpoint: type tag must not contain U\+0000/],
      ["version", push([versioned]), /database cannot hold .*nothing of it was applied/],
      ["thread_id", push([bundle(cjk(1000, 1), [])]), /index row size .*nothing of it was applied/],
      ["delete", push([], [{ thread_id: cjk(1000, 2), max_deleted_id: "1" }]), /index row size/],
    ];
    for (const [what, request, message] of cases) {
      const { status, body } = await call("POST", "/push", token, encodeBody(request));
      const error = body.error as { code?: string; message?: string } | undefined;
      expect({ what, status, code: error?.code }).toEqual({ what, status: 400, code: "bad_request" });
      expect(error?.message).toMatch(message);
    }
    expect((await call("GET", "/pull?since=0&thread=a%00b", token)).status).toBe(400);
    const pool = await inspector();
    try {
      const { rows } = await pool.query("SELECT 1 FROM lgsync_checkpoints WHERE user_id = $1", [user]);
      expect(rows).toEqual([]);
    } finally {
      await pool.end();
    }
    const fine: PushRequest = { v: SYNC_PROTOCOL_VERSION, checkpoints: [bundle("t", [])], deletes: [] };
    expect((await call("POST", "/push", token, encodeBody(fine))).status).toBe(200);
  });

  it("a device's thread whose id the server cannot index is skipped; its other threads sync", async () => {
    const { token } = newUser("index");
    const a = device(served.url, token);
    const b = device(served.url, token);
    try {
      const META = { source: "loop" as const, step: 0, parents: {} };
      const odd = cjk(1000, 3);
      for (const threadId of ["first", odd, "last"])
        await a.saver.put(
          { configurable: { thread_id: threadId, checkpoint_ns: "" } },
          { ...emptyCheckpoint(), id: "1" },
          META,
          {},
        );
      const result = await a.sync.syncNow();
      expect(result.skipped).toEqual([expect.objectContaining({ threadId: odd, code: "refused" })]);
      await b.sync.syncNow();
      const onB: string[] = [];
      for await (const t of b.saver.list({})) onB.push(t.config.configurable!.thread_id as string);
      expect(onB.sort()).toEqual(["first", "last"]);
    } finally {
      await closeDevices(a, b);
    }
  });
});

describe("sync server: one user's load and the others", () => {
  /** A push of one small checkpoint, of thread `t<i>`. */
  const pushBody = (i: number) =>
    encodeBody({ v: SYNC_PROTOCOL_VERSION, checkpoints: [bundle(`t${i}`, ["a"])], deletes: [] } as PushRequest);

  /**
   * Runs `test` while a connection of its own holds `user`'s row locked, as
   * another process's long push of that user does (`holder` commits to let
   * the user's waiting pushes go); rolled back and closed after.
   */
  async function whileUserLocked(
    user: string,
    test: (pool: pg.Pool, holder: pg.PoolClient) => Promise<void>,
  ): Promise<void> {
    const pool = await inspector();
    const holder = await pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("INSERT INTO lgsync_users (user_id) VALUES ($1) ON CONFLICT DO NOTHING", [user]);
      await holder.query("SELECT 1 FROM lgsync_users WHERE user_id = $1 FOR UPDATE", [user]);
      await test(pool, holder);
    } finally {
      await holder.query("ROLLBACK").catch(() => undefined);
      holder.release();
      await pool.end();
    }
  }

  /** Resolves once `count` sessions wait on `holder`'s lock. */
  async function blockedBehind(pool: pg.Pool, holder: pg.PoolClient, count: number): Promise<void> {
    const pid = (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    for (const deadline = Date.now() + 10_000; ; await new Promise((resolve) => setTimeout(resolve, 10))) {
      const { rows } = await pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
        [pid],
      );
      if (Number(rows[0]!.n) >= count) return;
      if (Date.now() > deadline) throw new Error(`${count} sessions did not come to wait on the lock within 10 s.`);
    }
  }

  it("a user's pushes waiting on its row lock hold one pooled connection: another user is served", async () => {
    const { user, token } = newUser("busy");
    const { token: other } = newUser("calm");
    await whileUserLocked(user, async (pool, holder) => {
      const pid = (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      const pushes = [1, 2, 3, 4].map((i) => call("POST", "/push", token, pushBody(i)));
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Each waiting push used to hold a connection of the server's pool (10), idle behind the lock.
      const blocked = await pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
        [pid],
      );
      expect(Number(blocked.rows[0]!.n)).toBe(1);
      const answered = await Promise.race([
        call("GET", "/hello", other).then((r) => r.status),
        new Promise((resolve) => setTimeout(() => resolve("still waiting after 1.5 s"), 1500)),
      ]);
      expect(answered).toBe(200);
      await holder.query("COMMIT");
      expect((await Promise.all(pushes)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    });
  });

  it("bounds the bodies one user has in flight: beyond four, 429 before the body is read; each freed as it ends", async () => {
    const { user, token } = newUser("bodies");
    const arrivals = watchArrivals(served.server);
    await whileUserLocked(user, async (pool, holder) => {
      // The first takes the user's turn and waits on the lock; the others wait for their turn.
      const first = call("POST", "/push", token, pushBody(1));
      await blockedBehind(pool, holder, 1); // a fixed 100 ms before
      const gone = new AbortController();
      const abandoned = fetch(`${served.url}/v1/push`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
        body: pushBody(0) as Uint8Array<ArrayBuffer>,
        signal: gone.signal,
      }).catch(() => "aborted");
      const waiting = [first, ...[2, 3].map((i) => call("POST", "/push", token, pushBody(i)))];
      await arrivals.admitted(4); // a fixed 200 ms before
      // Four in flight (each body up to maxBodyBytes in memory): the fifth is refused at once.
      const refused = await Promise.race([
        call("POST", "/push", token, pushBody(4)),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the fifth waited too")), 1500)),
      ]);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ error: { code: "rate_limited" } });
      expect((refused.body.error as { message: string }).message).toMatch(/4 requests with a body at once/);
      // A request whose client went away while waiting for its turn frees its place, unrun.
      gone.abort();
      expect(await abandoned).toBe("aborted");
      await arrivals.left(1); // the server saw it go (a fixed 100 ms before)
      const fourth = call("POST", "/push", token, pushBody(5));
      await holder.query("COMMIT");
      expect((await Promise.all([...waiting, fourth])).map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect((await call("POST", "/push", token, pushBody(6))).status).toBe(200);
      const { rows } = await pool.query<{ thread_id: string }>(
        "SELECT thread_id FROM lgsync_checkpoints WHERE user_id = $1 ORDER BY thread_id",
        [user],
      );
      expect(rows.map((r) => r.thread_id)).toEqual(["t1", "t2", "t3", "t5", "t6"]);
    }).finally(arrivals.stop);
  });
});

describe("sync server: what one user may store and ask for", () => {
  let limited: SyncServer;
  let limitedUrl: string;
  beforeAll(async () => {
    ({ server: limited, url: limitedUrl } = await startServer({
      limits: {
        maxCheckpointBytes: 1024 * 1024,
        maxPushCheckpoints: 2,
        requestsPerMinute: 30,
        maxUserBytes: 11 * 1024 * 1024,
        maxApps: 2,
      },
    }));
  }, 60_000);
  afterAll(() => limited?.close(), 30_000);

  const to = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await fetch(`${limitedUrl}/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
      body: body === undefined ? undefined : (encodeBody(body) as Uint8Array<ArrayBuffer>),
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    const parsed = (response.headers.get("content-type") ?? "").startsWith(SYNC_MEDIA_TYPE)
      ? decodeBody(bytes)
      : JSON.parse(new TextDecoder().decode(bytes));
    return {
      status: response.status,
      body: parsed as Record<string, unknown>,
      bytes: bytes.length,
      headers: response.headers,
    };
  };
  const heavy = (threadId: string, task: string, size: number): WireCheckpoint => {
    const checkpoint = bundle(threadId, [task]);
    checkpoint.writes[0]!.value = ["msgpack", new Uint8Array(size)];
    return checkpoint;
  };
  const pushOf = (...checkpoints: WireCheckpoint[]): PushRequest => ({
    v: SYNC_PROTOCOL_VERSION,
    checkpoints,
    deletes: [],
  });

  it("refuses writes that would grow one checkpoint past its cap across pushes, applying nothing", async () => {
    const { token } = newUser("cap");
    expect((await to("POST", "/push", token, pushOf(heavy("t", "a", 600 * 1024)))).status).toBe(200);
    const second = await to("POST", "/push", token, pushOf(heavy("t", "b", 600 * 1024)));
    expect(second.status).toBe(413);
    expect(second.body).toMatchObject({ error: { code: "checkpoint_too_large" } });
    expect((second.body.error as { message: string }).message).toMatch(/over this server's limit of 1048576/);
    const page = await to("GET", "/pull?since=0&limit=1", token);
    expect(page.bytes).toBeLessThan(700 * 1024);
  });

  it("caps every checkpoint it stores, with or without writes, by what a pull sends of it: ids and versions too", async () => {
    const { token } = newUser("cap-all");
    // A new checkpoint with no pending writes was never checked against the cap.
    const large = bundle("large", []);
    large.checkpoint = ["msgpack", new Uint8Array(1536 * 1024)];
    // Channel versions and the writes' ids travel with the checkpoint as much as its values do.
    const versioned = bundle("versioned", []);
    versioned.channel_versions = Object.fromEntries(
      Array.from({ length: 1200 }, (_, i) => [`channel-${i}-`.padEnd(1000, "v"), 1]),
    );
    const named = bundle("named", []);
    named.writes = Array.from({ length: 400 }, (_, i) => ({
      task_id: `task-${i}-`.padEnd(1000, "t"),
      idx: 0,
      channel: "c".repeat(1000),
      task_path: "p".repeat(1000),
      value: ["msgpack", new Uint8Array(0)],
    }));
    for (const checkpoint of [large, versioned, named]) {
      const refused = await to("POST", "/push", token, pushOf(checkpoint));
      expect({ thread: checkpoint.thread_id, status: refused.status, body: refused.body }).toMatchObject({
        thread: checkpoint.thread_id,
        status: 413,
        body: { error: { code: "checkpoint_too_large" } },
      });
    }
    const page = await to("GET", "/pull?since=0&limit=100", token);
    expect((page.body as unknown as PullResponse).changes).toEqual([]);
  });

  it("counts ids and versions in a pull page's budget, not only values", async () => {
    const { token } = newUser("page-ids");
    for (let i = 0; i < 12; i++) {
      const checkpoint = bundle(`t${i}`, []);
      checkpoint.channel_versions = Object.fromEntries(
        Array.from({ length: 900 }, (_, k) => [`channel-${k}-`.padEnd(1000, "v"), 1]),
      );
      expect((await to("POST", "/push", token, pushOf(checkpoint))).status).toBe(200);
    }
    const page = await to("GET", "/pull?since=0&limit=100", token);
    expect(page.bytes).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect((page.body as unknown as PullResponse).more).toBe(true);
  });

  it("builds a pull page from stored sizes: no page past its budget, and every change arrives page by page", async () => {
    const { token } = newUser("pages");
    for (let i = 0; i < 6; i++) {
      const a = heavy(`t${i}`, "a", 900 * 1024);
      const b = heavy(`t${i}b`, "a", 900 * 1024);
      expect((await to("POST", "/push", token, pushOf(a, b))).status).toBe(200);
    }
    const seen: string[] = [];
    let since = 0;
    for (let round = 0; round < 10; round++) {
      const page = await to("GET", `/pull?since=${since}&limit=100`, token);
      const body = page.body as unknown as PullResponse;
      expect(page.bytes).toBeLessThanOrEqual(8 * 1024 * 1024);
      for (const change of body.changes) if (change.kind === "checkpoint") seen.push(change.checkpoint.thread_id);
      since = body.cursor;
      if (!body.more) break;
    }
    expect(seen.sort()).toEqual(
      Array.from({ length: 6 }, (_, i) => [`t${i}`, `t${i}b`])
        .flat()
        .sort(),
    );
  });

  it("keeps each user's stored bytes in a counter and refuses a push over the quota, applying nothing", async () => {
    const { user, token } = newUser("quota");
    const pool = await inspector();
    // The counter against the rows themselves, after every kind of change.
    const counted = async () => {
      const { counter, rows } = await storedBytes(pool, user);
      expect(counter).toBe(rows);
      return counter;
    };
    try {
      for (let i = 0; i < 6; i++) {
        const pair = pushOf(heavy(`t${i}`, "a", 900 * 1024), heavy(`t${i}b`, "a", 900 * 1024));
        expect((await to("POST", "/push", token, pair)).status).toBe(200);
      }
      const full = await counted();
      expect(full).toBeGreaterThan(12 * 900 * 1024);
      // A special write replaced by a larger one, a removal, a thread's delete: the counter follows each.
      const special = (size: number) => {
        const checkpoint = heavy("t0", "a", 10);
        checkpoint.writes.push({ ...checkpoint.writes[0]!, idx: -3, channel: "__interrupt__" });
        checkpoint.writes[1]!.value = ["msgpack", new Uint8Array(size)];
        return checkpoint;
      };
      expect((await to("POST", "/push", token, pushOf(special(1000)))).status).toBe(200);
      expect((await to("POST", "/push", token, pushOf(special(5000)))).status).toBe(200);
      // The last value, and the new row's ids and type (t0, its checkpoint id, a, __interrupt__, its task path,
      // msgpack: 76 bytes).
      expect(await counted()).toBe(full + 5000 + 76);
      const t5 = heavy("t5", "a", 0);
      const removal = { thread_id: "t5", checkpoint_ns: "", checkpoint_id: t5.checkpoint_id };
      expect((await to("POST", "/push", token, { ...pushOf(), removed: [removal] })).status).toBe(200);
      expect(await counted()).toBeLessThan(full + 5000 - 900 * 1024);

      // Over the quota: refused whole, with a clear code; nothing of it stored.
      const before = await counted();
      const over = await to("POST", "/push", token, pushOf(heavy("u1", "a", 900 * 1024), heavy("u2", "a", 900 * 1024)));
      expect(over.status).toBe(413);
      expect(over.body).toMatchObject({ error: { code: "quota_exceeded" } });
      expect((over.body.error as { message: string }).message).toMatch(/quota of 11534336 bytes per user/);
      expect(await counted()).toBe(before);
      // A delete frees space even over the quota, and the push then fits.
      const del = { thread_id: "t1", max_deleted_id: "1f0aaaaa-0000-6000-8000-000000000001" };
      expect((await to("POST", "/push", token, { ...pushOf(), deletes: [del] })).status).toBe(200);
      expect(await counted()).toBeLessThan(before - 900 * 1024);
      expect((await to("POST", "/push", token, pushOf(heavy("u1", "a", 900 * 1024)))).status).toBe(200);
      await counted();
    } finally {
      await pool.end();
    }
  });

  it("bounds the apps one user opens: a push or key naming one more is refused, storing nothing", async () => {
    const { user, token } = newUser("apps");
    // Each new app name was a new space: a row of its own, with a key record of up to 64 KiB that the
    // byte quota does not count, for every name a user cared to invent (1,200 a minute).
    const key = { v: SYNC_PROTOCOL_VERSION, keyRecord: new Uint8Array(60 * 1024) };
    expect((await to("POST", "/push?app=a1", token, pushOf())).status).toBe(200); // claims the user's own space
    expect((await to("PUT", "/key?app=a2", token, key)).status).toBe(200);
    expect((await to("POST", "/push?app=a3", token, pushOf())).status).toBe(200);
    const pushed = await to("POST", "/push?app=a4", token, pushOf());
    expect(pushed.status).toBe(413);
    expect(pushed.body).toMatchObject({ error: { code: "too_many_apps" } });
    expect((pushed.body.error as { message: string }).message).toMatch(/at most 2 apps/);
    expect((await to("PUT", "/key?app=a5", token, key)).body).toMatchObject({ error: { code: "too_many_apps" } });
    // The apps it has, its own space and reads of any app go on.
    expect((await to("POST", "/push?app=a2", token, pushOf())).status).toBe(200);
    expect((await to("POST", "/push", token, pushOf())).status).toBe(200);
    expect((await to("GET", "/hello?app=a6", token)).status).toBe(200);
    const pool = await inspector();
    try {
      const rows = await pool.query<{ user_id: string }>(
        "SELECT user_id FROM lgsync_users WHERE split_part(user_id, chr(31), 1) = $1 ORDER BY user_id",
        [user],
      );
      expect(rows.rows.map((r) => r.user_id)).toEqual([user, `${user}\u001fa2`, `${user}\u001fa3`]);
    } finally {
      await pool.end();
    }
  });

  it("refuses a push of more checkpoints than the server takes at once", async () => {
    const { token } = newUser("many");
    const three = pushOf(bundle("a", []), bundle("b", []), bundle("c", []));
    const refused = await to("POST", "/push", token, three);
    expect(refused.status).toBe(413);
    expect(refused.body).toMatchObject({ error: { code: "too_many_checkpoints" } });
  });

  it("limits each user's requests a minute, with Retry-After, without touching another user", async () => {
    const { token } = newUser("rate");
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await to("GET", "/hello", token)).status);
    expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
    const last = await to("GET", "/hello", token);
    expect(last.status).toBe(429);
    expect(last.body).toMatchObject({ error: { code: "rate_limited" } });
    expect(Number(last.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await to("GET", "/hello", newUser("other").token)).status).toBe(200);
  });
});

describe("sync server: requests without a valid token", () => {
  let guarded: SyncServer;
  let asked = 0;
  beforeAll(async () => {
    guarded = await createSyncServer({
      connectionString: await postgresUrl(),
      authenticate: (token) => {
        asked += 1;
        return authenticate(token);
      },
      limits: { badTokensPerMinute: 3 },
    });
  }, 60_000);
  afterAll(() => guarded?.close(), 30_000);

  const from = async (remoteAddress: string, token: string) => {
    const response = await guarded.app.inject({
      method: "GET",
      url: "/v1/hello",
      remoteAddress,
      headers: { authorization: `Bearer ${token}` },
    });
    const body = response.statusCode === 200 ? decodeBody(response.rawPayload) : response.json();
    return { status: response.statusCode, headers: response.headers, body: body as Record<string, unknown> };
  };

  it("refuses an address's flood of bad tokens with 429 before asking authenticate, leaving other addresses alone", async () => {
    asked = 0;
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await from("203.0.113.7", `guess-${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429, 429, 429]);
    expect(asked).toBe(3);
    const refused = await from("203.0.113.7", "guess-9");
    expect(refused.body).toMatchObject({ error: { code: "rate_limited" } });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    // Another address is asked as before, and a good token from it is served.
    expect((await from("203.0.113.8", "guess")).status).toBe(401);
    expect((await from("203.0.113.8", newUser("ok").token)).status).toBe(200);
    expect(asked).toBe(5);
  });

  it("counts the addresses of one IPv6 /64 as one: a host cannot take a fresh address for each guess", async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 5; i++) statuses.push((await from(`2001:db8:7:7::${i.toString(16)}`, `guess-${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect((await from("2001:db8:7:8::1", "guess")).status).toBe(401);
  });

  it("counts the /64s of one IPv6 /48 together too: fresh /64s past what the map remembers do not lift the limit", async () => {
    // A /48 holds 65,536 /64s, more than the 10,000 addresses remembered: counted by /64 alone, a host with
    // one (a tunnel broker gives them away) took a fresh /64 for each guess and was never refused.
    asked = 0;
    const statuses: number[] = [];
    for (let i = 1; i <= 60; i++) statuses.push((await from(`2001:db8:9:${i.toString(16)}::1`, `guess-${i}`)).status);
    // 16 addresses' worth (3 a minute here) for the whole /48, then 429 without asking authenticate.
    expect(statuses).toEqual([...Array<number>(48).fill(401), ...Array<number>(12).fill(429)]);
    expect(asked).toBe(48);
    // Its good tokens are still refused only until the minute ends; another /48 is asked as before.
    expect((await from("2001:db8:9:ffff::1", newUser("site").token)).status).toBe(429);
    expect((await from("2001:db8:a:1::1", "guess")).status).toBe(401);
    expect((await from("2001:db8:a:2::1", newUser("next-site").token)).status).toBe(200);
  });

  it("answers a user id too long to store with a 500 that names authenticate(), on every route", async () => {
    // PostgreSQL's NOTIFY carries a user id in at most 8,000 bytes, an index entry in 2,704: before, such a
    // user's every push was a 400 saying the request's own data could not be stored, so each device skipped
    // every thread it had, as refused, and the operator read nothing.
    const long = `${newUser("long").user}-`.padEnd(9000, "x");
    for (const [method, url, body] of [
      ["GET", "/v1/hello", undefined],
      ["POST", "/v1/push", { v: SYNC_PROTOCOL_VERSION, deletes: [], checkpoints: [wireCheckpoint("t")] }],
    ] as const) {
      const response = await guarded.app.inject({
        method,
        url,
        remoteAddress: "203.0.113.30",
        headers: { authorization: `Bearer token-of-${long}`, "content-type": SYNC_MEDIA_TYPE },
        payload: body === undefined ? undefined : Buffer.from(encodeBody(body)),
      });
      expect(response.statusCode, url).toBe(500);
      expect(response.json(), url).toMatchObject({
        error: {
          code: "internal",
          message: expect.stringMatching(/authenticate\(\) returned a user id of 9000 bytes/),
        },
      });
    }
    expect((await from("203.0.113.30", `token-of-${long.slice(0, 1024)}`)).status).toBe(200);
  });

  it("counts a signed-in request refused before its user's rate limit (a bad app) as a strike too", async () => {
    // Refused in the same hook, such a request never reached the per-user limit: a flood of them cost an
    // authenticate() call each, without bound, as bad tokens did.
    const { token } = newUser("bad-app");
    asked = 0;
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await guarded.app.inject({
        method: "GET",
        url: `/v1/hello?app=${"x".repeat(129)}`,
        remoteAddress: "203.0.113.40",
        headers: { authorization: `Bearer ${token}` },
      });
      statuses.push(response.statusCode);
    }
    expect(statuses).toEqual([400, 400, 400, 429, 429]);
    expect(asked).toBe(3);
  });

  it("counts a signed-in request as no strike: a user's own address is never refused for its good tokens", async () => {
    const { token } = newUser("steady");
    for (let i = 0; i < 10; i++) expect((await from("203.0.113.20", token)).status).toBe(200);
    expect((await from("203.0.113.20", "typo")).status).toBe(401);
    expect((await from("203.0.113.20", token)).status).toBe(200);
  });
});

describe("sync server: a push of many deletes and removals", () => {
  it("applies them in a bounded number of statements, not several per item, with the same outcome", async () => {
    const { default: pg } = await import("pg");
    const pool = new pg.Pool({ connectionString: await postgresUrl(), max: 2 });
    let queries = 0;
    pool.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        queries += 1;
        return query(...args);
      };
    });
    const server = await createSyncServer({ pool, authenticate });
    const inspect = await inspector();
    try {
      const { user, token } = newUser("bulk");
      const push = async (body: PushRequest) => {
        const response = await server.app.inject({
          method: "POST",
          url: "/v1/push",
          headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
          payload: Buffer.from(encodeBody(body)),
        });
        return { status: response.statusCode, body: decodeBody(response.rawPayload) as Record<string, unknown> };
      };
      const id = (i: number) => `1f0aaaaa-0000-6000-8000-${String(i).padStart(12, "0")}`;
      // Threads d0..d9 with checkpoints 1..3, and r0..r9 with 1..3.
      const seeded: WireCheckpoint[] = [];
      for (let t = 0; t < 10; t++)
        for (let c = 1; c <= 3; c++)
          seeded.push(wireCheckpoint(`d${t}`, [], id(c)), wireCheckpoint(`r${t}`, [], id(c)));
      expect((await push({ v: SYNC_PROTOCOL_VERSION, deletes: [], checkpoints: seeded })).status).toBe(200);

      // 2,000 of each: each thread's delete up to checkpoint 2, repeated with lower ids; removals of
      // checkpoint 1 of r*, repeated, and of checkpoints that do not exist.
      const deletes = Array.from({ length: 2000 }, (_, i) => ({
        thread_id: `d${i % 10}`,
        max_deleted_id: id(2 - (i >= 10 ? 1 : 0)),
      }));
      const removed = Array.from({ length: 2000 }, (_, i) => ({
        thread_id: `r${i % 10}`,
        checkpoint_ns: "",
        checkpoint_id: i < 10 ? id(1) : id(1000 + i),
      }));
      queries = 0;
      const answer = await push({ v: SYNC_PROTOCOL_VERSION, device: "dev", deletes, removed, checkpoints: [] });
      expect(answer.status).toBe(200);
      // Before, three or four statements per item: over 10,000 round trips, 18 s for 20,000 deletes,
      // a pooled connection and the user's lock held all along.
      expect(queries).toBeLessThan(40);

      const left = await inspect.query<{ thread_id: string; checkpoint_id: string }>(
        `SELECT thread_id, checkpoint_id FROM lgsync_checkpoints WHERE user_id = $1 ORDER BY thread_id, checkpoint_id`,
        [user],
      );
      const expected: string[] = [];
      for (const t of ["d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9"]) expected.push(`${t} ${id(3)}`);
      for (let t = 0; t < 10; t++) expected.push(`r${t} ${id(2)}`, `r${t} ${id(3)}`);
      expect(left.rows.map((r) => `${r.thread_id} ${r.checkpoint_id}`).sort()).toEqual(expected.sort());
      const tombs = await inspect.query<{ thread_id: string; max_deleted_id: string; seq: string }>(
        "SELECT thread_id, max_deleted_id, seq FROM lgsync_tombstones WHERE user_id = $1",
        [user],
      );
      expect(tombs.rows.every((r) => r.max_deleted_id === id(2))).toBe(true);
      expect(tombs.rows).toHaveLength(10);
      const marks = await inspect.query<{ n: string }>("SELECT count(*) AS n FROM lgsync_removed WHERE user_id = $1", [
        user,
      ]);
      expect(Number(marks.rows[0]!.n)).toBe(2000 - 0); // every distinct removal is marked, present or not
      // Each change has its own sequence number, and a pull sees the deletes and the removals.
      expect(answer.body.seq).toBe(60 + 10 + 2000);
      const pulled = await server.app.inject({
        method: "GET",
        url: "/v1/pull?since=60&limit=1000&removed=1",
        headers: { authorization: `Bearer ${token}` },
      });
      const page = decodeBody(pulled.rawPayload) as PullResponse;
      expect(page.changes.filter((c) => c.kind === "delete")).toHaveLength(10);
      expect(page.changes.slice(10).every((c) => c.kind === "removed")).toBe(true);
      // Sent again, nothing changes.
      queries = 0;
      const again = await push({ v: SYNC_PROTOCOL_VERSION, device: "dev", deletes, removed, checkpoints: [] });
      expect(again.body.seq).toBe(answer.body.seq);
      expect(queries).toBeLessThan(40);
    } finally {
      await server.close();
      await inspect.end();
      await pool.end();
    }
  });
});

/**
 * The per-item code a push's deletes and removals ran before bc93b52, kept
 * as the oracle of the set-based statements: each delete raises its
 * thread's tombstone (when higher) and deletes up to it, each new removal
 * marks and deletes its checkpoint, one sequence number per change made.
 */
async function perItemOracle(pool: pg.Pool, user: string, body: PushRequest): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const locked = await client.query<{ seq: string }>("SELECT seq FROM lgsync_users WHERE user_id = $1 FOR UPDATE", [
      user,
    ]);
    let seq = Number(locked.rows[0]!.seq);
    for (const del of body.deletes) {
      const raised = await client.query(
        `INSERT INTO lgsync_tombstones (user_id, thread_id, max_deleted_id, seq) VALUES ($1, $2, $3, $4)
         ON CONFLICT (user_id, thread_id) DO UPDATE SET max_deleted_id = EXCLUDED.max_deleted_id, seq = EXCLUDED.seq
         WHERE lgsync_tombstones.max_deleted_id COLLATE "C" < EXCLUDED.max_deleted_id COLLATE "C"`,
        [user, del.thread_id, del.max_deleted_id, seq + 1],
      );
      if (raised.rowCount === 0) continue;
      seq += 1;
      for (const table of ["lgsync_checkpoints", "lgsync_writes"])
        await client.query(
          `DELETE FROM ${table} WHERE user_id = $1 AND thread_id = $2 AND checkpoint_id COLLATE "C" <= $3`,
          [user, del.thread_id, del.max_deleted_id],
        );
      await client.query(
        `DELETE FROM lgsync_blobs b WHERE b.user_id = $1 AND b.thread_id = $2
         AND NOT EXISTS (SELECT 1 FROM lgsync_checkpoints c WHERE c.user_id = $1 AND c.thread_id = $2)`,
        [user, del.thread_id],
      );
    }
    for (const r of body.removed ?? []) {
      const args = [user, r.thread_id, r.checkpoint_ns, r.checkpoint_id];
      const inserted = await client.query(
        `INSERT INTO lgsync_removed (user_id, thread_id, checkpoint_ns, checkpoint_id, seq, origin)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
        [...args, seq + 1, body.device ?? null],
      );
      if (inserted.rowCount === 0) continue;
      seq += 1;
      const where = "user_id = $1 AND thread_id = $2 AND checkpoint_ns = $3 AND checkpoint_id = $4";
      await client.query(`DELETE FROM lgsync_checkpoints WHERE ${where}`, args);
      await client.query(`DELETE FROM lgsync_writes WHERE ${where}`, args);
    }
    await client.query("UPDATE lgsync_users SET seq = $2 WHERE user_id = $1", [user, seq]);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  } finally {
    client.release();
  }
}

/** What a space holds after a push's deletes and removals (sequence numbers apart), as sorted lines. */
async function spaceRows(inspect: pg.Pool, user: string): Promise<Record<string, string[]>> {
  const lines = async (sql: string) =>
    (await inspect.query<Record<string, unknown>>(sql, [user])).rows.map((row) => Object.values(row).join(" ")).sort();
  return {
    checkpoints: await lines(
      "SELECT thread_id, checkpoint_ns, checkpoint_id FROM lgsync_checkpoints WHERE user_id = $1",
    ),
    writes: await lines(
      "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx FROM lgsync_writes WHERE user_id = $1",
    ),
    blobs: await lines("SELECT thread_id, checkpoint_ns, channel, version FROM lgsync_blobs WHERE user_id = $1"),
    tombstones: await lines("SELECT thread_id, max_deleted_id FROM lgsync_tombstones WHERE user_id = $1"),
    removed: await lines(
      "SELECT thread_id, checkpoint_ns, checkpoint_id, origin FROM lgsync_removed WHERE user_id = $1",
    ),
    // The removals in the order their numbers give them (pulls hand them on in that order).
    removedInOrder: (
      await inspect.query<{ k: string }>(
        "SELECT thread_id || ' ' || checkpoint_ns || ' ' || checkpoint_id AS k FROM lgsync_removed WHERE user_id = $1 ORDER BY seq",
        [user],
      )
    ).rows.map((row) => row.k),
  };
}

/**
 * The seeds of the random mixes: twelve at the full depth, four at the fast one. Bugs planted in
 * deletes.ts and removals.ts, and the seeds of the twelve that failed each: a thread's lower delete kept
 * instead of its highest (1-4, 7, 8, 10, 11); a checkpoint equal to its tombstone kept (1-5, 7, 8, 10, 11);
 * removals numbered in reverse order (all but 3 and 5); a thread's blobs dropped while checkpoints of it
 * remain (2-5, 10-12); a removal's writes left (4, 9, 10, 11 only). Seeds 4, 10 and 11 fail every one;
 * seed 1 is the first of the original order.
 */
const MIX_SEEDS = byDepth(
  [1, 4, 10, 11],
  Array.from({ length: 12 }, (_, i) => i + 1),
);

describe("sync server: a push's deletes and removals against the per-item code", () => {
  it("leave the same rows, tombstones and marks for random mixes, and touch no other space", async () => {
    const inspect = await inspector();
    const other = await createSyncServer({ connectionString: await postgresUrl(), authenticate });
    try {
      const id = (i: number) => `1f0aaaaa-0000-6000-8000-${String(i).padStart(12, "0")}`;
      for (const seed of MIX_SEEDS) {
        const random = seeded(seed);
        const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
        const threads = ["t0", "t1", "t2", "t3"];
        const spaces = ["", "s"];
        // The same history for both users: checkpoints with writes and values, then earlier deletes and removals.
        const seeding: PushRequest[] = [];
        const checkpoints: WireCheckpoint[] = [];
        for (const t of threads)
          for (const ns of spaces)
            for (let c = 1; c <= 6; c++) {
              if (random() < 0.3) continue;
              const cp = wireCheckpoint(t, [], id(c));
              cp.checkpoint_ns = ns;
              cp.channel_versions = { x: c, y: 1 };
              cp.blobs = [
                { channel: "x", version: c, value: ["msgpack", new Uint8Array([c])] },
                { channel: "y", version: 1, value: ["msgpack", new Uint8Array([0])] },
              ];
              cp.writes =
                random() < 0.5
                  ? [{ task_id: `k${c}`, idx: 0, channel: "x", task_path: "", value: ["msgpack", new Uint8Array([1])] }]
                  : [];
              checkpoints.push(cp);
            }
        seeding.push({ v: SYNC_PROTOCOL_VERSION, deletes: [], checkpoints });
        const randomDeletes = (n: number) =>
          Array.from({ length: n }, () => ({
            thread_id: pick([...threads, "t9"]),
            max_deleted_id: id(Math.floor(random() * 8)),
          }));
        const randomRemovals = (n: number) =>
          Array.from({ length: n }, () => ({
            thread_id: pick([...threads, "t9"]),
            checkpoint_ns: pick(spaces),
            checkpoint_id: id(1 + Math.floor(random() * 7)),
          }));
        seeding.push({
          v: SYNC_PROTOCOL_VERSION,
          device: "old",
          deletes: randomDeletes(2),
          removed: randomRemovals(3),
          checkpoints: [],
        });
        // The push compared: duplicates, lower and higher than the tombstones, a delete and a removal of one checkpoint.
        const removed = randomRemovals(Math.floor(random() * 10));
        const deletes = [
          ...randomDeletes(Math.floor(random() * 10)),
          ...removed
            .filter(() => random() < 0.3)
            .map((r) => ({ thread_id: r.thread_id, max_deleted_id: r.checkpoint_id })),
        ];
        const body: PushRequest = { v: SYNC_PROTOCOL_VERSION, device: "dev", deletes, removed, checkpoints: [] };

        const set = newUser(`set${seed}`);
        const oracle = newUser(`oracle${seed}`);
        const split = newUser(`split${seed}`);
        for (const request of seeding)
          for (const { token } of [set, oracle, split])
            expect((await call("POST", "/push", token, encodeBody(request))).status).toBe(200);
        const before = Number(
          (await inspect.query<{ seq: string }>("SELECT seq FROM lgsync_users WHERE user_id = $1", [set.user])).rows[0]!
            .seq,
        );
        await perItemOracle(inspect, oracle.user, body);
        const expected = await spaceRows(inspect, oracle.user);
        const answer = await call("POST", "/push", set.token, encodeBody(body));
        expect(answer.status, `seed ${seed}`).toBe(200);
        expect(await spaceRows(inspect, set.user), `seed ${seed}: ${JSON.stringify(body)}`).toEqual(expected);
        // The oracle's space (same thread ids) is untouched by the other user's push.
        expect(await spaceRows(inspect, oracle.user), `seed ${seed}`).toEqual(expected);
        // One number per change, none reused: the tombstones raised and the new marks hold before+1..seq.
        const numbers = (
          await inspect.query<{ seq: string }>(
            `SELECT seq FROM lgsync_tombstones WHERE user_id = $1 AND seq > $2
             UNION ALL SELECT seq FROM lgsync_removed WHERE user_id = $1 AND seq > $2 ORDER BY seq`,
            [set.user, before],
          )
        ).rows.map((row) => Number(row.seq));
        expect(numbers, `seed ${seed}`).toEqual(Array.from({ length: numbers.length }, (_, i) => before + 1 + i));
        expect(answer.body.seq, `seed ${seed}`).toBe(before + numbers.length);

        // The same deletes and removals split between two pushes sent at once to two server processes (two
        // devices' rounds): the user's row lock makes them one after the other, so the same rows, and no
        // number given twice. (One process gates a user's writes one at a time, so it takes two.)
        const half = (i: number) => i % 2 === 0;
        const halves = [0, 1].map((h): PushRequest => ({
          ...body,
          deletes: deletes.filter((_, i) => half(i) === (h === 0)),
          removed: removed.filter((_, i) => half(i) === (h === 0)),
        }));
        const both = await Promise.all([
          call("POST", "/push", split.token, encodeBody(halves[0]!)).then((r) => r.status),
          other.app
            .inject({
              method: "POST",
              url: "/v1/push",
              headers: { authorization: `Bearer ${split.token}`, "content-type": SYNC_MEDIA_TYPE },
              payload: Buffer.from(encodeBody(halves[1]!)),
            })
            .then((r) => r.statusCode),
        ]);
        expect(both, `seed ${seed}`).toEqual([200, 200]);
        const { removedInOrder: _order, ...rows } = await spaceRows(inspect, split.user);
        const { removedInOrder: _expectedOrder, ...expectedRows } = expected;
        expect(rows, `seed ${seed}, two pushes at once`).toEqual(expectedRows);
        const all = (
          await inspect.query<{ seq: string }>(
            `SELECT seq FROM lgsync_tombstones WHERE user_id = $1 UNION ALL SELECT seq FROM lgsync_removed WHERE user_id = $1
             UNION ALL SELECT seq FROM lgsync_checkpoints WHERE user_id = $1`,
            [split.user],
          )
        ).rows.map((row) => row.seq);
        expect(new Set(all).size, `seed ${seed}, two pushes at once`).toBe(all.length);
      }
    } finally {
      await other.close();
      await inspect.end();
    }
  });
});

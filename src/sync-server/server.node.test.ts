/**
 * The sync server's edges: authentication and isolation on every route, and
 * bad or oversized requests answered with clear errors while the server
 * stays up. Real server on loopback, real PostgreSQL.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { chat } from "../../test/support/chat-graph.js";
import {
  device,
  inspector,
  newUser,
  serverForFile,
  startServer,
  wireCheckpoint,
} from "../../test/support/sync/harness.js";
import {
  SYNC_MEDIA_TYPE,
  decodeBody,
  encodeBody,
  type PullResponse,
  type ThreadsResponse,
  type HelloResponse,
} from "../sync/protocol.js";

const served = serverForFile({ maxBodyBytes: 256 * 1024 });

async function call(method: string, path: string, token: string | undefined, body?: unknown, type = SYNC_MEDIA_TYPE) {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  let payload: Uint8Array<ArrayBuffer> | string | undefined;
  if (body !== undefined) {
    headers["content-type"] = type;
    payload =
      body instanceof Uint8Array || typeof body === "string"
        ? (body as Uint8Array<ArrayBuffer> | string)
        : (encodeBody(body) as Uint8Array<ArrayBuffer>);
  }
  const response = await fetch(`${served.url}/v1${path}`, { method, headers, body: payload });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const contentType = response.headers.get("content-type") ?? "";
  const parsed: unknown = contentType.startsWith(SYNC_MEDIA_TYPE)
    ? decodeBody(bytes)
    : JSON.parse(new TextDecoder().decode(bytes));
  return { status: response.status, body: parsed as Record<string, unknown> };
}

const ROUTES: [string, string, unknown?][] = [
  ["GET", "/hello"],
  ["GET", "/threads"],
  ["GET", "/pull?since=0"],
  ["POST", "/push", { v: 1, checkpoints: [], deletes: [] }],
  ["PUT", "/key", { v: 1, keyRecord: new Uint8Array([1]) }],
];

describe("sync server: auth and isolation", () => {
  it("refuses every route without a valid token", async () => {
    for (const [method, path, body] of ROUTES) {
      for (const token of [undefined, "", "nope", "token-of-"]) {
        const { status, body: error } = await call(method, path, token, body);
        expect(status, `${method} ${path} with ${String(token)}`).toBe(401);
        expect(error).toMatchObject({ error: { code: "unauthorized" } });
      }
    }
  });

  it("another user's token gets nothing of ours, and changes nothing of ours, on every route", async () => {
    const ada = newUser("ada");
    const eve = newUser("eve");
    const a = device(served.url, ada.token);
    await chat(a.saver, "secret-thread", ["ada's secret"]);
    await a.sync.syncNow();
    const adaThreads = (await call("GET", "/threads", ada.token)).body as unknown as ThreadsResponse;
    expect(adaThreads.threads.map((t) => t.thread_id)).toEqual(["secret-thread"]);

    // Reads: hello, threads, pull (whole log, and asking for the thread by name).
    const hello = (await call("GET", "/hello", eve.token)).body as unknown as HelloResponse;
    expect(hello).toMatchObject({ user: eve.user, hasData: false, keyRecord: null, seq: 0 });
    expect(((await call("GET", "/threads", eve.token)).body as unknown as ThreadsResponse).threads).toEqual([]);
    expect(((await call("GET", "/pull?since=0", eve.token)).body as unknown as PullResponse).changes).toEqual([]);
    expect(
      ((await call("GET", "/pull?since=0&thread=secret-thread", eve.token)).body as unknown as PullResponse).changes,
    ).toEqual([]);

    // Writes: a delete of "her" thread with ada's id, a push onto it, a key: all land in eve's own space.
    expect(
      (
        await call("POST", "/push", eve.token, {
          v: 1,
          checkpoints: [],
          deletes: [{ thread_id: "secret-thread", max_deleted_id: "0" }],
        })
      ).status,
    ).toBe(200);
    const e = device(served.url, eve.token);
    await chat(e.saver, "secret-thread", ["eve writes here"]);
    await e.sync.syncNow();
    expect((await call("PUT", "/key", eve.token, { v: 1, keyRecord: new Uint8Array([9, 9]) })).status).toBe(409); // eve has plaintext data now

    // Ada's data is untouched: same thread, same checkpoints, no key record.
    expect((await call("GET", "/threads", ada.token)).body).toEqual(adaThreads);
    expect((await call("GET", "/hello", ada.token)).body).toMatchObject({ keyRecord: null, hasData: true });
    const b = device(served.url, ada.token);
    await b.sync.syncNow();
    const onB = await b.saver.getTuple({ configurable: { thread_id: "secret-thread" } });
    expect(JSON.stringify(onB?.checkpoint.channel_values)).toContain("ada's secret");
    expect(JSON.stringify(onB?.checkpoint.channel_values)).not.toContain("eve");
    for (const d of [a, b, e]) {
      d.sync.close();
      await d.saver.close();
    }
  });
});

/** A push body of one well-formed checkpoint with `fields` changed. */
const pushOne = (fields: Record<string, unknown>) => ({
  v: 1,
  deletes: [],
  checkpoints: [
    {
      thread_id: "t",
      checkpoint_ns: "",
      checkpoint_id: "c",
      checkpoint: ["x", new Uint8Array()],
      metadata: ["x", new Uint8Array()],
      channel_versions: {},
      blobs: [],
      writes: [],
      ...fields,
    },
  ],
});

describe("sync server: bad requests", () => {
  it("answers bad input with clear 4xx errors and stays up", async () => {
    const { token } = newUser();
    const cloning = new Packr({ structuredClone: true, moreTypes: true });
    const cyclic: Record<string, unknown> = { v: 1, checkpoints: [], deletes: [] };
    cyclic.self = cyclic;
    const cases: [string, string, unknown, string | undefined, number, RegExp][] = [
      ["POST", "/push", new Uint8Array([0xc1, 0xff, 0x00]), undefined, 400, /MessagePack/],
      // msgpackr's own extensions, which this protocol never writes: a Set, and a body that refers to itself.
      ["POST", "/push", cloning.pack({ v: 1, checkpoints: [], deletes: [], x: new Set([1]) }), undefined, 400, /plain/],
      ["POST", "/push", cloning.pack(cyclic), undefined, 400, /plain MessagePack/],
      ["POST", "/push", { v: 99, checkpoints: [], deletes: [] }, undefined, 400, /protocol version 99/],
      ["POST", "/push", { v: 1, checkpoints: "x", deletes: [] }, undefined, 400, /checkpoints must be an array/],
      ["POST", "/push", { v: 1, checkpoints: [{ thread_id: "t" }], deletes: [] }, undefined, 400, /channel_versions/],
      ["POST", "/push", pushOne({ thread_id: "__proto__" }), undefined, 400, /__proto__/],
      // A row's chain (binding version 3) is exactly a SHA-256 as lowercase hex.
      ...["ab".repeat(32).slice(1), "AB".repeat(32), 12345].map(
        (chain): [string, string, unknown, string | undefined, number, RegExp] => [
          "POST",
          "/push",
          pushOne({ chain }),
          undefined,
          400,
          /checkpoints\[0\]\.chain must be 64 lowercase hex/,
        ],
      ),
      ["POST", "/push", "{}", "application/json", 415, /application\/vnd\.langgraph-sync\+msgpack/],
      ["POST", "/push", new Uint8Array(300 * 1024), undefined, 413, /./],
      ["GET", "/pull?since=-1", undefined, undefined, 400, /since/],
      ["GET", "/pull?limit=abc", undefined, undefined, 400, /limit/],
      ["PUT", "/key", { v: 1, keyRecord: "not bytes" }, undefined, 400, /keyRecord/],
      ["GET", "/nowhere", undefined, undefined, 404, /No route/],
    ];
    for (const [method, path, body, type, status, message] of cases) {
      const result = await call(method, path, token, body, type ?? SYNC_MEDIA_TYPE);
      expect(result.status, `${method} ${path}`).toBe(status);
      expect((result.body.error as { message: string }).message, `${method} ${path}`).toMatch(message);
    }
    // Still up, and nothing was stored for the user.
    expect((await fetch(`${served.url}/v1/health`)).status).toBe(200);
    expect(((await call("GET", "/threads", token)).body as unknown as ThreadsResponse).threads).toEqual([]);
  });
});

describe("sync server: CORS", () => {
  it("answers preflights and marks responses for the allowed origins only", async () => {
    const { server: corsServer, url: corsUrl } = await startServer({ corsOrigins: ["http://app.example"] });
    try {
      const preflight = await fetch(`${corsUrl}/v1/push`, {
        method: "OPTIONS",
        headers: {
          origin: "http://app.example",
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type",
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("access-control-allow-origin")).toBe("http://app.example");
      expect(preflight.headers.get("access-control-allow-headers")).toContain("authorization");
      const { token } = newUser();
      const allowed = await fetch(`${corsUrl}/v1/hello`, {
        headers: { origin: "http://app.example", authorization: `Bearer ${token}` },
      });
      expect(allowed.status).toBe(200);
      expect(allowed.headers.get("access-control-allow-origin")).toBe("http://app.example");
      const other = await fetch(`${corsUrl}/v1/hello`, {
        headers: { origin: "http://evil.example", authorization: `Bearer ${token}` },
      });
      expect(other.headers.get("access-control-allow-origin")).toBeNull();
      // Without the option, no CORS headers at all.
      const plain = await fetch(`${served.url}/v1/hello`, {
        headers: { origin: "http://app.example", authorization: `Bearer ${token}` },
      });
      expect(plain.headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await corsServer.close();
    }
  });
});

describe("sync server: queries on one connection", () => {
  it("never sends a query while another runs on the same client (pg 9 refuses that)", async () => {
    const { default: pg } = await import("pg");
    const { createSyncServer } = await import("../sync-server.js");
    const { authenticate, postgresUrl } = await import("../../test/support/sync/harness.js");
    const pool = new pg.Pool({ connectionString: await postgresUrl(), max: 4 });
    const overlaps: string[] = [];
    pool.on("connect", (client) => {
      let running = 0;
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
        if (running > 0) overlaps.push(String(args[0]).trim().split("\n")[0]!);
        running += 1;
        const last = args.at(-1);
        if (typeof last === "function")
          args[args.length - 1] = (...results: unknown[]) => {
            running -= 1;
            return (last as (...r: unknown[]) => unknown)(...results);
          };
        const result = query(...args);
        if (result instanceof Promise) return result.finally(() => (running -= 1));
        if (typeof last !== "function") running -= 1; // a submittable: not counted
        return result;
      };
    });
    const server = await createSyncServer({ pool, authenticate });
    try {
      const url = await server.listen({ port: 0 });
      const { token } = newUser("serial");
      const a = device(url, token);
      const b = device(url, token);
      await chat(a.saver, "t", ["one", "two"]);
      await a.saver.prune(["t"]);
      await a.sync.syncNow();
      // B's pull reads checkpoints, deletes and removals, then sizes and values.
      expect((await b.sync.syncNow()).pulled).toBeGreaterThan(0);
      expect(overlaps).toEqual([]);
      for (const d of [a, b]) {
        d.sync.close();
        await d.saver.close();
      }
    } finally {
      await server.close();
      await pool.end();
    }
  });
});

describe("sync server: the thread list", () => {
  const threadsOf = async (query: string, token: string) => {
    const { status, body } = await call("GET", `/threads${query}`, token);
    return { status, body: body as unknown as ThreadsResponse & { error?: { code: string; message: string } } };
  };

  it("pages with limit and after, in thread id order, naming the next page until the last", async () => {
    const { token } = newUser("pages");
    const ids = ["t-a", "t-b", "t-c", "t-d", "t-e"];
    const pushed = await call("POST", "/push", token, {
      v: 1,
      deletes: [],
      checkpoints: ids.map((id) => wireCheckpoint(id)),
    });
    expect(pushed.status).toBe(200);
    const first = await threadsOf("?limit=2", token);
    expect(first.body.threads.map((t) => t.thread_id)).toEqual(["t-a", "t-b"]);
    expect(first.body.next).toBe("t-b");
    const second = await threadsOf(`?limit=2&after=${first.body.next}`, token);
    expect(second.body.threads.map((t) => t.thread_id)).toEqual(["t-c", "t-d"]);
    const last = await threadsOf(`?limit=2&after=${second.body.next}`, token);
    expect(last.body.threads.map((t) => t.thread_id)).toEqual(["t-e"]);
    expect(last.body.next).toBeUndefined();
    // Without the parameters (clients that predate pages): the whole list, as before.
    const whole = await threadsOf("", token);
    expect(whole.body.threads.map((t) => t.thread_id)).toEqual(ids);
    expect(whole.body.next).toBeUndefined();
    for (const bad of [
      "?limit=0",
      "?limit=1001",
      "?limit=x",
      "?after=",
      `?after=${"x".repeat(1025)}`,
      "?after=__proto__",
    ]) {
      const refused = await threadsOf(bad, token);
      expect(refused.status, bad).toBe(400);
      expect(refused.body.error?.code, bad).toBe("bad_request");
    }
  });

  it("lists each thread that lives through the listing once, whatever is created or deleted between pages", async () => {
    const { token } = newUser("pages-churn");
    const push = async (body: Record<string, unknown>) =>
      expect((await call("POST", "/push", token, { v: 1, deletes: [], checkpoints: [], ...body })).status).toBe(200);
    await push({ checkpoints: ["t-a", "t-b", "t-c", "t-d", "t-e", "t-f"].map((id) => wireCheckpoint(id)) });
    const listed: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const page = await threadsOf(`?limit=2${after === undefined ? "" : `&after=${after}`}`, token);
      listed.push(...page.body.threads.map((t) => t.thread_id));
      after = page.body.next;
      pages += 1;
      if (pages === 1) {
        // Between pages: the last listed and a coming thread deleted, threads created before and after the cursor.
        await push({
          deletes: ["t-b", "t-c"].map((id) => ({ thread_id: id, max_deleted_id: wireCheckpoint(id).checkpoint_id })),
          checkpoints: [wireCheckpoint("t-0"), wireCheckpoint("t-z")],
        });
      }
    } while (after !== undefined && pages < 10);
    expect(listed).toEqual(["t-a", "t-b", "t-d", "t-e", "t-f", "t-z"]);
  });

  it("refuses an unpaged list past 10,000 threads with a 413 that says how to page, where it sent them all", async () => {
    const { user, token } = newUser("many-threads");
    const pool = await inspector();
    try {
      await pool.query("INSERT INTO lgsync_users (user_id) VALUES ($1)", [user]);
      await pool.query(
        `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, checkpoint_type, checkpoint,
           metadata_type, metadata, channel_versions, seq)
         SELECT $1, 't' || lpad(n::text, 6, '0'), '', '1f0aaaaa-0000-6000-8000-000000000001', 'msgpack', '\\x80',
           'msgpack', '\\x80', '{}', n FROM generate_series(1, 10001) n`,
        [user],
      );
      const refused = await threadsOf("", token);
      expect(refused.status).toBe(413);
      expect(refused.body.error).toMatchObject({ code: "too_many_threads" });
      expect(refused.body.error?.message).toMatch(/limit=.*after=/);
      const page = await threadsOf("?limit=1000&after=t009999", token);
      expect(page.body.threads.map((t) => t.thread_id)).toEqual(["t010000", "t010001"]);
      expect(page.body.next).toBeUndefined();
    } finally {
      await pool.end();
    }
  });
});

describe("sync server: options", () => {
  it("refuses a size or count that is not a positive integer, naming it, before it connects", async () => {
    const { createSyncServer } = await import("../sync-server.js");
    const { authenticate } = await import("../../test/support/sync/harness.js");
    // Nothing listens there: a server that did not check its options first fails to connect instead.
    const connectionString = "postgres://nobody@127.0.0.1:1/none";
    const names = [
      "maxBodyBytes",
      "maxConnections",
      "limits.maxUserBytes",
      "limits.maxCheckpointBytes",
      "limits.maxPushCheckpoints",
      "limits.requestsPerMinute",
      "limits.badTokensPerMinute",
    ];
    for (const name of names) {
      for (const bad of ["1GB", 0, -1, Number.NaN, 1.5, Number.MAX_SAFE_INTEGER + 2]) {
        const [outer, inner] = name.split(".") as [string, string | undefined];
        const options = inner === undefined ? { [outer]: bad } : { limits: { [inner]: bad } };
        await expect(
          createSyncServer({ connectionString, authenticate, ...options } as never),
          `${name}: ${String(bad)}`,
        ).rejects.toThrow(new RegExp(`createSyncServer: \`${name.replace(".", "\\.")}\` must be a positive integer`));
      }
    }
    // One origin as a string: \`includes\` on it matched any part of it ("https://app.example.co" too).
    for (const corsOrigins of ["https://app.example.com", ["https://app.example.com", 7]])
      await expect(
        createSyncServer({ connectionString, authenticate, corsOrigins: corsOrigins as never }),
        String(corsOrigins),
      ).rejects.toThrow(/createSyncServer: `corsOrigins` must be an array of origins/);
    // A misspelt limit would leave the default in force unseen.
    await expect(
      createSyncServer({ connectionString, authenticate, limits: { maxUsersBytes: 1024 } as never }),
    ).rejects.toThrow(/unknown limit `maxUsersBytes`; the limits are maxCheckpointBytes, maxUserBytes/);
  });

  it("refuses a trustProxy it cannot read, naming it, before it connects or starts waiting for the database", async () => {
    const { createSyncServer } = await import("../sync-server.js");
    const { authenticate } = await import("../../test/support/sync/harness.js");
    const connectionString = "postgres://nobody@127.0.0.1:1/none";
    // "true" as a string (a config file, SYNC_TRUST_PROXY=true), a range past /32.
    for (const trustProxy of ["true", ["10.0.0.2", "10.0.0.0/40"]]) {
      let waits = 0;
      await expect(
        createSyncServer({
          connectionString,
          authenticate,
          trustProxy,
          waitForDatabase: true,
          onDatabaseWait: () => (waits += 1),
        }),
        String(trustProxy),
      ).rejects.toThrow(/createSyncServer: `trustProxy` must be true or the proxies' addresses and CIDR ranges/);
      // Before, Fastify threw once the database start was under way, and that start went on trying for ever.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(waits, String(trustProxy)).toBe(0);
    }
  });
});

/**
 * A pull page's budget against a chain the change log holds backwards: a
 * client that pushes a thread's checkpoints newest first puts every
 * ancestor after its child in the log, and a page carries a checkpoint's
 * later ancestors before it. Real server on loopback, real PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import {
  authenticate,
  cuttingProxy,
  inspector,
  newUser,
  postgresUrl,
  serverForFile,
  wireCheckpoint,
} from "../../test/support/sync/harness.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody, type PullResponse } from "../sync/protocol.js";
import { createSyncServer } from "./server.js";

const served = serverForFile();

/** Checkpoints in the chain, and the bytes of each one's value: 12 MiB in all, past a page's 8 MiB. */
const CHAIN = 12;
const VALUE_BYTES = 1024 * 1024;

const idOf = (i: number) => `1f0aaaaa-0000-6000-8000-${String(i).padStart(12, "0")}`;

async function call(path: string, token: string, body?: Uint8Array) {
  const response = await fetch(`${served.url}/v1${path}`, {
    method: body ? "POST" : "GET",
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": SYNC_MEDIA_TYPE } : {}) },
    body: body as Uint8Array<ArrayBuffer> | undefined,
  });
  expect(response.status).toBe(200);
  return new Uint8Array(await response.arrayBuffer());
}

describe("sync server: a pull page and a chain the log holds backwards", () => {
  it("keeps each page within its budget, and brings every checkpoint, page by page", async () => {
    const { token } = newUser("backwards");
    // Newest first, one push each: checkpoint i's parent is i - 1, and reaches the server after it.
    for (let i = CHAIN; i >= 1; i--) {
      const checkpoint = wireCheckpoint("chain", [], idOf(i));
      if (i > 1) checkpoint.parent_checkpoint_id = idOf(i - 1);
      checkpoint.channel_versions = { value: i };
      checkpoint.blobs = [{ channel: "value", version: i, value: ["bytes", new Uint8Array(VALUE_BYTES).fill(i)] }];
      await call("/push", token, encodeBody({ v: SYNC_PROTOCOL_VERSION, checkpoints: [checkpoint], deletes: [] }));
    }
    const received = new Set<string>();
    const sizes: number[] = [];
    let since = 0;
    for (let pages = 0; pages < 3 * CHAIN; pages++) {
      const bytes = await call(`/pull?since=${since}`, token);
      sizes.push(bytes.length);
      const page = decodeBody(bytes) as PullResponse;
      for (const change of page.changes)
        if (change.kind === "checkpoint") received.add(change.checkpoint.checkpoint_id);
      since = page.cursor;
      if (!page.more) break;
    }
    // Before, the first page carried the whole chain ahead of the newest checkpoint, past any budget:
    // 12.6 MB here, and up to the user's quota (1 GiB) in one answer built in the server's memory.
    expect(Math.max(...sizes)).toBeLessThanOrEqual(8 * 1024 * 1024 + 64 * 1024);
    expect([...received].sort()).toEqual(Array.from({ length: CHAIN }, (_, i) => idOf(i + 1)));
  });
});

/** A sync server reading its database through a proxy that counts the bytes the database sends it. */
async function countedServer() {
  const database = new URL(await postgresUrl());
  const proxy = await cuttingProxy(Number(database.port), () => 0);
  proxy.cutting.on = false;
  database.port = String(proxy.port);
  const server = await createSyncServer({ connectionString: database.href, authenticate });
  const admin = await inspector();
  const url = await server.listen({ port: 0 });
  return {
    url,
    admin,
    read: proxy.received,
    async close() {
      await server.close();
      await admin.end();
      await proxy.close();
    },
  };
}

/** 64 KiB of channel versions (compressed on disk, 64 KiB read back each time a row's versions are). */
const WIDE_VERSIONS = `'{"' || repeat('v', ${64 * 1024}) || '":' || i || '}'`;

describe("sync server: a pull page and heads of large channel versions", () => {
  it("reads from the database what its budget takes, not every head of its limit", async () => {
    const { user, token } = newUser("versions");
    const counted = await countedServer();
    try {
      // 1,000 checkpoints of 64 KiB of channel versions each (64 MiB read back), one pull's limit of them:
      // a page's 8 MiB takes about 128.
      await counted.admin.query("INSERT INTO lgsync_users (user_id, seq) VALUES ($1, 1000)", [user]);
      await counted.admin.query(
        `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, checkpoint_type, checkpoint,
           metadata_type, metadata, channel_versions, seq)
         SELECT $1, 't' || i, '', $2, 'msgpack', '\\x80', 'msgpack', '\\x80', ${WIDE_VERSIONS}, i
         FROM generate_series(1, 1000) AS i`,
        [user, idOf(1)],
      );
      const before = counted.read.n;
      const response = await fetch(`${counted.url}/v1/pull?since=0&limit=1000`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(200);
      const page = decodeBody(new Uint8Array(await response.arrayBuffer())) as PullResponse;
      const read = counted.read.n - before;
      expect(page.more).toBe(true);
      expect(page.changes.length).toBeGreaterThan(100);
      expect(page.changes.length).toBeLessThan(140);
      // The page's rows are read twice (weighed, then sent) and nothing else of any size: before, every one
      // of the 1,000 heads' channel versions was loaded first, 64 MiB read to send 8.
      expect(read).toBeLessThan(3 * 8 * 1024 * 1024);
    } finally {
      await counted.close();
    }
  }, 60_000);

  it("reads what each page of a chain held backwards sends, not the rest of the chain", async () => {
    const { user, token } = newUser("backwards-versions");
    const counted = await countedServer();
    const LENGTH = 400;
    try {
      // One thread's chain of 400 checkpoints of 64 KiB of channel versions each (25 MiB), pushed newest
      // first: checkpoint i's parent is i - 1, and the log puts it after i.
      await counted.admin.query("INSERT INTO lgsync_users (user_id, seq) VALUES ($1, $2)", [user, LENGTH]);
      await counted.admin.query(
        `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
           checkpoint_type, checkpoint, metadata_type, metadata, channel_versions, seq)
         SELECT $1, 'chain', '', '1f0aaaaa-0000-6000-8000-' || lpad(i::text, 12, '0'),
           CASE WHEN i > 1 THEN '1f0aaaaa-0000-6000-8000-' || lpad((i - 1)::text, 12, '0') END,
           'msgpack', '\\x80', 'msgpack', '\\x80', ${WIDE_VERSIONS}, $2 + 1 - i
         FROM generate_series(1, $2) AS i`,
        [user, LENGTH],
      );
      const received = new Set<string>();
      const reads: number[] = [];
      let since = 0;
      for (let pages = 0; pages < 20; pages++) {
        const before = counted.read.n;
        const response = await fetch(`${counted.url}/v1/pull?since=${since}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(response.status).toBe(200);
        const page = decodeBody(new Uint8Array(await response.arrayBuffer())) as PullResponse;
        reads.push(counted.read.n - before);
        for (const change of page.changes)
          if (change.kind === "checkpoint") received.add(change.checkpoint.checkpoint_id);
        since = page.cursor;
        if (!page.more) break;
      }
      expect(received.size).toBe(LENGTH);
      // Each page weighs and then sends its 8 MiB, and looks one checkpoint ahead. Before, each weighed every
      // ancestor its first checkpoint has left (25, 17, 9 MiB, with each page sent: the chain read about quadratically).
      expect(Math.max(...reads)).toBeLessThan(3 * 8 * 1024 * 1024);
    } finally {
      await counted.close();
    }
  }, 120_000);
});

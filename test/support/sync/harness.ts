/**
 * Sync test harness: a sync server on the real throwaway PostgreSQL, devices
 * as IndexedDBSavers on separate fake IDBFactory instances (two browsers),
 * and a TCP proxy that can cut connections mid-request.
 */
import { IDBFactory } from "fake-indexeddb";
import { createServer, connect, type Server, type Socket } from "node:net";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import type { BaseCheckpointSaver, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { IndexedDBSaver } from "../../../src/saver/index.js";
import { SyncClient, type SyncClientOptions } from "../../../src/sync.js";
import { createSyncServer, type SyncServer, type SyncServerOptions } from "../../../src/sync-server.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, encodeBody, type WireCheckpoint } from "../../../src/sync/protocol.js";
import { acquirePostgres } from "../postgres.js";
import { chatGraph, plain } from "../chat-graph.js";

/** A fresh user id and its token, unique per call (tables are shared by tests). */
export function newUser(label = "u"): { user: string; token: string } {
  const user = `${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  return { user, token: `token-of-${user}` };
}

/** Tokens are `token-of-<user>`; anything else is refused. */
export function authenticate(token: string): string | undefined {
  return token.startsWith("token-of-") ? token.slice("token-of-".length) : undefined;
}

let acquired: ReturnType<typeof acquirePostgres> | undefined;

/** The PostgreSQL URL for this run. */
export function postgresUrl(): Promise<string> {
  acquired ??= acquirePostgres();
  return acquired.then((pgs) => pgs.url);
}

/**
 * Stops the PostgreSQL server {@link postgresUrl} started for this process,
 * if it started one (where no globalSetup provides one, as in e2e); a
 * provided server is left to its owner.
 */
export async function releasePostgres(): Promise<void> {
  const pgs = acquired;
  acquired = undefined;
  await (await pgs)?.release();
}

/** A sync server on the test database, listening on a free loopback port. */
export async function startServer(
  options: Pick<SyncServerOptions, "maxBodyBytes" | "corsOrigins" | "limits"> & { port?: number } = {},
): Promise<{ server: SyncServer; url: string }> {
  const server = await createSyncServer({
    connectionString: await postgresUrl(),
    authenticate,
    maxBodyBytes: options.maxBodyBytes,
    corsOrigins: options.corsOrigins,
    limits: options.limits,
  });
  const address = await server.listen({ port: options.port ?? 0 });
  return { server, url: address };
}

/**
 * One sync server for the calling test file: started before its tests,
 * closed after them. Read `server` and `url` inside tests (they are set
 * once the file's `beforeAll` ran).
 */
export function serverForFile(options: Parameters<typeof startServer>[0] = {}): { server: SyncServer; url: string } {
  const running = { server: undefined as unknown as SyncServer, url: "" };
  beforeAll(async () => {
    Object.assign(running, await startServer(options));
  }, 60_000);
  afterAll(async () => {
    await running.server?.close();
  }, 30_000);
  return running;
}

/**
 * A checkpoint bundle as the wire carries it, as small as the protocol
 * allows: an empty MessagePack map for the checkpoint and its metadata, no
 * channel values, and `writes`.
 */
export function wireCheckpoint(
  threadId: string,
  writes: WireCheckpoint["writes"] = [],
  checkpointId = "1f0aaaaa-0000-6000-8000-000000000001",
): WireCheckpoint {
  return {
    thread_id: threadId,
    checkpoint_ns: "",
    checkpoint_id: checkpointId,
    checkpoint: ["msgpack", new Uint8Array([0x80])],
    metadata: ["msgpack", new Uint8Array([0x80])],
    channel_versions: {},
    blobs: [],
    writes,
  };
}

/** A push of one minimal checkpoint of `threadId` (see {@link wireCheckpoint}) by `token` to the server at `url`. */
export function pushThread(url: string, token: string, threadId: string): Promise<Response> {
  return fetch(`${url}/v1/push`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
    body: encodeBody({
      v: SYNC_PROTOCOL_VERSION,
      checkpoints: [wireCheckpoint(threadId)],
      deletes: [],
    }) as Uint8Array<ArrayBuffer>,
  });
}

/** A device: its own IndexedDB (a separate factory), saver and sync client. */
export interface Device {
  saver: IndexedDBSaver;
  sync: SyncClient;
  factory: IDBFactory;
}

/** Makes a device. */
export function device(
  url: string,
  token: string,
  options: { serde?: SerializerProtocol; client?: Partial<SyncClientOptions>; dbName?: string } = {},
): Device {
  const factory = new IDBFactory();
  const saver = new IndexedDBSaver({ dbName: options.dbName ?? "app", indexedDB: factory, serde: options.serde });
  const sync = new SyncClient({ saver, url, token, minBackoffMs: 10, maxBackoffMs: 50, ...options.client });
  return { saver, sync, factory };
}

/** Stops each device's sync client and closes its saver. */
export async function closeDevices(...devices: Device[]): Promise<void> {
  for (const d of devices) {
    d.sync.close();
    await d.saver.close();
  }
}

/** A pg pool on the test database, for looking at the server's tables. */
export async function inspector(): Promise<pg.Pool> {
  return new pg.Pool({ connectionString: await postgresUrl(), max: 2 });
}

/**
 * What `user`'s rows hold against the quota, summed from the rows
 * themselves (every column but the user id and the server's own `seq`,
 * `origin` and `idx`), beside the server's counter, which must equal it.
 */
export async function storedBytes(pool: pg.Pool, user: string): Promise<{ counter: number; rows: number }> {
  const octets = (...columns: string[]) => columns.map((c) => `coalesce(octet_length(${c}), 0)`).join(" + ");
  const tables: [string, string][] = [
    [
      "lgsync_checkpoints",
      octets(
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "checkpoint_type",
        "checkpoint",
        "metadata_type",
        "metadata",
        "channel_versions",
        "run_id",
        "chain",
        "parent_writes",
      ),
    ],
    ["lgsync_blobs", octets("thread_id", "checkpoint_ns", "channel", "version", "type", "value")],
    [
      "lgsync_writes",
      octets("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "channel", "task_path", "type", "value"),
    ],
    ["lgsync_tombstones", octets("thread_id", "max_deleted_id")],
    ["lgsync_removed", octets("thread_id", "checkpoint_ns", "checkpoint_id")],
  ];
  const { rows } = await pool.query<{ counter: string | null; rows: string }>(
    `SELECT (SELECT bytes FROM lgsync_users WHERE user_id = $1) AS counter, ${tables
      .map(([table, size]) => `(SELECT coalesce(sum(${size}), 0) FROM ${table} WHERE user_id = $1)`)
      .join(" + ")} AS rows`,
    [user],
  );
  return { counter: Number(rows[0]!.counter ?? 0), rows: Number(rows[0]!.rows) };
}

/**
 * A TCP proxy to `target` that destroys each connection after a random
 * number of bytes (either direction) while `cutting` is on: the network
 * dropping mid-request or mid-response. `received` counts the bytes the
 * target sent through it (what a server read of its database, say).
 */
export async function cuttingProxy(
  targetPort: number,
  random: () => number,
): Promise<{
  url: string;
  port: number;
  cutting: { on: boolean };
  cuts: { n: number };
  received: { n: number };
  close(): Promise<void>;
}> {
  const cutting = { on: true };
  const cuts = { n: 0 };
  const received = { n: 0 };
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, "127.0.0.1");
    sockets.add(client).add(upstream);
    let budget = cutting.on ? Math.floor(random() * 6000) + 1 : Infinity;
    const cut = () => {
      cuts.n += 1;
      client.destroy();
      upstream.destroy();
    };
    const relay = (from: Socket, to: Socket) =>
      from.on("data", (chunk: Buffer) => {
        if (chunk.length >= budget) {
          to.write(chunk.subarray(0, budget));
          return cut();
        }
        budget -= chunk.length;
        if (from === upstream) received.n += chunk.length;
        to.write(chunk);
      });
    relay(client, upstream);
    relay(upstream, client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    cutting,
    cuts,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A seeded PRNG (mulberry32), so failures replay. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every checkpoint id of a thread, all namespaces, sorted. */
export async function checkpointIds(saver: IndexedDBSaver, threadId: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    ids.push(`${tuple.config.configurable?.checkpoint_ns}|${tuple.checkpoint.id}|${tuple.pendingWrites?.length ?? 0}`);
  }
  return ids.sort();
}

/** The state as comparable data. */
export async function state(saver: BaseCheckpointSaver, threadId: string) {
  const snapshot = await chatGraph(saver).getState({ configurable: { thread_id: threadId } });
  return {
    messages: plain(snapshot.values.messages),
    checkpointId: snapshot.config.configurable?.checkpoint_id as string | undefined,
  };
}

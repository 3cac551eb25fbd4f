/**
 * Live push: a pull that waits (`wait=S`) answers as soon as any server
 * process on the same database commits a push of that user, and only then.
 * Two servers on the real PostgreSQL, plain HTTP clients speaking the protocol.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUser, startServer } from "../../test/support/sync/harness.js";
import {
  SYNC_MEDIA_TYPE,
  SYNC_PROTOCOL_VERSION,
  decodeBody,
  encodeBody,
  type PullResponse,
  type PushRequest,
} from "../sync/protocol.js";
import type { SyncServer } from "../sync-server.js";

const servers: { server: SyncServer; url: string }[] = [];

beforeAll(async () => {
  servers.push(await startServer(), await startServer());
}, 60_000);

afterAll(async () => {
  for (const { server } of servers) await server.close();
}, 30_000);

async function pull(url: string, token: string, query: string): Promise<PullResponse> {
  const response = await fetch(`${url}/v1/pull?${query}`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return decodeBody(new Uint8Array(await response.arrayBuffer())) as PullResponse;
}

async function push(url: string, token: string, threadId: string): Promise<void> {
  const request: PushRequest = {
    v: SYNC_PROTOCOL_VERSION,
    device: "pusher",
    checkpoints: [
      {
        thread_id: threadId,
        checkpoint_ns: "",
        checkpoint_id: "1f0aaaaa-0000-6000-8000-000000000001",
        checkpoint: ["msgpack", new Uint8Array([0x80])],
        metadata: ["msgpack", new Uint8Array([0x80])],
        channel_versions: {},
        blobs: [],
        writes: [],
      },
    ],
    deletes: [],
  };
  const response = await fetch(`${url}/v1/push`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": SYNC_MEDIA_TYPE },
    body: encodeBody(request) as Uint8Array<ArrayBuffer>,
  });
  expect(response.status).toBe(200);
}

describe("sync server: live push by long poll", () => {
  it("a waiting pull on one server answers within a second of a push through the other", async () => {
    const { token } = newUser("live");
    const [one, two] = servers;
    const started = performance.now();
    const waiting = pull(one!.url, token, "since=0&device=watcher&wait=20");
    await new Promise((resolve) => setTimeout(resolve, 300)); // the pull is waiting by now
    await push(two!.url, token, "live-thread");
    const page = await waiting;
    const elapsed = performance.now() - started;
    expect(page.changes.map((c) => (c.kind === "checkpoint" ? c.checkpoint.thread_id : ""))).toEqual(["live-thread"]);
    expect(elapsed).toBeLessThan(1300 + 300);
  });

  it("another user's push does not wake it; with nothing new it answers empty when its wait ends", async () => {
    const { token } = newUser("quiet");
    const other = newUser("noisy");
    const started = performance.now();
    const waiting = pull(servers[0]!.url, token, "since=0&wait=2");
    await push(servers[1]!.url, other.token, "not-yours");
    const page = await waiting;
    expect(page.changes).toEqual([]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(1900);
  });

  it("refuses a wait longer than the protocol allows", async () => {
    const { token } = newUser("long");
    const response = await fetch(`${servers[0]!.url}/v1/pull?since=0&wait=31`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(400);
  });
});

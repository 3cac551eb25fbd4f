/**
 * Live push: a pull that waits (`wait=S`) answers as soon as any server
 * process on the same database commits a push of that user, and only then.
 * Two servers on the real PostgreSQL, plain HTTP clients speaking the protocol.
 */
import { describe, expect, it } from "vitest";
import { newUser, serverForFile, wireCheckpoint } from "../../test/support/sync/harness.js";
import {
  SYNC_MEDIA_TYPE,
  SYNC_PROTOCOL_VERSION,
  decodeBody,
  encodeBody,
  type PullResponse,
  type PushRequest,
} from "../sync/protocol.js";

const servers = [serverForFile(), serverForFile()];

async function pull(url: string, token: string, query: string): Promise<PullResponse> {
  const response = await fetch(`${url}/v1/pull?${query}`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return decodeBody(new Uint8Array(await response.arrayBuffer())) as PullResponse;
}

async function push(url: string, token: string, threadId: string): Promise<void> {
  const request: PushRequest = {
    v: SYNC_PROTOCOL_VERSION,
    device: "pusher",
    checkpoints: [wireCheckpoint(threadId)],
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

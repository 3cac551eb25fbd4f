/**
 * Live push: a pull that waits (`wait=S`) answers as soon as any server
 * process on the same database commits a push of that user, and only then.
 * Delays are measured inside the test, from the push to the pull's answer,
 * and bounded against the wait, not a wall-clock figure a loaded machine
 * misses.
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
  it("a waiting pull on one server answers a push through the other at once, not when its wait ends", async () => {
    const { token } = newUser("live");
    const [one, two] = servers;
    const WAIT_S = 20;
    // The pull reaches the server and starts waiting before the push: it gets there, then a margin for its first read.
    const arrived = new Promise((resolve) => one!.server.app.server.once("request", resolve));
    let deliveredAt = 0;
    const waiting = pull(one!.url, token, `since=0&device=watcher&wait=${WAIT_S}`).then((page) => {
      deliveredAt = performance.now();
      return page;
    });
    await arrived;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(deliveredAt).toBe(0); // still waiting when the push goes
    const sentAt = performance.now();
    await push(two!.url, token, "live-thread");
    const committedAt = performance.now(); // the push's transaction committed before its answer
    const page = await waiting;
    expect(page.changes.map((c) => (c.kind === "checkpoint" ? c.checkpoint.thread_id : ""))).toEqual(["live-thread"]);
    // Delivery follows the commit by one notification and one read. Measured from the push's start
    // (an upper bound on the delay from its commit), bounded far below the wait: without live push the
    // pull answers only when its wait ends, 20 s after it started.
    const delay = deliveredAt - sentAt;
    console.log(
      `live push: delivered ${Math.round(deliveredAt - committedAt)} ms after the push's answer, ${Math.round(delay)} ms after it was sent`,
    );
    expect(delay).toBeLessThan(5_000);
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

  it("holds at most 32 waiting pulls of one user in a process; one more answers at once, as a server without long polls", async () => {
    const { token } = newUser("many");
    const url = servers[0]!.url;
    const gone = new AbortController();
    const poll = (as: string) =>
      fetch(`${url}/v1/pull?since=0&wait=20`, { headers: { authorization: `Bearer ${as}` }, signal: gone.signal }).then(
        async (response) => decodeBody(new Uint8Array(await response.arrayBuffer())) as PullResponse,
        () => "aborted" as const,
      );
    /** Whether `pending` is still unanswered after 300 ms: a held long poll. */
    const held = (pending: Promise<unknown>) =>
      Promise.race([pending.then(() => false), new Promise((resolve) => setTimeout(() => resolve(true), 300))]);
    const first = Array.from({ length: 32 }, () => poll(token));
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Each held pull is an open connection (a file descriptor) for up to 30 s: without a bound, one
      // token within its rate limit (1,200 a minute) held 1,100 at once.
      const started = performance.now();
      expect(await poll(token)).toMatchObject({ changes: [], cursor: 0, more: false });
      expect(performance.now() - started).toBeLessThan(1_500);
      // Another user's pull still waits.
      expect(await held(poll(newUser("calm").token))).toBe(true);
    } finally {
      gone.abort();
    }
    expect(await Promise.all(first)).toEqual(Array(32).fill("aborted"));
    // Each place is given back once its pull ends.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const again = new AbortController();
    const next = fetch(`${url}/v1/pull?since=0&wait=20`, {
      headers: { authorization: `Bearer ${token}` },
      signal: again.signal,
    }).catch(() => undefined);
    expect(await held(next)).toBe(true);
    again.abort();
  });

  it("refuses a wait longer than the protocol allows", async () => {
    const { token } = newUser("long");
    const response = await fetch(`${servers[0]!.url}/v1/pull?since=0&wait=31`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(400);
  });
});

/**
 * Live push: a pull that waits (`wait=S`) answers as soon as any server
 * process on the same database commits a push of that user, and only then.
 * Delays are measured inside the test, from the push to the pull's answer,
 * and bounded against the wait, not a wall-clock figure a loaded machine
 * misses.
 * Two servers on the real PostgreSQL, plain HTTP clients speaking the protocol.
 */
import { once } from "node:events";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate, newUser, postgresUrl, serverForFile, wireCheckpoint } from "../../test/support/sync/harness.js";
import {
  SYNC_MEDIA_TYPE,
  SYNC_PROTOCOL_VERSION,
  decodeBody,
  encodeBody,
  type PullResponse,
  type PushRequest,
} from "../sync/protocol.js";
import { createSyncServer, type SyncServer } from "./server.js";

/**
 * The first server runs on a pool of the test's own, so that a test sees
 * each read the server makes: a pull's read is one transaction, its
 * connection released to the pool when it ends.
 */
let reads: pg.Pool;
const servers = [{ server: undefined as unknown as SyncServer, url: "" }, serverForFile()];
beforeAll(async () => {
  reads = new pg.Pool({ connectionString: await postgresUrl() });
  const server = await createSyncServer({ pool: reads, authenticate });
  Object.assign(servers[0]!, { server, url: await server.listen({ port: 0 }) });
}, 60_000);
afterAll(async () => {
  await servers[0]!.server?.close();
  await reads?.end();
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
    // The pull reaches the server, reads, finds nothing and waits; the push goes once its read ended (the
    // read's connection back in the pool), not after a margin a loaded machine could overrun (300 ms before).
    const arrived = once(one!.server.app.server, "request");
    let released = 0;
    const counting = () => (released += 1);
    let deliveredAt = 0;
    const pulledAt = performance.now();
    const waiting = pull(one!.url, token, `since=0&device=watcher&wait=${WAIT_S}`).then((page) => {
      deliveredAt = performance.now();
      return page;
    });
    await arrived;
    reads.on("release", counting);
    try {
      await once(reads, "release"); // its first read, which found nothing
      expect(deliveredAt).toBe(0); // still waiting when the push goes
      const sentAt = performance.now();
      await push(two!.url, token, "live-thread");
      const committedAt = performance.now(); // the push's transaction committed before its answer
      const page = await waiting;
      expect(page.changes.map((c) => (c.kind === "checkpoint" ? c.checkpoint.thread_id : ""))).toEqual(["live-thread"]);
      // Two reads: the first found nothing, the push woke the pull and the second brought it. (One would be a
      // pull that read after the push had committed, which proves nothing about waking.)
      expect(released).toBe(2);
      // Delivery follows the commit by one notification and one read. Without live push the pull answers
      // only when its wait ends, at least WAIT_S after it was sent: answered sooner, it was the push that
      // woke it. (Before, a bound of 5 s on the delay from the push, a guess a loaded machine could miss.)
      const delay = deliveredAt - sentAt;
      console.log(
        `live push: delivered ${Math.round(deliveredAt - committedAt)} ms after the push's answer, ${Math.round(delay)} ms after it was sent`,
      );
      expect(deliveredAt - pulledAt).toBeLessThan(WAIT_S * 1000);
    } finally {
      reads.off("release", counting);
    }
  });

  it("another user's push does not wake it; with nothing new it answers empty when its wait ends", async () => {
    const { token } = newUser("quiet");
    const other = newUser("noisy");
    const [one, two] = servers;
    // The test proves something only if the push lands while the pull waits: it pushes once the pull's first
    // read has ended, and checks that the push was answered before the pull was. A push slower than the wait (a
    // loaded machine) tries again with a wait twice as long, rather than passing without having tried.
    for (let waitS = 1; ; waitS *= 2) {
      const arrived = once(one!.server.app.server, "request");
      const started = performance.now();
      let answeredAt = 0;
      const waiting = pull(one!.url, token, `since=0&wait=${waitS}`).then((page) => {
        answeredAt = performance.now();
        return page;
      });
      await arrived;
      await once(reads, "release"); // its first read, which found nothing: it waits now
      await push(two!.url, other.token, `not-yours-${waitS}`);
      const pushedAt = performance.now();
      const page = await waiting;
      expect(page.changes).toEqual([]);
      // Woken by the push, it would answer (empty) well before its wait ends.
      expect(answeredAt - started).toBeGreaterThanOrEqual(waitS * 1000 - 50);
      if (pushedAt < answeredAt) break;
      expect(waitS, "the push never landed within the pull's wait").toBeLessThan(8);
    }
  });

  it("holds at most 32 waiting pulls of one user in a process; one more answers at once, as a server without long polls", async () => {
    const { token } = newUser("many");
    const url = servers[0]!.url;
    const gone = new AbortController();
    const poll = (as: string, since = 0, signal = gone.signal) =>
      fetch(`${url}/v1/pull?since=${since}&wait=20`, { headers: { authorization: `Bearer ${as}` }, signal }).then(
        async (response) => decodeBody(new Uint8Array(await response.arrayBuffer())) as PullResponse,
        () => "aborted" as const,
      );
    /** Whether `pending` is still unanswered after 300 ms: a held long poll (a slow answer only looks held). */
    const held = (pending: Promise<unknown>) =>
      Promise.race([pending.then(() => false), new Promise((resolve) => setTimeout(() => resolve(true), 300))]);
    // One more than the bound, all at once: whichever reaches the server last answers at once, empty, while
    // 32 are held. Waited for as it happens (before, 300 ms for the 32 to be held, then a bound of 1.5 s on
    // the one more's answer: a loaded machine had not held them all by then, and the one more was held).
    /** Of 33 pulls, the first answered: the one over the bound, while the 32 others are held. */
    const overTheBound = (pulls: Promise<PullResponse | "aborted">[]) =>
      Promise.race(pulls.map((pending, index) => pending.then((page) => ({ index, page }))));
    const polls = Array.from({ length: 33 }, () => poll(token));
    try {
      const first = await overTheBound(polls);
      expect(first.page).toMatchObject({ changes: [], cursor: 0, more: false });
      // Another user's pull still waits.
      expect(await held(poll(newUser("calm").token))).toBe(true);
      // A push wakes the 32 held, each answering with it. Each held pull is an open connection (a file
      // descriptor) for up to 30 s: without a bound, one token within its rate limit (1,200 a minute) held
      // 1,100 at once; here all 33 would have waited, and answered empty when their wait ended.
      await push(url, token, "wake");
      const woken = await Promise.all(polls.filter((_, index) => index !== first.index));
      expect(woken.map((page) => (page === "aborted" ? page : page.changes.length))).toEqual(Array(32).fill(1));
      // Each place is given back once its pull ends, answered or aborted: 32 held again, let go, then one
      // more is held (once the server has seen them go: looked for, not waited a while for).
      const cursor = (woken[0] as PullResponse).cursor;
      const again = new AbortController();
      const more = Array.from({ length: 33 }, () => poll(token, cursor, again.signal));
      expect((await overTheBound(more)).page).toMatchObject({ changes: [] });
      again.abort();
      expect((await Promise.all(more)).filter((page) => page === "aborted")).toHaveLength(32);
      // Looked for every 50 ms at most: a pull answered at once spends some of the user's rate limit.
      for (const deadline = performance.now() + 10_000; !(await held(poll(token, cursor)));) {
        if (performance.now() > deadline)
          throw new Error("Not within 10 s: a place given back after its pull was aborted.");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      gone.abort();
    }
  });

  it("refuses a wait longer than the protocol allows", async () => {
    const { token } = newUser("long");
    const response = await fetch(`${servers[0]!.url}/v1/pull?since=0&wait=31`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(400);
  });
});

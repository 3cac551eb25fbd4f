/**
 * Live push on the client: a started SyncClient keeps a long poll open on
 * the real server (PostgreSQL), so another device's push lands within about
 * a second while the interval is ten minutes; without the server's long
 * poll it backs off and the interval carries on; stop() aborts the poll.
 */
import { describe, expect, it } from "vitest";
import { chat } from "../../test/support/chat-graph.js";
import { closeDevices, device, newUser, serverForFile, state, type Device } from "../../test/support/sync/harness.js";
import type { FetchLike } from "./transport.js";

const served = serverForFile();
const TEN_MINUTES = 600_000;
// Devices of one process sharing a dbName hear each other's writes as tabs do (BroadcastChannel), which
// starts a round by itself: A and B get databases of their own and name one app.
const A = { dbName: "live-a", client: { app: "live" } };
const onB = (client: object) => ({ dbName: "live-b", client: { app: "live", ...client } });

/** A fetch that counts the long polls it sends and those still waiting for an answer. */
function countingFetch(rewrite: (url: string) => string = (url) => url) {
  const polls = { sent: 0, open: 0, aborted: 0 };
  const fetch: FetchLike = async (input, init) => {
    const poll = input.includes("wait=");
    if (poll) {
      polls.sent += 1;
      polls.open += 1;
    }
    try {
      return await globalThis.fetch(rewrite(input), init);
    } finally {
      if (poll) {
        polls.open -= 1;
        if (init.signal?.aborted) polls.aborted += 1;
      }
    }
  };
  return { fetch, polls };
}

/** Resolves once `check` holds, polling every 20 ms; rejects after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * How long a wait for what must come may take before the test fails: it
 * measures nothing (a loaded machine took seconds for a round), and is far
 * below the ten-minute interval, so a turn within it came by the live path.
 */
const LONG = 30_000;

/**
 * Counts the rounds `d` starts from now on. Applying pulled rows is a local
 * change, which starts one more round 200 ms later: a test waits for that
 * round by this count, not for a while (400 ms were not always enough).
 */
function rounds(d: Device): { started: number } {
  const count = { started: 0 };
  let state = d.sync.status.state;
  d.sync.subscribe((status) => {
    if (status.state === "syncing" && state !== "syncing") count.started += 1;
    state = status.state;
  });
  return count;
}
const idle = (d: Device) => d.sync.status.state === "idle" && d.sync.status.lastSyncedAt !== undefined;
const lastMessage = async (d: Device) => (await state(d.saver, "t")).messages.at(-1);

describe("SyncClient live push", () => {
  it("B sees A's pushed turn through its long poll's answer while its interval is ten minutes", async () => {
    const { token } = newUser("live");
    const a = device(served.url, token, A);
    const counted = countingFetch();
    const b = device(served.url, token, onB({ intervalMs: TEN_MINUTES, fetch: counted.fetch }));
    await chat(a.saver, "t", ["first"]);
    await a.sync.syncNow();
    const ofB = rounds(b);
    b.sync.start();
    await until(
      () => ofB.started >= 2 && idle(b) && counted.polls.open === 1,
      LONG,
      "B's first round, the one its pull started, and its long poll",
    );
    const before = await lastMessage(b);

    await chat(a.saver, "t", ["second"]);
    const sentAt = performance.now();
    await a.sync.syncNow();
    await until(async () => (await state(b.saver, "t")).messages.length > 2, LONG, "A's turn on B");
    const delay = performance.now() - sentAt;
    console.log(`live push on the client: A's turn on B ${Math.round(delay)} ms after A's round started`);
    // The interval alone would bring it in ten minutes: it came because the long poll was answered (a
    // poll neither open nor aborted), which started B's round. Counted, not timed: a bound of 2.5 s on
    // the delay failed on a loaded machine.
    expect(counted.polls.sent - counted.polls.open - counted.polls.aborted).toBeGreaterThanOrEqual(1);
    expect(await state(b.saver, "t")).toEqual(await state(a.saver, "t"));
    expect(await lastMessage(b)).not.toEqual(before);
    await closeDevices(a, b);
  });

  it("with live off, the turn waits for the interval", async () => {
    const { token } = newUser("off");
    const a = device(served.url, token, A);
    const counted = countingFetch();
    const b = device(served.url, token, onB({ intervalMs: TEN_MINUTES, live: false, fetch: counted.fetch }));
    // A device with live on, started beside B: the turn reaching it through its long poll is the moment by
    // which B, had it polled, would have polled and heard of the turn too (a fixed 800 ms shrank under load).
    const control = countingFetch();
    const c = device(served.url, token, {
      dbName: "live-c",
      client: { app: "live", intervalMs: TEN_MINUTES, fetch: control.fetch },
    });
    await chat(a.saver, "t", ["first"]);
    await a.sync.syncNow();
    const ofB = rounds(b);
    const ofC = rounds(c);
    b.sync.start();
    c.sync.start();
    await until(() => ofB.started >= 2 && idle(b), LONG, "B's first round and the one its pull started");
    await until(() => ofC.started >= 2 && idle(c) && control.polls.open === 1, LONG, "C's rounds and long poll");
    await chat(a.saver, "t", ["second"]);
    await a.sync.syncNow();
    await until(async () => (await state(c.saver, "t")).messages.length > 2, LONG, "A's turn on C");
    expect(control.polls.sent - control.polls.open - control.polls.aborted).toBeGreaterThanOrEqual(1);
    expect((await state(b.saver, "t")).messages).toHaveLength(2);
    expect(counted.polls.sent).toBe(0);
    expect(ofB.started).toBe(2);
    await closeDevices(a, b, c);
  });

  it("a server without the long poll: the poll backs off instead of spinning, and the interval still brings the turn", async () => {
    const MIN_BACKOFF_MS = 600;
    const { token } = newUser("old");
    const a = device(served.url, token, A);
    // An older server ignores `wait`: dropping it from the URL answers every poll at once.
    const counted = countingFetch((url) => url.replace(/&wait=\d+/, ""));
    const sentAt: number[] = [];
    const stamped: FetchLike = (input, init) => {
      if (input.includes("wait=")) sentAt.push(performance.now());
      return counted.fetch(input, init);
    };
    const b = device(
      served.url,
      token,
      onB({
        intervalMs: 400,
        // A backoff of 0.3-1.2 s: above a spinning poll's gaps (a fetch each, 30-120 ms measured under load,
        // up to 240 ms under a load of 15 on two cores), and short, as the test waits out five (0.5-2 s before).
        minBackoffMs: MIN_BACKOFF_MS,
        maxBackoffMs: 2 * MIN_BACKOFF_MS,
        fetch: stamped,
      }),
    );
    b.sync.start();
    await until(() => idle(b), LONG, "B's first round");
    await chat(a.saver, "t", ["first"]);
    await a.sync.syncNow();
    await until(
      async () => (await b.saver.getTuple({ configurable: { thread_id: "t" } })) !== undefined,
      LONG,
      "A's turn on B",
    );
    await until(() => sentAt.length >= 5, LONG, "five polls");
    b.sync.stop();
    expect(await state(b.saver, "t")).toEqual(await state(a.saver, "t"));
    // Answered at once with nothing, a poll is a failure, so the next waits a backoff (at least half of
    // minBackoffMs: jitter); only the poll after a round that a poll's news started comes sooner. Gaps, not
    // polls in a 1 s window (which counted the polls of a wait for the turn that load made long): load
    // only lengthens a gap, where a spinning poll's gaps are a fetch each.
    const gaps = sentAt.slice(1).map((at, i) => at - sentAt[i]!);
    expect(
      gaps.filter((gap) => gap < MIN_BACKOFF_MS / 2 - 2).length,
      `gaps ${gaps.map(Math.round).join(", ")} ms`,
    ).toBeLessThanOrEqual(2);
    await closeDevices(a, b);
  });

  it("stop() aborts the open long poll", async () => {
    const { token } = newUser("stop");
    const counted = countingFetch();
    const b = device(served.url, token, onB({ intervalMs: TEN_MINUTES, fetch: counted.fetch }));
    b.sync.start();
    await until(() => idle(b) && counted.polls.open === 1, LONG, "the long poll open");
    b.sync.stop();
    await until(() => counted.polls.open === 0, LONG, "the long poll closed");
    expect(counted.polls).toEqual({ sent: 1, open: 0, aborted: 1 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(counted.polls.sent).toBe(1); // none after stop
    await closeDevices(b);
  });
});

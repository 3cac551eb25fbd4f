/**
 * `threads.joinStream` (GET /threads/:id/stream), through the SDK: a
 * thread's runs' events in turn, from the runs not ended (or from a
 * `Last-Event-ID`), a run started later included, until the client leaves or
 * the thread is deleted; the refusals. Each answered 404 before the route.
 */
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { deleteDatabase } from "../../test/support/databases.js";
import { transactionsFactory } from "../../test/support/reliability/factories.js";
import { RunRegistry } from "./runs.js";

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });
type Event = { id?: string; event: string; data: unknown };
/** The run ids a list of events names, in the order their metadata events came. */
const runsOf = (events: Event[]) =>
  events.filter((e) => e.event === "metadata").map((e) => (e.data as { run_id: string }).run_id);
/** Reads the thread's stream until `enough` says so (then leaves it), or it ends. */
async function read(stream: AsyncGenerator<Event>, enough: (events: Event[]) => boolean): Promise<Event[]> {
  const events: Event[] = [];
  for await (const event of stream) {
    events.push(event);
    if (enough(events)) break;
  }
  return events;
}
/** Whether the last event is a values event whose last message says `text` (its run's answer). */
const answered = (text: string) => (events: Event[]) => {
  const last = events.at(-1);
  const messages = (last?.data as { messages?: { content?: unknown }[] } | undefined)?.messages;
  return last?.event === "values" && messages?.at(-1)?.content === text;
};

/**
 * Puts off a thread stream's slow look (its 5 s pause with no run to follow) to ten minutes while a test
 * runs, and counts those pauses: a count that went up is a stream waiting now, and a run that reaches it
 * came through a notice, not the slow look (a bound of 2 s on that failed under load). It hooks the only
 * 5 s timer of the server; a count that stays 0 says the look's period changed.
 */
function slowLooksPutOff(): { waits: () => number; restore: () => void } {
  const real = globalThis.setTimeout;
  let waits = 0;
  globalThis.setTimeout = ((handler: () => void, ms?: number, ...rest: unknown[]) => {
    if (ms !== 5_000) return real(handler, ms, ...rest);
    waits++;
    return real(handler, 600_000, ...rest);
  }) as typeof setTimeout;
  return { waits: () => waits, restore: () => void (globalThis.setTimeout = real) };
}

describe("threads.joinStream", () => {
  it("streams the run going, then each run after it, with ids that name the run; not the runs already ended", async () => {
    const { client } = await openServer("agent-thread-stream");
    const { thread_id } = await client.threads.create();
    await client.runs.wait(thread_id, "agent", { input: human("before") });
    const [ended] = await client.runs.list(thread_id);
    const first = await client.runs.create(thread_id, "agent", {
      input: human("one"),
      // Still going when the stream lists the runs, under load too (an ended run is not streamed).
      config: { configurable: { delay_ms: 1500 } },
    });
    const joined = read(client.threads.joinStream(thread_id) as AsyncGenerator<Event>, answered("echo two"));
    const second = await client.runs.create(thread_id, "agent", {
      input: human("two"),
      multitaskStrategy: "enqueue",
    });
    const events = await joined;
    expect(runsOf(events)).toEqual([first.run_id, second.run_id]);
    expect(events.every((e) => e.id?.startsWith(`${first.run_id}:`) || e.id?.startsWith(`${second.run_id}:`))).toBe(
      true,
    );
    const text = JSON.stringify(events);
    expect(text).toContain("echo one");
    expect(text).toContain("echo two");
    expect(events.some((e) => e.id?.startsWith(`${ended!.run_id}:`))).toBe(false);
    // The same events as the runs' own streams, in order.
    const own = async (runId: string) =>
      read(client.runs.joinStream(thread_id, runId) as AsyncGenerator<Event>, () => false);
    const expected = [...(await own(first.run_id)), ...(await own(second.run_id))].filter((e) => e.event !== "end");
    expect(events.map((e) => [e.event, e.data])).toEqual(expected.map((e) => [e.event, e.data]));
  });

  it("resumes after a Last-Event-ID: the rest of that run, then the runs after it", async () => {
    const { client } = await openServer("agent-thread-stream-resume");
    const { thread_id } = await client.threads.create();
    const one = await client.runs.create(thread_id, "agent", { input: human("one") });
    const two = await client.runs.create(thread_id, "agent", { input: human("two"), multitaskStrategy: "enqueue" });
    await client.runs.join(thread_id, two.run_id);
    // From the first event of run one (ended: without an id, the stream would start at the next run).
    const all = await read(
      client.threads.joinStream(thread_id, { lastEventId: `${one.run_id}:-1` }) as AsyncGenerator<Event>,
      answered("echo two"),
    );
    expect(runsOf(all)).toEqual([one.run_id, two.run_id]);
    // Inside run one: the rest of it, then run two.
    const cut = 1;
    expect(all[cut + 1]!.id).toBe(`${one.run_id}:${cut + 1}`);
    const rest = await read(
      client.threads.joinStream(thread_id, { lastEventId: all[cut]!.id! }) as AsyncGenerator<Event>,
      answered("echo two"),
    );
    expect(rest.map((e) => e.id)).toEqual(all.slice(cut + 1).map((e) => e.id));
  });

  it("on an idle thread, waits for the next run, from any server of the database; ends when the thread is deleted", async () => {
    const looks = slowLooksPutOff();
    onTestFinished(looks.restore);
    const a = await openServer("agent-thread-stream-idle");
    const b = await openServer("agent-thread-stream-idle", false, { dbName: a.dbName });
    const { thread_id } = await a.client.threads.create();
    const stream = a.client.threads.joinStream(thread_id) as AsyncGenerator<Event>;
    const events: Event[] = [];
    const reading = (async () => {
      for await (const event of stream) events.push(event);
      return "ended";
    })();
    await expect.poll(looks.waits, { timeout: 20_000 }).toBeGreaterThan(0);
    // Going for a while: a stream that lists the runs only after this one ended would not stream it.
    const run = await b.client.runs.create(thread_id, "agent", {
      input: human("later"),
      config: { configurable: { delay_ms: 1500 } },
    });
    await b.client.runs.join(thread_id, run.run_id);
    await expect.poll(() => answered("echo later")(events), { timeout: 20_000 }).toBe(true);
    expect(runsOf(events)).toEqual([run.run_id]);
    await a.client.threads.delete(thread_id);
    expect(await reading).toBe("ended");
  });

  it("ends an open stream when the server closes, and opens none of its databases again", async () => {
    const looks = slowLooksPutOff();
    onTestFinished(looks.restore);
    const { client, server, dbName } = await openServer("agent-thread-stream-close");
    const { thread_id } = await client.threads.create();
    const stream = client.threads.joinStream(thread_id) as AsyncGenerator<Event>;
    const reading = (async () => {
      for await (const event of stream) void event;
      return "ended";
    })().catch((error: unknown) => `failed: ${String(error)}`);
    // Waiting for a run: woken by a notice, or its slow look (put off, so only the close can end it).
    await expect.poll(looks.waits, { timeout: 20_000 }).toBeGreaterThan(0);
    await server.close();
    // A hang guard far past what a close takes under load (well under a second), not a measurement.
    const ended = await Promise.race([reading, new Promise((resolve) => setTimeout(resolve, 20_000, "still open"))]);
    expect(ended).toBe("ended");
    // Nothing of the closed server opens its database again: a delete goes through at once and stays done.
    await deleteDatabase(`${dbName}-agent-threads`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await indexedDB.databases()).map((db) => db.name)).not.toContain(`${dbName}-agent-threads`);
  });

  // Its 20 runs took over 60 s with the machine's two cores shared ten ways: a hang guard, not a measurement.
  it("on an idle thread with many ended runs, reads those runs' records only once", { timeout: 120_000 }, async () => {
    // Transactions on the agent database, counted through its factory.
    let transactions = 0;
    const factory = transactionsFactory(() => transactions++);
    const looks = slowLooksPutOff();
    onTestFinished(looks.restore);
    // Each look's notice listener, taken as the stream adds it, and called as a run's notice would be.
    let listener: (() => void) | undefined;
    const onThreadChange = RunRegistry.prototype.onThreadChange;
    RunRegistry.prototype.onThreadChange = function (this: RunRegistry, threadId, added) {
      listener = added;
      return onThreadChange.call(this, threadId, added);
    };
    onTestFinished(() => void (RunRegistry.prototype.onThreadChange = onThreadChange));
    const { client, server } = await openServer("agent-thread-stream-ended", false, { indexedDB: factory });
    const { thread_id } = await client.threads.create();
    for (let i = 0; i < 20; i++) await client.runs.wait(thread_id, "agent", { input: human(`turn ${i}`) });
    const leave = new AbortController();
    const response = await server.fetch(`http://local.invalid/threads/${thread_id}/stream`, { signal: leave.signal });
    expect(response.status).toBe(200);
    // Ten looks for a new run, each woken by a notice once the one before waits: counted, not the looks
    // of a second (which load made fewer). Each reads the thread and its runs, not every run's record.
    await expect.poll(looks.waits, { timeout: 20_000 }).toBe(1);
    const before = transactions;
    for (let look = 2; look <= 11; look++) {
      listener!();
      await expect.poll(looks.waits, { timeout: 20_000 }).toBe(look);
    }
    // Two a look (the thread, its run list); one a run's record read again at each look was 22 a look.
    expect(transactions - before, "transactions of ten looks").toBeLessThan(10 * 3);
    leave.abort();
    await response.body?.cancel();
  });

  it("on an idle thread, reads nothing while nothing happens, and wakes at once for a run of another server", async () => {
    const looks = slowLooksPutOff();
    onTestFinished(looks.restore);
    let transactions = 0;
    const factory = transactionsFactory(() => transactions++);
    const a = await openServer("agent-thread-stream-quiet", false, { indexedDB: factory });
    const b = await openServer("agent-thread-stream-quiet", false, { dbName: a.dbName });
    const { thread_id } = await a.client.threads.create();
    const events: Event[] = [];
    const leave = new AbortController();
    const reading = (async () => {
      const stream = a.client.threads.joinStream(thread_id, { signal: leave.signal }) as AsyncGenerator<Event>;
      for await (const event of stream) events.push(event);
    })().catch(() => undefined);
    await expect.poll(looks.waits, { timeout: 20_000 }).toBeGreaterThan(0);
    const before = transactions;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // Before: a look every 200 ms, each a read of the thread and one of its runs (about ten in this second).
    expect(transactions - before).toBe(0);
    const run = await b.client.runs.create(thread_id, "agent", { input: human("woken") });
    // The slow look kept for a missed notice is put off to ten minutes: a run that comes woke the stream.
    await expect.poll(() => runsOf(events), { timeout: 30_000, interval: 20 }).toEqual([run.run_id]);
    leave.abort();
    await reading;
  });

  it("leaves no run-notice listener behind once its clients have left, one after a run's events included", async () => {
    // The registry's listeners counted as they are added and removed (a wrapper that calls the real one).
    let listening = 0;
    const onThreadChange = RunRegistry.prototype.onThreadChange;
    RunRegistry.prototype.onThreadChange = function (this: RunRegistry, threadId, listener) {
      listening++;
      const off = onThreadChange.call(this, threadId, listener);
      return () => {
        listening--;
        off();
      };
    };
    try {
      const { client, server } = await openServer("agent-thread-stream-listeners");
      const { thread_id } = await client.threads.create();
      for (const withRun of [false, true, false, true]) {
        const leave = new AbortController();
        const url = `http://local.invalid/threads/${thread_id}/stream`;
        const response = await server.fetch(url, { signal: leave.signal });
        // The stream buffers the run's first event and waits there for the client to read it: it never does.
        if (withRun) await client.runs.wait(thread_id, "agent", { input: human("left unread") });
        await new Promise((resolve) => setTimeout(resolve, 50));
        leave.abort(); // the client's request aborted, its body never cancelled nor read
        expect(response.status).toBe(200);
      }
      await expect.poll(() => listening, { timeout: 2_000 }).toBe(0);
    } finally {
      RunRegistry.prototype.onThreadChange = onThreadChange;
    }
  });

  it("makes no long-lived signal a source of a new combined signal at each wait, nor at each stream", async () => {
    // Node 20 keeps a dependant (a WeakRef) in the source signal's set for each AbortSignal.any over it, for the
    // source's life (measured: 20,000 waits, 20,000 dependants and 2 MB after gc): so each source is counted.
    const sources = new Map<AbortSignal, number>();
    const any = AbortSignal.any.bind(AbortSignal);
    AbortSignal.any = (signals: AbortSignal[]) => {
      for (const signal of signals) sources.set(signal, (sources.get(signal) ?? 0) + 1);
      return any(signals);
    };
    // Each wait's notice listener, taken as the stream adds it, and called as a run's notice would be.
    let listener: (() => void) | undefined;
    const onThreadChange = RunRegistry.prototype.onThreadChange;
    RunRegistry.prototype.onThreadChange = function (this: RunRegistry, threadId, added) {
      listener = added;
      return onThreadChange.call(this, threadId, added);
    };
    try {
      const { client, server } = await openServer("agent-thread-stream-signals");
      const { thread_id } = await client.threads.create();
      for (let stream = 0; stream < 3; stream++) {
        const leave = new AbortController();
        const response = await server.fetch(`http://local.invalid/threads/${thread_id}/stream`, {
          signal: leave.signal,
        });
        expect(response.status).toBe(200);
        for (let wait = 0; wait < 100; wait++) {
          await expect.poll(() => listener, { timeout: 2_000, interval: 1 }).toBeDefined();
          const notice = listener!;
          listener = undefined;
          notice();
        }
        leave.abort();
        await response.body?.cancel();
      }
      expect(Math.max(0, ...sources.values())).toBeLessThanOrEqual(1);
    } finally {
      AbortSignal.any = any;
      RunRegistry.prototype.onThreadChange = onThreadChange;
    }
  }, 30_000);

  it("answers 404 for a missing thread, 422 for a stream_mode or Last-Event-ID it does not serve", async () => {
    const { client, server } = await openServer("agent-thread-stream-refused");
    const status = (p: AsyncGenerator<unknown>) =>
      p.next().then(
        () => 200,
        (e: { status?: number; message?: string }) => `${e.status} ${e.message}`,
      );
    expect(await status(client.threads.joinStream(crypto.randomUUID()))).toMatch(/^404 /);
    const { thread_id } = await client.threads.create();
    for (const query of ["stream_mode=values", "stream_mode=lifecycle", "stream_mode=state_update"]) {
      const res = await server.fetch(`http://local.invalid/threads/${thread_id}/stream?${query}`);
      expect(res.status).toBe(422);
      expect(await res.text()).toContain("stream_mode");
    }
    const res = await server.fetch(`http://local.invalid/threads/${thread_id}/stream`, {
      headers: { "Last-Event-ID": "7" },
    });
    expect(res.status).toBe(422);
    expect(await res.text()).toContain("Last-Event-ID");
  });
});

/**
 * Joining a run from another tab or after a reload: two local agent servers
 * on one database (two tabs, in Node on fake-indexeddb, with Node's
 * BroadcastChannel between them). The second server reports the first's
 * run, joins its stream while it goes (replayed events, then live ones,
 * `Last-Event-ID` honoured), cancels it, and, after the first has closed (a
 * reload), replays its result from the run log. A run whose runner is gone
 * (its lock free) is reported cut short, not running forever.
 */
import { afterEach, describe, expect, it } from "vitest";
import { InProcessLockManager } from "../core/locks.js";
import { RunLog } from "./run-log.js";
import { openAgentDatabase } from "./schema.js";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { heldRun } from "../../test/support/agent-server/held-run.js";
import { settles, until } from "../../test/support/agent-server/timing.js";

type Chat = { messages: { type: string; content: string }[] };

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });
const texts = (values: unknown) => (values as Chat).messages.map((m) => `${m.type}: ${m.content}`);

/** Every part of `stream`; `onPart` is called at each (the first says the join is there). */
async function collect<T>(stream: AsyncIterable<T>, onPart = () => {}): Promise<T[]> {
  const parts: T[] = [];
  for await (const part of stream) {
    parts.push(part);
    onPart();
  }
  return parts;
}

/** A promise and what resolves it (Node 20 has no Promise.withResolvers). */
function once() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** Two servers on one database; `separateLocks` puts them in two realms that cannot see each other's locks. */
async function twoTabs(separateLocks = false) {
  const first = await openServer<Chat>("agent-join", false, separateLocks ? { locks: new InProcessLockManager() } : {});
  const dbName = first.saver.dbName;
  const second = await openServer<Chat>("agent-join", false, {
    dbName,
    ...(separateLocks ? { locks: new InProcessLockManager() } : {}),
  });
  return { first, second };
}

describe("a run of another tab", () => {
  it("is reported, joined while it goes (all events, then from an event id), and its result read", async () => {
    const { first, second } = await twoTabs();
    const thread = await first.client.threads.create();
    // Held until both joins have had an event: they join while it goes however loaded the machine is (a
    // 300 ms run could end before the status was read or the joins came).
    const { run, release } = await heldRun(first.client, thread.thread_id, "slow", {
      streamMode: ["values", "updates", "messages-tuple"],
    });
    expect(["pending", "running"]).toContain((await second.client.runs.get(thread.thread_id, run.run_id)).status);

    const [ownFirst, joinedFirst] = [once(), once()];
    const all = Promise.all([
      collect(first.client.runs.joinStream(thread.thread_id, run.run_id), ownFirst.resolve),
      collect(second.client.runs.joinStream(thread.thread_id, run.run_id), joinedFirst.resolve),
      // From event 3 on: what the run sends once let go.
      collect(second.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "2" })),
    ]);
    await settles(Promise.all([ownFirst.promise, joinedFirst.promise]), "both joins' first event");
    release();
    const [own, joined, fromTwo] = await all;
    expect(own.map((part) => part.event)).toContain("messages");
    expect(joined).toEqual(own);
    expect(fromTwo).toEqual(own.slice(3));

    expect(texts(await second.client.runs.join(thread.thread_id, run.run_id))).toEqual([
      "human: slow",
      "ai: echo slow",
    ]);
    expect((await second.client.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
    expect((await second.client.runs.list(thread.thread_id)).map((r) => [r.run_id, r.status])).toEqual([
      [run.run_id, "success"],
    ]);
    await expect(second.client.runs.get(thread.thread_id, "no-such-run")).rejects.toThrow(/404/);
  });

  it("is cancelled from the other tab (rollback deletes its checkpoints)", async () => {
    const { first, second } = await twoTabs();
    const thread = await first.client.threads.create();
    // Held until the test lets it go, which it never does: only the cancel can end it, so the cancel's
    // answer says that it stopped the run and did not wait for its end. (Before, a 5 s run and a bound of
    // 4 s on the cancel, which a loaded machine overran.)
    const { run } = await heldRun(first.client, thread.thread_id, "never");
    await settles(second.client.runs.cancel(thread.thread_id, run.run_id, true, "rollback"), "the held run cancelled");
    // Deleted in the tab that ran it, as the Agent Server deletes a run rolled back.
    await expect(first.client.runs.get(thread.thread_id, run.run_id)).rejects.toThrow(/404/);
    // No checkpoint left ({}), or one with no message, depending on how far the run had come.
    const { values } = await second.client.threads.getState<Partial<Chat>>(thread.thread_id);
    expect(values.messages ?? []).toEqual([]);
  });

  it("after a reload: the finished run's record and every event, from the run log", async () => {
    const { first, second } = await twoTabs();
    const thread = await first.client.threads.create();
    const own = await collect(
      first.client.runs.stream(thread.thread_id, "agent", {
        input: human("hello"),
        streamMode: ["values", "messages-tuple"],
      }),
    );
    const runId = (own[0]!.data as { run_id: string }).run_id;
    await first.server.close();
    expect((await second.client.runs.get(thread.thread_id, runId)).status).toBe("success");
    expect(await collect(second.client.runs.joinStream(thread.thread_id, runId))).toEqual(own);
    expect(await collect(second.client.runs.joinStream(thread.thread_id, runId, { lastEventId: "4" }))).toEqual(
      own.slice(5),
    );
    await second.client.threads.delete(thread.thread_id);
    await expect(second.client.runs.get(thread.thread_id, runId)).rejects.toThrow(/404/);
  });

  it("whose runner is gone is reported cut short: status error, its events then an error", async () => {
    const { first, second } = await twoTabs(true);
    const thread = await first.client.threads.create();
    // Held (never let go): a 5 s run ended on its own, "success", when the waits below took longer. The
    // first server's lock is in a realm the second cannot see: as if its tab had closed.
    const { run } = await heldRun(first.client, thread.thread_id, "lost", { streamMode: ["values"], at: "running" });
    const log = new RunLog(openAgentDatabase(`${first.saver.dbName}-agent-threads`, undefined));
    await until(async () => (await log.stored(run.run_id)).events.some((event) => event.event === "values"));
    await log.close();
    const joined = await collect(second.client.runs.joinStream(thread.thread_id, run.run_id));
    expect(joined.map((part) => part.event)).toEqual(["metadata", "values", "error", "end"]);
    expect(joined.at(-2)!.data).toMatchObject({ error: "RunLostError" });
    expect(joined.at(-1)!.data).toEqual({ run_id: run.run_id, status: "error" });
    expect((await second.client.runs.get(thread.thread_id, run.run_id)).status).toBe("error");
    await expect(second.client.runs.join(thread.thread_id, run.run_id)).resolves.toMatchObject({
      __error__: { error: "RunLostError" },
    });
    expect((await second.client.threads.get(thread.thread_id)).status).toBe("error");
  });
});

/**
 * The agent server's own database edited between two requests, as someone
 * holding the profile's files (or another app of the origin sharing the
 * database name) could: rows truncated, retyped or deleted. The server must
 * answer a clear error or leave the damaged row aside, and never delete,
 * cancel or hang on another thread's data.
 */
import type { Client } from "@langchain/langgraph-sdk";
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { request, withRaw } from "../../test/support/raw-idb.js";
import type { RunRecord } from "./records.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { IndexedDBSaver } from "../saver/index.js";
import { freshDbName } from "../../test/support/databases.js";

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });

/** Runs `work` on one store of the agent database beside `dbName`'s saver, read-write. */
function editAgentStore(dbName: string, store: string, work: (rows: IDBObjectStore) => IDBRequest): Promise<unknown> {
  return withRaw(`${dbName}-agent-threads`, (db) =>
    request(work(db.transaction(store, "readwrite").objectStore(store))),
  );
}

/** A run on a new thread of `client`, sent `text`, and a replay of its events (`joinStream`, from the start). */
async function runToReplay(client: Client, text: string) {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "agent", { input: human(text) });
  const [run] = await client.runs.list(thread.thread_id);
  const replay = async () => {
    const parts: { event: string; data: unknown }[] = [];
    // Without ids: the SDK gives the `end` event (which has none) the last id it saw.
    for await (const { event, data } of client.runs.joinStream(thread.thread_id, run!.run_id))
      parts.push({ event, data });
    return parts;
  };
  return { run: run!, replay };
}

describe("the agent server's database, edited between requests", () => {
  it("a leftover record truncated to its thread id deletes no thread the saver holds without a record", async () => {
    const { server, saver, client, dbName } = await openServer("tampered-leftover");
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: human("keep me") });
    await server.close();
    // The thread record dropped (the records can be, checkpoints untouched), and a leftover row
    // without its creation time: undefined (no record) equalled undefined (no time), and the
    // next server to start erased the thread's checkpoints.
    await editAgentStore(dbName, "threads", (rows) => rows.delete(thread.thread_id));
    await editAgentStore(dbName, "leftover_threads", (rows) => rows.put({ thread_id: thread.thread_id }));
    await openServer("tampered-leftover", false, { saver });
    expect(await saver.getTuple({ configurable: { thread_id: thread.thread_id } })).toBeDefined();
    // The damaged row is dropped, not looked at again at each start.
    expect(await editAgentStore(dbName, "leftover_threads", (rows) => rows.count())).toBe(0);
  });

  it("a stored event of another shape is left out of a replay, which goes on to the run's end", async () => {
    const { client, dbName } = await openServer("tampered-events");
    const { run, replay } = await runToReplay(client, "hello");
    const whole = await replay();
    expect(whole.length).toBeGreaterThan(3);
    // Retyped (its data an object, its name a number: the SDK could not parse the stream and tried
    // again 5 times, 20 s, then failed with no event at all) and one whose data breaks the SSE framing
    // with an `end` of its own.
    await editAgentStore(dbName, "run_events", (rows) =>
      rows.put({ run_id: run.run_id, id: 1, event: 5, data: { x: 1 } }),
    );
    await editAgentStore(dbName, "run_events", (rows) =>
      rows.put({ run_id: run.run_id, id: 2, event: "values", data: "null\n\nevent: end\ndata: null" }),
    );
    expect(await replay()).toEqual([whole[0], ...whole.slice(3)]);
  });

  it("beside an encrypted saver, events are sealed: one edited or planted in clear is left out of a replay", async () => {
    const dbName = freshDbName("tampered-sealed-events");
    const serde = await EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(4));
    const { client } = await openServer("tampered-sealed-events", false, {
      saver: new IndexedDBSaver({ dbName, serde }),
    });
    const { run, replay } = await runToReplay(client, "my-secret-diagnosis");
    const whole = await replay();
    expect(JSON.stringify(whole)).toContain("my-secret-diagnosis");
    const rows = (await editAgentStore(dbName, "run_events", (store) => store.getAll())) as {
      id: number;
      sealed: [string, Uint8Array];
    }[];
    // Before: each row held its data in clear, the input among it.
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const row of rows) {
      expect(row).not.toHaveProperty("data");
      expect(new TextDecoder().decode(row.sealed[1])).not.toContain("my-secret-diagnosis");
    }
    const bytes = rows[1]!.sealed[1].slice();
    bytes[20]! ^= 1;
    await editAgentStore(dbName, "run_events", (store) =>
      store.put({ ...rows[1], sealed: [rows[1]!.sealed[0], bytes] }),
    );
    await editAgentStore(dbName, "run_events", (store) =>
      store.put({ run_id: run.run_id, id: 2, event: whole[2]!.event, data: JSON.stringify(whole[2]!.data) }),
    );
    expect(await replay()).toEqual([whole[0], ...whole.slice(3)]);
  });

  it("a thread record whose metadata is no object is read with none: answered, listed and counted", async () => {
    const { client, dbName } = await openServer("tampered-metadata");
    const thread = await client.threads.create({ metadata: { app: "x" } });
    const row = await editAgentStore(dbName, "threads", (rows) => rows.get(thread.thread_id));
    // Before: GET answered 500 "Cannot read properties of null (reading 'graph_id')", and search
    // and count left the thread out, with no filter too.
    for (const metadata of [null, "text"]) {
      await editAgentStore(dbName, "threads", (rows) => rows.put({ ...(row as object), metadata }));
      expect((await client.threads.get(thread.thread_id)).metadata).toEqual({});
      expect((await client.threads.search()).map((t) => t.thread_id)).toEqual([thread.thread_id]);
      expect(await client.threads.count()).toBe(1);
      expect((await client.threads.update(thread.thread_id, { metadata: { app: "y" } })).metadata).toEqual({
        app: "y",
      });
    }
  });

  it("a thread record planted under an id that is no string is left out of search and count", async () => {
    const { client, dbName } = await openServer("tampered-thread-id");
    const thread = await client.threads.create({ metadata: { app: "x" } });
    const row = await editAgentStore(dbName, "threads", (rows) => rows.get(thread.thread_id));
    for (const id of [5, ["x"], new Date(5)]) {
      await editAgentStore(dbName, "threads", (rows) => rows.put({ ...(row as object), thread_id: id }));
    }
    // Before: listed and counted (as 5, ["x"] and "1970-01-01T00:00:00.005Z"), while every route
    // answered each of them 404: an entry of the app's thread list that could never be opened or deleted.
    expect((await client.threads.search()).map((t) => t.thread_id)).toEqual([thread.thread_id]);
    expect((await client.threads.search({ metadata: { app: "x" } })).map((t) => t.thread_id)).toEqual([
      thread.thread_id,
    ]);
    expect(await client.threads.count()).toBe(1);
  });

  it("a run record planted under an id that is no string is left out of the thread's runs", async () => {
    const { client, dbName } = await openServer("tampered-run-id");
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: human("hello") });
    const [run] = await client.runs.list(thread.thread_id);
    const row = await editAgentStore(dbName, "runs", (rows) => rows.get(run!.run_id));
    for (const id of [5, ["x"]]) {
      await editAgentStore(dbName, "runs", (rows) => rows.put({ ...(row as object), run_id: id }));
    }
    // Before: listed beside the real run, while runs.get, join and delete answered each 404.
    expect((await client.runs.list(thread.thread_id)).map((r) => r.run_id)).toEqual([run!.run_id]);
    // The thread's delete still goes through (its runs' records, planted ones too, go with it).
    await client.threads.delete(thread.thread_id);
    expect(await editAgentStore(dbName, "runs", (rows) => rows.count())).toBe(0);
  });

  for (const [label, seq] of [
    ["a long string", "9".repeat(100_000)],
    ["Infinity", Infinity],
  ] as const) {
    it(`a thread's creation order (seq) edited to ${label}: threads created after get whole numbers, in order`, async () => {
      const { client, dbName } = await openServer("tampered-seq");
      const edited = await client.threads.create();
      const row = await editAgentStore(dbName, "threads", (rows) => rows.get(edited.thread_id));
      await editAgentStore(dbName, "threads", (rows) => rows.put({ ...(row as object), seq }));
      const created = [await client.threads.create(), await client.threads.create()].map((t) => t.thread_id);
      const rows = (await editAgentStore(dbName, "threads", (store) => store.getAll())) as {
        thread_id: string;
        seq: unknown;
      }[];
      // Before: the string's seq plus "1" and "11" (each new row a character longer than the last,
      // the edited string copied into every new thread), or Infinity twice (ties in no order).
      const seqs = created.map((id) => rows.find((r) => r.thread_id === id)!.seq);
      expect(seqs.every((s) => Number.isSafeInteger(s))).toBe(true);
      expect(seqs[1]).toBe((seqs[0] as number) + 1);
    });
  }

  it("a running run's record moved to another thread: that thread's delete does not cancel it", async () => {
    const first = await openServer("tampered-moved-run");
    const second = await openServer("tampered-moved-run", false, { dbName: first.dbName });
    const deleted = await first.client.threads.create();
    const running = await first.client.threads.create();
    // The run goes in the second tab's server; the first finds it only through the run log.
    const run = await second.client.runs.create(running.thread_id, "agent", {
      input: human("slow"),
      config: { configurable: { delay_ms: 4000 } },
    });
    for (;;) {
      const stored = (await editAgentStore(first.dbName, "runs", (rows) => rows.get(run.run_id))) as RunRecord;
      if (stored?.status === "running") {
        await new Promise((resolve) => setTimeout(resolve, 300));
        // Its record says another thread (edited on disk): the delete of that thread asked the runner
        // to cancel it, by run id alone, and the runner stopped a run of a thread no one deleted.
        await editAgentStore(first.dbName, "runs", (rows) => rows.put({ ...stored, thread_id: deleted.thread_id }));
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await first.client.threads.delete(deleted.thread_id);
    await second.client.runs.join(running.thread_id, run.run_id);
    expect((await second.client.runs.get(running.thread_id, run.run_id)).status).toBe("success");
  }, 30_000);
});

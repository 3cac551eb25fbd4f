/**
 * A thread-less run's own thread whose delete failed outlives the server
 * that ran it (a reload) no longer: it is recorded in the agent server's
 * database (schema version 3) before its first delete, and the next server
 * to start deletes it, unless a run holds it or it is no longer the thread
 * recorded. Each case failed before the record (the thread stayed for good).
 */
import { openDB } from "idb";
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { FailingDeleteSaver, human } from "../../test/support/agent-server/timing.js";
import { freshDbName } from "../../test/support/databases.js";
import { transactionsFactory } from "../../test/support/reliability/factories.js";
import { IndexedDBSaver } from "../saver/index.js";
import { LeftoverRecords } from "./leftover-threads.js";
import { openAgentDatabase } from "./schema.js";

afterEach(closeServers);

/** The leftover records of the agent database beside `dbName`'s saver, read or written by `work`. */
async function withRecords<T>(dbName: string, work: (records: LeftoverRecords) => Promise<T>): Promise<T> {
  const db = openAgentDatabase(`${dbName}-agent-threads`, undefined);
  try {
    return await work(new LeftoverRecords(db));
  } finally {
    await db.close();
  }
}

/** Runs a thread-less run on a server whose saver refuses every delete, then closes it: its thread's id. */
async function leaveThread(dbName: string): Promise<string> {
  const saver = new FailingDeleteSaver({ dbName });
  saver.failures = 100;
  const { server, client } = await openServer("leftover", false, { saver });
  let threadId: string | undefined;
  for await (const _ of client.runs.stream(null, "agent", {
    input: human("hi"),
    onRunCreated: (run) => void (threadId = run.thread_id),
  }));
  // Its retries (and the last one at close) fail too: the thread is left, as after a reload.
  await server.close();
  await saver.close();
  return threadId!;
}

describe("leftover threads of thread-less runs", () => {
  it("a thread whose delete failed is deleted by the next server to start on the database", async () => {
    const dbName = freshDbName("leftover-reload");
    const threadId = await leaveThread(dbName);
    expect((await withRecords(dbName, (records) => records.list())).map((row) => row.thread_id)).toEqual([threadId]);
    const saver = new IndexedDBSaver({ dbName });
    expect(await saver.getTuple({ configurable: { thread_id: threadId } })).toBeDefined();
    const { client } = await openServer("leftover-reload", false, { saver });
    expect(await client.threads.search()).toEqual([]);
    expect(await saver.getTuple({ configurable: { thread_id: threadId } })).toBeUndefined();
    expect(await withRecords(dbName, (records) => records.list())).toEqual([]);
  });

  it("a thread created again under the id since it was recorded is not deleted; its record goes", async () => {
    const dbName = freshDbName("leftover-recreated");
    const threadId = await leaveThread(dbName);
    // As a record left from a thread of the same id before this one (deleted, then created again).
    await withRecords(dbName, (records) => records.add(threadId, "2000-01-01T00:00:00.000Z"));
    const saver = new IndexedDBSaver({ dbName });
    const { client } = await openServer("leftover-recreated", false, { saver });
    expect((await client.threads.search()).map((t) => t.thread_id)).toEqual([threadId]);
    expect(await saver.getTuple({ configurable: { thread_id: threadId } })).toBeDefined();
    expect(await withRecords(dbName, (records) => records.list())).toEqual([]);
  });

  it("a thread a run of another server holds is not swept: its run goes on, its record stays for the next start", async () => {
    const a = await openServer("leftover-busy");
    const thread = await a.client.threads.create();
    await withRecords(a.dbName, (records) => records.add(thread.thread_id, thread.created_at));
    const run = await a.client.runs.create(thread.thread_id, "agent", {
      input: human("slow"),
      config: { configurable: { delay_ms: 1500 } },
    });
    await openServer("leftover-busy", false, { dbName: a.dbName });
    await a.client.runs.join(thread.thread_id, run.run_id);
    expect((await a.client.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
    expect((await a.client.threads.get(thread.thread_id)).thread_id).toBe(thread.thread_id);
    const left = await withRecords(a.dbName, (records) => records.list());
    expect(left.map((row) => row.thread_id)).toEqual([thread.thread_id]);
  });

  it("a thread deleted through the server is no leftover any more", async () => {
    const { client, dbName } = await openServer("leftover-forgotten");
    const deleted = await client.threads.create();
    await withRecords(dbName, (records) => records.add(deleted.thread_id, deleted.created_at));
    await client.threads.delete(deleted.thread_id);
    expect(await withRecords(dbName, (records) => records.list())).toEqual([]);
  });

  it("a thread created through the server under a leftover's id survives the next start, and the record goes", async () => {
    const a = await openServer<{ messages: { type: string; content: string }[] }>("leftover-recreated-restart");
    const threadId = crypto.randomUUID();
    // The record of a thread of that id left before (deleted since), then a thread created under its id.
    await withRecords(a.dbName, (records) => records.add(threadId, "2000-01-01T00:00:00.000Z"));
    await a.client.threads.create({ threadId });
    await a.client.runs.wait(threadId, "agent", { input: human("new") });
    await a.server.close();
    const b = await openServer("leftover-recreated-restart", false, { dbName: a.dbName });
    expect((await b.client.threads.get(threadId)).thread_id).toBe(threadId);
    expect(JSON.stringify((await b.client.threads.getState(threadId)).values)).toContain("echo new");
    expect(await withRecords(a.dbName, (records) => records.list())).toEqual([]);
  });

  it("a thread created through the server writes nothing to the leftover records", async () => {
    let writes = 0;
    const factory = transactionsFactory((tx) => {
      if ([...tx.objectStoreNames].includes("leftover_threads") && tx.mode === "readwrite") writes++;
    });
    const { client } = await openServer("leftover-create", false, { indexedDB: factory });
    writes = 0;
    for (let i = 0; i < 3; i++) await client.threads.create();
    // Before: each create removed the thread's record, a write per create; the start's sweep drops such a record.
    expect(writes).toBe(0);
  });

  it("opens a version 2 database (before the records) and upgrades it, its threads and runs kept", async () => {
    const dbName = freshDbName("leftover-upgrade");
    const now = new Date().toISOString();
    // The released versions 1 and 2 of schema.ts, as a database written then holds them.
    const old = await openDB(`${dbName}-agent-threads`, 2, {
      upgrade(db, oldVersion) {
        if (oldVersion < 1) db.createObjectStore("threads", { keyPath: "thread_id" }).createIndex("seq", "seq");
        db.createObjectStore("runs", { keyPath: "run_id" }).createIndex("thread_id", "thread_id");
        db.createObjectStore("run_events", { keyPath: ["run_id", "id"] });
      },
    });
    const thread = { thread_id: "t-old", created_at: now, updated_at: now, metadata: {}, status: "idle", seq: 1 };
    await old.put("threads", thread);
    const record = { run_id: "r-old", thread_id: "t-old", assistant_id: "agent", created_at: now, updated_at: now };
    await old.put("runs", { ...record, status: "success", metadata: {}, multitask_strategy: "reject" });
    old.close();
    const { client } = await openServer("leftover-upgrade", false, { dbName });
    expect((await client.threads.get("t-old")).created_at).toBe(now);
    expect((await client.runs.get("t-old", "r-old")).status).toBe("success");
    expect(await withRecords(dbName, (records) => records.list())).toEqual([]);
    const upgraded = await openDB(`${dbName}-agent-threads`);
    // Upgraded through every later step: 3 added leftover_threads, 4 the runs' status index.
    expect([upgraded.version, [...upgraded.objectStoreNames].sort()]).toEqual([
      4,
      ["leftover_threads", "run_events", "runs", "threads"],
    ]);
    upgraded.close();
  });
});

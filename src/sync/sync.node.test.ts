/**
 * Sync between devices through the sync server on the real PostgreSQL.
 * Each device is an IndexedDBSaver on its own fake IDBFactory (two
 * browsers); the server is the real Fastify app on loopback.
 */
import { createHash } from "node:crypto";
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { chat, chatGraph, plain } from "../../test/support/chat-graph.js";
import { done, openRaw } from "../../test/support/reliability/raw.js";
import {
  checkpointIds,
  device,
  inspector,
  newUser,
  state,
  type Device,
  serverForFile,
  closeDevices,
} from "../../test/support/sync/harness.js";
import type { CheckpointRow } from "../rows/shapes.js";
import type { IndexedDBSaver } from "../saver/index.js";
import { SyncClient } from "./client.js";

const served = serverForFile();

describe("SyncClient with the sync server", () => {
  it("a thread started offline on A appears on B, equal", async () => {
    const { token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    const messages = await chat(a.saver, "t1", ["hello", "how are you"]);
    expect(await b.saver.getTuple({ configurable: { thread_id: "t1" } })).toBeUndefined();

    const pushed = await a.sync.syncNow();
    expect(pushed.pushed).toBeGreaterThan(0);
    expect(pushed.pulled).toBe(0); // its own checkpoints do not come back
    const pulled = await b.sync.syncNow();
    expect(pulled.pulled).toBe(pushed.pushed);

    expect(await state(b.saver, "t1")).toEqual(await state(a.saver, "t1"));
    expect((await state(b.saver, "t1")).messages).toEqual(messages);
    expect(await checkpointIds(b.saver, "t1")).toEqual(await checkpointIds(a.saver, "t1"));
    const threads = [];
    for await (const t of b.saver.listThreads()) threads.push(t.threadId);
    expect(threads).toEqual(["t1"]);

    // B continues the thread, A gets the new turns.
    await chat(b.saver, "t1", ["continued on B"]);
    await b.sync.syncNow();
    await a.sync.syncNow();
    expect(await state(a.saver, "t1")).toEqual(await state(b.saver, "t1"));
    expect((await state(a.saver, "t1")).messages.at(-2)).toEqual(["human", "continued on B"]);

    // Nothing left to do: a second round moves nothing.
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 0, pulled: 0 });
    expect(await b.sync.syncNow()).toMatchObject({ pushed: 0 });
    await closeDevices(a, b);
  });

  it("both write offline: every turn kept on both, one head, the other line a branch", async () => {
    const { token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    await chat(a.saver, "t", ["shared start"]);
    await a.sync.syncNow();
    await b.sync.syncNow();

    await chat(a.saver, "t", ["A offline 1", "A offline 2"]);
    await chat(b.saver, "t", ["B offline 1"]);
    const aHead = (await state(a.saver, "t")).checkpointId!;
    const bHead = (await state(b.saver, "t")).checkpointId!;
    const aLine = (await state(a.saver, "t")).messages;
    const bLine = (await state(b.saver, "t")).messages;

    await a.sync.syncNow();
    await b.sync.syncNow();
    await a.sync.syncNow();

    const ids = await checkpointIds(a.saver, "t");
    expect(await checkpointIds(b.saver, "t")).toEqual(ids);
    expect(ids.some((id) => id.includes(aHead))).toBe(true);
    expect(ids.some((id) => id.includes(bHead))).toBe(true);
    // One agreed head: the newest checkpoint id, on both.
    const head = aHead > bHead ? aHead : bHead;
    const onA = await state(a.saver, "t");
    expect(onA.checkpointId).toBe(head);
    expect(await state(b.saver, "t")).toEqual(onA);
    // The other line is a branch: its head still reads as it was written.
    const other = aHead > bHead ? { id: bHead, messages: bLine } : { id: aHead, messages: aLine };
    for (const saver of [a.saver, b.saver]) {
      const branch = await chatGraph(saver).getState({ configurable: { thread_id: "t", checkpoint_id: other.id } });
      expect(plain(branch.values.messages)).toEqual(other.messages);
    }
    await closeDevices(a, b);
  });

  it("a delete on A removes the thread on B; a later run may start it afresh", async () => {
    const { token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    await chat(a.saver, "gone", ["one", "two"]);
    await chat(a.saver, "kept", ["stay"]);
    await a.sync.syncNow();
    await b.sync.syncNow();
    expect(await b.saver.getTuple({ configurable: { thread_id: "gone" } })).toBeDefined();

    const seen: string[] = [];
    const unsubscribe = b.saver.subscribe((change) => seen.push(`${change.kind}:${change.threadId}`));
    await a.saver.deleteThread("gone");
    expect(await a.sync.syncNow()).toMatchObject({ pushedDeletes: 1 });
    await b.sync.syncNow();
    unsubscribe();
    expect(await b.saver.getTuple({ configurable: { thread_id: "gone" } })).toBeUndefined();
    expect(await checkpointIds(b.saver, "gone")).toEqual([]);
    expect(seen).toContain("delete:gone");
    const threads = [];
    for await (const t of b.saver.listThreads()) threads.push(t.threadId);
    expect(threads).toEqual(["kept"]);

    // Restarted on B after the delete: A gets the new thread, not the old turns.
    await chat(b.saver, "gone", ["fresh start"]);
    await b.sync.syncNow();
    await a.sync.syncNow();
    expect((await state(a.saver, "gone")).messages).toEqual([
      ["human", "fresh start"],
      ["ai", "echo fresh start (#1)"],
    ]);
    await closeDevices(a, b);
  });

  it("pending writes added after a push are pushed again", async () => {
    const { token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    await chat(a.saver, "w", ["x"]);
    await a.sync.syncNow();
    const head = await a.saver.getTuple({ configurable: { thread_id: "w" } });
    await a.saver.putWrites(head!.config, [["note", { added: "later" }]], "task-late");
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 1 });
    await b.sync.syncNow();
    const onB = await b.saver.getTuple({ configurable: { thread_id: "w" } });
    expect(onB?.pendingWrites).toEqual([["task-late", "note", { added: "later" }]]);
    await closeDevices(a, b);
  });

  it("a server-side agent continues a synced thread; the devices get its turns", async () => {
    const { user, token } = newUser();
    const a = device(served.url, token);
    await chat(a.saver, "srv", ["from the phone"]);
    await a.sync.syncNow();
    const agent = served.server.saverFor(user);
    expect(await state(agent, "srv")).toEqual(await state(a.saver, "srv"));
    await chat(agent, "srv", ["continued on the server"]);
    await a.sync.syncNow();
    expect(await state(a.saver, "srv")).toEqual(await state(agent, "srv"));
    expect((await state(a.saver, "srv")).messages.slice(-2)).toEqual([
      ["human", "continued on the server"],
      ["ai", "echo continued on the server (#3)"],
    ]);
    // And back: the phone's next turn reaches the agent.
    await chat(a.saver, "srv", ["phone again"]);
    await a.sync.syncNow();
    expect(await state(agent, "srv")).toEqual(await state(a.saver, "srv"));
    await closeDevices(a);
  });

  it("a server-side agent's id a device could not pull is refused there, and the devices' sync goes on", async () => {
    const { user, token } = newUser();
    const agent = served.server.saverFor(user);
    await chat(agent, "fine", ["hi"]);
    const head = await agent.getTuple({ configurable: { thread_id: "fine" } });
    // Over the protocol's 1,024 characters: stored before, every device's pull and thread list then failed with
    // bad_response ("changes[0].checkpoint.thread_id is longer than 1024 characters"), other threads never arrived.
    const long = "L".repeat(1025);
    await expect(chat(agent, long, ["hi"])).rejects.toThrow(
      /SyncServerSaver.*thread_id is longer than 1024 characters/,
    );
    await expect(agent.putWrites(head!.config, [["note", 1]], long)).rejects.toThrow(
      /SyncServerSaver.*task_id is longer than 1024 characters/,
    );
    await expect(agent.putWrites(head!.config, [[long, 1]], "task")).rejects.toThrow(
      /SyncServerSaver.*channel is longer than 1024 characters/,
    );
    const a = device(served.url, token);
    await a.sync.syncNow();
    expect(await state(a.saver, "fine")).toEqual(await state(agent, "fine"));
    const listed: string[] = [];
    for await (const thread of a.sync.remoteThreads()) listed.push(thread.thread_id);
    expect(listed).toEqual(["fine"]);
    await closeDevices(a);
  });

  it("reports status and progress a UI can show", async () => {
    const { token } = newUser();
    const a = device(served.url, token);
    await chat(a.saver, "s1", ["a"]);
    await chat(a.saver, "s2", ["b"]);
    const statuses: string[] = [];
    a.sync.subscribe((s) => statuses.push(`${s.state}:${s.pending}:${s.threads}`));
    await a.sync.syncNow();
    expect(statuses[0]).toMatch(/^syncing:/);
    expect(statuses).toContain("syncing:6:2"); // 3 checkpoints per single-turn thread, 2 threads
    expect(statuses.at(-1)).toMatch(/^stopped:0:0$/);
    expect(a.sync.status.lastSyncedAt).toBeTypeOf("number");

    // Offline: the status says so and counts what waits.
    const offline = device("http://127.0.0.1:9", token);
    await chat(offline.saver, "o", ["x", "y"]);
    await expect(offline.sync.syncNow()).rejects.toMatchObject({ code: "offline", retryable: true });
    expect(offline.sync.status).toMatchObject({ state: "offline", pending: 6 }); // "offline, 6 changes waiting"
    // After a first round, only what that round did not send counts.
    await chat(a.saver, "s1", ["more"]);
    const unreachable = new SyncClient({
      saver: a.saver,
      url: served.url,
      token,
      fetch: () => Promise.reject(new TypeError("network down")),
    });
    await expect(unreachable.syncNow()).rejects.toMatchObject({ code: "offline" });
    expect(unreachable.status).toMatchObject({ state: "offline", pending: 3 });
    unreachable.close();
    await closeDevices(a, offline);
  });

  it("continuous mode syncs local changes as they happen", async () => {
    const { token } = newUser();
    const a = device(served.url, token, { client: { intervalMs: 50 } });
    const b = device(served.url, token, { client: { intervalMs: 50 } });
    a.sync.start();
    b.sync.start();
    await chat(a.saver, "live", ["typed on A"]);
    const expected = await state(a.saver, "live");
    await expect.poll(() => state(b.saver, "live"), { timeout: 10_000, interval: 50 }).toEqual(expected);
    await closeDevices(a, b);
  });

  it("continuous mode: a local change syncs soon even while the next poll is far off", async () => {
    const { token } = newUser();
    const a = device(served.url, token, { client: { intervalMs: 60_000 } });
    const b = device(served.url, token);
    a.sync.start();
    await expect.poll(() => a.sync.status.state, { timeout: 10_000, interval: 20 }).toBe("idle"); // first round done, next poll in 60 s
    await chat(a.saver, "soon", ["typed on A"]);
    await expect.poll(async () => (await b.sync.syncNow()).pulled, { timeout: 5000, interval: 100 }).toBeGreaterThan(0);
    await closeDevices(a, b);
  });
});

/** A distinct 64-hex value per checkpoint, as a version 3 saver's SHA-256 would be. */
const chainOf = (row: CheckpointRow) => createHash("sha256").update(`chain of ${row.checkpoint_id}`).digest("hex");

/** Every checkpoint row of a device's database, read raw. */
async function rows(d: Device): Promise<CheckpointRow[]> {
  const db = await openRaw(d.saver.dbName, undefined, undefined, d.factory);
  try {
    return (await done(db.transaction("checkpoints").objectStore("checkpoints").getAll())) as CheckpointRow[];
  } finally {
    db.close();
  }
}

/** Gives every row but the oldest a chain, directly in the database; returns them all as now stored. */
async function plantChains(d: Device): Promise<CheckpointRow[]> {
  const db = await openRaw(d.saver.dbName, undefined, undefined, d.factory);
  try {
    const store = db.transaction("checkpoints", "readwrite").objectStore("checkpoints");
    const all = (await done(store.getAll())) as CheckpointRow[];
    const oldest = all.map((row) => row.checkpoint_id).sort()[0];
    for (const row of all) {
      if (row.checkpoint_id === oldest) continue;
      row.chain = chainOf(row);
      await done(store.put(row));
    }
    return all;
  } finally {
    db.close();
  }
}

/** What identifies a row and its chain ("-" for none), for comparing devices. */
const chains = (list: CheckpointRow[]) =>
  list.map((row) => `${row.checkpoint_ns}|${row.checkpoint_id}|${"chain" in row ? row.chain : "-"}`).sort();

// A checkpoint row's `chain` (row binding version 3): an encrypting saver
// seals the checkpoint with it, so a pulled row opens only if it arrives with
// the very value it was written with. The chains are planted raw (what a
// version 3 saver stores), so a plain saver's rows carry them here.
describe("SyncClient.remoteThreads", () => {
  it("pages through the user's threads on the server, each page bounded", async () => {
    const { token } = newUser("listing");
    const a = device(served.url, token);
    const ids = ["t1", "t2", "t3", "t4", "t5"];
    for (const id of ids) await chat(a.saver, id, [`hi on ${id}`]);
    await a.sync.syncNow();
    const pages: string[] = [];
    const b = device(served.url, token, {
      client: {
        fetch: (url, init) => {
          if (url.includes("/threads")) pages.push(new URL(url).search);
          return fetch(url, init);
        },
      },
    });
    const listed = [];
    for await (const thread of b.sync.remoteThreads({ pageSize: 2 })) listed.push(thread);
    expect(listed.map((t) => t.thread_id)).toEqual(ids);
    expect(listed.every((t) => t.checkpoints > 0 && t.latest_checkpoint_id !== "")).toBe(true);
    expect(pages).toEqual(["?limit=2&app=app", "?limit=2&after=t2&app=app", "?limit=2&after=t4&app=app"]);
    await closeDevices(a, b);
  });
});

describe("sync carries a checkpoint row's chain", () => {
  it("pushed from A, stored by the server, pulled into B: the identical chain; rows without one stay without", async () => {
    const { user, token } = newUser("chain");
    const a = device(served.url, token);
    const b = device(served.url, token);
    await chat(a.saver, "c", ["first", "second"]);
    const planted = await plantChains(a);
    expect(planted.filter((row) => row.chain !== undefined).length).toBeGreaterThan(2);
    expect(planted.some((row) => row.chain === undefined)).toBe(true);

    expect((await a.sync.syncNow()).pushed).toBe(planted.length);
    // The server keeps it in its own column, NULL for the row without one.
    const pool = await inspector();
    const stored = await pool
      .query<{ checkpoint_id: string; chain: string | null }>(
        "SELECT checkpoint_id, chain FROM lgsync_checkpoints WHERE user_id = $1",
        [user],
      )
      .finally(() => pool.end());
    expect(stored.rows.map((row) => `${row.checkpoint_id}|${row.chain ?? "-"}`).sort()).toEqual(
      planted.map((row) => `${row.checkpoint_id}|${row.chain ?? "-"}`).sort(),
    );

    expect((await b.sync.syncNow()).pulled).toBe(planted.length);
    expect(chains(await rows(b))).toEqual(chains(planted));

    // And the other way: B's next turn, with chains, reaches A unchanged.
    await chat(b.saver, "c", ["third, on B"]);
    const onB = await plantChains(b);
    expect(onB.length).toBeGreaterThan(planted.length);
    expect((await b.sync.syncNow()).pushed).toBe(onB.length - planted.length);
    await a.sync.syncNow();
    expect(chains(await rows(a))).toEqual(chains(onB));
    await closeDevices(a, b);
  });
});

/** Checkpoint ids of `threadId` on the server. */
async function serverIds(user: string, threadId: string): Promise<string[]> {
  const pool = await inspector();
  try {
    const { rows } = await pool.query<{ checkpoint_id: string }>(
      "SELECT checkpoint_id FROM lgsync_checkpoints WHERE user_id = $1 AND thread_id = $2 ORDER BY checkpoint_id",
      [user, threadId],
    );
    return rows.map((row) => row.checkpoint_id);
  } finally {
    await pool.end();
  }
}

/** Puts checkpoint `id` of run `runId` on top of `parent` (thread "t"). */
function put(saver: IndexedDBSaver, parent: RunnableConfig | undefined, id: string, runId: string) {
  const config = parent ?? { configurable: { thread_id: "t", checkpoint_ns: "" } };
  const metadata = { source: "loop", step: Number(id), parents: {}, run_id: runId } as CheckpointMetadata;
  return saver.put(config, { ...emptyCheckpoint(), id }, metadata, {});
}

// Deletes replicate: what prune and deleteForRuns removed is removed everywhere, for good.
describe("deletes replicate", () => {
  it("prune on A: removed on B, on the server and never sent to a new device", async () => {
    const { user, token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    await chat(a.saver, "t", ["one", "two", "three"]);
    await a.sync.syncNow();
    await b.sync.syncNow();
    const before = await checkpointIds(b.saver, "t");

    await a.saver.prune(["t"]);
    const kept = await checkpointIds(a.saver, "t");
    expect(kept.length).toBeLessThan(before.length);
    expect((await a.sync.syncNow()).pushedDeletes).toBe(before.length - kept.length);
    await b.sync.syncNow();
    expect(await checkpointIds(b.saver, "t")).toEqual(kept);
    expect(await state(b.saver, "t")).toEqual(await state(a.saver, "t"));
    expect(await serverIds(user, "t")).toEqual(kept.map((id) => id.split("|")[1]).sort());

    const c = device(served.url, token);
    await c.sync.syncNow();
    expect(await checkpointIds(c.saver, "t")).toEqual(kept);
    // Nothing left to send either way.
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 0, pushedDeletes: 0 });
  });

  it("prune on A with delta snapshots: B and a new device keep the conversation, which goes on", async () => {
    const { token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    await chat(a.saver, "t", ["one", "two", "three"], true);
    await a.sync.syncNow();
    await b.sync.syncNow();
    const before = await deltaMessages(b.saver, "t");
    expect(before).toHaveLength(6);

    // The kept checkpoint gets a snapshot of the messages its deleted ancestors' writes held.
    await a.saver.prune(["t"], { channels: chatGraph(a.saver, true).channels });
    expect(await checkpointIds(a.saver, "t")).toHaveLength(1);
    expect(await deltaMessages(a.saver, "t")).toEqual(before);
    // Its removals, and the kept checkpoint again with the snapshot.
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 1, pushedDeletes: 8 });
    await b.sync.syncNow();
    expect(await checkpointIds(b.saver, "t")).toEqual(await checkpointIds(a.saver, "t"));
    expect(await deltaMessages(b.saver, "t")).toEqual(before);
    const c = device(served.url, token);
    await c.sync.syncNow();
    expect(await deltaMessages(c.saver, "t")).toEqual(before);
    // Pushed once: the next rounds send nothing.
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 0, pushedDeletes: 0 });
    expect(await b.sync.syncNow()).toMatchObject({ pushed: 0, pulled: 0 });

    // B goes on from the pruned thread, and A follows.
    const after = await chat(b.saver, "t", ["four"], true);
    expect(after).toEqual([...before, ["human", "four"], ["ai", "echo four (#7)"]]);
    await b.sync.syncNow();
    await a.sync.syncNow();
    expect(await deltaMessages(a.saver, "t")).toEqual(after);
  });

  it("deleteForRuns on A (a rolled-back run): gone everywhere, and B cannot push it back", async () => {
    const { user, token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    const c1 = await put(a.saver, undefined, "1", "r1");
    const c2 = await put(a.saver, c1, "2", "r2");
    await a.sync.syncNow();
    await b.sync.syncNow();
    // B adds a write on the rolled-back checkpoint before it hears of the rollback.
    await b.saver.putWrites(c2, [["x", "late"]], "task");

    await a.saver.deleteForRuns(["r2"], { threadId: "t" });
    await a.sync.syncNow();
    await b.sync.syncNow();
    await a.sync.syncNow();
    for (const saver of [a.saver, b.saver]) {
      expect((await saver.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.id).toBe("1");
      expect(await saver.getTuple({ configurable: { thread_id: "t", checkpoint_id: "2" } })).toBeUndefined();
    }
    expect(await serverIds(user, "t")).toEqual(["1"]);
    const c = device(served.url, token);
    await c.sync.syncNow();
    expect((await c.saver.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.id).toBe("1");
  });

  it("a removal goes even when the push of its checkpoint lost its answer (the server may hold it)", async () => {
    const { user, token } = newUser();
    let cutPush = true;
    // The push reaches the server and commits; its answer never reaches the device.
    const cutting = async (input: string, init: RequestInit): Promise<Response> => {
      const response = await fetch(input, init);
      if (!cutPush || !new URL(input).pathname.endsWith("/push")) return response;
      cutPush = false;
      await response.arrayBuffer();
      throw new TypeError("fetch failed: the connection closed before the answer");
    };
    const a = device(served.url, token, { client: { fetch: cutting } });
    const b = device(served.url, token);
    const c1 = await put(a.saver, undefined, "1", "r1");
    await put(a.saver, c1, "2", "r2");
    await expect(a.sync.syncNow()).rejects.toMatchObject({ retryable: true });
    expect(await serverIds(user, "t")).toEqual(["1", "2"]);

    await a.saver.deleteForRuns(["r2"], { threadId: "t" });
    expect((await a.sync.syncNow()).pushedDeletes).toBe(1);
    expect(await serverIds(user, "t")).toEqual(["1"]);
    await b.sync.syncNow();
    expect((await b.saver.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.id).toBe("1");
    // Acknowledged once, it is not sent again; nor does B send back the removal it pulled.
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 0, pushedDeletes: 0 });
    expect(await b.sync.syncNow()).toMatchObject({ pushed: 0, pushedDeletes: 0 });
  });
});

/** The messages of a thread's latest state in the delta chat graph (the delta channel rebuilt). */
async function deltaMessages(saver: IndexedDBSaver, threadId: string) {
  const graph = chatGraph(saver, true);
  return plain((await graph.getState({ configurable: { thread_id: threadId } })).values.messages);
}

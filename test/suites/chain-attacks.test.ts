/**
 * Attacks on row binding version 3 (the hash chain of parent links,
 * src/saver/chain.ts), by someone who can read and write the profile's
 * IndexedDB rows and knows this package's source but holds no key, and the
 * honest flows around it that must not raise a false alarm. Each attack is
 * a raw IndexedDB edit; each must fail closed (`DecryptionError`) or change
 * nothing the walk returns or prune deletes. Node and Chromium.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { chainOf } from "../../src/saver/chain.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import type { CheckpointRow, WriteRow } from "../../src/rows/shapes.js";
import { importThread } from "../../src/portable/index.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { SyncClient } from "../../src/sync/client.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody } from "../../src/sync/protocol.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { putRaw, readStore } from "../support/reliability/raw.js";

const created: string[] = [];
const open: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const each of open.splice(0)) await each.close();
  for (const name of created.splice(0)) await deleteDatabase(name);
});

const KEY = new Uint8Array(32).map((_, i) => i * 11 + 7);
const THREAD = "target";
const CHANNEL = "messages";
const IDS = ["1", "2", "3", "4", "5", "6"];
/** Checkpoints that store the channel's value (a seed), as a snapshot would. */
const SEEDS = new Set(["1", "3"]);
/** The history of 6: the seed at 3, then the turns from 3 on. */
const HISTORY = { seed: ["seed"], turns: ["turn 3", "turn 4", "turn 5"] };

async function saverOn(name: string): Promise<IndexedDBSaver> {
  const saver = new IndexedDBSaver({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
  open.push(saver);
  return saver;
}

function newDatabase(prefix: string): string {
  const name = freshDbName(prefix);
  created.push(name);
  return name;
}

const config = (checkpointId?: string, threadId = THREAD): RunnableConfig => ({
  configurable: { thread_id: threadId, checkpoint_ns: "", ...(checkpointId && { checkpoint_id: checkpointId }) },
});

/** Puts checkpoint `id` (one `messages` write, version `v<id>`) under `parent`; the seed value with `seed`. */
async function step(saver: IndexedDBSaver, parent: RunnableConfig, id: string, seed = false): Promise<RunnableConfig> {
  const checkpoint = {
    ...emptyCheckpoint(),
    id,
    channel_values: seed ? { [CHANNEL]: ["seed"] } : {},
    channel_versions: { [CHANNEL]: `v${id}` },
  };
  // Counters name the delta channel: prune keeps the ancestors back to its seed.
  const metadata = {
    source: "loop",
    step: Number.parseInt(id, 10),
    parents: {},
    counters_since_delta_snapshot: { [CHANNEL]: 1 },
  } as CheckpointMetadata;
  const at = await saver.put(parent, checkpoint, metadata, seed ? { [CHANNEL]: `v${id}` } : {});
  await saver.putWrites(at, [[CHANNEL, `turn ${id}`]], `task-${id}`);
  return at;
}

/** A delta thread 1 ← 2 ← … ← 6 (seeds at 1 and 3), plus a branch 2b off 1 that prune deletes. */
async function chainedThread(name: string): Promise<void> {
  const saver = await saverOn(name);
  let at = config();
  for (const id of IDS) at = await step(saver, at, id, SEEDS.has(id));
  await step(saver, config("1"), "2b");
  expect(await history(saver)).toEqual(HISTORY);
}

/** Every row of `store`, after closing every saver. */
async function readAll<T>(name: string, store: "checkpoints" | "blobs" | "writes"): Promise<T[]> {
  for (const saver of open.splice(0)) await saver.close();
  return readStore<T>(name, store);
}

async function readRows(name: string): Promise<Map<string, CheckpointRow>> {
  const rows = await readAll<CheckpointRow>(name, "checkpoints");
  return new Map(rows.map((row) => [`${row.thread_id}/${row.checkpoint_id}`, row]));
}

/** Puts `rows` back with raw IndexedDB, after closing every saver. */
async function writeRows(name: string, rows: CheckpointRow[]): Promise<void> {
  for (const saver of open.splice(0)) await saver.close();
  await putRaw(name, "checkpoints", rows);
}

const walk = (saver: IndexedDBSaver, checkpointId = "6", threadId = THREAD) =>
  saver.getDeltaChannelHistory({ config: config(checkpointId, threadId), channels: [CHANNEL] });

async function history(saver: IndexedDBSaver, checkpointId = "6", threadId = THREAD) {
  const { writes, seed } = (await walk(saver, checkpointId, threadId))[CHANNEL]!;
  return { seed, turns: writes.map(([, , value]) => value) };
}

describe("attacks on the hash chain of parent links (row binding version 3)", () => {
  it("an ancestor's string version wrapped in an array (same chain text): the walk and prune fail closed", async () => {
    const name = newDatabase("chain-attack-type");
    await chainedThread(name);
    const rows = await readRows(name);
    const seedRow = rows.get(`${THREAD}/3`)!;
    // `${["v3"]}` is "v3": the chain text of the row does not change, but the
    // walk no longer finds the seed blob of version "v3" (it would go on to
    // 1's seed and return turns 1 and 2 too), and prune would count blob "v3"
    // unused and delete it.
    seedRow.channel_versions = { [CHANNEL]: ["v3"] as unknown as string };
    await writeRows(name, [seedRow]);
    const saver = await saverOn(name);
    await expect(walk(saver)).rejects.toBeInstanceOf(DecryptionError);
    await expect(saver.prune([THREAD])).rejects.toBeInstanceOf(DecryptionError);
    // Its value stays: inline in row 3 (row format 2).
    expect((await readRows(name)).get(`${THREAD}/3`)!.inline?.[CHANNEL]).toBeDefined();
  });

  it("a row of a copied thread replayed into its source, or the source's into the copy: the walk is unchanged or fails closed", async () => {
    const name = newDatabase("chain-attack-replay");
    await chainedThread(name);
    let saver = await saverOn(name);
    await saver.copyThread(THREAD, "copy");
    // Both go on with different turns from 6: 7 in the source, 8 in the copy.
    await step(saver, config("6"), "7");
    await step(saver, config("6", "copy"), "8");
    const rows = await readRows(name);
    // Rows with the same id and chain in both threads: the copy's 3 in the source.
    expect(rows.get(`copy/3`)!.chain).toBe(rows.get(`${THREAD}/3`)!.chain);
    await writeRows(name, [{ ...rows.get("copy/3")!, thread_id: THREAD }]);
    saver = await saverOn(name);
    // The walk's seed is the value row 3 holds inline (row format 2), sealed for the copy: it fails closed.
    await expect(history(saver, "7")).rejects.toBeInstanceOf(DecryptionError);
    // Its sealed checkpoint is the copy's: every read of that row fails closed.
    await expect(saver.getTuple(config("3"))).rejects.toBeInstanceOf(DecryptionError);
    // The copy's newer checkpoint 8 replayed into the source, as a child of 6: its seal names the copy.
    await writeRows(name, [{ ...rows.get("copy/8")!, thread_id: THREAD }]);
    saver = await saverOn(name);
    await expect(walk(saver, "8")).rejects.toBeInstanceOf(DecryptionError);
    await expect(saver.prune([THREAD], { keepLast: 2 })).rejects.toBeInstanceOf(DecryptionError);
    expect((await readRows(name)).has(`${THREAD}/7`)).toBe(true);
  });

  it("the tail row (the parent that proves the walk's last row) with its chain stripped or swapped: fails closed", async () => {
    const name = newDatabase("chain-attack-tail");
    await chainedThread(name);
    const rows = await readRows(name);
    // The walk from 6 seeds at 3 and stops there: 2 is read only as the tail, whose chain proves 3.
    const tail = { ...rows.get(`${THREAD}/2`)! };
    delete tail.chain;
    await writeRows(name, [tail]);
    await expect(walk(await saverOn(name))).rejects.toBeInstanceOf(DecryptionError);
    await writeRows(name, [{ ...rows.get(`${THREAD}/2`)!, chain: rows.get(`${THREAD}/2b`)!.chain! }]);
    await expect(walk(await saverOn(name))).rejects.toBeInstanceOf(DecryptionError);
    // The tail deleted: 3 is then decrypted instead, and the walk is the honest one.
    await writeRows(name, [rows.get(`${THREAD}/2`)!]);
    expect(await history(await saverOn(name))).toEqual(HISTORY);
  });

  it("a walk that fails leaves nothing proven: the same rows, edited back halfway, still fail", async () => {
    const name = newDatabase("chain-attack-memory");
    await chainedThread(name);
    const rows = await readRows(name);
    // 4 relinked to 2 with every chain from 4 up recomputed: the target 6's seal refuses.
    const edited = structuredClone(rows);
    edited.get(`${THREAD}/4`)!.parent_checkpoint_id = "2";
    for (const id of ["4", "5", "6"]) {
      const row = edited.get(`${THREAD}/${id}`)!;
      row.chain = await chainOf(row, edited.get(`${THREAD}/${row.parent_checkpoint_id!}`)!.chain);
    }
    await writeRows(name, [...["4", "5", "6"].map((id) => edited.get(`${THREAD}/${id}`)!)]);
    const saver = await saverOn(name);
    await expect(walk(saver)).rejects.toBeInstanceOf(DecryptionError);
    // Had that walk remembered 4 and 5 as proven (their hashes held), the walk
    // of 5 would skip them all, the target included, and drop turns 3 and 4.
    await expect(walk(saver, "5")).rejects.toBeInstanceOf(DecryptionError);
    await expect(walk(saver, "5")).rejects.toBeInstanceOf(DecryptionError);
  });
});

/** A sync server that takes every push and answers the first pull with `changes` (rows of its choosing). */
function serverSending(changes: unknown[]): (url: string, init: RequestInit) => Promise<Response> {
  let keyRecord: unknown = null;
  let pulled = false;
  return async (url, init) => {
    const path = new URL(url).pathname;
    let body: unknown;
    if (path.endsWith("/hello")) body = { v: 1, user: "u", keyRecord: null, hasData: false, seq: 0 };
    else if (path.endsWith("/key")) {
      keyRecord ??= (decodeBody(new Uint8Array(init.body as ArrayBuffer)) as { keyRecord: unknown }).keyRecord;
      body = { v: 1, keyRecord };
    } else if (path.endsWith("/push")) body = { v: 1, changed: 0, dropped: 0, seq: 0 };
    else if (path.endsWith("/pull")) {
      body = { v: SYNC_PROTOCOL_VERSION, changes: pulled ? [] : changes, cursor: 1, more: false };
      pulled = true;
    } else return new Response("not found", { status: 404 });
    return new Response(encodeBody(body) as Uint8Array<ArrayBuffer>, { headers: { "content-type": SYNC_MEDIA_TYPE } });
  };
}

/** `row` as a pulled change of `threadId`, with its pending writes as stored. */
async function asPulled(name: string, row: CheckpointRow, threadId: string, seq: number) {
  const writes = (await readAll<WriteRow>(name, "writes")).filter(
    (write) => write.thread_id === row.thread_id && write.checkpoint_id === row.checkpoint_id,
  );
  return {
    kind: "checkpoint",
    seq,
    checkpoint: {
      ...row,
      thread_id: threadId,
      blobs: [],
      writes: writes.map(({ task_id, idx, channel, task_path, value }) => ({
        task_id,
        idx,
        channel,
        task_path,
        value,
      })),
    },
  };
}

describe("the chains a saver remembers", () => {
  it("a parent relinked (chain recomputed) under a running saver, which then puts a child over the chain it remembers: the walk fails closed", async () => {
    const name = newDatabase("chain-attack-cache");
    await chainedThread(name);
    const rows = await readRows(name);
    const running = await saverOn(name);
    await step(running, config("6"), "7");
    // While it runs, 7 is relinked to 5 (turn 6 would vanish), its chain recomputed.
    const stored = await readStore<CheckpointRow>(name, "checkpoints");
    const seven = stored.find((row) => row.thread_id === THREAD && row.checkpoint_id === "7")!;
    seven.parent_checkpoint_id = "5";
    seven.chain = await chainOf(seven, rows.get(`${THREAD}/5`)!.chain);
    await putRaw(name, "checkpoints", [seven]);
    // The put of 8 seals the chain of 7 it remembers, not the edited one: walks through 7 fail.
    await step(running, config("7"), "8");
    await expect(walk(running, "8")).rejects.toBeInstanceOf(DecryptionError);
    await expect(walk(await saverOn(name), "8")).rejects.toBeInstanceOf(DecryptionError);
    await expect(running.prune([THREAD])).rejects.toBeInstanceOf(DecryptionError);
  });
});

describe("a sync server delivering chained rows", () => {
  it("another thread's rows pulled into this one (a new child, and a conflicting copy of an ancestor): fails closed or changes nothing", async () => {
    const name = newDatabase("chain-attack-sync");
    await chainedThread(name);
    let saver = await saverOn(name);
    await saver.copyThread(THREAD, "copy");
    await step(saver, config("6", "copy"), "8");
    const rows = await readRows(name);
    const changes = [
      // The copy's 3 with another chain (the copy's 8's): the local 3 is kept.
      await asPulled(name, { ...rows.get("copy/3")!, chain: rows.get("copy/8")!.chain! }, THREAD, 1),
      // The copy's 8, a child of 6 there, pulled as a child of this thread's 6.
      await asPulled(name, rows.get("copy/8")!, THREAD, 2),
    ];
    saver = await saverOn(name);
    const sync = new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch: serverSending(changes) });
    await sync.syncNow();
    const pulled = await readRows(name);
    expect(pulled.get(`${THREAD}/3`)!.chain).toBe(rows.get(`${THREAD}/3`)!.chain);
    expect(pulled.get(`${THREAD}/8`)!.chain).toBe(rows.get("copy/8")!.chain);
    saver = await saverOn(name);
    // The copy's 3 brought its regular writes, sealed for the copy: a pulled regular write takes the
    // server's value (so honest devices converge), and this one fails closed where it is read.
    await expect(history(saver)).rejects.toBeInstanceOf(DecryptionError);
    await expect(walk(saver, "8")).rejects.toBeInstanceOf(DecryptionError);
    await expect(saver.prune([THREAD])).rejects.toBeInstanceOf(DecryptionError);
    expect((await readRows(name)).get(`${THREAD}/1`)).toBeDefined();
  });
});

describe("honest flows around the hash chain: no false alarm", () => {
  it("continue a thread, prune it, export it and import it back (replace), continue: walks and prune succeed", async () => {
    const name = newDatabase("chain-honest-restore");
    {
      // Written by an earlier session: the saver below never wrote 1 and 2.
      const earlier = await saverOn(name);
      let at = config();
      for (const id of ["1", "2"]) at = await step(earlier, at, id, id === "1");
      await earlier.close();
    }
    // One saver throughout: what it remembers of the chains it wrote is part of the flow.
    const saver = await saverOn(name);
    // 3 holds the channel's value: prune deletes 1 and 2, and 3 points to a parent that is gone.
    await step(saver, config("2"), "3", true);
    await saver.prune([THREAD]);
    expect(await saver.getTuple(config("2"))).toBeUndefined();
    const file = await saver.exportThread(THREAD, { as: "bytes" });
    await importThread(saver, file, { serde: await EncryptedSerializer.fromRawKey(KEY), ifExists: "replace" });
    await step(saver, config("3"), "4");
    await step(saver, config("4"), "5");
    expect(await history(saver, "5")).toEqual({ seed: ["seed"], turns: ["turn 3", "turn 4"] });
    await saver.prune([THREAD]);
    expect(await history(await saverOn(name), "5")).toEqual({ seed: ["seed"], turns: ["turn 3", "turn 4"] });
  });

  it("one tab restores a thread (prune, export, import replace) while another goes on with it: no false alarm", async () => {
    const name = newDatabase("chain-honest-tabs");
    const writer = await saverOn(name);
    let at = config();
    for (const id of ["1", "2", "3"]) at = await step(writer, at, id, id !== "2");
    // The other tab never wrote 1 to 3: its import of 3 (parent gone) gets no chain.
    const restorer = await saverOn(name);
    await restorer.prune([THREAD]);
    const file = await restorer.exportThread(THREAD, { as: "bytes" });
    await importThread(restorer, file, { serde: await EncryptedSerializer.fromRawKey(KEY), ifExists: "replace" });
    await step(writer, config("3"), "4");
    await step(writer, config("4"), "5");
    expect(await history(writer, "5")).toEqual({ seed: ["seed"], turns: ["turn 3", "turn 4"] });
    expect(await history(restorer, "5")).toEqual({ seed: ["seed"], turns: ["turn 3", "turn 4"] });
  });

  it("put and walk after copyThread, rekey, changeKey, deleteThread and prune, on one encrypted saver", async () => {
    const name = newDatabase("chain-honest-flows");
    await chainedThread(name);
    let saver = await saverOn(name);
    await saver.copyThread(THREAD, "copy");
    await step(saver, config("6", "copy"), "7");
    expect(await history(saver, "7", "copy")).toEqual({ seed: ["seed"], turns: [...HISTORY.turns, "turn 6"] });
    await saver.rekey();
    await step(saver, config("6"), "7");
    expect(await history(saver, "7")).toEqual({ seed: ["seed"], turns: [...HISTORY.turns, "turn 6"] });
    const next = new Uint8Array(32).map((_, i) => 255 - i);
    await saver.changeKey(await EncryptedSerializer.fromRawKey(next));
    await step(saver, config("7"), "8");
    expect(await history(saver, "8")).toEqual({ seed: ["seed"], turns: [...HISTORY.turns, "turn 6", "turn 7"] });
    await saver.prune([THREAD, "copy"]);
    await step(saver, config("8"), "9");
    expect(await history(saver, "9")).toEqual({
      seed: ["seed"],
      turns: [...HISTORY.turns, "turn 6", "turn 7", "turn 8"],
    });
    await saver.deleteThread(THREAD);
    // The same ids again after the delete (a test's fixed ids; real ids are fresh).
    await saver.clearTombstone(THREAD);
    let at = config();
    for (const id of ["1", "2", "3"]) at = await step(saver, at, id, id === "1");
    expect(await history(saver, "3")).toEqual({ seed: ["seed"], turns: ["turn 1", "turn 2"] });
    // A fresh saver (nothing remembered) agrees on every thread.
    await saver.close();
    saver = new IndexedDBSaver({ dbName: name, serde: await EncryptedSerializer.fromRawKey(next) });
    open.push(saver);
    expect(await history(saver, "3")).toEqual({ seed: ["seed"], turns: ["turn 1", "turn 2"] });
    expect(await history(saver, "7", "copy")).toEqual({ seed: ["seed"], turns: [...HISTORY.turns, "turn 6"] });
  });

  it("a pruned thread's export merged back into it after it went on: walks and prune succeed", async () => {
    const name = newDatabase("chain-honest-merge");
    {
      const earlier = await saverOn(name);
      let at = config();
      for (const id of ["1", "2"]) at = await step(earlier, at, id, id === "1");
      await step(earlier, at, "3", true);
      await earlier.prune([THREAD]);
      await earlier.close();
    }
    const saver = await saverOn(name);
    const file = await saver.exportThread(THREAD, { as: "bytes" });
    await step(saver, config("3"), "4");
    await step(saver, config("4"), "5");
    await importThread(await saverOn(name), file, {
      serde: await EncryptedSerializer.fromRawKey(KEY),
      ifExists: "merge",
    });
    const fresh = await saverOn(name);
    expect(await history(fresh, "5")).toEqual({ seed: ["seed"], turns: ["turn 3", "turn 4"] });
    await fresh.prune([THREAD]);
    expect(await history(fresh, "5")).toEqual({ seed: ["seed"], turns: ["turn 3", "turn 4"] });
  });
});

/**
 * Row binding version 4 under attack: someone who can edit the profile's
 * files rewrites a checkpoint row's clear `parent_writes` (the keys of its
 * parent's pending writes, hashed into its `chain`), or the write rows it
 * lists. chain-writes.test.ts covers an entry removed and listed writes
 * deleted; here, the other edits, and a listed write replayed from before
 * a key rotation. Each fails the delta-channel walk (and
 * so `getStateHistory`) closed with a `DecryptionError`, as
 * docs/encryption.md ("Row binding version 4") promises. Node and Chromium.
 */
import { HumanMessage, type AIMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import type { CheckpointRow, WriteKey, WriteRow } from "../../src/rows/shapes.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { chatGraph, plain } from "../support/chat-graph.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { committed, openRaw, putRaw, readStore } from "../support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();
const KEY = new Uint8Array(32).map((_, i) => i * 7 + 3);
const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };

async function saverOn(dbName: string): Promise<IndexedDBSaver> {
  return track(new IndexedDBSaver({ dbName, serde: await EncryptedSerializer.fromRawKey(KEY) }));
}

/** The message count of every snapshot of the thread's history, newest first, read by a fresh saver. */
async function history(dbName: string): Promise<number[]> {
  const saver = await saverOn(dbName);
  try {
    const counts: number[] = [];
    for await (const snapshot of chatGraph(saver, true).getStateHistory(config)) {
      counts.push(plain((snapshot.values as { messages?: AIMessage[] }).messages).length);
    }
    return counts;
  } finally {
    await saver.close();
  }
}

/** A three-turn chat on a delta channel (`messages`), the saver closed; its rows as stored. */
async function chat() {
  const dbName = freshDbName("parent-writes-attacks");
  const graph = chatGraph(await saverOn(dbName), true);
  for (const text of ["one", "two", "three"]) await graph.invoke({ messages: [new HumanMessage(text)] }, config);
  const rows = await readStore<CheckpointRow>(dbName, "checkpoints");
  const writes = await readStore<WriteRow>(dbName, "writes");
  const honest = await history(dbName);
  expect(honest[0]).toBe(6);
  // A row that lists two writes of its parent (a `messages` write and another), not the head.
  const head = rows.reduce((a, b) => (a.checkpoint_id > b.checkpoint_id ? a : b));
  const listing = rows.find((row) => row !== head && row.parent_writes!.length >= 2)!;
  expect(listing.parent_writes!.some(([, , channel]) => channel === "messages")).toBe(true);
  return { dbName, rows, writes, honest, head, listing };
}

/** The write row of the first `messages` write `listing` lists for its parent. */
function listedWrite(listing: CheckpointRow, writes: WriteRow[]): WriteRow {
  const [task, idx] = listing.parent_writes!.find(([, , channel]) => channel === "messages") as WriteKey;
  return writes.find((w) => w.checkpoint_id === listing.parent_checkpoint_id && w.task_id === task && w.idx === idx)!;
}

const keyOf = (w: WriteRow): IDBValidKey => [w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx];

async function deleteWrite(dbName: string, write: WriteRow): Promise<void> {
  const db = await openRaw(dbName);
  const tx = db.transaction(["writes"], "readwrite");
  tx.objectStore("writes").delete(keyOf(write));
  await committed(tx);
  db.close();
}

describe("row binding version 4 under attack", () => {
  it("a row's parent_writes edited (an entry added on a channel the walk does not read, the entries reordered, one duplicated, an idx turned into a string) or the head's own list edited: the history fails closed", async () => {
    const { dbName, honest, head, listing } = await chat();
    const list = listing.parent_writes!;
    const edits: [string, CheckpointRow, unknown][] = [
      ["added", listing, [...list, [list[0]![0], 99, "not-walked"]]],
      ["reordered", listing, [...list].reverse()],
      ["duplicated", listing, [...list, list[0]!]],
      ["idx as a string", listing, list.map(([task, idx, channel]) => [task, String(idx), channel])],
      ["the head's entry removed", head, head.parent_writes!.slice(1)],
    ];
    for (const [what, row, parentWrites] of edits) {
      await putRaw(dbName, "checkpoints", [{ ...row, parent_writes: parentWrites }]);
      const failure = history(dbName);
      await expect(failure, what).rejects.toBeInstanceOf(DecryptionError);
      await expect(failure, what).rejects.toThrow(/do not hash to its chain/);
      await putRaw(dbName, "checkpoints", [row]);
    }
    expect(await history(dbName)).toEqual(honest);
  });

  it("a listed write moved to a checkpoint off the path, or its task id or channel edited (the list intact): the history fails closed, naming the write", async () => {
    const { dbName, writes, honest, listing } = await chat();
    const write = listedWrite(listing, writes);
    const { task_id: task, idx } = write;
    const moves: [string, WriteRow][] = [
      ["off the path", { ...write, checkpoint_id: "0-not-on-the-path" }],
      ["another task id", { ...write, task_id: "another-task" }],
      ["another channel", { ...write, channel: "elsewhere" }],
    ];
    for (const [what, moved] of moves) {
      await deleteWrite(dbName, write);
      await putRaw(dbName, "writes", [moved]);
      const failure = history(dbName);
      await expect(failure, what).rejects.toBeInstanceOf(DecryptionError);
      await expect(failure, what).rejects.toThrow(
        `Checkpoint ${write.checkpoint_id} of thread "t" (namespace "") is missing its pending write to "messages" of task ${task} (idx ${idx})`,
      );
      await deleteWrite(dbName, moved);
      await putRaw(dbName, "writes", [write]);
    }
    expect(await history(dbName)).toEqual(honest);
  });

  it("a listed write replayed from its copy before rekey() (the data key rotated), the list intact: the history fails closed", async () => {
    const { dbName, writes, honest, listing } = await chat();
    const before = listedWrite(listing, writes);
    const saver = await saverOn(dbName);
    await saver.rekey();
    await saver.close();
    expect(await history(dbName)).toEqual(honest);
    await putRaw(dbName, "writes", [before]);
    const failure = history(dbName);
    await expect(failure).rejects.toBeInstanceOf(DecryptionError);
    await expect(failure).rejects.toThrow(/"write\.2".*encrypted under another key/);
  });
});

/**
 * Row binding version 4 (issue 23, finding 8): each checkpoint row an
 * encrypting saver writes lists the keys of its parent's pending writes
 * (`parent_writes`, hashed into its chain: src/saver/chain.ts), and the
 * delta-channel walk fails closed when one of them is gone. The attack is a
 * raw IndexedDB edit by someone without the key; the honest flows (forks,
 * failed tools resumed, interrupts answered, writes added to an ancestor
 * later, a checkpoint put again) must raise no false alarm. Node and Chromium.
 */
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import {
  Command,
  END,
  MessagesDeltaValue,
  START,
  StateGraph,
  StateSchema,
  type BaseCheckpointSaver,
} from "@langchain/langgraph/web";
import { afterEach, describe, expect, it } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { interruptWith } from "../../src/interrupt/index.js";
import { chainOf } from "../../src/saver/chain.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import type { CheckpointRow, WriteRow } from "../../src/rows/shapes.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { importThread } from "../../src/portable/index.js";
import { chatGraph, plain } from "../support/chat-graph.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { committed, openRaw, putRaw, readStore } from "../support/reliability/raw.js";

const created: string[] = [];
const open: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const each of open.splice(0)) await each.close();
  for (const name of created.splice(0)) await deleteDatabase(name);
});

const KEY = new Uint8Array(32).map((_, i) => i * 13 + 5);
const THREAD = "t";
const config = (checkpointId?: string): RunnableConfig => ({
  configurable: { thread_id: THREAD, checkpoint_ns: "", ...(checkpointId && { checkpoint_id: checkpointId }) },
});

async function saverOn(name: string, encrypted = true): Promise<IndexedDBSaver> {
  const serde = encrypted ? await EncryptedSerializer.fromRawKey(KEY) : undefined;
  const saver = new IndexedDBSaver({ dbName: name, ...(serde && { serde }) });
  open.push(saver);
  return saver;
}

function newDatabase(prefix: string): string {
  const name = freshDbName(prefix);
  created.push(name);
  return name;
}

async function closeAll(): Promise<void> {
  for (const saver of open.splice(0)) await saver.close();
}

/** Deletes write rows by key with raw IndexedDB (the savers closed first). */
async function deleteWrites(name: string, rows: WriteRow[]): Promise<void> {
  await closeAll();
  const db = await openRaw(name);
  try {
    const tx = db.transaction(["writes"], "readwrite");
    for (const w of rows)
      tx.objectStore("writes").delete([w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx]);
    await committed(tx);
  } finally {
    db.close();
  }
}

/** The full history of the thread's messages, newest snapshot first. */
async function messageHistory(saver: BaseCheckpointSaver): Promise<[string, string][][]> {
  const graph = chatGraph(saver, true);
  const out: [string, string][][] = [];
  for await (const snapshot of graph.getStateHistory(config())) {
    out.push(plain((snapshot.values as { messages?: AIMessage[] }).messages));
  }
  return out;
}

/** A four-turn delta chat, and the two `messages` writes of the second turn's input step. */
async function chatWithTarget(name: string, encrypted: boolean): Promise<WriteRow[]> {
  const graph = chatGraph(await saverOn(name, encrypted), true);
  for (const text of ["one", "two", "three", "four"]) {
    await graph.invoke({ messages: [new HumanMessage(text)] }, config());
  }
  await closeAll();
  const writes = (await readStore<WriteRow>(name, "writes")).filter(
    (w) => w.thread_id === THREAD && w.channel === "messages",
  );
  const rows = await readStore<CheckpointRow>(name, "checkpoints");
  // A checkpoint with at least two `messages` writes and a child: an ancestor step of the head.
  const byCheckpoint = new Map<string, WriteRow[]>();
  for (const w of writes) byCheckpoint.set(w.checkpoint_id, [...(byCheckpoint.get(w.checkpoint_id) ?? []), w]);
  const ids = [...byCheckpoint.keys()].sort();
  const withChild = ids.filter((id) => rows.some((row) => row.parent_checkpoint_id === id));
  // The second such step (the first turn's reply is the oldest).
  const target = withChild.find((id) => byCheckpoint.get(id)!.length >= 1 && id !== withChild[0])!;
  const targetWrites = byCheckpoint.get(target)!;
  // Two rows: its writes plus, if it has one only, the next step's.
  const next = withChild[withChild.indexOf(target) + 1]!;
  return targetWrites.length >= 2 ? targetWrites.slice(0, 2) : [targetWrites[0]!, byCheckpoint.get(next)![0]!];
}

describe("row binding version 4: a step's pending writes in the hash chain", () => {
  it("deleting two write rows of an earlier step: the history of a plain saver loses turns silently, an encrypted saver's fails closed", async () => {
    // The attack as it worked before: nothing tells the reader.
    const plainName = newDatabase("chain-writes-plain");
    const plainWrites = await chatWithTarget(plainName, false);
    const honest = await messageHistory(await saverOn(plainName, false));
    await deleteWrites(plainName, plainWrites);
    const lost = await messageHistory(await saverOn(plainName, false));
    expect(lost.length).toBe(honest.length);
    expect(lost[0]!.length).toBeLessThan(honest[0]!.length);

    const name = newDatabase("chain-writes-attack");
    const writes = await chatWithTarget(name, true);
    expect(await messageHistory(await saverOn(name))).toEqual(honest);
    await deleteWrites(name, writes);
    const saver = await saverOn(name);
    const failure = messageHistory(saver);
    await expect(failure).rejects.toBeInstanceOf(DecryptionError);
    const named = writes.map((w) => w.checkpoint_id).join("|");
    await expect(failure).rejects.toThrow(new RegExp(`Checkpoint (${named}) of thread "${THREAD}"`));
    // The head's state (its delta channel walks the same path) fails closed too.
    await expect(chatGraph(saver, true).getState(config())).rejects.toBeInstanceOf(DecryptionError);
    // The rows of the checkpoint itself still read (its own writes are not listed anywhere it is read).
    const tuple = await saver.getTuple(config(writes[0]!.checkpoint_id));
    expect(tuple?.checkpoint.id).toBe(writes[0]!.checkpoint_id);
  });

  it("each row lists its parent's writes and hashes them into its chain (version 4, lgcp-chain.2)", async () => {
    const name = newDatabase("chain-writes-rows");
    await chatWithTarget(name, true);
    const rows = (await readStore<CheckpointRow>(name, "checkpoints")).filter((row) => row.thread_id === THREAD);
    const writes = (await readStore<WriteRow>(name, "writes")).filter((w) => w.thread_id === THREAD);
    for (const row of rows) {
      const parent = rows.find((other) => other.checkpoint_id === row.parent_checkpoint_id);
      expect(row.parent_writes).toBeDefined();
      expect(await chainOf(row, parent?.chain)).toBe(row.chain);
      // Without the list, the same fields hash to another chain: it cannot pass as version 3.
      expect(await chainOf({ ...row, parent_writes: undefined }, parent?.chain)).not.toBe(row.chain);
      const parentWrites = writes.filter((w) => w.checkpoint_id === row.parent_checkpoint_id);
      for (const [taskId, idx, channel] of row.parent_writes!) {
        expect(parentWrites.some((w) => w.task_id === taskId && w.idx === idx && w.channel === channel)).toBe(true);
      }
      // A step's writes committed before its child's put are all listed (LangGraph awaits the delta writes).
      const listedMessages = row.parent_writes!.filter(([, , channel]) => channel === "messages").length;
      expect(listedMessages).toBe(parentWrites.filter((w) => w.channel === "messages").length);
    }
    expect(rows.some((row) => row.parent_writes!.length > 0)).toBe(true);
  });

  it("the list edited (an entry removed, with or without every chain recomputed) or stripped: fails closed", async () => {
    const name = newDatabase("chain-writes-edit");
    const writes = await chatWithTarget(name, true);
    const rows = await readStore<CheckpointRow>(name, "checkpoints");
    const child = rows.find((row) => row.parent_checkpoint_id === writes[0]!.checkpoint_id)!;
    const pruned = child.parent_writes!.filter(
      ([taskId, idx]) => !writes.some((w) => w.task_id === taskId && w.idx === idx),
    );
    const byId = new Map(rows.map((row) => [row.checkpoint_id, row]));
    // The child's list without the deleted writes, and every chain from it up recomputed (as an attacker can).
    const edited = new Map<string, CheckpointRow>();
    let at: CheckpointRow | undefined = { ...child, parent_writes: pruned };
    while (at) {
      const parentChain: string | undefined = (
        edited.get(at.parent_checkpoint_id!) ?? byId.get(at.parent_checkpoint_id!)
      )?.chain;
      at = { ...at, chain: await chainOf(at, parentChain) };
      edited.set(at.checkpoint_id, at);
      const id: string = at.checkpoint_id;
      const next = rows.find((row) => row.parent_checkpoint_id === id);
      at = next && { ...next };
    }
    for (const attempt of [
      [...edited.values()],
      [{ ...child, parent_writes: pruned }],
      [{ ...child, parent_writes: undefined }],
    ]) {
      await deleteWrites(name, writes);
      await putRaw(name, "checkpoints", attempt);
      await expect(messageHistory(await saverOn(name))).rejects.toBeInstanceOf(DecryptionError);
      await closeAll();
      await putRaw(name, "checkpoints", rows);
      await putRaw(name, "writes", writes);
    }
    // Put back as they were, the rows read again.
    expect((await messageHistory(await saverOn(name))).length).toBeGreaterThan(4);
  });
});

/** A checkpoint `id` under `parent` bumping `messages` to version `v<id>`. */
async function step(saver: IndexedDBSaver, parent: RunnableConfig, id: string, seed = false) {
  const checkpoint = {
    ...emptyCheckpoint(),
    id,
    channel_values: seed ? { messages: ["seed"] } : {},
    channel_versions: { messages: `v${id}` },
  };
  const metadata = { source: "loop", step: Number(id), parents: {} } as CheckpointMetadata;
  return saver.put(parent, checkpoint, metadata, seed ? { messages: `v${id}` } : {});
}

const walk = (saver: IndexedDBSaver, checkpointId: string) =>
  saver.getDeltaChannelHistory({ config: config(checkpointId), channels: ["messages"] });

describe("the lists a walk has proven", () => {
  it("do not vouch for a list edited under the running saver (the rows it proved are not decrypted or hashed again)", async () => {
    const name = newDatabase("chain-writes-proven");
    const saver = await saverOn(name);
    // 1 (seed) <- 2 <- 3 <- 4, one write on each of 1 to 3.
    let at = config();
    for (const id of ["1", "2", "3", "4"]) {
      at = await step(saver, at, id, id === "1");
      if (id !== "4") await saver.putWrites(at, [["messages", `turn ${id}`]], `task-${id}`);
    }
    const turns = ["turn 1", "turn 2", "turn 3"];
    expect((await walk(saver, "4")).messages!.writes.map(([, , value]) => value)).toEqual(turns);
    const rows = await readStore<CheckpointRow>(name, "checkpoints");
    const three = rows.find((row) => row.checkpoint_id === "3")!;
    const two = (await readStore<WriteRow>(name, "writes")).find((w) => w.checkpoint_id === "2")!;
    // 2's write deleted, and 3's list without it (its chain as it was), while the saver is open.
    const db = await openRaw(name);
    const tx = db.transaction(["writes", "checkpoints"], "readwrite");
    tx.objectStore("writes").delete([THREAD, "", "2", two.task_id, two.idx]);
    tx.objectStore("checkpoints").put({ ...three, parent_writes: [] });
    await committed(tx);
    db.close();
    // A walk from a new head (not derived from the walk kept for 4) over the rows proven before.
    await step(saver, config("4"), "5");
    await expect(walk(saver, "5")).rejects.toBeInstanceOf(DecryptionError);
  });
});

describe("row binding version 4 after copyThread, rekey and export/import", () => {
  it("the copy, the rekeyed thread and the imported thread keep their lists: a listed write deleted from each fails closed", async () => {
    const name = newDatabase("chain-writes-moves");
    let saver = await saverOn(name);
    let at = config();
    for (const id of ["1", "2", "3", "4"]) {
      at = await step(saver, at, id, id === "1");
      if (id !== "4") await saver.putWrites(at, [["messages", `turn ${id}`]], `task-${id}`);
    }
    await saver.copyThread(THREAD, "copy");
    await saver.rekey();
    const serde = await EncryptedSerializer.fromRawKey(KEY);
    await importThread(saver, await saver.exportThread(THREAD), { targetThreadId: "imported", serde });
    await closeAll();
    const turns = ["turn 1", "turn 2", "turn 3"];
    const walkOf = (s: IndexedDBSaver, threadId: string) =>
      s.getDeltaChannelHistory({
        config: { configurable: { thread_id: threadId, checkpoint_ns: "" } },
        channels: ["messages"],
      });
    const rows = await readStore<CheckpointRow>(name, "checkpoints");
    const writes = await readStore<WriteRow>(name, "writes");
    for (const threadId of [THREAD, "copy", "imported"]) {
      saver = await saverOn(name);
      expect((await walkOf(saver, threadId)).messages!.writes.map(([, , value]) => value)).toEqual(turns);
      const three = rows.find((row) => row.thread_id === threadId && row.checkpoint_id === "3")!;
      expect(three.parent_writes).toEqual([["task-2", 0, "messages"]]);
      const two = writes.find((w) => w.thread_id === threadId && w.checkpoint_id === "2")!;
      await deleteWrites(name, [two]);
      await expect(walkOf(await saverOn(name), threadId)).rejects.toBeInstanceOf(DecryptionError);
      await closeAll();
      await putRaw(name, "writes", [two]);
    }
  });
});

describe("row binding version 4: honest histories raise no false alarm", () => {
  it("forks of one parent at different times, writes added to an ancestor after its child exists, and the checkpoint put again", async () => {
    const name = newDatabase("chain-writes-forks");
    let saver = await saverOn(name);
    const one = await step(saver, config(), "1", true);
    await saver.putWrites(one, [["messages", "a"]], "task-a");
    // The same task's write at the same idx again, to another channel: the first stays, and only it is listed.
    await saver.putWrites(one, [["other", "kept out"]], "task-a");
    const two = await step(saver, one, "2");
    // Another device's write to 1, merged later (a sync pull does the same), then a fork of 1 that lists it.
    await saver.putWrites(one, [["messages", "b"]], "task-b");
    const twoB = await step(saver, one, "2b");
    await saver.putWrites(two, [["messages", "c"]], "task-c");
    await step(saver, two, "3");
    const rows = new Map((await readStore<CheckpointRow>(name, "checkpoints")).map((row) => [row.checkpoint_id, row]));
    expect(rows.get("2")!.parent_writes).toEqual([["task-a", 0, "messages"]]);
    expect(rows.get("2b")!.parent_writes).toEqual([
      ["task-a", 0, "messages"],
      ["task-b", 0, "messages"],
    ]);
    // 2 put again (an import merged into the thread) after 1 gained a write: it keeps its chain, which 3 hashes.
    await saver.put(
      one,
      { ...emptyCheckpoint(), id: "2", channel_versions: { messages: "v2" } },
      {
        source: "loop",
        step: 2,
        parents: {},
      } as CheckpointMetadata,
      {},
    );
    expect((await readStore<CheckpointRow>(name, "checkpoints")).find((row) => row.checkpoint_id === "2")!.chain).toBe(
      rows.get("2")!.chain,
    );
    await closeAll();
    saver = await saverOn(name);
    expect((await walk(saver, "3")).messages!.writes.map(([, , value]) => value)).toEqual(["a", "b", "c"]);
    expect((await walk(saver, "2b")).messages!.writes.map(([, , value]) => value)).toEqual(["a", "b"]);
    const both = await saver.getDeltaChannelHistory({ config: config("2"), channels: ["messages", "other"] });
    expect(both.other!.writes).toEqual([]);
    void twoB;
  });

  it("parallel tools that fail and are resumed, and an interrupt answered: the history reads", async () => {
    const name = newDatabase("chain-writes-resume");
    const saver = await saverOn(name);
    let failures = 2;
    const State = new StateSchema({ messages: MessagesDeltaValue });
    const graph = new StateGraph(State)
      .addNode("agent", () => ({ messages: [new AIMessage("calling tools")] }))
      .addNode("toolA", () => ({ messages: [new AIMessage("tool a")] }))
      .addNode("toolB", () => {
        if (failures-- > 0) throw new Error("tool b failed");
        return { messages: [new AIMessage("tool b")] };
      })
      .addNode("ask", (_state, runConfig) => {
        const answer = interruptWith(runConfig, "go on?");
        return { messages: [new HumanMessage(String(answer))] };
      })
      .addEdge(START, "agent")
      .addEdge("agent", "toolA")
      .addEdge("agent", "toolB")
      .addEdge("toolA", "ask")
      .addEdge("toolB", "ask")
      .addEdge("ask", END)
      .compile({ checkpointer: saver });
    const cfg = config();
    await expect(graph.invoke({ messages: [new HumanMessage("hi")] }, cfg)).rejects.toThrow(/tool b failed/);
    await expect(graph.invoke(null, cfg)).rejects.toThrow(/tool b failed/);
    await graph.invoke(null, cfg);
    expect((await graph.getState(cfg)).next).toEqual(["ask"]);
    await graph.invoke(new Command({ resume: "yes" }), cfg);
    const expected = [
      ["human", "hi"],
      ["ai", "calling tools"],
      ["ai", "tool a"],
      ["ai", "tool b"],
      ["human", "yes"],
    ];
    expect(plain((await graph.getState(cfg)).values.messages).sort()).toEqual([...expected].sort());
    await closeAll();
    const fresh = await saverOn(name);
    const reread = new StateGraph(State)
      .addNode("agent", () => ({}))
      .addEdge(START, "agent")
      .compile({ checkpointer: fresh });
    const snapshots = [];
    for await (const snapshot of reread.getStateHistory(cfg)) snapshots.push(plain(snapshot.values.messages));
    expect(snapshots[0]!.sort()).toEqual([...expected].sort());
    expect(snapshots.length).toBeGreaterThan(4);
    const rows = await readStore<CheckpointRow>(name, "checkpoints");
    expect(rows.some((row) => row.parent_writes!.some(([, , channel]) => channel === "__error__"))).toBe(true);
  });
});

/**
 * The golden databases of the row binding versions (issue 11 item 2):
 * test/golden/saver-encrypted-binding2.json and
 * test/golden/saver-encrypted-binding3.json and
 * test/golden/saver-encrypted-binding4.json, written by
 * test/golden/generate-binding<N>.ts. Version 2 seals checkpoints with their
 * parent link and writes with their channel and task path; version 3 adds
 * each checkpoint row's hash chain (src/saver/chain.ts); version 4 adds to
 * it the keys of the parent's pending writes (issue 23). The version 1
 * golden (test/golden/saver-encrypted.json, read by golden-formats.test.ts) still reads
 * beside them. Node and Chromium.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import binding2Golden from "../golden/saver-encrypted-binding2.json";
import binding3Golden from "../golden/saver-encrypted-binding3.json";
import binding4Golden from "../golden/saver-encrypted-binding4.json";
import { chainOf } from "../../src/saver/chain.js";
import type { CheckpointRow, WriteRow } from "../../src/rows/shapes.js";
import binding1Golden from "../golden/saver-encrypted.json";
import {
  RAW_KEY,
  deleteDatabase,
  expectAnswers,
  loadDatabase,
  readSaver,
  type DatabaseDump,
  type SaverGolden,
  type Tagged,
} from "../golden/shared.js";
import { freshDbName } from "../support/databases.js";
import { readStore } from "../support/reliability/raw.js";

const v2 = binding2Golden as unknown as SaverGolden;
const v3 = binding3Golden as unknown as SaverGolden;
const v4 = binding4Golden as unknown as SaverGolden;
const v1 = binding1Golden as unknown as SaverGolden;
const created: string[] = [];
const savers: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const saver of savers.splice(0)) await saver.close();
  for (const name of created.splice(0)) await deleteDatabase(indexedDB, name);
});

/** A saver on a fresh copy of `dump`, after `edit` changed its records. */
async function saverOn(dump: DatabaseDump, edit?: (dump: DatabaseDump) => unknown): Promise<IndexedDBSaver> {
  const copy = structuredClone(dump);
  await edit?.(copy);
  const name = freshDbName("golden-binding2");
  created.push(name);
  await loadDatabase(indexedDB, name, copy);
  const saver = new IndexedDBSaver({ dbName: name, serde: await EncryptedSerializer.fromRawKey(RAW_KEY) });
  savers.push(saver);
  return saver;
}

/** A t-chat checkpoint row as stored. */
async function rawCheckpoint(dbName: string, checkpointId: string): Promise<CheckpointRow> {
  const rows = await readStore<CheckpointRow>(dbName, "checkpoints");
  return rows.find(
    (row) => row.thread_id === "t-chat" && row.checkpoint_ns === "" && row.checkpoint_id === checkpointId,
  )!;
}

/** The records of one store of `dump`, to edit in place. */
function rows(dump: DatabaseDump, store: string): Record<string, Tagged>[] {
  return dump.stores.find((s) => s.name === store)!.records.map(([, value]) => value as Record<string, Tagged>);
}

/** Swaps the channels of two writes of one task of "t-golden"; returns their checkpoint id. */
function swapChannels(dump: DatabaseDump): string {
  const writes = rows(dump, "writes").filter((w) => w.thread_id === "t-golden" && w.checkpoint_ns === "");
  for (const a of writes) {
    const b = writes.find(
      (w) => w.checkpoint_id === a.checkpoint_id && w.task_id === a.task_id && w.channel !== a.channel,
    );
    if (!b) continue;
    [a.channel, b.channel] = [b.channel!, a.channel!];
    return a.checkpoint_id as string;
  }
  throw new Error("no task with writes to two channels in the golden thread");
}

describe("saver database of row binding version 2 (encrypted)", () => {
  it("reads back every checkpoint, pending write, delta history and thread as recorded", async () => {
    expectAnswers(await readSaver(await saverOn(v2.dump)), v2.expected);
  });

  it("binds a write's channel: two swapped channels fail to read (the version 1 golden cannot tell)", async () => {
    let checkpointId = "";
    const bound = await saverOn(v2.dump, (dump) => (checkpointId = swapChannels(dump)));
    const config = { configurable: { thread_id: "t-golden", checkpoint_ns: "", checkpoint_id: checkpointId } };
    await expect(bound.getTuple(config)).rejects.toBeInstanceOf(DecryptionError);
    // Rows written before version 2 keep their version 1 binding, which never named the channel.
    let oldId = "";
    const old = await saverOn(v1.dump, (dump) => (oldId = swapChannels(dump)));
    const tuple = await old.getTuple({ configurable: { ...config.configurable, checkpoint_id: oldId } });
    expect(tuple?.pendingWrites?.length).toBeGreaterThan(1);
  });

  it("binds a checkpoint's parent link: a relinked checkpoint fails to read", async () => {
    const saver = await saverOn(v2.dump, (dump) => {
      const child = rows(dump, "checkpoints").find(
        (row) => row.thread_id === "t-chat" && row.parent_checkpoint_id !== undefined,
      )!;
      child.parent_checkpoint_id = `${child.checkpoint_id as string}-elsewhere`;
    });
    const listing = (async () => {
      for await (const tuple of saver.list({ configurable: { thread_id: "t-chat" } })) void tuple;
    })();
    await expect(listing).rejects.toBeInstanceOf(DecryptionError);
  });

  it("proves a walk's ancestors by decrypting them (they have no chain): a swapped sealed checkpoint fails the walk", async () => {
    const saver = await saverOn(v2.dump, (dump) => {
      const chat = rows(dump, "checkpoints")
        .filter((row) => row.thread_id === "t-chat" && row.checkpoint_ns === "")
        .sort((a, b) => ((a.checkpoint_id as string) < (b.checkpoint_id as string) ? 1 : -1));
      expect(chat.some((row) => "chain" in row)).toBe(false);
      const parent = chat.find((row) => row.checkpoint_id === chat[0]!.parent_checkpoint_id)!;
      const other = chat.find((row) => row !== parent && row !== chat[0])!;
      parent.checkpoint = other.checkpoint!;
    });
    const walk = saver.getDeltaChannelHistory({
      config: { configurable: { thread_id: "t-chat" } },
      channels: ["messages"],
    });
    await expect(walk).rejects.toBeInstanceOf(DecryptionError);
  });
});

describe("saver database of row binding version 3 (encrypted, hash chain of parent links)", () => {
  it("a version 2 database gets chained rows on top of its unchained ones, and walks across both", async () => {
    const saver = await saverOn(v2.dump);
    const head = (await saver.getTuple({ configurable: { thread_id: "t-chat" } }))!;
    const next = await saver.put(
      head.config,
      { ...head.checkpoint, id: `${head.checkpoint.id}-next` },
      { source: "update", step: 99, parents: {} },
      {},
    );
    const walk = { config: next, channels: ["messages"] };
    const history = await saver.getDeltaChannelHistory(walk);
    // A saver that has proven nothing: the new row by its chain, the version 2 rows by decrypting them.
    const fresh = new IndexedDBSaver({ dbName: saver.dbName, serde: await EncryptedSerializer.fromRawKey(RAW_KEY) });
    savers.push(fresh);
    expect(await fresh.getDeltaChannelHistory(walk)).toEqual(history);
    expect(history.messages!.writes.length).toBeGreaterThan(0);
    const row = await rawCheckpoint(saver.dbName, next.configurable!.checkpoint_id as string);
    expect(row.chain).toMatch(/^[0-9a-f]{64}$/);
    expect(await chainOf(row, undefined)).toBe(row.chain); // its parent has no chain
  });

  it("reads back every checkpoint, pending write, delta history and thread as recorded", async () => {
    expectAnswers(await readSaver(await saverOn(v3.dump)), v3.expected);
  });

  it("each row's chain is the hash of its clear fields and its parent's chain (the algorithm is frozen)", async () => {
    const checkpoints = rows(v3.dump, "checkpoints") as unknown as CheckpointRow[];
    expect(checkpoints.length).toBeGreaterThan(5);
    for (const row of checkpoints) {
      const parent = checkpoints.find(
        (other) =>
          other.thread_id === row.thread_id &&
          other.checkpoint_ns === row.checkpoint_ns &&
          other.checkpoint_id === row.parent_checkpoint_id,
      );
      expect(row.chain).toMatch(/^[0-9a-f]{64}$/);
      expect(await chainOf(row, parent?.chain)).toBe(row.chain);
    }
  });

  it("a relinked ancestor with its chain recomputed fails the walk; the untouched golden walks", async () => {
    const chatConfig = { config: { configurable: { thread_id: "t-chat" } }, channels: ["messages"] };
    expect(await (await saverOn(v3.dump)).getDeltaChannelHistory(chatConfig)).toBeDefined();
    const saver = await saverOn(v3.dump, async (dump) => {
      const chat = (rows(dump, "checkpoints") as unknown as CheckpointRow[])
        .filter((row) => row.thread_id === "t-chat")
        .sort((a, b) => (a.checkpoint_id < b.checkpoint_id ? -1 : 1));
      // The grandparent of the latest skips its parent; its chain recomputed as an attacker can.
      const relinked = chat[chat.length - 2]!;
      relinked.parent_checkpoint_id = chat[chat.length - 4]!.checkpoint_id;
      relinked.chain = await chainOf(relinked, chat[chat.length - 4]!.chain);
    });
    await expect(saver.getDeltaChannelHistory(chatConfig)).rejects.toBeInstanceOf(DecryptionError);
  });
});

describe("saver database of row binding version 4 (encrypted, the parent's writes in the hash chain)", () => {
  const chatConfig = { config: { configurable: { thread_id: "t-chat" } }, channels: ["messages"] };

  it("reads back every checkpoint, pending write, delta history and thread as recorded", async () => {
    expectAnswers(await readSaver(await saverOn(v4.dump)), v4.expected);
  });

  it("each row's chain hashes its parent's writes as listed, and every listed write is stored (the algorithm is frozen)", async () => {
    const checkpoints = rows(v4.dump, "checkpoints") as unknown as CheckpointRow[];
    const writes = rows(v4.dump, "writes") as unknown as WriteRow[];
    let listed = 0;
    for (const row of checkpoints) {
      const parent = checkpoints.find(
        (other) =>
          other.thread_id === row.thread_id &&
          other.checkpoint_ns === row.checkpoint_ns &&
          other.checkpoint_id === row.parent_checkpoint_id,
      );
      expect(row.parent_writes).toBeDefined();
      expect(await chainOf(row, parent?.chain)).toBe(row.chain);
      for (const [taskId, idx, channel] of row.parent_writes!) {
        listed++;
        const stored = writes.find(
          (w) =>
            w.thread_id === row.thread_id &&
            w.checkpoint_id === row.parent_checkpoint_id &&
            w.task_id === taskId &&
            w.idx === idx,
        );
        expect(stored?.channel).toBe(channel);
      }
    }
    expect(listed).toBeGreaterThan(5);
  });

  it("a listed delta-channel write deleted: the walk fails closed; the version 3 golden cannot tell", async () => {
    const deleteOne = (dump: DatabaseDump) => {
      const store = dump.stores.find((s) => s.name === "writes")!;
      const at = store.records.findIndex(([, value]) => {
        const w = value as unknown as WriteRow;
        const checkpoints = rows(dump, "checkpoints") as unknown as CheckpointRow[];
        return (
          w.thread_id === "t-chat" &&
          w.channel === "messages" &&
          checkpoints.some((row) => row.thread_id === "t-chat" && row.parent_checkpoint_id === w.checkpoint_id)
        );
      });
      store.records.splice(at, 1);
    };
    await expect((await saverOn(v4.dump, deleteOne)).getDeltaChannelHistory(chatConfig)).rejects.toBeInstanceOf(
      DecryptionError,
    );
    const old = (await (await saverOn(v3.dump, deleteOne)).getDeltaChannelHistory(chatConfig)).messages!;
    const honest = (await (await saverOn(v3.dump)).getDeltaChannelHistory(chatConfig)).messages!;
    expect(old.writes.length).toBe(honest.writes.length - 1);
  });

  it("a version 3 database gets version 4 rows on top of its own, and a fresh saver walks across both", async () => {
    const saver = await saverOn(v3.dump);
    const head = (await saver.getTuple({ configurable: { thread_id: "t-chat" } }))!;
    await saver.putWrites(head.config, [["messages", "late"]], "task-late");
    const next = await saver.put(
      head.config,
      { ...head.checkpoint, id: `${head.checkpoint.id}-next` },
      { source: "update", step: 99, parents: {} },
      {},
    );
    const walk = { config: next, channels: ["messages"] };
    const history = await saver.getDeltaChannelHistory(walk);
    const fresh = new IndexedDBSaver({ dbName: saver.dbName, serde: await EncryptedSerializer.fromRawKey(RAW_KEY) });
    savers.push(fresh);
    expect(await fresh.getDeltaChannelHistory(walk)).toEqual(history);
    expect(history.messages!.writes.at(-1)![2]).toBe("late");
    const row = await rawCheckpoint(saver.dbName, next.configurable!.checkpoint_id as string);
    expect(row.parent_writes).toEqual([["task-late", 0, "messages"]]);
    const parent = await rawCheckpoint(saver.dbName, head.checkpoint.id);
    expect(parent.parent_writes).toBeUndefined();
    expect(await chainOf(row, parent.chain)).toBe(row.chain);
  });
});

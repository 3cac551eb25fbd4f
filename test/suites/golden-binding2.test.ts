/**
 * The golden database of row binding version 2 (issue 11 item 2):
 * test/golden/saver-encrypted-binding2.json, written by
 * test/golden/generate-binding2.ts. Its checkpoints are sealed with their
 * parent link and its writes with their channel and task path; the version 1
 * golden (saver-encrypted.json, read by golden-formats.test.ts) still reads
 * beside it. Node and Chromium.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import binding2Golden from "../golden/saver-encrypted-binding2.json";
import binding1Golden from "../golden/saver-encrypted.json";
import { RAW_KEY, deleteDatabase, loadDatabase, readSaver, type DatabaseDump, type Tagged } from "../golden/shared.js";
import { freshDbName } from "../support/databases.js";

interface SaverGolden {
  dump: DatabaseDump;
  expected: Record<string, Tagged>;
}

const v2 = binding2Golden as unknown as SaverGolden;
const v1 = binding1Golden as unknown as SaverGolden;
const created: string[] = [];
const savers: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const saver of savers.splice(0)) await saver.close();
  for (const name of created.splice(0)) await deleteDatabase(indexedDB, name);
});

/** A saver on a fresh copy of `dump`, after `edit` changed its records. */
async function saverOn(dump: DatabaseDump, edit?: (dump: DatabaseDump) => void): Promise<IndexedDBSaver> {
  const copy = structuredClone(dump);
  edit?.(copy);
  const name = freshDbName("golden-binding2");
  created.push(name);
  await loadDatabase(indexedDB, name, copy);
  const saver = new IndexedDBSaver({ dbName: name, serde: await EncryptedSerializer.fromRawKey(RAW_KEY) });
  savers.push(saver);
  return saver;
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
    const actual = await readSaver(await saverOn(v2.dump));
    expect(Object.keys(actual)).toEqual(Object.keys(v2.expected));
    for (const key of Object.keys(v2.expected)) expect({ [key]: actual[key] }).toEqual({ [key]: v2.expected[key] });
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
});

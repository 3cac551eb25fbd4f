/**
 * Checks the saver golden tests of each stored layout share (schema version
 * 3, row format 1): a database loaded from a golden dump keeps its records
 * once read, and takes a new checkpoint on top of its stored chat.
 */
import { expect } from "vitest";
import type { IndexedDBSaver } from "../../src/saver/index.js";
import { openDatabase } from "../../src/idb/open.js";
import { SAVER_UPGRADES, type SaverSchema } from "../../src/saver/schema.js";
import { freshDbName } from "../support/databases.js";
import { dumpDatabase, loadDatabase, type DatabaseDump } from "./shared.js";

/** Every store of database `dbName` holds exactly the records of `golden`. */
export async function expectRecordsKept(dbName: string, golden: DatabaseDump): Promise<void> {
  const after = await dumpDatabase(indexedDB, dbName);
  for (const store of golden.stores) {
    const now = after.stores.find((s) => s.name === store.name)!;
    expect({ [store.name]: now.records }).toEqual({ [store.name]: store.records });
  }
}

/** The code of the first `steps` schema steps refuses database `dump` as written by a newer version. */
export async function expectRefusedByOlderCode(dump: DatabaseDump, steps: number): Promise<void> {
  const name = freshDbName("golden-old-code");
  await loadDatabase(indexedDB, name, dump);
  const noop = () => undefined;
  const old = openDatabase<SaverSchema>({
    name,
    upgrades: SAVER_UPGRADES.slice(0, steps),
    indexedDB,
    blockedTimeoutMs: 1000,
    hooks: { opened: noop, failed: noop, versionChange: noop, closed: noop },
  });
  await expect(old).rejects.toThrow(/newer version/);
}

/**
 * Puts a checkpoint on top of thread `t-chat`'s head, then checks that it
 * reads back with the head's values, that the delta walk from it gives the
 * head's writes, and that `list` gives it before the head.
 */
export async function expectPutOnTopOfChat(saver: IndexedDBSaver): Promise<void> {
  const head = (await saver.getTuple({ configurable: { thread_id: "t-chat" } }))!;
  const before = await saver.getDeltaChannelHistory({ config: head.config, channels: ["messages"] });
  const next = await saver.put(
    head.config,
    { ...head.checkpoint, id: `${head.checkpoint.id}-next` },
    { source: "update", step: 99, parents: {} },
    {},
  );
  const tuple = await saver.getTuple(next);
  expect(tuple?.checkpoint.channel_values).toEqual(head.checkpoint.channel_values);
  expect(tuple?.parentConfig?.configurable?.checkpoint_id).toBe(head.checkpoint.id);
  const walk = await saver.getDeltaChannelHistory({ config: next, channels: ["messages"] });
  expect(walk.messages!.writes).toEqual(before.messages!.writes);
  const listed = [];
  for await (const item of saver.list({ configurable: { thread_id: "t-chat" } }, { limit: 2 })) listed.push(item);
  expect(listed.map((item) => item.checkpoint.id)).toEqual([next.configurable!.checkpoint_id, head.checkpoint.id]);
}
